/*
 * The kernel backend's traffic suite (tests/netns/test_kernel_traffic.c) on
 * the bpf backend: the same shared topology (tests/lib/topo.*: three nodes on
 * a bridged fabric, two VPCs with the same pod addresses), the same desired
 * state files the agent reads (topo_write_state -> legacy_load), and the same
 * per-pod packet counts for isolation.
 *
 *   n1: a1 (vpcA fd00:a::1 10.1.0.1)   b1 (vpcB fd00:a::1 10.1.0.1)
 *   n2: a2 (vpcA fd00:a::2 10.1.0.2)   b2 (vpcB fd00:a::2 10.1.0.2)
 *   n3: a3 (vpcA fd00:a::3 10.1.0.3)
 *
 * galactic-agent cannot select the bpf backend yet (agent/main.c, not ours),
 * so the backend runs in this process, one handle per node, on the state the
 * agent would load.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/record_legacy.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

#define NODES 3

static struct topo T;
static struct gdp_state st[NODES + 1];
static struct gdp_backend *be[NODES + 1];
static char pins[NODES + 1][128];
static int setup_ok;
static int run_id; /* the runner's pid: pins survive a test that dies, the runner clears them */

static void pins_down(void)
{
	char err[256];

	for (int n = 1; n <= NODES; n++) {
		snprintf(pins[n], sizeof(pins[n]), "/sys/fs/bpf/galactic-test-%d-n%d", run_id, n);
		gbpf_unpin_all(pins[n], err, sizeof(err));
	}
}

static int open_node(int n, char *err, size_t errlen)
{
	struct gdp_backend_opts o = { .bpffs_dir = pins[n] };
	char ns[64];

	o.netns = topo_node_ns(&T, n, ns, sizeof(ns));
	return gdp_bpf_backend.open(&be[n], &o, err, errlen);
}

static int apply_node(int n)
{
	struct gdp_results r;
	int rc;

	gdp_results_init(&r);
	rc = be[n]->ops->apply(be[n], &st[n], &r);
	for (size_t i = 0; rc && i < r.n; i++)
		if (r.v[i].err)
			printf("node %d %s %s/%s: %s\n", n, gdp_obj_kind_str(r.v[i].kind), r.v[i].vpc,
			       r.v[i].key, r.v[i].msg);
	gdp_results_free(&r);
	return rc;
}

static int observe_node(int n)
{
	struct gdp_results r;
	int rc;

	gdp_results_init(&r);
	rc = be[n]->ops->observe(be[n], &st[n], &r);
	for (size_t i = 0; rc && i < r.n; i++)
		if (r.v[i].err)
			printf("observe node %d %s %s/%s: %s\n", n, gdp_obj_kind_str(r.v[i].kind),
			       r.v[i].vpc, r.v[i].key, r.v[i].msg);
	gdp_results_free(&r);
	return rc;
}

static void setup(void)
{
	char why[512], d[512], err[512];
	struct gdp_results bad;

	setup_ok = 0;
	if (geteuid() != 0 || gbpf_preflight(NULL, why, sizeof(why)))
		return;
	pins_down();
	if (topo_up(&T, NODES))
		return;
	if (topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1") < 0 ||
	    topo_add_pod(&T, 1, "b1", TOPO_VPC_B, "fd00:a::1", "10.1.0.1") < 0 ||
	    topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2") < 0 ||
	    topo_add_pod(&T, 2, "b2", TOPO_VPC_B, "fd00:a::2", "10.1.0.2") < 0 ||
	    topo_add_pod(&T, 3, "a3", TOPO_VPC_A, "fd00:a::3", "10.1.0.3") < 0)
		return;
	for (int n = 1; n <= NODES; n++) {
		gdp_results_init(&bad);
		if (topo_write_state(&T, n, 0) ||
		    legacy_load(topo_state_dir(&T, n, d, sizeof(d)), &st[n], &bad, err, sizeof(err)) ||
		    bad.n) {
			printf("node %d: state: %s (%zu bad objects)\n", n, err, bad.n);
			gdp_results_free(&bad);
			return;
		}
		gdp_results_free(&bad);
		if (open_node(n, err, sizeof(err))) {
			printf("node %d: %s\n", n, err);
			return;
		}
		if (apply_node(n))
			return;
	}
	setup_ok = 1;
}

static void teardown(void)
{
	char err[256];

	for (int n = 1; n <= NODES; n++) {
		if (be[n])
			be[n]->ops->close(be[n]);
		be[n] = NULL;
		gdp_state_free(&st[n]);
		if (pins[n][0])
			gbpf_unpin_all(pins[n], err, sizeof(err));
	}
	topo_down(&T);
}

#define NEED_TOPO()                                                                       \
	do {                                                                              \
		char why_[512];                                                           \
		if (geteuid() != 0)                                                       \
			GT_SKIP("needs root for network namespaces and bpf");            \
		if (gbpf_preflight(NULL, why_, sizeof(why_)))                            \
			GT_SKIP("bpf backend unavailable: %s", why_);                    \
		ck_assert_msg(setup_ok, "topology or bpf backend failed to come up (see %s)", T.dir); \
	} while (0)

static long ping(const char *pod, const char *dst, int count, const char *interval)
{
	char out[256];

	topo_out(out, sizeof(out),
		 "ip netns exec %s-%s ping -q -c %d -i %s -W 1 %s | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'",
		 T.prefix, pod, count, interval, dst);
	return out[0] ? atol(out) : -1;
}

static uint64_t decaps(int node, uint16_t arg)
{
	struct gbpf_vpc_stats s;

	ck_assert_int_eq(gdp_bpf_vpc_stats(be[node], arg, &s), 0);
	return s.decap_pkts;
}

START_TEST(t_v6_ping_same_vpc_isolated)
{
	long a2, b2, a1r, b1r, got;
	uint64_t d2a, d2b;

	NEED_TOPO();
	ck_assert_int_eq(observe_node(1), 0);
	a2 = topo_snmp(&T, "a2", "Icmp6InEchos");
	b2 = topo_snmp(&T, "b2", "Icmp6InEchos");
	a1r = topo_snmp(&T, "a1", "Icmp6InEchoReplies");
	b1r = topo_snmp(&T, "b1", "Icmp6InEchoReplies");
	d2a = decaps(2, 1);
	d2b = decaps(2, 2);
	got = ping("a1", "fd00:a::2", 20, "0.05");
	printf("bpf v6 ping a1->a2: %ld/20; echo requests at a2 +%ld, at b2 +%ld; node 2 decaps vpcA +%llu vpcB +%llu\n",
	       got, topo_snmp(&T, "a2", "Icmp6InEchos") - a2, topo_snmp(&T, "b2", "Icmp6InEchos") - b2,
	       (unsigned long long)(decaps(2, 1) - d2a), (unsigned long long)(decaps(2, 2) - d2b));
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp6InEchos") - a2, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp6InEchos") - b2, 0);
	ck_assert_int_eq(topo_snmp(&T, "a1", "Icmp6InEchoReplies") - a1r, 20);
	ck_assert_int_eq(topo_snmp(&T, "b1", "Icmp6InEchoReplies") - b1r, 0);
	/* The TC program decapsulated them (not the standby seg6local route). */
	ck_assert_uint_ge(decaps(2, 1) - d2a, 20);
	ck_assert_uint_eq(decaps(2, 2) - d2b, 0);
	a2 = topo_snmp(&T, "a2", "Icmp6InEchos");
	ck_assert_int_eq(ping("b1", "fd00:a::2", 10, "0.05"), 10);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp6InEchos") - a2, 0);
	ck_assert_int_eq(ping("a3", "fd00:a::1", 5, "0.05"), 5);
}
END_TEST

START_TEST(t_v6_tcp_stream_isolated)
{
	char out[256];
	long a2, b2, bytes;
	int rc, tries;

	NEED_TOPO();
	ck_assert_int_eq(topo_sh("ip netns exec %s-a2 iperf3 -s -1 -D -B fd00:a::2 -p 5201 --logfile %s/iperf-s.log",
				 T.prefix, T.dir), 0);
	a2 = topo_snmp(&T, "a2", "Tcp:InSegs");
	b2 = topo_snmp(&T, "b2", "Tcp:InSegs");
	for (tries = 0, rc = 1; tries < 20 && rc; tries++) {
		usleep(100000);
		rc = topo_out(out, sizeof(out),
			      "ip netns exec %s-a1 iperf3 -6 -c fd00:a::2 -p 5201 -t 2 -J | jq '.end.sum_received.bytes'",
			      T.prefix);
		if (!rc && atol(out) <= 0)
			rc = 1;
	}
	bytes = atol(out);
	printf("bpf v6 TCP a1->a2: %ld bytes in 2 s (%.1f Mbit/s); TCP segments at a2 +%ld, at b2 +%ld\n",
	       bytes, bytes * 8 / 2e6, topo_snmp(&T, "a2", "Tcp:InSegs") - a2,
	       topo_snmp(&T, "b2", "Tcp:InSegs") - b2);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(bytes, 1000000);
	ck_assert_int_gt(topo_snmp(&T, "a2", "Tcp:InSegs") - a2, 100);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Tcp:InSegs") - b2, 0);
}
END_TEST

/* IPv4 toward the far pod's End.DX4 SID: bpf encap, the far node's kernel decaps. */
START_TEST(t_v4_dx4_ping_isolated)
{
	long a2, b2, got;

	NEED_TOPO();
	a2 = topo_snmp(&T, "a2", "Icmp:InEchos");
	b2 = topo_snmp(&T, "b2", "Icmp:InEchos");
	got = ping("a1", "10.1.0.2", 20, "0.05");
	printf("bpf v4 (End.DX4) ping a1->a2: %ld/20; at a2 +%ld, at b2 +%ld\n", got,
	       topo_snmp(&T, "a2", "Icmp:InEchos") - a2, topo_snmp(&T, "b2", "Icmp:InEchos") - b2);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp:InEchos") - a2, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp:InEchos") - b2, 0);
	b2 = topo_snmp(&T, "b2", "Icmp:InEchos");
	ck_assert_int_eq(ping("b1", "10.1.0.2", 10, "0.05"), 10);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp:InEchos") - b2, 10);
}
END_TEST

/* IPv4 under the VPC's End.DT SID: the bpf decap handles IPv4 inside itself. */
START_TEST(t_v4_bpf_decap_isolated)
{
	long a2, b2, got;
	uint64_t d2a;

	NEED_TOPO();
	for (int n = 1; n <= NODES; n++) {
		for (size_t i = 0; i < st[n].n_remotes; i++) {
			struct gdp_remote *r = &st[n].remotes[i];
			uint8_t block[6];
			uint16_t node, arg;
			unsigned fn;

			if (r->prefix.family != AF_INET)
				continue;
			ck_assert_int_eq(gdp_sid_parse(&r->sid, block, &node, &fn, &arg), 0);
			struct gdp_node far = { .node_id = node };

			memcpy(far.block, block, 6);
			gdp_sid(&far, GDP_FN_DECAP, gdp_state_find_vpc(&st[n], gdp_remote_vpc(r))->arg, &r->sid);
		}
		ck_assert_int_eq(apply_node(n), 0);
	}
	a2 = topo_snmp(&T, "a2", "Icmp:InEchos");
	b2 = topo_snmp(&T, "b2", "Icmp:InEchos");
	d2a = decaps(2, 1);
	got = ping("a1", "10.1.0.2", 20, "0.05");
	printf("bpf v4 (bpf decap) ping a1->a2: %ld/20; at a2 +%ld, at b2 +%ld; node 2 vpcA decaps +%llu\n",
	       got, topo_snmp(&T, "a2", "Icmp:InEchos") - a2, topo_snmp(&T, "b2", "Icmp:InEchos") - b2,
	       (unsigned long long)(decaps(2, 1) - d2a));
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp:InEchos") - a2, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp:InEchos") - b2, 0);
	ck_assert_uint_ge(decaps(2, 1) - d2a, 20);
	ck_assert_int_eq(ping("b1", "10.1.0.2", 10, "0.05"), 10);
}
END_TEST

/* Agent restart on both ends of a running ping (100 pps): nothing lost. */
START_TEST(t_agent_restart_no_loss)
{
	char out[256], err[512];
	long tx = -1, rx = -1;

	NEED_TOPO();
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 ping -q -c 400 -i 0.01 fd00:a::2 > %s/ping.out 2>&1 &",
				 T.prefix, T.dir), 0);
	usleep(500 * 1000);
	for (int n = 1; n <= 2; n++) {
		be[n]->ops->close(be[n]);
		be[n] = NULL;
		usleep(200 * 1000);
		ck_assert_msg(!open_node(n, err, sizeof(err)), "%s", err);
		ck_assert(!gbpf_maps_fresh(gdp_bpf_handle(be[n])));
		ck_assert_int_eq(apply_node(n), 0);
		ck_assert_int_eq(observe_node(n), 0);
	}
	for (int i = 0; i < 100 && topo_sh("grep -q 'packet loss' %s/ping.out", T.dir); i++)
		usleep(100 * 1000);
	topo_out(out, sizeof(out), "sed -n 's/^\\([0-9]*\\) packets transmitted, \\([0-9]*\\) received.*/\\1 \\2/p' %s/ping.out",
		 T.dir);
	sscanf(out, "%ld %ld", &tx, &rx);
	printf("bpf agent restart (nodes 1 and 2) under ping: %ld transmitted, %ld received\n", tx, rx);
	ck_assert_int_eq(tx, 400);
	ck_assert_int_eq(rx, 400);
}
END_TEST

static const char *top(void)
{
	return getenv("GT_TOP") ? getenv("GT_TOP") : ".";
}

/* galactic-bpf (a separate process each time) on node n's state dir. */
static int tool(int n, const char *cmd, char *out, size_t outlen)
{
	char d[512], ns[64];

	return topo_out(out, outlen, "%s/build/rel/bin/galactic-bpf %s --state-dir %s --netns %s --bpffs %s 2>&1",
			top(), cmd, topo_state_dir(&T, n, d, sizeof(d)), topo_node_ns(&T, n, ns, sizeof(ns)),
			pins[n]);
}

/*
 * The agent as separate processes: each run loads its own programs, swaps
 * them into the filters and exits; a 100 pps ping across both nodes loses
 * nothing, and the pinned counters are readable from outside.
 */
START_TEST(t_process_restarts_no_loss)
{
	char out[4096];
	long tx = -1, rx = -1;
	unsigned long long dec = 0;
	const char *p;

	NEED_TOPO();
	for (int n = 1; n <= NODES; n++) {
		be[n]->ops->close(be[n]); /* this process holds nothing from here on */
		be[n] = NULL;
	}
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 ping -q -c 400 -i 0.01 fd00:a::2 > %s/ping.out 2>&1 &",
				 T.prefix, T.dir), 0);
	usleep(300 * 1000);
	for (int round = 0; round < 3; round++)
		for (int n = 1; n <= 2; n++) {
			int rc = tool(n, "apply", out, sizeof(out));

			ck_assert_msg(rc == 0, "galactic-bpf apply on node %d: %s", n, out);
		}
	ck_assert_msg(tool(1, "observe", out, sizeof(out)) == 0, "observe: %s", out);
	for (int i = 0; i < 100 && topo_sh("grep -q 'packet loss' %s/ping.out", T.dir); i++)
		usleep(100 * 1000);
	topo_out(out, sizeof(out), "sed -n 's/^\\([0-9]*\\) packets transmitted, \\([0-9]*\\) received.*/\\1 \\2/p' %s/ping.out",
		 T.dir);
	sscanf(out, "%ld %ld", &tx, &rx);
	printf("6 galactic-bpf runs (each a new process and program load) under ping: %ld transmitted, %ld received\n", tx, rx);
	ck_assert_int_eq(tx, 400);
	ck_assert_int_eq(rx, 400);
	ck_assert_int_eq(tool(2, "stats", out, sizeof(out)), 0);
	p = strstr(out, "id=vpcA decap_packets=");
	ck_assert_msg(p && sscanf(p, "id=vpcA decap_packets=%llu", &dec) == 1, "stats: %s", out);
	ck_assert_uint_ge(dec, 400);
	/* Leaving bpf: filters and pins go. */
	ck_assert_msg(tool(2, "teardown", out, sizeof(out)) == 0, "teardown: %s", out);
	ck_assert_msg(topo_sh("tc -n %s-n2 filter show dev up0 ingress | grep -q galactic", T.prefix) != 0,
		      "decap filter left on node 2");
	ck_assert_msg(access(pins[2], F_OK) != 0, "pins left at %s", pins[2]);
}
END_TEST


/*
 * bpf delta applies: a DEL takes the pod's trie entry, ifaces entry and
 * encap filter away (its traffic stops), an ADD puts them back (traffic
 * again), a remote forgotten and learned again changes only its entry; an
 * owned leftover entry out of scope stays until the next full apply.
 */
START_TEST(t_delta_apply_scope)
{
	struct gdp_state none, noremote;
	struct gdp_results r;
	struct gdp_delta dl;
	struct gbpf_route_key lk;
	struct gbpf_route lv = { .flags = GBPF_RT_LOCAL };
	uint8_t addr[16] = { 0xfd, 0, 0, 0x0b, [15] = 0x77 };
	const struct gdp_vpc *va;
	const struct gdp_attachment *a3;
	char err[256];
	size_t i;

	NEED_TOPO();
	ck_assert_ptr_nonnull(gdp_bpf_backend.apply_delta);
	gdp_results_init(&r);
	gdp_delta_init(&dl);
	ck_assert_int_eq(ping("a3", "fd00:a::2", 3, "0.05"), 3);
	va = gdp_state_find_vpc(&st[3], TOPO_VPC_A);
	a3 = gdp_state_find_attachment(&st[3], TOPO_VPC_A, "a3");
	ck_assert(va && a3);
	/* an owned leftover entry nobody wants */
	gbpf_route_key(&lk, va->arg, AF_INET6, addr, 128);
	ck_assert_int_eq(gbpf_set_route(gdp_bpf_handle(be[3]), &lk, &lv, err, sizeof(err)), 0);

	/* DEL a3 */
	ck_assert_int_eq(gdp_state_copy(&none, &st[3]), 0);
	i = (size_t)(a3 - st[3].atts);
	none.atts[i] = none.atts[--none.n_atts];
	ck_assert_int_eq(gdp_delta_compute(&st[3], &none, &dl), 0);
	ck_assert(!dl.full);
	ck_assert_int_eq(dl.n_gone_atts, 1);
	ck_assert_int_eq(gdp_bpf_backend.apply_delta(be[3], &none, &dl, &r), 0);
	ck_assert_int_gt(r.removed, 0);
	ck_assert_int_ne(topo_sh("tc -n %s-n3 filter show dev %s ingress | grep -q bpf", T.prefix, a3->host_ifname), 0);
	ck_assert_int_eq(ping("a3", "fd00:a::2", 3, "0.05"), 0);

	/* ADD it again */
	ck_assert_int_eq(gdp_delta_compute(&none, &st[3], &dl), 0);
	ck_assert_int_eq(dl.n_atts, 1);
	ck_assert_int_eq(gdp_bpf_backend.apply_delta(be[3], &st[3], &dl, &r), 0);
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_ATTACHMENT, TOPO_VPC_A, "a3"));
	ck_assert(gdp_results_find(&r, GDP_OBJ_ATTACHMENT, TOPO_VPC_A, "a3")->programmed);
	ck_assert_int_eq(topo_sh("tc -n %s-n3 filter show dev %s ingress | grep -q bpf", T.prefix, a3->host_ifname), 0);
	ck_assert_int_eq(ping("a3", "fd00:a::2", 3, "0.05"), 3);

	/* a remote forgotten, then learned again: only its entry */
	ck_assert_int_eq(gdp_state_copy(&noremote, &st[3]), 0);
	for (i = 0; i < noremote.n_remotes; i++) {
		char pb[64];

		if (!strcmp(gdp_prefix_str(&noremote.remotes[i].prefix, pb, sizeof(pb)), "fd00:a::2/128"))
			break;
	}
	ck_assert_uint_lt(i, noremote.n_remotes);
	noremote.remotes[i] = noremote.remotes[--noremote.n_remotes];
	ck_assert_int_eq(gdp_delta_compute(&st[3], &noremote, &dl), 0);
	ck_assert_int_eq(dl.n_gone_remotes, 1);
	ck_assert_int_eq(dl.n_atts + dl.n_gone_atts + dl.n_remotes, 0);
	ck_assert_int_eq(gdp_bpf_backend.apply_delta(be[3], &noremote, &dl, &r), 0);
	ck_assert_int_eq(r.removed, 1);
	ck_assert_int_eq(ping("a3", "fd00:a::2", 3, "0.05"), 0);
	ck_assert_int_eq(gdp_delta_compute(&noremote, &st[3], &dl), 0);
	ck_assert_int_eq(dl.n_remotes, 1);
	ck_assert_int_eq(gdp_bpf_backend.apply_delta(be[3], &st[3], &dl, &r), 0);
	ck_assert_int_eq(r.added, 1);
	ck_assert_int_eq(ping("a3", "fd00:a::2", 3, "0.05"), 3);

	/* the leftover is out of every delta's scope; a full apply removes it */
	ck_assert_int_eq(bpf_map_lookup_elem(gbpf_map_fd(gdp_bpf_handle(be[3]), GBPF_MAP_ROUTES), &lk, &lv), 0);
	ck_assert_int_eq(apply_node(3), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(gbpf_map_fd(gdp_bpf_handle(be[3]), GBPF_MAP_ROUTES), &lk, &lv), 0);
	ck_assert_int_eq(observe_node(3), 0);

	gdp_delta_free(&dl);
	gdp_results_free(&r);
	gdp_state_free(&none);
	gdp_state_free(&noremote);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bpf_topo");
	TCase *tc = tcase_create("topology");

	run_id = (int)getpid();
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, NULL, pins_down);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, t_v6_ping_same_vpc_isolated);
	tcase_add_test(tc, t_v6_tcp_stream_isolated);
	tcase_add_test(tc, t_v4_dx4_ping_isolated);
	tcase_add_test(tc, t_v4_bpf_decap_isolated);
	tcase_add_test(tc, t_delta_apply_scope);
	tcase_add_test(tc, t_agent_restart_no_loss);
	tcase_add_test(tc, t_process_restarts_no_loss);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
