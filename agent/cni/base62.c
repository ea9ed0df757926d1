#include "agent/cni/base62.h"

#include <string.h>

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 36;
	return -1;
}

int b62_decode(const char *s, uint64_t *out, const char **why)
{
	size_t n = strlen(s);
	uint64_t v = 0;

	if (n == 0) {
		*why = "empty";
		return -1;
	}
	if (n > B62_MAX_DIGITS) {
		*why = "longer than 11 base62 digits";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		int d = digit(s[i]);

		if (d < 0) {
			*why = "not a base62 digit (0-9A-Za-z)";
			return -1;
		}
		/* 11 digits can exceed 2^64: check before multiplying. */
		if (v > (UINT64_MAX - (uint64_t)d) / 62) {
			*why = "value does not fit in 64 bits";
			return -1;
		}
		v = v * 62 + (uint64_t)d;
	}
	*out = v;
	return 0;
}

size_t b62_encode(uint64_t v, char *buf, size_t len)
{
	static const char abc[] =
		"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	char tmp[B62_MAX_DIGITS + 1];
	size_t n = 0;

	do {
		tmp[n++] = abc[v % 62];
		v /= 62;
	} while (v);
	if (len < n + 1) {
		if (len)
			buf[0] = 0;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = 0;
	return n;
}
