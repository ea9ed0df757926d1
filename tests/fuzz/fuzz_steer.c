/*
 * libFuzzer: what pod steering reads from outside (agent/dp/steer.h): the
 * nftables JSON listing of its table, and nftables notifications. Whatever
 * parses yields device names nftables can hold, which render again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/steer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gds_pod *got = NULL;
	char *s = malloc(size + 1), *t = NULL, err[256], proc[16];
	size_t n = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (gds_parse(s, &got, &n, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < n; i++)
			if (!gds_ifname_ok(got[i].ifname))
				abort();
		if (gds_render(got, n, &t, err, sizeof(err)) != 0)
			abort();
		free(t);
	}
	free(got);
	if (size >= sizeof(struct nlmsghdr)) {
		uint8_t *b = malloc(size);

		if (b) {
			memcpy(b, data, size);
			if (((struct nlmsghdr *)b)->nlmsg_len <= size)
				gds_notification((struct nlmsghdr *)b, proc, sizeof(proc));
			free(b);
		}
	}
	free(s);
	return 0;
}
