/*
 * libgnl: a small rtnetlink library on libnl-3's core message API.
 *
 * nl.c      socket (optionally inside a named netns), batched requests with
 *           per-message acks, ENOMEM retry with backoff, dumps
 * link.c    links (veth, vrf, up/mtu/netns)     addr.c   addresses
 * neigh.c   neighbours                          rule.c   policy rules
 * route.c   routes incl. seg6 / seg6local lightweight tunnels
 *
 * Each object family has an encoder (struct -> struct nl_msg) and a decoder
 * (struct nlmsghdr -> struct) next to each other. Functions return 0 or a
 * negative errno; nothing here prints.
 */
#ifndef GALACTIC_AGENT_NL_NL_H
#define GALACTIC_AGENT_NL_NL_H

#include <linux/netlink.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netlink/msg.h>

struct gnl_sock;

/* Opens a NETLINK_ROUTE socket in netns (NULL = current; a name in /run/netns or a path). */
int gnl_open(struct gnl_sock **out, const char *netns, char *err, size_t errlen);
void gnl_close(struct gnl_sock *s);
int gnl_fd(const struct gnl_sock *s);

/* --- batches of requests ------------------------------------------------ */

struct gnl_req {
	size_t off, len;        /* bytes in the batch buffer */
	uint32_t seq;
	int err;                /* 0 or -errno after gnl_batch_run */
	unsigned retries;       /* ENOMEM retries this request took */
	void *tag;              /* caller's object */
	char ext[128];          /* kernel extended ack message, if any */
};

struct gnl_batch {
	uint8_t *buf;
	size_t len, cap;
	struct gnl_req *v;
	size_t n, capn;
	unsigned per_trip;          /* requests per sendmsg (default 256) */
	unsigned max_retries;       /* per request (default 200) */
	unsigned backoff_us;        /* first ENOMEM backoff (default 1000, doubles, max 100ms) */
	unsigned long retries;      /* total ENOMEM retries in the last run */
	unsigned long trips;        /* sendmsg calls in the last run */
	uint8_t *sbuf;              /* one trip's bytes (kept from run to run) */
	size_t scap;
	size_t *pend, *retry;       /* request indexes (kept from run to run) */
	size_t capi;
};

void gnl_batch_init(struct gnl_batch *b);
void gnl_batch_free(struct gnl_batch *b);
void gnl_batch_clear(struct gnl_batch *b);
/* Appends msg's bytes (msg stays the caller's). Adds NLM_F_REQUEST|NLM_F_ACK. */
int gnl_batch_add(struct gnl_batch *b, struct nl_msg *msg, void *tag);
/*
 * Sends every request, many per round trip, matching each ack to its request
 * by sequence number. ENOMEM answers are retried (after the rest of the trip)
 * with exponential backoff, up to max_retries each. Returns 0 when the
 * exchange worked (per-request errors are in v[i].err), or -errno when the
 * socket failed.
 */
int gnl_batch_run(struct gnl_sock *s, struct gnl_batch *b);

/* Sends one request and waits for its ack. ext (may be NULL) gets the extack text. */
int gnl_talk(struct gnl_sock *s, struct nl_msg *msg, char *ext, size_t extlen);

/* Dumps: cb is called for every message; a non-zero return stops with that value. */
typedef int (*gnl_dump_cb)(const struct nlmsghdr *h, void *arg);
int gnl_dump(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg);
/*
 * A dump the kernel may interrupt (NLM_F_DUMP_INTR: the table changed while
 * it was read, so what cb saw may be inconsistent): restart(rarg) forgets
 * what cb gathered, and after a backoff the whole dump is sent again, by
 * the policy of gnl_retry_intr below (GNL_DUMP_TRIES tries, 1 ms doubling
 * to 128 ms: at most ~1.3 s asleep). Returns as gnl_dump: -EAGAIN only when
 * every try was interrupted. *interrupted (may be NULL) gets how many were.
 */
#define GNL_DUMP_TRIES 16
#define GNL_DUMP_BACKOFF_US 1000
#define GNL_DUMP_BACKOFF_MAX_US 128000
int gnl_dump_restarting(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg,
			void (*restart)(void *rarg), void *rarg, unsigned *interrupted);
/*
 * The retry policy (pure but for the sleeps; exposed for tests): once(ctx)
 * until it returns other than -EAGAIN or p->tries calls were made; before
 * each new call restart(arg) and a sleep of p->first_us, doubling up to
 * p->max_us. Fills p->interrupted (calls that returned -EAGAIN) and
 * p->slept_us. Returns once's last result.
 */
struct gnl_retry {
	unsigned tries, first_us, max_us;
	unsigned interrupted;
	unsigned long slept_us;
};
int gnl_retry_intr(struct gnl_retry *p, int (*once)(void *ctx), void *ctx, void (*restart)(void *arg),
		   void *arg);
/*
 * One request that is not a dump (RTM_GET* of one object): its reply to cb,
 * then its ack. Returns the kernel's error (-ENODEV ...), cb's non-zero
 * return, or 0.
 */
int gnl_get(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg);

/*
 * Replies, one received datagram at a time (pure: the socket loops above use
 * these, and tests and the fuzzer feed them bytes). Messages are walked
 * with NLMSG_OK bounds; anything shorter than it claims ends the walk.
 */
/* The error of an NLMSG_ERROR message: 0 (an ack) or -errno; -EBADMSG when the
 * message is too short to hold a struct nlmsgerr, -EPROTO for a positive error. */
int gnl_msg_error(const struct nlmsghdr *h);
/* The extended-ack text (NLMSGERR_ATTR_MSG) of an NLMSG_ERROR into ext; "" when
 * there is none or the attributes do not fit in the message. */
void gnl_extack(const struct nlmsghdr *h, char *ext, size_t extlen);
/* Acks for requests idx[0..n) of b sent with sequence numbers seq0...: the
 * first answer to each pending one (err == 1) goes into its err and ext.
 * Returns how many it answered. */
size_t gnl_acks_scan(struct gnl_batch *b, const size_t *idx, size_t n, uint32_t seq0,
		     const void *buf, size_t len);
/* A dump's datagram (sequence seq): cb on each object until cb returns
 * non-zero (*stop). Returns 1 when the dump ended, with its result in *rc
 * (the error, cb's stop value, -EAGAIN when interrupted, or 0); 0 when more
 * is to come. *stop and *intr carry over between datagrams (start 0, false). */
int gnl_dump_scan(const void *buf, size_t len, uint32_t seq, gnl_dump_cb cb, void *arg,
		  int *stop, bool *intr, int *rc);
/* A single request's reply datagram, as gnl_dump_scan; ends at the ack. */
int gnl_get_scan(const void *buf, size_t len, uint32_t seq, gnl_dump_cb cb, void *arg, int *stop,
		 int *rc);

/* --- notifications ----------------------------------------------------- */

/* A non-blocking socket in netns subscribed to the RTNLGRP_* groups given. */
int gnl_open_monitor(struct gnl_sock **out, const char *netns, const unsigned *groups, size_t n,
		     char *err, size_t errlen);
/* The same on another netlink protocol (NETLINK_NETFILTER: nftables' NFNLGRP_NFTABLES). */
int gnl_open_monitor_proto(struct gnl_sock **out, const char *netns, int protocol, const unsigned *groups,
			   size_t n, char *err, size_t errlen);
/*
 * Hands every queued notification to cb without blocking. Returns the number
 * read, or -ENOBUFS when the kernel dropped some (the caller must resync).
 */
int gnl_read_notifications(struct gnl_sock *s, gnl_dump_cb cb, void *arg);

/* --- helpers --------------------------------------------------------------- */

/* Address: family + bytes. */
struct gnl_addr {
	int family;             /* 0 = absent, AF_INET, AF_INET6 */
	uint8_t len;            /* prefix length where it matters */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t raw[16];
	} a;
};

static inline size_t gnl_addr_bytes(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}
bool gnl_addr_eq(const struct gnl_addr *x, const struct gnl_addr *y);
/* "addr/len" (or "addr" when host is true). buf >= 64. */
char *gnl_addr_str(const struct gnl_addr *a, bool with_len, char *buf, size_t n);
int gnl_addr_parse(const char *s, struct gnl_addr *a);

/* Returns the ifindex of name in the socket's namespace, or -errno. */
int gnl_ifindex(struct gnl_sock *s, const char *name);
/*
 * The same without a netlink request: SIOCGIFINDEX on the socket, which the
 * kernel answers from its RCU name hash. An RTM_GETLINK builds the whole
 * link message and, on a machine whose namespaces are busy, took 13 ms at
 * the median and up to 276 ms at 100,000 routes (bench_cni, docs/
 * dataplane-kernel.md): an ADD's delta needs only the index.
 */
int gnl_ifindex_rcu(struct gnl_sock *s, const char *name);

/* Hex dump helper for tests / debugging: "0a 1b ..." into buf. */
char *gnl_hex(const void *p, size_t n, char *buf, size_t buflen);

#endif
