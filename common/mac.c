#include "common/mac.h"

#include <errno.h>
#include <stddef.h>

static const char hexdig[] = "0123456789abcdef";

const char *gmac_str(const uint8_t m[6], char b[GMAC_STRLEN])
{
	for (int i = 0; i < 6; i++) {
		b[3 * i] = hexdig[m[i] >> 4];
		b[3 * i + 1] = hexdig[m[i] & 0xf];
		b[3 * i + 2] = i < 5 ? ':' : '\0';
	}
	return b;
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int gmac_parse(const char *s, uint8_t m[6])
{
	uint8_t v[6];

	if (!s)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		const char *p = s + 3 * i;
		int hi, lo;

		/* each check stops at a NUL, so a short string never reads past its end */
		if ((hi = nibble(p[0])) < 0 || (lo = nibble(p[1])) < 0)
			return -EINVAL;
		if (p[2] != (i < 5 ? ':' : '\0'))
			return -EINVAL;
		v[i] = (uint8_t)(hi << 4 | lo);
	}
	for (int i = 0; i < 6; i++)
		m[i] = v[i];
	return 0;
}
