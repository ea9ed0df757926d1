/*
 * Golden-packet tests of the SRv6 TC programs through BPF_PROG_TEST_RUN:
 * bytes in, expected bytes and verdict out, one case per behaviour. Each test
 * runs in its own network namespace (check forks per test and the test
 * unshares), with real veths, a VPC routing table and permanent neighbours
 * so bpf_fib_lookup answers as on a node. Failures print a hex diff.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/dp/bpf/bpf_backend.h"
#include "agent/dp/bpf/bpf_dp.h"
#include "agent/dp/bpf/bpf_sync.h"
#include "tests/lib/gtest.h"

#define TC_ACT_OK       0
#define TC_ACT_SHOT     2
#define TC_ACT_REDIRECT 7

#define ARG_A  0x005    /* VPC A on this node */
#define ARG_B  0x006    /* VPC B: same addresses as A */
#define TABLE_A 16389
#define TABLE_B 16390

static const uint8_t BLOCK[6] = { 0xfc, 0x00, 0x00, 0x00, 0x00, 0x00 };
static const uint8_t NODE_ID[2] = { 0x00, 0x01 };
static const uint8_t MAC_UP_PEER[6] = { 0x02, 0xfa, 0, 0, 0, 0x02 }; /* fabric side */
static const uint8_t MAC_UP[6] = { 0x02, 0xfa, 0, 0, 0, 0x01 };
static const uint8_t MAC_HV1[6] = { 0x02, 0x00, 0, 0, 1, 0x01 };
static const uint8_t MAC_POD1[6] = { 0x02, 0x00, 0, 0, 1, 0x02 };
static const uint8_t MAC_HV2[6] = { 0x02, 0x00, 0, 0, 2, 0x01 };
static const uint8_t MAC_NH[6] = { 0x02, 0xfe, 0, 0, 0, 0x09 };  /* next hop toward remote SIDs */

static struct gbpf *g;
static int run_id; /* the runner's pid, for names a dying test may leave behind */
static int if_up, if_hv1, if_hv2;

/* ---- packet building (independent of the programs under test) ---- */

struct pkt {
	uint8_t b[2048];
	size_t n;
};

static void put(struct pkt *p, const void *d, size_t n)
{
	ck_assert_uint_le(p->n + n, sizeof(p->b));
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void eth(struct pkt *p, const uint8_t *dst, const uint8_t *src, uint16_t proto)
{
	uint16_t be = htons(proto);

	put(p, dst, 6);
	put(p, src, 6);
	put(p, &be, 2);
}

static void a6(const char *s, uint8_t out[16])
{
	ck_assert_int_eq(inet_pton(AF_INET6, s, out), 1);
}

static void ip6(struct pkt *p, uint8_t tclass, uint32_t flow, uint16_t plen, uint8_t nh,
		uint8_t hop, const char *src, const char *dst)
{
	uint8_t h[40];
	uint32_t w = htonl(6u << 28 | (uint32_t)tclass << 20 | (flow & 0xfffff));
	uint16_t l = htons(plen);

	memcpy(h, &w, 4);
	memcpy(h + 4, &l, 2);
	h[6] = nh;
	h[7] = hop;
	a6(src, h + 8);
	a6(dst, h + 24);
	put(p, h, 40);
}

static uint16_t csum(const uint8_t *d, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)d[i] << 8 | d[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void ip4(struct pkt *p, uint8_t tos, uint16_t tot, uint8_t proto, uint8_t ttl,
		const char *src, const char *dst)
{
	uint8_t h[20] = { 0x45, tos };
	uint16_t c;

	h[2] = tot >> 8;
	h[3] = tot & 0xff;
	h[4] = 0x12;
	h[5] = 0x34; /* id */
	h[6] = 0x40; /* DF */
	h[8] = ttl;
	h[9] = proto;
	ck_assert_int_eq(inet_pton(AF_INET, src, h + 12), 1);
	ck_assert_int_eq(inet_pton(AF_INET, dst, h + 16), 1);
	c = csum(h, 20);
	h[10] = c >> 8;
	h[11] = c & 0xff;
	put(p, h, 20);
}

/* 8-byte UDP header + 24 bytes of payload: 32 bytes of L4. */
#define L4_LEN 32
static void l4(struct pkt *p)
{
	uint8_t d[L4_LEN];

	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(0xa0 + i);
	d[0] = 0x30; d[1] = 0x39; d[2] = 0x00; d[3] = 0x35; d[4] = 0; d[5] = L4_LEN; /* ports, len */
	put(p, d, sizeof(d));
}

/* Inner packets, as a pod sends them (no L2). */
static void inner6(struct pkt *p, uint8_t hop, const char *src, const char *dst)
{
	ip6(p, 0xb8, 0x12345, L4_LEN, 17, hop, src, dst);
	l4(p);
}

static void inner4(struct pkt *p, uint8_t ttl, const char *src, const char *dst)
{
	ip4(p, 0x10, 20 + L4_LEN, 17, ttl, src, dst);
	l4(p);
}

/* ---- running and comparing ---- */

static void hexdump_diff(const char *label, const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	size_t n = an > bn ? an : bn;

	printf("%s (got %zu bytes, want %zu); lines marked * differ\n", label, an, bn);
	for (size_t off = 0; off < n; off += 16) {
		int differs = 0;

		for (size_t i = off; i < off + 16 && i < n; i++)
			if (i >= an || i >= bn || a[i] != b[i])
				differs = 1;
		printf("%c %04zx  got ", differs ? '*' : ' ', off);
		for (size_t i = off; i < off + 16; i++)
			i < an ? printf("%02x", a[i]) : printf("  ");
		printf("  want ");
		for (size_t i = off; i < off + 16 && i < bn; i++)
			printf(i < an && a[i] == b[i] ? "%02x" : "[%02x]", b[i]);
		printf("\n");
	}
	fflush(stdout);
}

static int run(enum gbpf_prog prog, int ifindex, const struct pkt *in, struct pkt *out)
{
	struct __sk_buff ctx = { .ifindex = (uint32_t)ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in->b, .data_size_in = (uint32_t)in->n,
		    .data_out = out->b, .data_size_out = sizeof(out->b), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	ck_assert_msg(!bpf_prog_test_run_opts(gbpf_prog_fd(g, prog), &o), "test run: %s",
		      strerror(errno));
	out->n = o.data_size_out;
	return (int)o.retval;
}

static void expect(const char *what, int verdict, int want_verdict, const struct pkt *got,
		   const struct pkt *want)
{
	int same = got->n == want->n && !memcmp(got->b, want->b, got->n);

	if (!same)
		hexdump_diff(what, got->b, got->n, want->b, want->n);
	ck_assert_msg(verdict == want_verdict, "%s: verdict %d, want %d", what, verdict, want_verdict);
	ck_assert_msg(same, "%s: packet differs (hex diff above)", what);
}

static uint64_t drops(int reason)
{
	uint64_t d[GBPF_DROP_MAX];

	ck_assert_int_eq(gbpf_drops(g, d), 0);
	return d[reason];
}

static uint64_t drops_total(void)
{
	uint64_t d[GBPF_DROP_MAX], t = 0;

	ck_assert_int_eq(gbpf_drops(g, d), 0);
	for (int i = 0; i < GBPF_DROP_MAX; i++)
		t += d[i];
	return t;
}

/* ---- the node under test ---- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	ck_assert_msg(rc == 0, "'%s' exited %d", cmd, rc);
}

static void sysctl(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f, "open %s: %s", path, strerror(errno));
	fputs(v, f);
	ck_assert_int_eq(fclose(f), 0);
}

static const char *mac(const uint8_t *m)
{
	static char s[4][18];
	static int i;

	i = (i + 1) % 4;
	snprintf(s[i], sizeof(s[i]), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return s[i];
}

/*
 * A node in a private netns: uplink up0 (peer fab0), two host veths hv1/hv2
 * (pod ends pv1/pv2) in VPCs A and B, both holding the pod address
 * fd00:a::2 / 10.1.0.2 in their own tables, and a main-table route toward
 * the remote SIDs via up0.
 */
static void setup(void)
{
	struct gbpf_opts o = { .pin_root = "" };
	struct gbpf_cfg cfg = { .flags = GBPF_CFG_VALID };
	char err[512];

	g = NULL;
	if (geteuid())
		return;
	ck_assert_msg(!unshare(CLONE_NEWNET), "unshare netns: %s", strerror(errno));
	sh("ip link set lo up");
	sh("ip link add up0 address %s type veth peer name fab0 address %s", mac(MAC_UP),
	   mac(MAC_UP_PEER));
	sh("ip link add hv1 address %s type veth peer name pv1 address %s", mac(MAC_HV1),
	   mac(MAC_POD1));
	sh("ip link add hv2 address %s type veth peer name pv2", mac(MAC_HV2));
	sh("for l in up0 fab0 hv1 pv1 hv2 pv2; do ip link set $l up; done");
	sysctl("/proc/sys/net/ipv6/conf/all/forwarding", "1");
	sysctl("/proc/sys/net/ipv4/ip_forward", "1");
	sh("ip -6 addr add fc00:0:0:1::1/64 dev up0 nodad");
	sh("ip -6 route add fc00::/32 via fc00:0:0:1::fe dev up0");
	sh("ip -6 neigh add fc00:0:0:1::fe lladdr %s dev up0 nud permanent", mac(MAC_NH));
	sh("ip -6 route add fd00:a::2/128 dev hv1 table %d", TABLE_A);
	sh("ip route add 10.1.0.2/32 dev hv1 table %d", TABLE_A);
	sh("ip -6 neigh add fd00:a::2 lladdr %s dev hv1 nud permanent", mac(MAC_POD1));
	sh("ip neigh add 10.1.0.2 lladdr %s dev hv1 nud permanent", mac(MAC_POD1));
	sh("ip -6 route add fd00:a::2/128 dev hv2 table %d", TABLE_B);
	if_up = (int)if_nametoindex("up0");
	if_hv1 = (int)if_nametoindex("hv1");
	if_hv2 = (int)if_nametoindex("hv2");

	ck_assert_msg(!gbpf_open(&g, &o, err, sizeof(err)), "%s", err);
	memcpy(cfg.block, BLOCK, 6);
	memcpy(cfg.node_id, NODE_ID, 2);
	a6("fc00:0:0:1::1", cfg.src);
	ck_assert_msg(!gbpf_set_cfg(g, &cfg, err, sizeof(err)), "%s", err);
	ck_assert_msg(!gbpf_set_vpc(g, ARG_A, TABLE_A, err, sizeof(err)), "%s", err);
	ck_assert_msg(!gbpf_set_vpc(g, ARG_B, TABLE_B, err, sizeof(err)), "%s", err);
	ck_assert_msg(!gbpf_set_iface(g, (uint32_t)if_hv1, ARG_A, err, sizeof(err)), "%s", err);
	ck_assert_msg(!gbpf_set_iface(g, (uint32_t)if_hv2, ARG_B, err, sizeof(err)), "%s", err);
}

static void teardown(void)
{
	gbpf_close(g); /* the netns goes with the forked test process */
	g = NULL;
}

#define NEED_ROOT()                                                              \
	do {                                                                     \
		if (geteuid())                                                   \
			GT_SKIP("needs root (netns, BPF_PROG_TEST_RUN)");       \
	} while (0)

/* Our SID for VPC arg on this node: fc00:0:0:1:e<arg>:: */
static const char *sid_of(uint16_t arg, char *buf)
{
	sprintf(buf, "fc00:0:0:1:e%03x::", arg);
	return buf;
}

/* An SRv6 packet arriving on the uplink. */
static void outer_in(struct pkt *p, const char *dst_sid, uint8_t nh, const struct pkt *inner)
{
	eth(p, MAC_UP, MAC_UP_PEER, 0x86dd);
	ip6(p, 0, 0, (uint16_t)inner->n, nh, 61, "fc00:0:0:2::1", dst_sid);
	put(p, inner->b, inner->n);
}

/* ---- decap ---- */

START_TEST(decap_hit_ipv6)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, winner = { 0 };
	struct gbpf_vpc_stats st;
	char sid[64];
	int v;

	NEED_ROOT();
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	/* Inner as forwarded: one hop less, L2 toward the pod's MAC from the host veth. */
	inner6(&winner, 63, "fd00:a::9:1", "fd00:a::2");
	eth(&want, MAC_POD1, MAC_HV1, 0x86dd);
	put(&want, winner.b, winner.n);
	expect("decap IPv6 in SRv6", v, TC_ACT_REDIRECT, &out, &want);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.decap_pkts, 1);
	ck_assert_uint_eq(st.decap_bytes, want.n);
	ck_assert_uint_eq(drops_total(), 0);
}
END_TEST

START_TEST(decap_hit_ipv4)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, winner = { 0 };
	struct gbpf_vpc_stats st;
	char sid[64];
	int v;

	NEED_ROOT();
	inner4(&inner, 64, "10.1.9.1", "10.1.0.2");
	outer_in(&in, sid_of(ARG_A, sid), 4, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	inner4(&winner, 63, "10.1.9.1", "10.1.0.2"); /* checksum recomputed from scratch */
	eth(&want, MAC_POD1, MAC_HV1, 0x0800);
	put(&want, winner.b, winner.n);
	expect("decap IPv4 in SRv6", v, TC_ACT_REDIRECT, &out, &want);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.decap_pkts, 1);
}
END_TEST

/* Overlapping pod address in VPC B: the argument picks B's table and host veth. */
START_TEST(decap_vpc_by_argument)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, winner = { 0 };
	struct gbpf_vpc_stats a, b;
	char sid[64];
	int v;

	NEED_ROOT();
	sh("ip -6 neigh add fd00:a::2 lladdr 02:00:00:00:02:02 dev hv2 nud permanent");
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	outer_in(&in, sid_of(ARG_B, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	inner6(&winner, 63, "fd00:a::9:1", "fd00:a::2");
	eth(&want, (const uint8_t[]){ 0x02, 0, 0, 0, 2, 2 }, MAC_HV2, 0x86dd);
	put(&want, winner.b, winner.n);
	expect("decap into VPC B", v, TC_ACT_REDIRECT, &out, &want);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &a), 0);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_B, &b), 0);
	ck_assert_uint_eq(a.decap_pkts, 0);
	ck_assert_uint_eq(b.decap_pkts, 1);
}
END_TEST

START_TEST(decap_foreign_sid_passes_untouched)
{
	static const char *const dsts[] = {
		"fc00:0:0:2:e005::",   /* another node's SID in our block */
		"fc01:0:0:1:e005::",   /* another block, our node id */
		"fc00:0:0:1:d005::",   /* our node, End.DX4 function: the kernel's */
		"fc00:0:0:1::1",       /* our uplink address */
	};
	struct pkt inner = { 0 };

	NEED_ROOT();
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		struct pkt in = { 0 }, out = { 0 };
		char what[96];
		int v;

		outer_in(&in, dsts[i], 41, &inner);
		v = run(GBPF_PROG_DECAP, if_up, &in, &out);
		snprintf(what, sizeof(what), "foreign destination %s", dsts[i]);
		expect(what, v, TC_ACT_OK, &out, &in);
	}
	/* Our SID with an SRH (full encap, not reduced): left to the kernel's seg6local. */
	{
		struct pkt srh = { 0 }, in = { 0 }, out = { 0 };
		uint8_t rh[24] = { 41, 2, 4, 0, 0, 0, 0, 0 }; /* next 41, len 2, type 4, SL 0 */
		char sid[64];
		int v;

		a6(sid_of(ARG_A, sid), rh + 8);
		put(&srh, rh, sizeof(rh));
		put(&srh, inner.b, inner.n);
		outer_in(&in, sid, 43, &srh);
		v = run(GBPF_PROG_DECAP, if_up, &in, &out);
		expect("our SID with an SRH", v, TC_ACT_OK, &out, &in);
	}
	ck_assert_uint_eq(drops_total(), 0);
}
END_TEST

START_TEST(decap_non_ipv6_passes_untouched)
{
	struct pkt in = { 0 }, out = { 0 };
	int v;

	NEED_ROOT();
	eth(&in, MAC_UP, MAC_UP_PEER, 0x0800);
	inner4(&in, 64, "10.9.9.9", "10.1.0.2");
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	expect("plain IPv4 on the uplink", v, TC_ACT_OK, &out, &in);
}
END_TEST

START_TEST(decap_unknown_argument_dropped)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	char sid[64];
	int v;

	NEED_ROOT();
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	outer_in(&in, sid_of(0x7ff, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_UNKNOWN_ARG), 1);
	ck_assert_uint_eq(drops_total(), 1);
}
END_TEST

START_TEST(decap_malformed_inner_dropped)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	struct gbpf_vpc_stats st;
	char sid[64];
	int v;

	NEED_ROOT();
	/* Next header says IPv6, the payload is IPv4. */
	inner4(&inner, 64, "10.1.9.1", "10.1.0.2");
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_MALFORMED_INNER), 1);

	/* IPv4 inner with a broken header checksum. */
	memset(&in, 0, sizeof(in));
	inner.b[10] ^= 0x55;
	outer_in(&in, sid_of(ARG_A, sid), 4, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_MALFORMED_INNER), 2);

	/* Inner IPv6 claiming more payload than the outer carries. */
	memset(&in, 0, sizeof(in));
	memset(&inner, 0, sizeof(inner));
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	inner.b[5] += 8;
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_MALFORMED_INNER), 3);

	/* Outer payload length beyond the frame. */
	memset(&in, 0, sizeof(in));
	memset(&inner, 0, sizeof(inner));
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::2");
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	in.b[14 + 5] += 16;
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_MALFORMED_INNER), 4);

	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.drop_pkts, 4);
	ck_assert_uint_eq(st.decap_pkts, 0);
}
END_TEST

START_TEST(decap_bad_nexthdr_dropped)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	char sid[64];
	int v;

	NEED_ROOT();
	l4(&inner);
	outer_in(&in, sid_of(ARG_A, sid), 17, &inner); /* UDP straight to the SID */
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_BAD_NEXTHDR), 1);
}
END_TEST

START_TEST(decap_ttl_and_no_route_dropped)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	char sid[64];
	int v;

	NEED_ROOT();
	inner6(&inner, 1, "fd00:a::9:1", "fd00:a::2");
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_TTL), 1);

	memset(&inner, 0, sizeof(inner));
	memset(&in, 0, sizeof(in));
	inner6(&inner, 64, "fd00:a::9:1", "fd00:a::77"); /* nobody in VPC A has it */
	outer_in(&in, sid_of(ARG_A, sid), 41, &inner);
	v = run(GBPF_PROG_DECAP, if_up, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_FIB), 1);
}
END_TEST

/* ---- encap ---- */

#define REMOTE_SID_A "fc00:0:0:2:e005::"
#define REMOTE_SID_B "fc00:0:0:3:e009::"

static void add_route(uint16_t arg, int family, const char *prefix, unsigned plen,
		      const char *sid, uint32_t flags)
{
	struct gbpf_route_key k;
	struct gbpf_route r = { .flags = flags };
	uint8_t addr[16] = { 0 };
	char err[512];

	ck_assert_int_eq(inet_pton(family, prefix, addr), 1);
	gbpf_route_key(&k, arg, family, addr, plen);
	if (sid)
		a6(sid, r.sid);
	if (flags & GBPF_RT_L2) {
		r.ifindex = (uint32_t)if_up;
		memcpy(r.smac, MAC_UP, 6);
		memcpy(r.dmac, MAC_NH, 6);
	}
	ck_assert_msg(!gbpf_set_route(g, &k, &r, err, sizeof(err)), "%s", err);
}

/* What the uplink must carry: L2 to the next hop + outer IPv6 + inner. */
static void encap_want(struct pkt *w, uint8_t tclass, uint32_t flow, uint8_t nh, uint8_t hop,
		       const char *sid, const struct pkt *inner)
{
	eth(w, MAC_NH, MAC_UP, 0x86dd);
	ip6(w, tclass, flow, (uint16_t)inner->n, nh, hop, "fc00:0:0:1::1", sid);
	put(w, inner->b, inner->n);
}

static void pod_frame(struct pkt *p, uint16_t proto, const struct pkt *inner)
{
	eth(p, MAC_HV1, MAC_POD1, proto);
	put(p, inner->b, inner->n);
}

START_TEST(encap_hit_ipv6)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	struct gbpf_vpc_stats st;
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET6, "fd00:a:0:2::", 64, REMOTE_SID_A, GBPF_RT_L2);
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	/* Kernel seg6 defaults: tclass, flow label and (forwarded) hop limit from inside. */
	inner6(&fwd, 63, "fd00:a::2", "fd00:a:0:2::5");
	encap_want(&want, 0xb8, 0x12345, 41, 63, REMOTE_SID_A, &fwd);
	expect("encap IPv6 toward " REMOTE_SID_A, v, TC_ACT_REDIRECT, &out, &want);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.encap_pkts, 1);
	ck_assert_uint_eq(st.encap_bytes, want.n);
}
END_TEST

START_TEST(encap_hit_ipv4)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET, "10.1.2.0", 24, REMOTE_SID_A, GBPF_RT_L2);
	inner4(&inner, 64, "10.1.0.2", "10.1.2.5");
	pod_frame(&in, 0x0800, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	inner4(&fwd, 63, "10.1.0.2", "10.1.2.5");
	encap_want(&want, 0, 0, 4, 64, REMOTE_SID_A, &fwd);
	expect("encap IPv4 toward " REMOTE_SID_A, v, TC_ACT_REDIRECT, &out, &want);
}
END_TEST

/* Without precomputed L2 the program asks the main table for the SID's next hop. */
START_TEST(encap_fib_next_hop)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET6, "fd00:a:0:2::", 64, REMOTE_SID_A, 0);
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	inner6(&fwd, 63, "fd00:a::2", "fd00:a:0:2::5");
	encap_want(&want, 0xb8, 0x12345, 41, 63, REMOTE_SID_A, &fwd);
	expect("encap with fib next hop", v, TC_ACT_REDIRECT, &out, &want);
}
END_TEST

/* Same destination in two VPCs: each attachment's VPC picks its own SID; longest prefix wins. */
START_TEST(encap_vpc_isolation_and_lpm)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET6, "fd00:a:0:2::", 64, REMOTE_SID_A, GBPF_RT_L2);
	add_route(ARG_B, AF_INET6, "fd00:a::", 32, REMOTE_SID_B, GBPF_RT_L2);
	add_route(ARG_B, AF_INET6, "fd00:a:0:2::5", 128, "fc00:0:0:4:e00a::", GBPF_RT_L2);
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	inner6(&fwd, 63, "fd00:a::2", "fd00:a:0:2::5");

	eth(&in, MAC_HV2, MAC_POD1, 0x86dd);
	put(&in, inner.b, inner.n);
	v = run(GBPF_PROG_ENCAP, if_hv2, &in, &out);
	encap_want(&want, 0xb8, 0x12345, 41, 63, "fc00:0:0:4:e00a::", &fwd);
	expect("VPC B, /128 over /32", v, TC_ACT_REDIRECT, &out, &want);

	memset(&in, 0, sizeof(in));
	memset(&want, 0, sizeof(want));
	inner.b[39] = 6; /* fd00:a:0:2::6: only B's /32 covers it */
	fwd.b[39] = 6;
	eth(&in, MAC_HV2, MAC_POD1, 0x86dd);
	put(&in, inner.b, inner.n);
	v = run(GBPF_PROG_ENCAP, if_hv2, &in, &out);
	encap_want(&want, 0xb8, 0x12345, 41, 63, REMOTE_SID_B, &fwd);
	expect("VPC B, /32", v, TC_ACT_REDIRECT, &out, &want);

	memset(&in, 0, sizeof(in));
	memset(&want, 0, sizeof(want));
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	encap_want(&want, 0xb8, 0x12345, 41, 63, REMOTE_SID_A, &fwd);
	expect("VPC A, same address", v, TC_ACT_REDIRECT, &out, &want);
}
END_TEST

START_TEST(encap_local_destination_passes)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	struct gbpf_vpc_stats st;
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET6, "fd00:a::", 48, REMOTE_SID_A, GBPF_RT_L2);
	add_route(ARG_A, AF_INET6, "fd00:a::3", 128, NULL, GBPF_RT_LOCAL);
	inner6(&inner, 64, "fd00:a::2", "fd00:a::3");
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	expect("local pod destination", v, TC_ACT_OK, &out, &in);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.local_pkts, 1);
	ck_assert_uint_eq(st.encap_pkts, 0);

	/* No route at all (not in the map): also the kernel's. */
	memset(&in, 0, sizeof(in));
	memset(&inner, 0, sizeof(inner));
	inner4(&inner, 64, "10.1.0.2", "192.168.7.7");
	pod_frame(&in, 0x0800, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	expect("destination outside every prefix", v, TC_ACT_OK, &out, &in);

	/* An interface that is no attachment of ours. */
	memset(&in, 0, sizeof(in));
	memset(&inner, 0, sizeof(inner));
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_up, &in, &out);
	expect("not an attachment", v, TC_ACT_OK, &out, &in);
	ck_assert_uint_eq(drops_total(), 0);
}
END_TEST

/*
 * The VPC's egress default toward this node's shard (GBPF_RT_SHARD): the
 * packet goes to the kernel untouched, marked with its VPC (the mark the
 * shard's decap gives, GBPF_MARK_SHARD | arg, other mark bits kept); a more
 * specific remote still wins; a VPC without the default is not marked. The
 * entries are the ones gbpf_shard_routes derives from the model.
 */
START_TEST(encap_egress_default_marks_for_the_shard)
{
	struct gdp_vpc va = { .id = "vpcA", .arg = ARG_A, .table = TABLE_A };
	struct gdp_vpc vb = { .id = "vpcB", .arg = ARG_B, .table = TABLE_B };
	struct gdp_attachment at = { .vpc = "vpcA", .id = "att1", .host_ifname = "hv1", .n_addrs = 1,
				     .egress = GDP_FAM_V6 | GDP_FAM_V4 };
	struct gbpf_route_key k[8];
	struct gbpf_route v[8];
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	struct __sk_buff ctx = { .ifindex = 0, .mark = 0x40000000 }, cout = { 0 };
	struct gbpf_vpc_stats st;
	struct gdp_state s;
	char err[512], sid[INET6_ADDRSTRLEN];
	size_t n;

	NEED_ROOT();
	gdp_state_init(&s);
	ck_assert_int_eq(gdp_state_add_vpc(&s, &va), 0);
	ck_assert_int_eq(gdp_state_add_vpc(&s, &vb), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::2", &at.addrs[0]), 0);
	ck_assert_int_eq(gdp_state_add_attachment(&s, &at), 0);
	/* no shard: nothing */
	ck_assert_uint_eq(gbpf_shard_routes(&s, k, v, 8), 0);
	s.egress.have = true;
	a6("fc00:0:0:1:f000::", s.egress.sid.s6_addr);
	a6("2001:db8:f::50:1", s.egress.addr6.s6_addr);
	/* IPv6 only while the shard has no IPv4 address */
	ck_assert_uint_eq(gbpf_shard_routes(&s, k, v, 8), 1);
	s.egress.have_v4 = true;
	inet_pton(AF_INET, "203.0.113.51", &s.egress.addr4);
	n = gbpf_shard_routes(&s, k, v, 8);
	ck_assert_uint_eq(n, 2); /* vpcB has no attachment declaring egress */
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(k[i].prefixlen, GBPF_ROUTE_KEY_BITS);
		ck_assert_uint_eq(ntohs(k[i].arg), ARG_A);
		ck_assert_uint_eq(v[i].flags, GBPF_RT_SHARD);
		uint8_t want_sid[16];

		/* bytes 10-11: function 0xD (IPv4 inner) / 0xC (IPv6 inner), then the VPC's argument */
		a6(k[i].family == GBPF_AF_INET ? "fc00:0:0:1:f000:d005::" : "fc00:0:0:1:f000:c005::", want_sid);
		inet_ntop(AF_INET6, v[i].sid, sid, sizeof(sid));
		ck_assert_msg(!memcmp(v[i].sid, want_sid, 16), "family %u: sid %s", k[i].family, sid);
		ck_assert_msg(!gbpf_set_route(g, &k[i], &v[i], err, sizeof(err)), "%s", err);
	}
	ck_assert(k[0].family != k[1].family);
	add_route(ARG_A, AF_INET6, "fd00:a:0:2::", 64, REMOTE_SID_A, GBPF_RT_L2);

	for (int f = 0; f < 2; f++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_out = out.b, .data_size_out = sizeof(out.b),
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &cout,
			    .ctx_size_out = sizeof(cout), .repeat = 1);

		memset(&in, 0, sizeof(in));
		memset(&inner, 0, sizeof(inner));
		if (f)
			inner4(&inner, 64, "10.1.0.2", "203.0.113.254");
		else
			inner6(&inner, 64, "fd00:a::2", "2001:db8:f::ff");
		pod_frame(&in, f ? 0x0800 : 0x86dd, &inner);
		ctx.ifindex = (uint32_t)if_hv1;
		o.data_in = in.b;
		o.data_size_in = (uint32_t)in.n;
		ck_assert_msg(!bpf_prog_test_run_opts(gbpf_prog_fd(g, GBPF_PROG_ENCAP), &o), "test run: %s",
			      strerror(errno));
		out.n = o.data_size_out;
		expect(f ? "IPv4 toward the internet" : "IPv6 toward the internet", (int)o.retval, TC_ACT_OK, &out, &in);
		ck_assert_uint_eq(cout.mark, 0x40000000u | GBPF_MARK_SHARD | ARG_A);
	}
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.encap_pkts, 2);

	/* a remote inside the VPC still wins over the default */
	memset(&in, 0, sizeof(in));
	memset(&inner, 0, sizeof(inner));
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	pod_frame(&in, 0x86dd, &inner);
	{
		int vr = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);

		inner6(&fwd, 63, "fd00:a::2", "fd00:a:0:2::5");
		encap_want(&want, 0xb8, 0x12345, 41, 63, REMOTE_SID_A, &fwd);
		expect("remote inside the VPC, not the shard", vr, TC_ACT_REDIRECT, &out, &want);
	}
	ck_assert_uint_eq(drops_total(), 0);
	gdp_state_free(&s);
}
END_TEST

/* Above the uplink MTU once wrapped (and not GSO): counted, not lost silently. */
START_TEST(encap_too_big_dropped)
{
	struct pkt inner = { 0 }, in = { 0 }, out = { 0 };
	struct gbpf_vpc_stats st;
	int v;

	NEED_ROOT();
	add_route(ARG_A, AF_INET6, "fd00:a:0:2::", 64, REMOTE_SID_A, GBPF_RT_L2);
	add_route(ARG_A, AF_INET6, "fd00:a:0:3::", 64, REMOTE_SID_A, 0);
	sh("ip link set up0 mtu 1280");
	inner6(&inner, 64, "fd00:a::2", "fd00:a:0:2::5");
	while (inner.n < 1260)
		l4(&inner); /* 1266 bytes inside, 1306 wrapped */
	inner.b[4] = (uint8_t)((inner.n - 40) >> 8);
	inner.b[5] = (uint8_t)(inner.n - 40);
	pod_frame(&in, 0x86dd, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_TOO_BIG), 1);
	/* Same through the fib next-hop path. */
	in.b[14 + 24 + 7] = 3; /* fd00:a:0:3::5 */
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &out);
	ck_assert_int_eq(v, TC_ACT_SHOT);
	ck_assert_uint_eq(drops(GBPF_DROP_TOO_BIG), 2);
	ck_assert_int_eq(gbpf_vpc_stats(g, ARG_A, &st), 0);
	ck_assert_uint_eq(st.encap_pkts, 0);
	ck_assert_uint_eq(st.drop_pkts, 2);
}
END_TEST

/* Round trip: what encap emits, the far node's decap turns back into the inner packet. */
START_TEST(encap_then_decap_round_trip)
{
	struct pkt inner = { 0 }, in = { 0 }, wire = { 0 }, out = { 0 }, want = { 0 }, fwd = { 0 };
	int v;

	NEED_ROOT();
	/* Pretend the remote is ourselves: SID of VPC A on this node. */
	add_route(ARG_A, AF_INET, "10.1.0.2", 32, "fc00:0:0:1:e005::", GBPF_RT_L2);
	inner4(&inner, 64, "10.1.0.9", "10.1.0.2");
	pod_frame(&in, 0x0800, &inner);
	v = run(GBPF_PROG_ENCAP, if_hv1, &in, &wire);
	ck_assert_int_eq(v, TC_ACT_REDIRECT);
	v = run(GBPF_PROG_DECAP, if_up, &wire, &out);
	inner4(&fwd, 62, "10.1.0.9", "10.1.0.2");
	eth(&want, MAC_POD1, MAC_HV1, 0x0800);
	put(&want, fwd.b, fwd.n);
	expect("encap then decap", v, TC_ACT_REDIRECT, &out, &want);
}
END_TEST

/* ---- loader: pins, layouts, preflight ---- */

START_TEST(pinned_maps_survive_and_bad_layout_rebuilds)
{
	char root[128], path[300], err[512];
	struct gbpf_opts o = { .pin_root = root };
	struct gbpf_route_key k;
	struct gbpf_route r = { .flags = GBPF_RT_LOCAL }, have;
	uint8_t a[16] = { 0 };
	struct gbpf *p;
	int fd;

	NEED_ROOT();
	snprintf(root, sizeof(root), "/sys/fs/bpf/galactic-test-%d", run_id);
	gbpf_unpin_all(root, err, sizeof(err)); /* a previous failure's */
	a6("fd00:a::7", a);
	gbpf_route_key(&k, ARG_A, AF_INET6, a, 128);
	ck_assert_msg(!gbpf_open(&p, &o, err, sizeof(err)), "%s", err);
	ck_assert(gbpf_maps_fresh(p));
	ck_assert_msg(!gbpf_set_route(p, &k, &r, err, sizeof(err)), "%s", err);
	gbpf_close(p);

	/* Same layout: the entry is still there. */
	ck_assert_msg(!gbpf_open(&p, &o, err, sizeof(err)), "%s", err);
	ck_assert(!gbpf_maps_fresh(p));
	ck_assert_int_eq(bpf_map_lookup_elem(gbpf_map_fd(p, GBPF_MAP_ROUTES), &k, &have), 0);
	ck_assert_uint_eq(have.flags, GBPF_RT_LOCAL);
	gbpf_close(p);

	/* A map pinned under our name with another shape: rebuilt, not reused, not fatal. */
	snprintf(path, sizeof(path), "%s/v%d/gbpf_routes", root, GBPF_BPF_LAYOUT);
	ck_assert_int_eq(unlink(path), 0);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "wrong", 4, 8, 4, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bpf_obj_pin(fd, path), 0);
	close(fd);
	/* And an older layout's directory. */
	snprintf(path, sizeof(path), "%s/v0", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_msg(!gbpf_open(&p, &o, err, sizeof(err)), "%s", err);
	ck_assert(gbpf_maps_fresh(p));
	ck_assert_int_eq(gbpf_stale_layouts(p), 1);
	ck_assert_int_ne(bpf_map_lookup_elem(gbpf_map_fd(p, GBPF_MAP_ROUTES), &k, &have), 0);
	ck_assert_msg(!gbpf_prune_layouts(p, err, sizeof(err)), "%s", err);
	ck_assert_int_ne(access(path, F_OK), 0);
	gbpf_close(p);
	ck_assert_msg(!gbpf_unpin_all(root, err, sizeof(err)), "%s", err);
	ck_assert_int_ne(access(root, F_OK), 0);
}
END_TEST

START_TEST(preflight_passes_and_names_what_it_checked)
{
	char why[512] = "untouched";
	int e;

	NEED_ROOT();
	e = gbpf_preflight(NULL, why, sizeof(why));
	/* This kernel (6.18) has everything; a failure must say what is missing. */
	ck_assert_msg(e == 0, "preflight: %s", why);
	ck_assert_str_eq(why, "untouched");
}
END_TEST

/* Backend choice: refuse with the reason, or fall back to the kernel backend when told to. */
START_TEST(choose_refuses_or_falls_back)
{
	char why[512];

	NEED_ROOT();
	ck_assert_ptr_eq(gdp_bpf_choose("bpf", false, NULL, why, sizeof(why)), &gdp_bpf_backend);
	ck_assert_ptr_eq(gdp_bpf_choose("auto", false, NULL, why, sizeof(why)), &gdp_bpf_backend);
	ck_assert_ptr_eq(gdp_backend_find("bpf"), &gdp_bpf_backend);
	ck_assert_ptr_eq(gdp_bpf_choose("kernel", false, NULL, why, sizeof(why)), &gdp_kernel_backend);
	ck_assert_ptr_null(gdp_bpf_choose("xdp", true, NULL, why, sizeof(why)));
	ck_assert_msg(strstr(why, "unknown datapath mode"), "%s", why);
	/* A pin root that is no bpffs makes the bpf backend unusable here. */
	ck_assert_ptr_null(gdp_bpf_choose("bpf", false, "/tmp/not-bpffs", why, sizeof(why)));
	ck_assert_msg(strstr(why, "refused") && strstr(why, "not on a bpffs"), "%s", why);
	ck_assert_ptr_eq(gdp_bpf_choose("bpf", true, "/tmp/not-bpffs", why, sizeof(why)),
			 &gdp_kernel_backend);
	ck_assert_msg(strstr(why, "using the kernel backend"), "%s", why);
	ck_assert_ptr_eq(gdp_bpf_choose("auto", false, "/tmp/not-bpffs", why, sizeof(why)),
			 &gdp_kernel_backend);
}
END_TEST

START_TEST(drop_reasons_have_names)
{
	for (int i = 0; i < GBPF_DROP_MAX; i++) {
		ck_assert_ptr_nonnull(gbpf_drop_name(i));
		ck_assert_str_ne(gbpf_drop_name(i), "?");
	}
	ck_assert_str_eq(gbpf_drop_name(GBPF_DROP_MAX), "?");
}
END_TEST

/* Model -> maps: adds, keeps, removes, fails duplicates alone, local addresses win. */
static void remote(struct gdp_state *s, const char *vpc, const char *prefix, uint16_t node)
{
	struct gdp_remote r = { 0 };
	struct gdp_node far = { .block = { 0xfc, 0, 0, 0, 0, 0 }, .node_id = node };

	ck_assert_int_eq(gdp_remote_set_vpc(&r, vpc), 0);
	ck_assert_int_eq(gdp_prefix_parse(prefix, &r.prefix), 0);
	gdp_sid(&far, GDP_FN_DECAP, 5, &r.sid);
	ck_assert_int_eq(gdp_state_add_remote(s, &r), 0);
}

static const struct gdp_result *result(const struct gdp_results *r, enum gdp_obj_kind k,
				       const char *vpc, const char *key)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].kind == k && !strcmp(r->v[i].vpc, vpc) && !strcmp(r->v[i].key, key))
			return &r->v[i];
	return NULL;
}

static size_t trie_entries(void)
{
	struct gbpf_route_key k, *prev = NULL, cur;
	size_t n = 0;

	while (!bpf_map_get_next_key(gbpf_map_fd(g, GBPF_MAP_ROUTES), prev, &k)) {
		cur = k;
		prev = &cur;
		n++;
	}
	return n;
}

START_TEST(sync_model_to_maps)
{
	struct gdp_vpc va = { .id = "vpcA", .arg = ARG_A, .table = TABLE_A };
	struct gdp_vpc vb = { .id = "vpcB", .arg = ARG_B, .table = TABLE_B };
	struct gdp_attachment at = { .vpc = "vpcA", .id = "att1", .host_ifname = "hv1", .n_addrs = 1 };
	struct gbpf_sync_stats st = { 0 };
	const struct gdp_result *r;
	struct gdp_results res;
	struct gdp_state s;
	struct gbpf_vpc v;

	NEED_ROOT();
	gdp_state_init(&s);
	memcpy(s.node.block, BLOCK, 6);
	s.node.node_id = 1;
	ck_assert_int_eq(gdp_state_add_vpc(&s, &va), 0);
	ck_assert_int_eq(gdp_state_add_vpc(&s, &vb), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::1", &at.addrs[0]), 0);
	ck_assert_int_eq(gdp_state_add_attachment(&s, &at), 0);
	remote(&s, "vpcA", "fd00:a::2/128", 2);
	remote(&s, "vpcA", "fd00:a:0:3::/64", 3);
	remote(&s, "vpcB", "fd00:a::2/128", 4);       /* same prefix, other VPC: fine */
	remote(&s, "vpcA", "fd00:a::2/128", 5);       /* duplicate: fails alone */
	remote(&s, "vpcA", "10.1.0.0/24", 2);
	remote(&s, "vpcX", "10.9.0.0/24", 2);         /* unknown VPC: fails alone */
	gdp_results_init(&res);
	ck_assert_int_eq(gbpf_sync_node(g, &s, &res), 0);
	ck_assert_int_eq(gbpf_sync_vpcs(g, &s, &res, &st), 0);
	ck_assert_int_ne(gbpf_sync_routes(g, &s, NULL, NULL, &res, &st), 0);
	/* 4 remotes + the local pod address. */
	ck_assert_uint_eq(trie_entries(), 5);
	/* The fixture already set both VPCs exactly so: unchanged, not rewritten. */
	ck_assert_uint_eq(st.added, 5);
	ck_assert_uint_eq(st.unchanged, 2);
	ck_assert_uint_eq(st.failed, 2);
	/* Programmed remotes are counted, only the failing ones have a result each. */
	ck_assert_uint_eq(res.remotes_ok, 4);
	r = result(&res, GDP_OBJ_REMOTE, "vpcA", "fd00:a::2/128"); /* the duplicate, not the first */
	ck_assert_ptr_nonnull(r);
	ck_assert(!r->programmed);
	ck_assert_int_eq(r->err, -EEXIST);
	ck_assert_msg(strstr(r->msg, "duplicate"), "%s", r->msg);
	ck_assert_ptr_null(result(&res, GDP_OBJ_REMOTE, "vpcB", "fd00:a::2/128"));
	r = result(&res, GDP_OBJ_REMOTE, "vpcX", "10.9.0.0/24");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_ne(r->err, 0);
	ck_assert(!r->programmed);
	ck_assert(res.v[res.n - 1].kind == GDP_OBJ_REMOTE && res.v[res.n - 2].kind == GDP_OBJ_REMOTE &&
		  res.v[res.n - 3].kind != GDP_OBJ_REMOTE); /* the two failures, nothing else */

	/* Again, unchanged: nothing written. */
	memset(&st, 0, sizeof(st));
	gdp_results_reset(&res);
	gbpf_sync_routes(g, &s, NULL, NULL, &res, &st);
	ck_assert_uint_eq(st.added, 0);
	ck_assert_uint_eq(st.unchanged, 5);

	/* VPC B and one remote of A go; what remains stays. */
	s.n_vpcs = 1;
	s.n_remotes = 2;
	memset(&st, 0, sizeof(st));
	gdp_results_reset(&res);
	ck_assert_int_eq(gbpf_sync_vpcs(g, &s, &res, &st), 0);
	ck_assert_uint_eq(st.removed, 1);
	ck_assert_int_eq(gbpf_get_vpc(g, ARG_B, &v), 0);
	ck_assert_uint_eq(v.flags & GBPF_VPC_VALID, 0);
	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(gbpf_sync_routes(g, &s, NULL, NULL, &res, &st), 0);
	ck_assert_uint_eq(st.removed, 2);
	ck_assert_uint_eq(st.unchanged, 3);
	ck_assert_uint_eq(trie_entries(), 3);

	/* A remote equal to a local pod address: the local entry wins, the remote fails. */
	remote(&s, "vpcA", "fd00:a::1/128", 2);
	gdp_results_reset(&res);
	memset(&st, 0, sizeof(st));
	ck_assert_int_ne(gbpf_sync_routes(g, &s, NULL, NULL, &res, &st), 0);
	r = result(&res, GDP_OBJ_REMOTE, "vpcA", "fd00:a::1/128");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_ne(r->err, 0);
	ck_assert_uint_eq(trie_entries(), 3);
	gdp_results_free(&res);
	gdp_state_free(&s);
}
END_TEST

/* The fast result-key formatter must print exactly what gdp_prefix_str prints. */
START_TEST(prefix_str_matches_model)
{
	static const char *const fixed[] = {
		"::/0", "::1/128", "fd00::/8", "fd00:a::2/128", "fd00:0:0:1::/64", "1:0:0:2:0:0:0:3/128",
		"1:0:0:2:0:0:3:4/128", "0:0:1:0:0:0:0:0/48", "fe80::1:0:0:0/64", "1:2:3:4:5:6:7:8/128",
		"1::/16", "::ffff:10.0.0.1/128", "::10.0.0.1/128", "10.0.0.0/8", "0.0.0.0/0",
		"255.255.255.255/32", "10.1.0.2/32", "2001:db8::1:0:0:1/128", "0:1::/32",
	};
	char a[80], b[80];
	unsigned seed = 12345;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		struct gdp_prefix p;

		ck_assert_int_eq(gdp_prefix_parse(fixed[i], &p), 0);
		/* Host bits are not canonical here on purpose for some: format, do not judge. */
		ck_assert_str_eq(gbpf_prefix_str(&p, a, sizeof(a)), gdp_prefix_str(&p, b, sizeof(b)));
	}
	/* Random addresses with many zero words (where compression choices happen). */
	for (int i = 0; i < 200000; i++) {
		struct gdp_prefix p = { .family = i % 5 ? AF_INET6 : AF_INET };

		for (int j = 0; j < 16; j += 2) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 3) {
				p.addr.raw[j] = (uint8_t)(seed >> 8);
				p.addr.raw[j + 1] = (uint8_t)((seed >> 20) & ((seed >> 28) ? 0xff : 0));
			}
		}
		p.len = (uint8_t)(seed % (p.family == AF_INET ? 33 : 129));
		gbpf_prefix_str(&p, a, sizeof(a));
		gdp_prefix_str(&p, b, sizeof(b));
		ck_assert_msg(!strcmp(a, b), "fast '%s' != model '%s'", a, b);
	}
}
END_TEST

static void pins_down(void)
{
	char root[128], err[256];

	snprintf(root, sizeof(root), "/sys/fs/bpf/galactic-test-%d", run_id);
	gbpf_unpin_all(root, err, sizeof(err));
}

static Suite *suite(void)
{
	Suite *s = suite_create("bpf_golden");
	TCase *d = tcase_create("decap"), *e = tcase_create("encap");

	tcase_add_checked_fixture(d, setup, teardown);
	tcase_add_checked_fixture(e, setup, teardown);
	tcase_add_test(d, decap_hit_ipv6);
	tcase_add_test(d, decap_hit_ipv4);
	tcase_add_test(d, decap_vpc_by_argument);
	tcase_add_test(d, decap_foreign_sid_passes_untouched);
	tcase_add_test(d, decap_non_ipv6_passes_untouched);
	tcase_add_test(d, decap_unknown_argument_dropped);
	tcase_add_test(d, decap_malformed_inner_dropped);
	tcase_add_test(d, decap_bad_nexthdr_dropped);
	tcase_add_test(d, decap_ttl_and_no_route_dropped);
	tcase_add_test(e, encap_hit_ipv6);
	tcase_add_test(e, encap_hit_ipv4);
	tcase_add_test(e, encap_fib_next_hop);
	tcase_add_test(e, encap_vpc_isolation_and_lpm);
	tcase_add_test(e, encap_local_destination_passes);
	tcase_add_test(e, encap_egress_default_marks_for_the_shard);
	tcase_add_test(e, encap_then_decap_round_trip);
	tcase_add_test(e, encap_too_big_dropped);
	TCase *l = tcase_create("loader");

	tcase_add_unchecked_fixture(l, NULL, pins_down);

	tcase_add_test(l, pinned_maps_survive_and_bad_layout_rebuilds);
	tcase_add_test(l, preflight_passes_and_names_what_it_checked);
	tcase_add_test(l, drop_reasons_have_names);
	tcase_add_test(l, choose_refuses_or_falls_back);
	tcase_add_test(l, prefix_str_matches_model);
	tcase_add_test(e, sync_model_to_maps);
	suite_add_tcase(s, d);
	suite_add_tcase(s, e);
	suite_add_tcase(s, l);
	return s;
}

int main(void)
{
	run_id = (int)getpid();
	return gt_run(suite());
}
