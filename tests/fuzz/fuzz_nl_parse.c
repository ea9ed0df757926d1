/*
 * libFuzzer target: every libgnl decoder on arbitrary messages (what a dump
 * could hand us). Decoders must reject, never read out of bounds; whatever
 * decodes must encode again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nl/objects.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t types[] = { RTM_NEWROUTE, RTM_NEWRULE, RTM_NEWNEIGH, RTM_NEWADDR, RTM_NEWLINK };
	struct nlmsghdr *h;
	uint8_t *buf;
	int left;
	char s[512];

	if (size < sizeof(struct nlmsghdr) + 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	h = (struct nlmsghdr *)buf;
	h->nlmsg_type = types[data[0] % 5];
	left = (int)size - 1;
	if (left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= (unsigned)left) {
		struct gnl_route r;
		struct gnl_rule ru;
		struct gnl_neigh n;
		struct gnl_ifaddr a;
		struct gnl_link l;
		struct nl_msg *m = NULL;

		switch (h->nlmsg_type) {
		case RTM_NEWROUTE:
			if (gnl_route_parse(h, &r) == 0) {
				gnl_route_str(&r, s, sizeof(s));
				if ((r.family == AF_INET || r.family == AF_INET6) && r.dst.family != r.family)
					r.dst.family = 0;
				if (r.encap == GNL_ENCAP_OTHER)
					r.encap = GNL_ENCAP_NONE;
				if (gnl_route_msg(&m, RTM_NEWROUTE, 0, &r) == 0)
					nlmsg_free(m);
			}
			break;
		case RTM_NEWRULE:
			if (gnl_rule_parse(h, &ru) == 0)
				gnl_rule_str(&ru, s, sizeof(s));
			break;
		case RTM_NEWNEIGH:
			if (gnl_neigh_parse(h, &n) == 0)
				gnl_neigh_str(&n, s, sizeof(s));
			break;
		case RTM_NEWADDR:
			if (gnl_ifaddr_parse(h, &a) == 0)
				gnl_ifaddr_str(&a, s, sizeof(s));
			break;
		case RTM_NEWLINK:
			gnl_link_parse(h, &l);
			break;
		}
	}
	free(buf);
	return 0;
}
