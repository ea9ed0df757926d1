/*
 * libFuzzer target: the netlink reply loops (agent/nl/nl.c) on arbitrary
 * datagrams: batch acks (gnl_acks_scan), dumps (gnl_dump_scan) and single
 * gets (gnl_get_scan), NLMSG_ERROR lengths and extended acks
 * (gnl_msg_error, gnl_extack), with the object decoders the agent's dump
 * callbacks run. Input: byte 0 picks the loop and how many requests are
 * pending (acks) or when the callback stops (dumps); the rest is the
 * datagram, its messages numbered from sequence SEQ.
 * Invariants: every message handed to a callback lies inside the datagram;
 * an answered request has err <= 0 and a terminated ext; the loops end with
 * a result that is an error, 0, or the callback's stop value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nl/nl.h"
#include "agent/nl/objects.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEQ 1000u
#define STOP 7

struct walk {
	const uint8_t *lo, *hi;
	unsigned seen, stop_at;
};

static int on_msg(const struct nlmsghdr *h, void *arg)
{
	struct walk *w = arg;
	union {
		struct gnl_route r;
		struct gnl_rule ru;
		struct gnl_neigh n;
		struct gnl_ifaddr a;
		struct gnl_link l;
	} o;

	if ((const uint8_t *)h < w->lo || h->nlmsg_len < sizeof(*h) ||
	    h->nlmsg_len > (size_t)(w->hi - (const uint8_t *)h))
		abort(); /* handed a message outside the datagram */
	switch (h->nlmsg_type) {
	case RTM_NEWROUTE:
		(void)gnl_route_parse(h, &o.r);
		break;
	case RTM_NEWRULE:
		(void)gnl_rule_parse(h, &o.ru);
		break;
	case RTM_NEWNEIGH:
		(void)gnl_neigh_parse(h, &o.n);
		break;
	case RTM_NEWADDR:
		(void)gnl_ifaddr_parse(h, &o.a);
		break;
	case RTM_NEWLINK:
		(void)gnl_link_parse(h, &o.l);
		break;
	}
	return ++w->seen == w->stop_at ? STOP : 0;
}

static void check_result(int rc, int stop)
{
	if (rc > 0 && rc != stop)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w = { 0 };
	uint8_t *buf;
	size_t len, i;
	unsigned mode, n;
	int stop = 0, rc = 0;
	bool intr = false;

	if (size < 1)
		return 0;
	mode = data[0] & 3;
	n = (data[0] >> 2) + 1; /* 1..64 */
	len = size - 1;
	buf = malloc(len ? len : 1); /* aligned as the receive buffer is */
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);
	w.lo = buf;
	w.hi = buf + len;
	w.stop_at = n;

	if (mode == 0) {
		struct gnl_batch b;
		size_t idx[64], acked, answered = 0;

		gnl_batch_init(&b);
		b.v = calloc(n, sizeof(*b.v));
		if (b.v) {
			b.n = b.capn = n;
			for (i = 0; i < n; i++) {
				idx[i] = n - 1 - i; /* a trip's order need not be the batch's */
				b.v[i].err = 1;
			}
			acked = gnl_acks_scan(&b, idx, n, SEQ, buf, len);
			for (i = 0; i < n; i++) {
				if (b.v[i].err == 1)
					continue;
				answered++;
				if (b.v[i].err > 0 || strnlen(b.v[i].ext, sizeof(b.v[i].ext)) == sizeof(b.v[i].ext))
					abort();
			}
			if (acked != answered || acked > n)
				abort();
		}
		gnl_batch_free(&b);
	} else if (mode == 1) {
		if (gnl_dump_scan(buf, len, SEQ, on_msg, &w, &stop, &intr, &rc))
			check_result(rc, stop);
	} else if (mode == 2) {
		if (gnl_get_scan(buf, len, SEQ, on_msg, &w, &stop, &rc))
			check_result(rc, stop);
	} else {
		/* Every message as an NLMSG_ERROR, whatever its type says. */
		const struct nlmsghdr *h;
		int left = (int)len;
		char ext[128];

		for (h = (const struct nlmsghdr *)buf; left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
		     h->nlmsg_len <= (unsigned)left; h = NLMSG_NEXT(h, left)) {
			if (gnl_msg_error(h) > 0)
				abort();
			gnl_extack(h, ext, sizeof(ext));
			if (strnlen(ext, sizeof(ext)) == sizeof(ext))
				abort();
		}
	}
	free(buf);
	return 0;
}
