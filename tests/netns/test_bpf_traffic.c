/*
 * Traffic through real network namespaces with the bpf backend (and the
 * kernel backend on the same topology, as the reference): two nodes on a
 * fabric link, a pod of VPC A and a pod of VPC B on each node, both VPCs
 * with the same addresses. Pings and TCP across nodes, isolation, agent
 * restart and a map-layout upgrade under a running ping (no packet lost).
 *
 * The topology is a thin local one (tests/lib/topo.* did not exist when this
 * was written); it uses only `ip` and the backends under test.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/dp/model.h"
#include "tests/lib/gtest.h"

#ifdef GBT_BENCH
/* Built as a bench (tests/bench/bench_bpf_fwd.c): assertions end the run. */
static void bench_fail(const char *file, int line, const char *expr)
{
	fprintf(stderr, "%s:%d: %s\n", file, line, expr);
	exit(1);
}
#undef _mark_point
#define _mark_point(file, line) ((void)0)
#define _ck_assert_failed(file, line, expr, ...) bench_fail(file, line, expr)
#endif

#define NODES 2
#define TABLE_A 0x4005
#define TABLE_B 0x4006
#define ARG_A 0x005
#define ARG_B 0x006
#define POD_MTU 1400

/*
 * Names carry the runner's pid (set in main, inherited by the forked tests):
 * a test that dies on an assertion skips its teardown (check _exits), so the
 * next setup and the runner's final teardown clear what it left.
 */
static int run_id;
static char pfx[32];                 /* netns prefix "gbt<run id>" */
static char pins[NODES][128];        /* bpffs pin roots */
static struct gdp_backend *be[NODES];
static const struct gdp_backend_ops *ops;
static struct gdp_state st[NODES];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#define SH(...) ck_assert_msg(sh(__VA_ARGS__) == 0, "command failed: " __VA_ARGS__)

/* Pod p of VPC v ('a' or 'b') on node n (1-based): netns, host veth, addresses. */
static void pod_mac(int n, char v, uint8_t m[6])
{
	uint8_t x[6] = { 0x02, 0x00, (uint8_t)v, 0, 0, (uint8_t)n };

	memcpy(m, x, 6);
}

static void add_pod(int n, char v)
{
	uint8_t m[6];

	pod_mac(n, v, m);
	SH("ip netns add %s-%c%d", pfx, v, n);
	SH("ip -n %s-n%d link add hv%c%d type veth peer name eth0 netns %s-%c%d address "
	   "%02x:%02x:%02x:%02x:%02x:%02x", pfx, n, v, n, pfx, v, n, m[0], m[1], m[2], m[3], m[4], m[5]);
	SH("ip -n %s-%c%d link set lo up && ip -n %s-%c%d link set eth0 mtu %d up", pfx, v, n, pfx,
	   v, n, POD_MTU);
	SH("ip -n %s-%c%d -6 addr add fd00:a::%d/128 dev eth0 nodad", pfx, v, n, n);
	SH("ip -n %s-%c%d addr add 10.1.0.%d/32 dev eth0", pfx, v, n, n);
	SH("ip -n %s-%c%d -6 route add default via fe80::1 dev eth0", pfx, v, n);
	SH("ip -n %s-%c%d route add 169.254.1.1 dev eth0 scope link", pfx, v, n);
	SH("ip -n %s-%c%d route add default via 169.254.1.1 dev eth0", pfx, v, n);
}

static void sid(int node, unsigned fn, uint16_t arg, struct in6_addr *out)
{
	struct gdp_node nd = { .block = { 0xfc, 0, 0, 0, 0, 0 }, .node_id = (uint16_t)node };

	gdp_sid(&nd, fn, arg, out);
}

/*
 * Node n's desired state. IPv4 remotes: the bpf backend decaps IPv4 under the
 * VPC's End.DT SID itself; the kernel backend needs the far pod's End.DX4.
 */
static void model(int n, bool bpf)
{
	struct gdp_state *s = &st[n - 1];
	int far = n == 1 ? 2 : 1;

	gdp_state_init(s);
	memcpy(s->node.block, (uint8_t[]){ 0xfc, 0, 0, 0, 0, 0 }, 6);
	s->node.node_id = (uint16_t)n;
	snprintf(s->node.uplink, sizeof(s->node.uplink), "up%d", n);
	for (int i = 0; i < 2; i++) {
		char v = i ? 'b' : 'a';
		uint16_t arg = i ? ARG_B : ARG_A;
		struct gdp_vpc vpc = { .arg = arg, .table = i ? TABLE_B : TABLE_A, .n_prefixes = 2 };
		struct gdp_attachment a = { .arg = (uint16_t)(0x10 + i), .n_addrs = 2, .mtu = POD_MTU };
		struct gdp_remote r6 = { 0 }, r4 = { 0 };

		snprintf(vpc.id, sizeof(vpc.id), "vpc%c", v);
		ck_assert_int_eq(gdp_prefix_parse("fd00:a::/64", &vpc.prefixes[0]), 0);
		ck_assert_int_eq(gdp_prefix_parse("10.1.0.0/24", &vpc.prefixes[1]), 0);
		ck_assert_int_eq(gdp_state_add_vpc(s, &vpc), 0);

		snprintf(a.vpc, sizeof(a.vpc), "vpc%c", v);
		snprintf(a.id, sizeof(a.id), "att%c%d", v, n);
		snprintf(a.container_id, sizeof(a.container_id), "ctr%c%d", v, n);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "hv%c%d", v, n);
		ck_assert_int_eq(gdp_prefix_parse(n == 1 ? "fd00:a::1" : "fd00:a::2", &a.addrs[0]), 0);
		ck_assert_int_eq(gdp_prefix_parse(n == 1 ? "10.1.0.1" : "10.1.0.2", &a.addrs[1]), 0);
		if (v == 'b' && n == 2) /* an address VPC A never has */
			ck_assert_int_eq(gdp_prefix_parse("fd00:a::3", &a.addrs[a.n_addrs++]), 0);
		a.nh4 = gdp_default_nh4(a.arg);
		pod_mac(n, v, a.pod_mac);
		ck_assert_int_eq(gdp_state_add_attachment(s, &a), 0);

		ck_assert_int_eq(gdp_remote_set_vpc(&r6, a.vpc), 0);
		ck_assert_int_eq(gdp_prefix_parse(far == 1 ? "fd00:a::1" : "fd00:a::2", &r6.prefix), 0);
		sid(far, GDP_FN_DECAP, arg, &r6.sid);
		ck_assert_int_eq(gdp_state_add_remote(s, &r6), 0);
		r4 = r6;
		ck_assert_int_eq(gdp_prefix_parse(far == 1 ? "10.1.0.1" : "10.1.0.2", &r4.prefix), 0);
		if (!bpf)
			sid(far, GDP_FN_DX4, (uint16_t)(0x10 + i), &r4.sid);
		ck_assert_int_eq(gdp_state_add_remote(s, &r4), 0);
		if (v == 'b' && n == 1) {
			ck_assert_int_eq(gdp_prefix_parse("fd00:a::3", &r6.prefix), 0);
			ck_assert_int_eq(gdp_state_add_remote(s, &r6), 0);
		}
	}
}

static void open_backend(int n)
{
	struct gdp_backend_opts o = { .bpffs_dir = pins[n - 1] };
	char ns[64], err[512];

	snprintf(ns, sizeof(ns), "%s-n%d", pfx, n);
	o.netns = ns;
	ck_assert_msg(!ops->open(&be[n - 1], &o, err, sizeof(err)), "open %s backend on node %d: %s",
		      ops->name, n, err);
}

static void apply(int n)
{
	struct gdp_results r;
	int rc;

	gdp_results_init(&r);
	rc = be[n - 1]->ops->apply(be[n - 1], &st[n - 1], &r);
	for (size_t i = 0; rc && i < r.n; i++)
		if (r.v[i].err)
			printf("node %d %s %s/%s: %s\n", n, gdp_obj_kind_str(r.v[i].kind), r.v[i].vpc,
			       r.v[i].key, r.v[i].msg);
	gdp_results_free(&r);
	ck_assert_msg(rc == 0, "apply on node %d: %s", n, strerror(-rc));
}

static int observe(int n)
{
	struct gdp_results r;
	int rc;

	gdp_results_init(&r);
	rc = be[n - 1]->ops->observe(be[n - 1], &st[n - 1], &r);
	for (size_t i = 0; rc && i < r.n; i++)
		if (r.v[i].err)
			printf("observe node %d %s %s/%s: %s\n", n, gdp_obj_kind_str(r.v[i].kind),
			       r.v[i].vpc, r.v[i].key, r.v[i].msg);
	gdp_results_free(&r);
	return rc;
}

static void names(void)
{
	snprintf(pfx, sizeof(pfx), "gbt%d", run_id);
	for (int n = 1; n <= NODES; n++)
		snprintf(pins[n - 1], sizeof(pins[n - 1]), "/sys/fs/bpf/galactic-test-%d-n%d", run_id, n);
}

/* Namespaces and pins of this run, whoever left them. */
static void leftovers_down(void)
{
	char err[256];

	names();
	for (int n = 1; n <= NODES; n++) {
		sh("ip netns del %s-n%d 2>/dev/null; ip netns del %s-a%d 2>/dev/null; "
		   "ip netns del %s-b%d 2>/dev/null", pfx, n, pfx, n, pfx, n);
		gbpf_unpin_all(pins[n - 1], err, sizeof(err));
	}
}

static void topo_down(void)
{
	if (getenv("GBT_KEEP")) /* debugging: leave the namespaces for a look */
		return;
	for (int n = 1; n <= NODES; n++) {
		if (be[n - 1])
			be[n - 1]->ops->close(be[n - 1]);
		be[n - 1] = NULL;
		gdp_state_free(&st[n - 1]);
	}
	leftovers_down();
}

static void topo_up(bool bpf)
{
	leftovers_down();
	for (int n = 1; n <= NODES; n++) {
		SH("ip netns add %s-n%d && ip -n %s-n%d link set lo up", pfx, n, pfx, n);
	}
	SH("ip -n %s-n1 link add up1 type veth peer name up2 netns %s-n2", pfx, pfx);
	SH("ip -n %s-n1 link set up1 up && ip -n %s-n2 link set up2 up", pfx, pfx);
	SH("ip -n %s-n1 -6 addr add fc00:0:0:f::1/64 dev up1 nodad", pfx);
	SH("ip -n %s-n2 -6 addr add fc00:0:0:f::2/64 dev up2 nodad", pfx);
	SH("ip -n %s-n1 -6 route add fc00:0:0:2::/64 via fc00:0:0:f::2", pfx);
	SH("ip -n %s-n2 -6 route add fc00:0:0:1::/64 via fc00:0:0:f::1", pfx);
	for (int n = 1; n <= NODES; n++) {
		add_pod(n, 'a');
		add_pod(n, 'b');
	}
	/* VPC B's far pod also has an address VPC A never has. */
	SH("ip -n %s-b2 -6 addr add fd00:a::3/128 dev eth0 nodad", pfx);
	ops = bpf ? &gdp_bpf_backend : &gdp_kernel_backend;
	for (int n = 1; n <= NODES; n++) {
		model(n, bpf);
		open_backend(n);
		apply(n);
	}
}

static void setup_bpf(void)
{
	char why[512];

	if (geteuid())
		return;
	if (gbpf_preflight(NULL, why, sizeof(why)))
		return; /* each test skips with the reason */
	topo_up(true);
}

static void setup_kernel(void)
{
	if (geteuid())
		return;
	topo_up(false);
}

#define NEED(bpf)                                                                  \
	do {                                                                       \
		char why_[512];                                                    \
		if (geteuid())                                                     \
			GT_SKIP("needs root (netns, tc, bpf)");                   \
		if ((bpf) && gbpf_preflight(NULL, why_, sizeof(why_)))            \
			GT_SKIP("bpf backend unavailable: %s", why_);             \
	} while (0)

static int ping(const char *from, const char *dst, int count)
{
	return sh("ip netns exec %s-%s ping -q -c %d -i 0.2 -W 2 %s >/dev/null", pfx, from, count, dst);
}

/* Bytes a TCP transfer of 2 MB delivers from pod `from` to `to_addr` in pod `to`. */
static long tcp_bytes(const char *from, const char *to, const char *to_addr)
{
	char out[256], cmd[1024];
	long n = -1;
	FILE *f;

	snprintf(out, sizeof(out), "/tmp/%s-tcp.out", pfx);
	unlink(out);
	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s-%s timeout 10 nc -l %s 5001 | wc -c > %s & sleep 0.3; "
		 "head -c 2000000 /dev/zero | ip netns exec %s-%s timeout 10 nc -N %s 5001; wait",
		 pfx, to, strchr(to_addr, ':') ? "-6" : "-4", out, pfx, from, to_addr);
	if (sh("%s", cmd))
		return -1;
	f = fopen(out, "r");
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	unlink(out);
	return n;
}

static void check_traffic(bool bpf)
{
	ck_assert_msg(ping("a1", "fd00:a::2", 3) == 0, "VPC A: IPv6 ping node1 -> node2");
	ck_assert_msg(ping("a2", "fd00:a::1", 3) == 0, "VPC A: IPv6 ping node2 -> node1");
	ck_assert_msg(ping("a1", "10.1.0.2", 3) == 0, "VPC A: IPv4 ping node1 -> node2");
	ck_assert_msg(ping("b1", "fd00:a::2", 3) == 0, "VPC B: IPv6 ping (same addresses as A)");
	ck_assert_msg(ping("b1", "10.1.0.2", 3) == 0, "VPC B: IPv4 ping");
	ck_assert_int_eq(tcp_bytes("a1", "a2", "fd00:a::2"), 2000000);
	ck_assert_int_eq(tcp_bytes("b2", "b1", "10.1.0.1"), 2000000);
	/* Isolation: fd00:a::3 lives only in VPC B; A must not reach it. */
	ck_assert_msg(sh("ip netns exec %s-a1 ping -q -c 2 -W 1 fd00:a::3 >/dev/null 2>&1", pfx) != 0,
		      "VPC A reached VPC B's fd00:a::3");
	ck_assert_msg(ping("b1", "fd00:a::3", 2) == 0, "VPC B: fd00:a::3 reachable in B");
}

START_TEST(kernel_backend_traffic)
{
	NEED(false);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_int_eq(observe(2), 0);
	check_traffic(false);
}
END_TEST

START_TEST(bpf_backend_traffic)
{
	struct gbpf_vpc_stats a, b;

	NEED(true);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_int_eq(observe(2), 0);
	check_traffic(true);
	/* The programs carried it: both VPCs counted encaps and decaps on node 2. */
	ck_assert_int_eq(gdp_bpf_vpc_stats(be[1], ARG_A, &a), 0);
	ck_assert_int_eq(gdp_bpf_vpc_stats(be[1], ARG_B, &b), 0);
	ck_assert_uint_gt(a.decap_pkts, 0);
	ck_assert_uint_gt(a.encap_pkts, 0);
	ck_assert_uint_gt(b.decap_pkts, 0);
	ck_assert_uint_gt(b.encap_pkts, 0);
}
END_TEST

/* Runs `ping -c count` from a1 to node 2 in the background; returns the output path. */
static const char *ping_bg(int count)
{
	static char out[256];

	snprintf(out, sizeof(out), "/tmp/%s-ping.out", pfx);
	unlink(out);
	SH("ip netns exec %s-a1 ping -c %d -i 0.01 fd00:a::2 > %s 2>&1 &", pfx, count, out);
	usleep(300 * 1000);
	return out;
}

/* Waits for the background ping and returns lost packets (-1 if unreadable). */
static long ping_lost(const char *out, int count)
{
	long tx = -1, rx = -1;
	char line[256];
	FILE *f;

	for (int i = 0; i < 100; i++) {
		if (sh("grep -q 'packet loss' %s", out) == 0)
			break;
		usleep(100 * 1000);
	}
	f = fopen(out, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "packets transmitted"))
			sscanf(line, "%ld packets transmitted, %ld", &tx, &rx);
	fclose(f);
	unlink(out);
	printf("ping: %ld transmitted, %ld received\n", tx, rx);
	return tx == count && rx >= 0 ? tx - rx : -1;
}

START_TEST(bpf_agent_restart_loses_nothing)
{
	const char *out;

	NEED(true);
	out = ping_bg(300);
	/* The agent goes away: filters and pinned maps stay and keep forwarding. */
	be[0]->ops->close(be[0]);
	be[0] = NULL;
	usleep(500 * 1000);
	/* A new agent adopts the pinned maps, swaps in its programs and repairs nothing. */
	open_backend(1);
	ck_assert(!gbpf_maps_fresh(gdp_bpf_handle(be[0])));
	apply(1);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_int_eq(ping_lost(out, 300), 0);
}
END_TEST

START_TEST(bpf_layout_upgrade_rebuilds_from_state)
{
	char old[300], cur[300];
	struct stat sb;
	const char *out;

	NEED(true);
	out = ping_bg(300);
	be[0]->ops->close(be[0]);
	be[0] = NULL;
	/* Pretend the running maps are an older layout (v0): the new agent must not use them. */
	snprintf(cur, sizeof(cur), "%s/v%d", pins[0], GBPF_BPF_LAYOUT);
	snprintf(old, sizeof(old), "%s/v0", pins[0]);
	ck_assert_msg(!rename(cur, old), "rename %s: %s", cur, strerror(errno));
	open_backend(1);
	ck_assert(gbpf_maps_fresh(gdp_bpf_handle(be[0])));
	ck_assert_int_eq(gbpf_stale_layouts(gdp_bpf_handle(be[0])), 1);
	/* Fresh maps, filled from the agent's own state; then the programs swap. */
	apply(1);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_msg(stat(old, &sb) != 0, "old layout %s still pinned", old);
	ck_assert_int_eq(ping_lost(out, 300), 0);
	ck_assert_msg(ping("a1", "10.1.0.2", 2) == 0, "IPv4 after the upgrade");
}
END_TEST

/* Drift: a removed filter and a deleted map entry are reported, then repaired. */
START_TEST(bpf_observe_reports_and_apply_repairs)
{
	struct gbpf_route_key k;
	uint8_t a[16] = { 0 };
	char err[256];

	NEED(true);
	SH("ip -n %s-n1 link set hva1 down && ip -n %s-n1 link set hva1 up", pfx, pfx);
	SH("tc -n %s-n1 filter del dev hva1 ingress", pfx);
	inet_pton(AF_INET6, "fd00:a::2", a);
	gbpf_route_key(&k, ARG_A, AF_INET6, a, 128);
	ck_assert_msg(!gbpf_del_route(gdp_bpf_handle(be[0]), &k, err, sizeof(err)), "%s", err);
	ck_assert_int_ge(observe(1), 2);
	apply(1);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_msg(ping("a1", "fd00:a::2", 2) == 0, "repaired");
}
END_TEST

static int seg6_routes(int n)
{
	char cmd[256];
	int c = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ip -n %s-n%d -6 route show table %d | grep -c 'encap seg6 '", pfx, n,
		 TABLE_A);
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%d", &c) != 1)
			c = -1;
		pclose(f);
	}
	return c;
}

/*
 * kernel -> bpf -> kernel on both nodes under a running ping: the bpf
 * backend's first apply puts its programs in place before the seg6 routes
 * go; going back, the kernel backend's routes come first, then the filters
 * and pins go (gdp_bpf_teardown). Nothing lost either way.
 */
START_TEST(switch_backends_under_ping)
{
	const char *out;
	char err[512], ns[64];

	NEED(true);
	ck_assert_int_eq(seg6_routes(1), 1);
	/*
	 * Creating a clsact qdisc on a link that is up deactivates its TX for a
	 * moment (qdisc_graft -> dev_deactivate) and drops what is in flight:
	 * the qdisc belongs at link creation (CNI ADD, agent start), as here,
	 * so that switching backends later only swaps filters.
	 */
	for (int n = 1; n <= NODES; n++)
		SH("for l in up%d hva%d hvb%d; do tc -n %s-n%d qdisc add dev $l clsact; done", n, n, n, pfx, n);
	out = ping_bg(400);
	for (int n = 1; n <= NODES; n++) {
		be[n - 1]->ops->close(be[n - 1]);
		ops = &gdp_bpf_backend;
		open_backend(n);
		apply(n);
		ck_assert_int_eq(observe(n), 0);
	}
	ck_assert_int_eq(seg6_routes(1), 0);
	ck_assert_msg(sh("tc -n %s-n1 filter show dev hva1 ingress | grep -q galactic_encap", pfx) == 0,
		      "encap filter on hva1 under bpf");
	ck_assert_int_eq(ping_lost(out, 400), 0);
	out = ping_bg(400);
	for (int n = 1; n <= NODES; n++) {
		be[n - 1]->ops->close(be[n - 1]);
		ops = &gdp_kernel_backend;
		open_backend(n);
		apply(n);
		snprintf(ns, sizeof(ns), "%s-n%d", pfx, n);
		ck_assert_msg(!gdp_bpf_teardown(ns, pins[n - 1], err, sizeof(err)), "%s", err);
		ck_assert_int_eq(observe(n), 0);
	}
	ck_assert_int_eq(seg6_routes(1), 1);
	ck_assert_msg(sh("tc -n %s-n1 filter show dev hva1 ingress | grep -q galactic", pfx) != 0,
		      "filter left on hva1");
	ck_assert_msg(access(pins[0], F_OK) != 0, "pins left at %s", pins[0]);
	ck_assert_int_eq(ping_lost(out, 400), 0);
}
END_TEST

/* An attachment leaves the model: its filter and ifaces entry go, the rest stays. */
START_TEST(bpf_detached_attachment_loses_filter)
{
	struct gdp_state *s = &st[0];
	uint32_t key, next, *prev = NULL;
	int n = 0;

	NEED(true);
	ck_assert_msg(sh("tc -n %s-n1 filter show dev hvb1 ingress | grep -q galactic_encap", pfx) == 0,
		      "encap filter on hvb1 before");
	/* Drop VPC B's attachment on node 1 (keep the VPC). */
	for (size_t i = 0; i < s->n_atts; i++)
		if (!strcmp(s->atts[i].vpc, "vpcb")) {
			s->atts[i] = s->atts[--s->n_atts];
			break;
		}
	apply(1);
	ck_assert_int_eq(observe(1), 0);
	ck_assert_msg(sh("tc -n %s-n1 filter show dev hvb1 ingress | grep -q galactic", pfx) != 0,
		      "filter still on hvb1");
	while (!bpf_map_get_next_key(gbpf_map_fd(gdp_bpf_handle(be[0]), GBPF_MAP_IFACES), prev, &next)) {
		key = next;
		prev = &key;
		n++;
	}
	ck_assert_int_eq(n, 1); /* only hva1 */
	ck_assert_msg(ping("a1", "fd00:a::2", 2) == 0, "VPC A unaffected");
}
END_TEST

#ifndef GBT_BENCH
static Suite *suite(void)
{
	Suite *s = suite_create("bpf_traffic");
	TCase *k = tcase_create("kernel"), *b = tcase_create("bpf");

	tcase_add_checked_fixture(k, setup_kernel, topo_down);
	tcase_add_checked_fixture(b, setup_bpf, topo_down);
	tcase_add_unchecked_fixture(k, NULL, leftovers_down);
	tcase_add_unchecked_fixture(b, NULL, leftovers_down);
	tcase_set_timeout(k, 120);
	tcase_set_timeout(b, 120);
	tcase_add_test(k, kernel_backend_traffic);
	tcase_add_test(k, switch_backends_under_ping);
	tcase_add_test(b, bpf_backend_traffic);
	tcase_add_test(b, bpf_agent_restart_loses_nothing);
	tcase_add_test(b, bpf_layout_upgrade_rebuilds_from_state);
	tcase_add_test(b, bpf_observe_reports_and_apply_repairs);
	tcase_add_test(b, bpf_detached_attachment_loses_filter);
	suite_add_tcase(s, k);
	suite_add_tcase(s, b);
	return s;
}

int main(void)
{
	run_id = (int)getpid();
	return gt_run(suite());
}
#endif
