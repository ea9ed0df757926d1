/*
 * Kernel backend with real traffic: three nodes on a bridged fabric, two VPCs
 * whose pods use the same addresses, galactic-agent on every node.
 *
 *   n1: a1 (vpcA fd00:a::1 10.1.0.1)   b1 (vpcB fd00:a::1 10.1.0.1)
 *   n2: a2 (vpcA fd00:a::2 10.1.0.2)   b2 (vpcB fd00:a::2 10.1.0.2)
 *   n3: a3 (vpcA fd00:a::3 10.1.0.3)
 *
 * Packets are counted at the pods (/proc/net/snmp{,6} inside each pod's
 * namespace), so "the other VPC never sees it" is a number, not a hope.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/seg6_local.h>

#include "agent/dp/backend.h"
#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "agent/nl/objects.h"
#include "agent/record.h"
#include "agent/record_legacy.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

static struct topo T;
static int setup_ok;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long status_int(int node, const char *key)
{
	return topo_status_int(&T, node, key);
}

static int wait_reconciled(int node, long n, double timeout)
{
	return topo_wait_reconciled(&T, node, n, timeout);
}

static int agent_once(int node)
{
	char d[512], ns[64];

	return topo_sh("%s/build/rel/bin/galactic-agent --state-dir %s --netns %s --once >>%s/agent.log 2>&1",
		       getenv("GT_TOP") ? getenv("GT_TOP") : ".", topo_state_dir(&T, node, d, sizeof(d)),
		       topo_node_ns(&T, node, ns, sizeof(ns)), d);
}

static void setup(void)
{
	int i;

	setup_ok = 0;
	if (geteuid() != 0)
		return;
	if (topo_up(&T, 3))
		return;
	if (topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1") < 0 ||
	    topo_add_pod(&T, 1, "b1", TOPO_VPC_B, "fd00:a::1", "10.1.0.1") < 0 ||
	    topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2") < 0 ||
	    topo_add_pod(&T, 2, "b2", TOPO_VPC_B, "fd00:a::2", "10.1.0.2") < 0 ||
	    topo_add_pod(&T, 3, "a3", TOPO_VPC_A, "fd00:a::3", "10.1.0.3") < 0)
		return;
	for (i = 1; i <= 3; i++)
		if (topo_write_state(&T, i, 0) || topo_agent_start(&T, i, NULL) <= 0)
			return;
	for (i = 1; i <= 3; i++)
		if (wait_reconciled(i, 1, 20))
			return;
	setup_ok = 1;
}

static void teardown(void)
{
	topo_down(&T);
}

#define NEED_TOPO()                                                                \
	do {                                                                       \
		if (geteuid() != 0)                                                \
			GT_SKIP("needs root for network namespaces");             \
		ck_assert_msg(setup_ok, "topology or agents failed to come up (see %s)", T.dir); \
	} while (0)

/* ping from pod; returns packets received (or -1). */
static long ping(const char *pod, const char *dst, int count, const char *interval)
{
	char out[256];

	topo_out(out, sizeof(out),
		 "ip netns exec %s-%s ping -q -c %d -i %s -W 1 %s | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'",
		 T.prefix, pod, count, interval, dst);
	return out[0] ? atol(out) : -1;
}


/* tcpdump on the fabric bridge, in the background; returns once it listens. */
static pid_t capture_start(const char *filter, int count, const char *file)
{
	char cmd[1024], err[700];
	double end;
	pid_t pid;

	snprintf(err, sizeof(err), "%s.err", file);
	unlink(err);
	snprintf(cmd, sizeof(cmd), "exec ip netns exec %s-fab timeout 10 tcpdump -l -n -i br0 -c %d '%s' > %s 2> %s",
		 T.prefix, count, filter, file, err);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (end = now_s() + 5; pid > 0 && now_s() < end; usleep(20000))
		if (topo_sh("grep -q listening %s 2>/dev/null", err) == 0)
			break;
	return pid;
}

/* Waits for the capture and returns the number of packets it printed. */
static long capture_count(pid_t pid, const char *file)
{
	char out[32];

	waitpid(pid, NULL, 0);
	topo_out(out, sizeof(out), "grep -c . %s", file);
	return atol(out);
}

START_TEST(t_v6_ping_same_vpc_isolated)
{
	long a2, b2, b1r, a1r, got, ncap;
	char cap[600];
	pid_t cp;

	NEED_TOPO();
	a2 = topo_snmp(&T, "a2", "Icmp6InEchos");
	b2 = topo_snmp(&T, "b2", "Icmp6InEchos");
	a1r = topo_snmp(&T, "a1", "Icmp6InEchoReplies");
	b1r = topo_snmp(&T, "b1", "Icmp6InEchoReplies");
	snprintf(cap, sizeof(cap), "%s/cap6.txt", T.dir);
	cp = capture_start("ip6 and ip6[6] == 41 and dst host fcbb:bb00:1:2:e001::", 20, cap);
	ck_assert_int_gt(cp, 0);
	got = ping("a1", "fd00:a::2", 20, "0.05");
	ncap = capture_count(cp, cap);
	printf("v6 ping a1->a2: %ld/20 received; on the fabric %ld IPv6-in-IPv6 packets to a2's VPC SID; "
	       "echo requests at a2 +%ld, at b2 (same address, vpcB) +%ld\n", got, ncap,
	       topo_snmp(&T, "a2", "Icmp6InEchos") - a2, topo_snmp(&T, "b2", "Icmp6InEchos") - b2);
	ck_assert_int_eq(ncap, 20); /* the requests crossed the fabric encapsulated to the SID */
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp6InEchos") - a2, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp6InEchos") - b2, 0);
	ck_assert_int_eq(topo_snmp(&T, "a1", "Icmp6InEchoReplies") - a1r, 20);
	ck_assert_int_eq(topo_snmp(&T, "b1", "Icmp6InEchoReplies") - b1r, 0);
	/* and the other VPC works on its own, with the same addresses */
	a2 = topo_snmp(&T, "a2", "Icmp6InEchos");
	ck_assert_int_eq(ping("b1", "fd00:a::2", 10, "0.05"), 10);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp6InEchos") - a2, 0);
	/* three nodes: a3 reaches a1 too */
	ck_assert_int_eq(ping("a3", "fd00:a::1", 5, "0.05"), 5);
}
END_TEST

START_TEST(t_v6_tcp_stream_isolated)
{
	char out[256];
	long a2, b2, bytes;
	int rc, tries;

	NEED_TOPO();
	ck_assert_int_eq(topo_sh("ip netns exec %s-a2 timeout 30 iperf3 -s -1 -D -B fd00:a::2 -p 5201 --logfile %s/iperf-s.log",
				 T.prefix, T.dir), 0);
	a2 = topo_snmp(&T, "a2", "Tcp:InSegs");
	b2 = topo_snmp(&T, "b2", "Tcp:InSegs");
	for (tries = 0, rc = 1; tries < 5 && rc; tries++) {
		usleep(100000);
		rc = topo_out(out, sizeof(out),
			      "ip netns exec %s-a1 timeout 8 iperf3 -6 -c fd00:a::2 -p 5201 -t 2 -J | jq '.end.sum_received.bytes'",
			      T.prefix);
		if (!rc && atol(out) <= 0)
			rc = 1;
	}
	bytes = atol(out);
	printf("v6 TCP a1->a2: %ld bytes received in 2 s (%.1f Mbit/s); TCP segments at a2 +%ld, at b2 +%ld\n",
	       bytes, bytes * 8 / 2e6, topo_snmp(&T, "a2", "Tcp:InSegs") - a2,
	       topo_snmp(&T, "b2", "Tcp:InSegs") - b2);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(bytes, 1000000);
	ck_assert_int_gt(topo_snmp(&T, "a2", "Tcp:InSegs") - a2, 100);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Tcp:InSegs") - b2, 0);
}
END_TEST

START_TEST(t_v4_dx4_ping_isolated)
{
	long a2, b2, got, ncap;
	char cap[600];
	pid_t cp;

	NEED_TOPO();
	a2 = topo_snmp(&T, "a2", "Icmp:InEchos");
	b2 = topo_snmp(&T, "b2", "Icmp:InEchos");
	snprintf(cap, sizeof(cap), "%s/cap4.txt", T.dir);
	cp = capture_start("ip6 and ip6[6] == 4 and dst host fcbb:bb00:1:2:d001::", 20, cap);
	ck_assert_int_gt(cp, 0);
	got = ping("a1", "10.1.0.2", 20, "0.05");
	ncap = capture_count(cp, cap);
	printf("v4 (End.DX4) ping a1->a2: %ld/20; on the fabric %ld IPv4-in-IPv6 packets to a2's End.DX4 SID; "
	       "echo requests at a2 +%ld, at b2 (same address, vpcB) +%ld\n", got, ncap,
	       topo_snmp(&T, "a2", "Icmp:InEchos") - a2, topo_snmp(&T, "b2", "Icmp:InEchos") - b2);
	ck_assert_int_eq(ncap, 20);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(topo_snmp(&T, "a2", "Icmp:InEchos") - a2, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp:InEchos") - b2, 0);
	b2 = topo_snmp(&T, "b2", "Icmp:InEchos");
	ck_assert_int_eq(ping("b1", "10.1.0.2", 10, "0.05"), 10);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp:InEchos") - b2, 10);
}
END_TEST

START_TEST(t_vrf_dt46)
{
	struct gdp_backend *be;
	struct gdp_caps caps;
	struct gnl_sock *nl;
	struct gnl_route r;
	struct nl_msg *m;
	char err[256], ns[64];

	NEED_TOPO();
	topo_node_ns(&T, 3, ns, sizeof(ns));
	ck_assert_int_eq(gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)), 0);
	gdp_kernel_backend.caps(be, &caps);
	gdp_kernel_backend.close(be);
	if (!caps.vrf)
		GT_SKIP("kernel has no VRF device type (%s): End.DT4/End.DT46 with vrftable cannot run here", caps.detail);
	/* A kernel with VRF: the End.DT46 encoder must be accepted and read back. */
	ck_assert_int_eq(gnl_open(&nl, ns, err, sizeof(err)), 0);
	ck_assert_int_eq(gnl_vrf_add(nl, "gvrft", 16400, NULL, 0), 0);
	memset(&r, 0, sizeof(r));
	r.family = AF_INET6;
	r.table = 254;
	r.protocol = 154;
	gnl_addr_parse("fcbb:bb00:1:3:e00f::/128", &r.dst);
	r.oif = (uint32_t)gnl_ifindex(nl, "gvrft");
	r.encap = GNL_ENCAP_SEG6LOCAL;
	r.s6l.action = SEG6_LOCAL_ACTION_END_DT46;
	r.s6l.vrftable = 16400;
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
	ck_assert_int_eq(gnl_talk(nl, m, err, sizeof(err)), 0);
	nlmsg_free(m);
	gnl_link_del(nl, "gvrft", NULL, 0);
	gnl_close(nl);
}
END_TEST

static void status_path(int node, char *buf, size_t n)
{
	char d[512];

	snprintf(buf, n, "%s/status.json", topo_state_dir(&T, node, d, sizeof(d)));
}

/* Restarts node's agent with sig and waits for the new one's first reconcile. */
static void restart_agent_args(int node, int sig, const char *args)
{
	char sp[600];

	status_path(node, sp, sizeof(sp));
	topo_agent_stop(&T, node, sig);
	unlink(sp);
	ck_assert_int_gt(topo_agent_start(&T, node, args), 0);
	ck_assert_msg(wait_reconciled(node, 1, 20) == 0, "agent on n%d did not reconcile after restart", node);
	/* A restart adopts the kernel as it is: nothing added, nothing removed. */
	ck_assert_int_eq(status_int(node, "added"), 0);
	ck_assert_int_eq(status_int(node, "removed"), 0);
	ck_assert_int_gt(status_int(node, "unchanged"), 10);
}

static void restart_agent(int node, int sig)
{
	restart_agent_args(node, sig, NULL);
}

START_TEST(t_restart_agent_during_ping_loses_nothing)
{
	char out[256], log[600];
	pid_t pp;
	int st;

	NEED_TOPO();
	snprintf(log, sizeof(log), "%s/ping-restart.txt", T.dir);
	/* 600 pings 10 ms apart; both ends' agents restart meanwhile (TERM and KILL). */
	pp = fork();
	if (pp == 0) {
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "exec ip netns exec %s-a1 ping -q -c 600 -i 0.01 -W 1 fd00:a::2 > %s 2>&1",
			 T.prefix, log);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pp, 0);
	usleep(800000);
	restart_agent(1, SIGTERM);
	restart_agent(2, SIGKILL);
	restart_agent(1, SIGKILL);
	ck_assert_int_eq(waitpid(pp, &st, 0), pp);
	topo_out(out, sizeof(out), "sed -n 's/.*transmitted, \\([0-9]*\\) received.*/\\1/p' %s", log);
	printf("ping during 3 agent restarts: %s/600 received\n", out);
	ck_assert_int_eq(atol(out), 600);
}
END_TEST

START_TEST(t_drift_repaired_leftovers_removed)
{
	char ns[64];
	double end;
	int back = 0, gone = 0;

	NEED_TOPO();
	topo_node_ns(&T, 1, ns, sizeof(ns));
	ck_assert_int_eq(topo_sh("ip -n %s -6 route del fd00:a::2/128 table %d", ns, TOPO_TABLE_A), 0);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fd00:a::77/128 dev up0 table %d proto 154", ns, TOPO_TABLE_A), 0);
	/* a foreign route in main must survive every reconcile */
	ck_assert_int_eq(topo_sh("ip -n %s -6 route add 2001:db8:77::/64 dev up0", ns), 0);
	ck_assert_int_gt(topo_agent_pid(&T, 1), 0);
	ck_assert_int_eq(kill(topo_agent_pid(&T, 1), SIGHUP), 0);
	for (end = now_s() + 10; now_s() < end && !(back && gone); usleep(50000)) {
		back = topo_sh("ip -n %s -6 route show table %d | grep -q '^fd00:a::2 .*encap seg6'", ns, TOPO_TABLE_A) == 0;
		gone = topo_sh("ip -n %s -6 route show table %d | grep -q '^fd00:a::77'", ns, TOPO_TABLE_A) != 0;
	}
	ck_assert_msg(back, "deleted encap route was not repaired");
	ck_assert_msg(gone, "owned leftover route was not removed");
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show | grep -q '^2001:db8:77::/64'", ns), 0);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 3, "0.05"), 3);

	/* With an hour between periodic passes, the netlink notification alone
	 * must bring a deleted route and the VPC's steering rule back. */
	restart_agent_args(1, SIGTERM, "--interval 3600");
	ck_assert_int_eq(topo_sh("ip -n %s -6 route del fd00:a::2/128 table %d", ns, TOPO_TABLE_A), 0);
	ck_assert_int_eq(topo_sh("ip -n %s -6 rule del pref 1000 fwmark 0x%x/0x%x lookup %d", ns,
				 GDE_MARK_POD | 1, GDE_MARK_MASK, TOPO_TABLE_A), 0);
	back = 0;
	{
		double t0 = now_s();

		for (end = t0 + 5; now_s() < end && !back; usleep(20000))
			back = topo_sh("ip -n %s -6 route show table %d | grep -q '^fd00:a::2 .*encap seg6'", ns, TOPO_TABLE_A) == 0 &&
			       topo_sh("ip -n %s -6 rule | grep -q 'fwmark 0x%x/0x%x lookup %d proto 154'", ns,
				       GDE_MARK_POD | 1, GDE_MARK_MASK, TOPO_TABLE_A) == 0;
		printf("drift repaired from netlink notifications in %.2f s\n", now_s() - t0);
	}
	ck_assert_msg(back, "drift not repaired from notifications (interval 3600)");
	ck_assert_int_eq(ping("a1", "fd00:a::2", 3, "0.05"), 3);
	/* A host veth's steering element deleted (and then the whole table):
	 * noticed from the nftables notification, read back, repaired and
	 * counted as attachment drift. */
	ck_assert_int_eq(topo_sh("ip netns exec %s nft delete element inet %s %s '{ \"ha1\" }'", ns, GDS_TABLE, GDS_MAP), 0);
	back = 0;
	{
		double t0 = now_s();

		for (end = t0 + 5; now_s() < end && !back; usleep(20000))
			back = topo_sh("ip netns exec %s nft list map inet %s %s | grep -q '\"ha1\" : 0x%08x'", ns, GDS_TABLE,
				       GDS_MAP, GDE_MARK_POD | 1) == 0;
		printf("steering element repaired from nftables notifications in %.2f s\n", now_s() - t0);
	}
	ck_assert_msg(back, "steering element not repaired (interval 3600)");
	gone = 0;
	for (end = now_s() + 5; now_s() < end && !gone; usleep(50000))
		gone = topo_sh("grep -q 'drift repaired and read back: 1 attachment' %s/n1/agent.log", T.dir) == 0;
	ck_assert_msg(gone, "the steering repair was not counted as drift");
	ck_assert_int_eq(ping("a1", "fd00:a::2", 3, "0.05"), 3);
	ck_assert_int_eq(topo_sh("ip netns exec %s nft delete table inet %s", ns, GDS_TABLE), 0);
	back = 0;
	for (end = now_s() + 5; now_s() < end && !back; usleep(20000))
		back = topo_sh("ip netns exec %s nft list map inet %s %s | grep -q '\"ha1\" : 0x%08x'", ns, GDS_TABLE,
			       GDS_MAP, GDE_MARK_POD | 1) == 0;
	ck_assert_msg(back, "steering table not repaired (interval 3600)");
	ck_assert_int_eq(ping("a1", "fd00:a::2", 3, "0.05"), 3);
	restart_agent(1, SIGTERM);
}
END_TEST

/* Routes with galactic's protocol in table (v6). */
static long count_owned(struct gnl_sock *nl, uint32_t table);

struct cnt {
	uint32_t table;
	long n;
};

static int cnt_cb(const struct nlmsghdr *h, void *arg)
{
	struct cnt *c = arg;
	struct gnl_route r;

	if (gnl_route_parse(h, &r) == 0 && r.table == c->table && r.protocol == GDP_RTPROT_DEFAULT)
		c->n++;
	return 0;
}

static long count_owned(struct gnl_sock *nl, uint32_t table)
{
	struct cnt c = { table, 0 };
	struct nl_msg *m;
	int rc;

	if (gnl_route_dump_msg(&m, AF_INET6, 0))
		return -1;
	do {
		c.n = 0;
		rc = gnl_dump(nl, m, cnt_cb, &c);
	} while (rc == -EAGAIN);
	nlmsg_free(m);
	return rc ? -1 : c.n;
}

static int observe_node(int node, struct gdp_results *res)
{
	struct gdp_backend *be;
	struct gdp_state st;
	char d[512], ns[64], err[512];
	int rc;

	/* The agent imported the node's state.json into its record. */
	if (record_load_state(topo_state_dir(&T, node, d, sizeof(d)), &st, err, sizeof(err)))
		return -1000;
	if (gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = topo_node_ns(&T, node, ns, sizeof(ns)) },
				    err, sizeof(err))) {
		gdp_state_free(&st);
		return -1001;
	}
	rc = gdp_kernel_backend.observe(be, &st, res);
	gdp_kernel_backend.close(be);
	gdp_state_free(&st);
	return rc;
}

START_TEST(t_kill9_during_10k_then_restart_exact)
{
	struct gnl_sock *nl;
	struct gdp_results res;
	char ns[64], err[256];
	long base, at_kill = -1, after_kill = -1, final;
	int attempt, midway = 0;
	double end;

	NEED_TOPO();
	topo_node_ns(&T, 3, ns, sizeof(ns));
	ck_assert_int_eq(gnl_open(&nl, ns, err, sizeof(err)), 0);
	topo_agent_stop(&T, 3, SIGTERM);
	for (attempt = 0; attempt < 6 && !midway; attempt++) {
		ck_assert_int_eq(topo_write_state(&T, 3, 0), 0);
		ck_assert_int_eq(agent_once(3), 0);
		base = count_owned(nl, TOPO_TABLE_A);
		ck_assert_int_gt(base, 0);
		ck_assert_int_eq(topo_write_state(&T, 3, 10000), 0);
		ck_assert_int_gt(topo_agent_start(&T, 3, attempt ? "--batch 32" : NULL), 0);
		for (end = now_s() + 20; now_s() < end;) {
			at_kill = count_owned(nl, TOPO_TABLE_A);
			if (at_kill >= base + 300 + attempt * 700)
				break;
		}
		topo_agent_stop(&T, 3, SIGKILL);
		after_kill = count_owned(nl, TOPO_TABLE_A);
		midway = after_kill > base && after_kill < base + 10000;
		printf("kill -9 attempt %d: %ld owned routes in table %d when killed (base %ld, target %ld)\n",
		       attempt + 1, after_kill, TOPO_TABLE_A, base, base + 10000);
	}
	ck_assert_msg(midway, "never caught the agent in the middle of applying 10,000 routes");
	/* restart: the kernel must end exactly at the desired state */
	ck_assert_int_eq(agent_once(3), 0);
	final = count_owned(nl, TOPO_TABLE_A);
	printf("after restart: %ld owned routes (expected %ld)\n", final, base + 10000);
	ck_assert_int_eq(final, base + 10000);
	gdp_results_init(&res);
	ck_assert_int_eq(observe_node(3, &res), 0);
	gdp_results_free(&res);
	/* back to the small state for the other tests */
	ck_assert_int_eq(topo_write_state(&T, 3, 0), 0);
	ck_assert_int_eq(agent_once(3), 0);
	ck_assert_int_eq(count_owned(nl, TOPO_TABLE_A), base);
	ck_assert_int_gt(topo_agent_start(&T, 3, NULL), 0);
	gnl_close(nl);
}
END_TEST

static const struct gdp_result *find_res(const struct gdp_results *r, enum gdp_obj_kind k,
					 const char *vpc, const char *key)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->v[i].kind == k && !strcmp(r->v[i].vpc, vpc) && !strcmp(r->v[i].key, key))
			return &r->v[i];
	return NULL;
}

START_TEST(t_bad_input_fails_alone)
{
	struct gdp_backend *be;
	struct gdp_state st, bad;
	struct gdp_results res;
	struct gdp_vpc vc = { .id = "vpcC", .arg = 3, .table = 16390, .n_prefixes = 1 };
	struct gdp_remote r1 = { .vpc_ix = gdp_vpc_ix(TOPO_VPC_A) }, r2 = { .vpc_ix = gdp_vpc_ix(TOPO_VPC_A) }, r3 = { .vpc_ix = gdp_vpc_ix("vpcC") };
	struct gdp_attachment dup;
	const struct gdp_result *x;
	char d[512], ns[64], err[512], tmp[] = "/tmp/galactic-bad.XXXXXX";
	struct gdp_results lb;
	FILE *f;

	NEED_TOPO();
	topo_node_ns(&T, 3, ns, sizeof(ns));
	topo_agent_stop(&T, 3, SIGTERM);
	ck_assert_int_eq(record_load_state(topo_state_dir(&T, 3, d, sizeof(d)), &st, err, sizeof(err)), 0);
	ck_assert_int_eq(gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)), 0);
	gdp_results_init(&res);
	ck_assert_int_eq(gdp_kernel_backend.apply(be, &st, &res), 0);
	ck_assert_int_eq(topo_sh("ip -n %s route add 10.9.0.0/24 dev up0 table 16390", ns), 0);

	ck_assert_int_eq(gdp_state_copy(&bad, &st), 0);
	gdp_prefix_parse("fd00:c::/64", &vc.prefixes[0]);
	gdp_state_add_vpc(&bad, &vc);
	gdp_prefix_parse("fd00:a::99/128", &r1.prefix);
	inet_pton(AF_INET6, "fe80::1", &r1.sid);                    /* invalid SID */
	gdp_prefix_parse("fd00:b::1/128", &r2.prefix);              /* outside the VPC */
	inet_pton(AF_INET6, "fcbb:bb00:1:1:e001::", &r2.sid);
	gdp_prefix_parse("fd00:c::1/128", &r3.prefix);              /* in the refused VPC */
	inet_pton(AF_INET6, "fcbb:bb00:1:1:e003::", &r3.sid);
	gdp_state_add_remote(&bad, &r1);
	gdp_state_add_remote(&bad, &r2);
	gdp_state_add_remote(&bad, &r3);
	dup = *gdp_state_find_attachment(&st, TOPO_VPC_A, "a3");
	snprintf(dup.host_ifname, sizeof(dup.host_ifname), "hdup");
	dup.arg = 9;
	gdp_state_add_attachment(&bad, &dup);                       /* duplicate attachment */

	ck_assert_int_ne(gdp_kernel_backend.apply(be, &bad, &res), 0);
	x = find_res(&res, GDP_OBJ_VPC, "vpcC", "");
	ck_assert_ptr_nonnull(x);
	printf("vpcC: %s\n", x->msg);
	ck_assert_int_eq(x->err, -EBUSY);
	ck_assert_ptr_nonnull(strstr(x->msg, "table 16390 already used by something else"));
	x = find_res(&res, GDP_OBJ_REMOTE, TOPO_VPC_A, "fd00:a::99/128");
	ck_assert_ptr_nonnull(x);
	printf("remote: %s\n", x->msg);
	ck_assert_ptr_nonnull(strstr(x->msg, "invalid SID fe80::1"));
	x = find_res(&res, GDP_OBJ_REMOTE, TOPO_VPC_A, "fd00:b::1/128");
	ck_assert_ptr_nonnull(x);
	printf("remote: %s\n", x->msg);
	ck_assert_ptr_nonnull(strstr(x->msg, "outside the VPC"));
	x = find_res(&res, GDP_OBJ_REMOTE, "vpcC", "fd00:c::1/128");
	ck_assert_ptr_nonnull(x);
	ck_assert_int_ne(x->err, 0);
	ck_assert_int_eq(res.v[0].err, 0); /* node fine */
	/* both a3 entries share the key: the later one failed, the first is programmed */
	{
		size_t i, ok = 0, dupfail = 0;

		for (i = 0; i < res.n; i++)
			if (res.v[i].kind == GDP_OBJ_ATTACHMENT && !strcmp(res.v[i].key, "a3")) {
				if (res.v[i].programmed)
					ok++;
				else if (strstr(res.v[i].msg, "duplicate attachment"))
					dupfail++, printf("attachment: %s\n", res.v[i].msg);
			}
		ck_assert_int_eq(ok, 1);
		ck_assert_int_eq(dupfail, 1);
	}
	x = find_res(&res, GDP_OBJ_VPC, TOPO_VPC_A, "");
	ck_assert(x && x->programmed);
	ck_assert_int_eq(res.added, 0);
	ck_assert_int_eq(res.removed, 0);
	/* the rest of the node is exactly as before; the foreign table untouched */
	ck_assert_int_eq(gdp_kernel_backend.observe(be, &st, &res), 0);
	ck_assert_int_eq(topo_sh("ip -n %s route show table 16390 | grep -q '^10.9.0.0/24 dev up0'", ns), 0);
	ck_assert_int_ne(topo_sh("ip -n %s -6 rule | grep -q 16390", ns), 0);
	ck_assert_int_eq(ping("a3", "fd00:a::1", 3, "0.05"), 3);

	/* the loader rejects an unparsable SID alone and keeps the rest */
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(d, sizeof(d), "%s/remotes.json", tmp);
	f = fopen(d, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"remotes\":[{\"vpc\":\"vpcA\",\"prefix\":\"fd00:a::5/128\",\"sid\":\"zz::1\"},"
		   "{\"vpc\":\"vpcA\",\"prefix\":\"fd00:a::6/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}");
	fclose(f);
	gdp_results_init(&lb);
	gdp_state_free(&bad);
	ck_assert_int_eq(legacy_load(tmp, &bad, &lb, err, sizeof(err)), 0);
	ck_assert_int_eq(bad.n_remotes, 1);
	ck_assert_int_eq(lb.n, 1);
	printf("loader: %s\n", lb.v[0].msg);
	ck_assert_ptr_nonnull(strstr(lb.v[0].msg, "invalid SID 'zz::1'"));
	topo_sh("rm -rf %s", tmp);
	gdp_results_free(&lb);

	topo_sh("ip -n %s route del 10.9.0.0/24 table 16390", ns);
	gdp_results_free(&res);
	gdp_state_free(&bad);
	gdp_state_free(&st);
	gdp_kernel_backend.close(be);
	ck_assert_int_gt(topo_agent_start(&T, 3, NULL), 0);
}
END_TEST

/*
 * A dry run (observe) must count an object that cannot be programmed: an
 * attachment whose host interface is missing is a difference, both through
 * the backend and through `galactic-bpf observe --mode kernel`.
 */
START_TEST(t_observe_counts_failed_objects)
{
	struct gdp_backend *be;
	struct gdp_state st;
	struct gdp_results res;
	struct gdp_attachment ghost;
	const struct gdp_result *x;
	char d[512], ns[64], err[512], out[4096], tmp[] = "/tmp/galactic-ghost.XXXXXX";
	int rc;

	NEED_TOPO();
	topo_node_ns(&T, 3, ns, sizeof(ns));
	ck_assert_int_eq(record_load_state(topo_state_dir(&T, 3, d, sizeof(d)), &st, err, sizeof(err)), 0);
	ck_assert_int_gt(st.n_atts, 0);
	ghost = st.atts[0];
	snprintf(ghost.id, sizeof(ghost.id), "ghost");
	snprintf(ghost.host_ifname, sizeof(ghost.host_ifname), "hghost");
	ghost.arg = 77;
	ghost.nh4 = gdp_default_nh4(77);
	gdp_prefix_parse("fd00:a::77", &ghost.addrs[0]);
	gdp_prefix_parse("10.1.0.77", &ghost.addrs[1]);
	ck_assert_int_eq(gdp_state_add_attachment(&st, &ghost), 0);
	ck_assert_int_eq(gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)), 0);
	gdp_results_init(&res);
	rc = gdp_kernel_backend.observe(be, &st, &res);
	x = find_res(&res, GDP_OBJ_ATTACHMENT, st.atts[0].vpc, "ghost");
	ck_assert_ptr_nonnull(x);
	printf("observe with a missing host interface: rc %d, failed %lu: %s\n", rc, res.failed, x->msg);
	ck_assert_int_ne(x->err, 0);
	ck_assert_int_gt(rc, 0);
	ck_assert_uint_eq(res.failed, 1);
	gdp_results_free(&res);
	gdp_kernel_backend.close(be);
	/* The same through the tool, from a state directory in the old format. */
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	ck_assert_int_eq(legacy_save_state(tmp, &st, err, sizeof(err)), 0);
	rc = topo_out(out, sizeof(out), "%s/build/rel/bin/galactic-bpf observe --mode kernel --state-dir %s --netns %s 2>&1",
		      getenv("GT_TOP") ? getenv("GT_TOP") : ".", tmp, ns);
	printf("galactic-bpf observe --mode kernel: exit %d: %s\n", rc, out);
	ck_assert_int_ne(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "failed 1"));
	ck_assert_ptr_null(strstr(out, ": ok"));
	topo_sh("rm -rf %s", tmp);
	gdp_state_free(&st);
}
END_TEST


/*
 * A delta apply touches only its scope: an ADD writes the attachment's own
 * objects after one link lookup (no route, rule or neighbour dump), a DEL
 * removes them, a remote change writes only that prefix; an owned leftover
 * in another VPC's table is out of scope and stays until the next full
 * apply, which removes it.
 */
/* An observer's read-back on a thread of its own (beside an apply on the backend). */
struct obs_run {
	struct gdp_backend *obs;
	const struct gdp_state *st;
	struct gdp_results res;
	int rc;
};

static void *obs_thread(void *arg)
{
	struct obs_run *o = arg;

	o->rc = gdp_kernel_backend.observe(o->obs, o->st, &o->res);
	return NULL;
}

START_TEST(t_delta_apply_touches_only_its_scope)
{
	struct gdp_backend *be;
	struct gdp_state st, st2, st3;
	struct gdp_results res;
	struct gdp_delta dl;
	struct gdp_kernel_counters c0, c1;
	struct gdp_attachment a;
	struct gdp_remote rm = { .vpc_ix = gdp_vpc_ix(TOPO_VPC_A) };
	const struct gdp_vpc *va, *vb;
	const struct gdp_result *x;
	char d[512], ns[64], err[512];

	NEED_TOPO();
	topo_node_ns(&T, 1, ns, sizeof(ns));
	topo_agent_stop(&T, 1, SIGTERM);
	ck_assert_int_eq(record_load_state(topo_state_dir(&T, 1, d, sizeof(d)), &st, err, sizeof(err)), 0);
	ck_assert_int_eq(gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(gdp_kernel_backend.apply_delta);
	gdp_results_init(&res);
	gdp_delta_init(&dl);
	/* before any full apply a delta is refused (nothing verified yet) */
	ck_assert_int_eq(gdp_delta_compute(&st, &st, &dl), 0);
	ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st, &dl, &res), -EAGAIN);
	ck_assert_int_eq(gdp_kernel_backend.apply(be, &st, &res), 0);
	va = gdp_state_find_vpc(&st, TOPO_VPC_A);
	vb = gdp_state_find_vpc(&st, TOPO_VPC_B);
	ck_assert(va && vb);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fd00:a::77/128 dev up0 table %u proto 154", ns, vb->table), 0);
	ck_assert_int_eq(topo_sh("ip -n %s link add hdl1 type veth peer name hdl1p", ns), 0);

	/* ADD: one attachment in VPC A */
	ck_assert_int_eq(gdp_state_copy(&st2, &st), 0);
	memset(&a, 0, sizeof(a));
	snprintf(a.vpc, sizeof(a.vpc), "%s", TOPO_VPC_A);
	snprintf(a.id, sizeof(a.id), "dl1");
	snprintf(a.container_id, sizeof(a.container_id), "c-dl1");
	snprintf(a.host_ifname, sizeof(a.host_ifname), "hdl1");
	a.arg = 77;
	a.n_addrs = 2;
	gdp_prefix_parse("fd00:a::71/128", &a.addrs[0]);
	gdp_prefix_parse("10.1.0.71/32", &a.addrs[1]);
	a.nh4 = gdp_default_nh4(a.arg);
	memcpy(a.pod_mac, (uint8_t[]){ 2, 0, 0, 0, 0, 0x71 }, 6);
	ck_assert_int_eq(gdp_state_add_attachment(&st2, &a), 0);
	ck_assert_int_eq(gdp_delta_compute(&st, &st2, &dl), 0);
	ck_assert(!dl.full);
	ck_assert_int_eq(dl.n_atts, 1);
	ck_assert_int_eq(dl.n_gone_atts + dl.n_remotes + dl.n_gone_remotes, 0);
	gdp_kernel_counters(be, &c0);
	ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st2, &dl, &res), 0);
	gdp_kernel_counters(be, &c1);
	ck_assert_int_eq(c1.dumps - c0.dumps, 1);           /* the host veth's lookup, nothing else */
	ck_assert_int_eq(c1.delta_passes - c0.delta_passes, 1);
	ck_assert_int_eq(c1.full_passes, c0.full_passes);
	x = find_res(&res, GDP_OBJ_ATTACHMENT, TOPO_VPC_A, "dl1");
	ck_assert(x && x->programmed && !x->err);
	ck_assert_ptr_null(find_res(&res, GDP_OBJ_ATTACHMENT, TOPO_VPC_A, "a1")); /* out of scope */
	ck_assert_int_gt(res.added, 0);
	ck_assert_int_eq(res.removed, 0);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::71 dev hdl1 proto 154'", ns, va->table), 0);
	/* steered by its VPC's mark: an element of the steering map, no rule of its own */
	ck_assert_int_eq(topo_sh("ip netns exec %s nft list map inet %s %s | grep -q '\"hdl1\" : 0x%08x'", ns, GDS_TABLE,
				 GDS_MAP, GDE_MARK_POD | va->arg), 0);
	ck_assert_int_ne(topo_sh("ip -n %s rule | grep -q 'hdl1'", ns), 0);
	ck_assert_int_eq(topo_sh("ip -n %s neigh show dev hdl1 | grep -q '10.1.0.71 lladdr 02:00:00:00:00:71 PERMANENT'", ns), 0);
	/* the whole node reads back as desired, except the leftover out of scope */
	ck_assert_int_eq(gdp_kernel_backend.observe(be, &st2, &res), 1);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::77 '", ns, vb->table), 0);
	/* an observer (the verify ticks': its own socket and nftables context)
	 * reads the same; its dumps count in the backend's once it is closed */
	{
		struct obs_run o = { .st = &st2 };

		gdp_results_init(&o.res);
		ck_assert_ptr_nonnull(gdp_kernel_backend.observer_open);
		ck_assert_int_eq(gdp_kernel_backend.observer_open(be, &o.obs), 0);
		gdp_kernel_counters(be, &c0);
		ck_assert_int_eq(gdp_kernel_backend.observe(o.obs, &st2, &o.res), 1);
		x = find_res(&o.res, GDP_OBJ_ATTACHMENT, TOPO_VPC_A, "dl1");
		ck_assert(x && x->programmed && !x->err);
		gdp_kernel_counters(be, &c1);
		ck_assert_int_eq(c1.dumps, c0.dumps);
		gdp_kernel_backend.observer_close(be, o.obs);
		gdp_kernel_counters(be, &c1);
		ck_assert_int_gt(c1.dumps, c0.dumps);
		gdp_results_free(&o.res);
	}

	/* a remote learned: only its route (and its SID's throw) */
	ck_assert_int_eq(gdp_state_copy(&st3, &st2), 0);
	gdp_prefix_parse("fd00:a::2:99/128", &rm.prefix);
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &rm.sid);
	ck_assert_int_eq(gdp_state_add_remote(&st3, &rm), 0);
	ck_assert_int_eq(gdp_delta_compute(&st2, &st3, &dl), 0);
	ck_assert(!dl.full);
	ck_assert_int_eq(dl.n_remotes, 1);
	ck_assert_int_eq(dl.n_atts + dl.n_gone_atts + dl.n_gone_remotes, 0);
	gdp_kernel_counters(be, &c0);
	/* ...written while an observer reads the whole node back on another
	 * thread: each on its own socket, neither sees the other's answers */
	{
		struct obs_run o = { .st = &st2 };
		pthread_t th;

		gdp_results_init(&o.res);
		ck_assert_int_eq(gdp_kernel_backend.observer_open(be, &o.obs), 0);
		ck_assert_int_eq(pthread_create(&th, NULL, obs_thread, &o), 0);
		ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st3, &dl, &res), 0);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
		ck_assert_int_ge(o.rc, 1); /* the leftover, and the remote when it read after the write */
		gdp_kernel_counters(be, &c1);
		gdp_kernel_backend.observer_close(be, o.obs);
		gdp_results_free(&o.res);
	}
	ck_assert_int_eq(c1.dumps, c0.dumps); /* the apply dumped nothing (the observer's count at its close) */
	ck_assert_int_eq(c1.delta_ops - c0.delta_ops, 2);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::2:99 .*encap seg6 mode encap.red segs 1 \\[ fcbb:bb00:1:2:e001:: \\] dev up0 proto 154'", ns, va->table), 0);
	/* and forgotten again */
	ck_assert_int_eq(gdp_delta_compute(&st3, &st2, &dl), 0);
	ck_assert_int_eq(dl.n_gone_remotes, 1);
	ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st2, &dl, &res), 0);
	ck_assert_int_ne(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::2:99 '", ns, va->table), 0);

	/* DEL: the attachment's objects go (its veth still there) */
	ck_assert_int_eq(gdp_delta_compute(&st2, &st, &dl), 0);
	ck_assert_int_eq(dl.n_gone_atts, 1);
	ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st, &dl, &res), 0);
	ck_assert_int_gt(res.removed, 0);
	ck_assert_int_ne(topo_sh("ip netns exec %s nft list map inet %s %s | grep -q hdl1", ns, GDS_TABLE, GDS_MAP), 0);
	/* the VPC's rules stay with the VPC */
	ck_assert_int_eq(topo_sh("ip -n %s -6 rule | grep -q 'fwmark 0x%x/0x%x lookup %u proto 154'", ns,
				 GDE_MARK_POD | va->arg, GDE_MARK_MASK, va->table), 0);
	ck_assert_int_ne(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::71 '", ns, va->table), 0);
	ck_assert_int_ne(topo_sh("ip -n %s neigh show dev hdl1 | grep -q 10.1.0.71", ns), 0);
	/* the leftover out of scope is still there; the next full apply removes it */
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::77 '", ns, vb->table), 0);
	ck_assert_int_eq(gdp_kernel_backend.apply(be, &st, &res), 0);
	ck_assert_int_ne(topo_sh("ip -n %s -6 route show table %u | grep -q '^fd00:a::77 '", ns, vb->table), 0);
	ck_assert_int_eq(gdp_kernel_backend.observe(be, &st, &res), 0);

	/* a change the delta cannot express asks for a full pass */
	gdp_state_free(&st3);
	ck_assert_int_eq(gdp_state_copy(&st3, &st), 0);
	st3.atts[0].mtu += 1;
	ck_assert_int_eq(gdp_delta_compute(&st, &st3, &dl), 0);
	ck_assert(dl.full);
	ck_assert_int_eq(gdp_kernel_backend.apply_delta(be, &st3, &dl, &res), -EAGAIN);

	topo_sh("ip -n %s link del hdl1", ns);
	gdp_delta_free(&dl);
	gdp_results_free(&res);
	gdp_state_free(&st3);
	gdp_state_free(&st2);
	gdp_state_free(&st);
	gdp_kernel_backend.close(be);
	ck_assert_int_gt(topo_agent_start(&T, 1, NULL), 0);
	ck_assert_int_eq(wait_reconciled(1, 1, 20), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("kernel_traffic");
	TCase *tc = tcase_create("topology");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_v6_ping_same_vpc_isolated);
	tcase_add_test(tc, t_v6_tcp_stream_isolated);
	tcase_add_test(tc, t_v4_dx4_ping_isolated);
	tcase_add_test(tc, t_vrf_dt46);
	tcase_add_test(tc, t_observe_counts_failed_objects);
	tcase_add_test(tc, t_restart_agent_during_ping_loses_nothing);
	tcase_add_test(tc, t_drift_repaired_leftovers_removed);
	tcase_add_test(tc, t_kill9_during_10k_then_restart_exact);
	tcase_add_test(tc, t_bad_input_fails_alone);
	tcase_add_test(tc, t_delta_apply_touches_only_its_scope);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
