/*
 * Another CNI's veths on the node (the node's primary network: Cilium,
 * Calico, ptp...) must not wake galactic-agent: 50 foreign veth pairs, each
 * with a TC qdisc and filter (as Cilium puts its programs on its veths), an
 * address, a route in the main table and one in a table of its own, a rule
 * and a neighbour, created and deleted while the agent runs, cause no pass
 * and no read-back on either backend. Deleting one of the agent's own host
 * veths still does: a full pass that finds the attachment broken, and once
 * the veth is back its repair, counted as attachment drift
 * (galactic_agent_drift_repaired_total); on bpf a deleted filter on a host
 * veth is still read back at once and repaired. The agent's own CNI ADDs
 * and DELs (their routes, rules, neighbours, filters and veths going) come
 * back as notifications too: they cause incremental passes only, no full
 * one and no read-back, at any number of attachments.
 *
 *   n1: a1 (vpcA) on the kernel backend   n2: a2 (vpcA) on the bpf backend
 *
 * Both agents run with --interval 3600 and no verify ticks, so every pass
 * and read-back in the counters was caused by a notification.
 *
 * And the bpf backend's uplink guess (no uplink named: a link with a
 * global IPv6 address becomes an uplink, decap) takes only links of an
 * uplink's kind (a NIC, bond, team, VLAN): on n3 (bpf, no uplink named)
 * another CNI's veth, a bridge and a VXLAN device, each with a global IPv6
 * address, get no decap filter, at the start's pass or when one appears
 * later (which causes no pass either); nor does up0, a veth here.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/cnirt.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

#define FOREIGN 50
#define OWN 8 /* pods ADDed and DELed through the CNI socket, per node */

static struct topo T;
static char skip_why[256];
static bool bpf_ok;
static int port[4];

static double metric(int node, const char *sample)
{
	double v = gt_metric(port[node], sample);

	return v < 0 ? 0 : v;
}

/* Passes of one kind ("apply", "verify") so far, whatever their result. */
static double passes(int node, const char *kind)
{
	char a[160], b[160];

	snprintf(a, sizeof(a), "galactic_agent_passes_total{kind=\"%s\",result=\"verified\"}", kind);
	snprintf(b, sizeof(b), "galactic_agent_passes_total{kind=\"%s\",result=\"failed\"}", kind);
	return metric(node, a) + metric(node, b);
}

static double drift(int node, const char *kind)
{
	char s[160];

	snprintf(s, sizeof(s), "galactic_agent_drift_repaired_total{kind=\"%s\"}", kind);
	return metric(node, s);
}

static void start(int node, bool bpf)
{
	char args[600];

	port[node] = gt_free_port();
	if (bpf)
		snprintf(args, sizeof(args), "--backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix, node);
	else
		snprintf(args, sizeof(args), "--backend kernel");
	snprintf(args + strlen(args), sizeof(args) - strlen(args),
		 " --interval 3600 --verify-interval 0 --metrics-addr 127.0.0.1:%d --cni-socket ", port[node]);
	cnirt_sock(&T, node, args + strlen(args), sizeof(args) - strlen(args));
	ck_assert_int_gt(topo_agent_start(&T, node, args), 0);
	ck_assert_msg(cnirt_wait_socket(&T, node, 20) == 0, "agent on n%d: no CNI socket (see %s/n%d/agent.log)", node,
		      T.dir, node);
	ck_assert_msg(topo_wait_reconciled(&T, node, 1, 30) == 0, "agent on n%d did not reconcile (see %s/n%d/agent.log)",
		      node, T.dir, node);
}

static void setup(void)
{
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	bpf_ok = topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d >/dev/null 2>&1",
			 (int)getpid()) == 0;
	ck_assert_int_eq(topo_sh("mkdir -p -m 0700 /run/galactic"), 0);
	ck_assert_int_eq(topo_up(&T, 3), 0);
	ck_assert_int_ge(topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 3, "a3", TOPO_VPC_A, "fd00:a::3", "10.1.0.3"), 0);
	/* a modest number of remotes: a full pass is cheap, but not free */
	ck_assert_int_eq(topo_write_state(&T, 1, 2000), 0);
	ck_assert_int_eq(topo_write_state(&T, 2, 2000), 0);
	start(1, false);
	if (bpf_ok) {
		char ns[64];

		start(2, true);
		/* n3: no uplink named; other devices with global IPv6 addresses first */
		ck_assert_int_eq(topo_write_state(&T, 3, 0), 0);
		ck_assert_int_eq(topo_sh("sed -i 's/\"uplink\":\"up0\"/\"uplink\":\"\"/' %s/n3/state.json && "
					 "grep -q '\"uplink\":\"\"' %s/n3/state.json", T.dir, T.dir), 0);
		topo_node_ns(&T, 3, ns, sizeof(ns));
		ck_assert_int_eq(topo_sh("ip -n %s link add lxg0 type veth peer name lxgp0 && "
					 "ip -n %s link add cnig0 type bridge && "
					 "ip -n %s link add vxg0 type vxlan id 42 dstport 4789 dev up0 && "
					 "for d in lxg0 lxgp0 cnig0 vxg0; do ip -n %s link set $d up || exit 1; done && "
					 "ip -n %s addr add 2001:db8:70::1/64 dev lxg0 nodad && "
					 "ip -n %s addr add 2001:db8:71::1/64 dev cnig0 nodad && "
					 "ip -n %s addr add 2001:db8:72::1/64 dev vxg0 nodad",
					 ns, ns, ns, ns, ns, ns, ns), 0);
		start(3, true);
	}
}

static void teardown(void)
{
	char prefix[sizeof(T.prefix)];

	snprintf(prefix, sizeof(prefix), "%s", T.prefix); /* topo_down clears T */
	if (T.nodes)
		topo_down(&T);
	topo_sh("rm -rf /sys/fs/bpf/%s-n2 /sys/fs/bpf/%s-n3", prefix, prefix);
}

/* The two batch files (ip, tc) opened for writing, or neither. */
static int open_batches(const char *f, const char *t, FILE **ip, FILE **tc)
{
	*ip = fopen(f, "w");
	*tc = fopen(t, "w");
	if (*ip && *tc)
		return 0;
	if (*ip)
		fclose(*ip);
	if (*tc)
		fclose(*tc);
	return -1;
}

/*
 * 50 foreign veth pairs in node's namespace, as a primary CNI makes them
 * for its pods, then all deleted: one `ip -batch` and one `tc -batch` each
 * way. Returns 0 when every command succeeded.
 */
static int foreign_churn(int node)
{
	char ns[64], f[512], t[512];
	FILE *ip, *tc;
	int rc;

	topo_node_ns(&T, node, ns, sizeof(ns));
	snprintf(f, sizeof(f), "%s/foreign-ip-%d", T.dir, node);
	snprintf(t, sizeof(t), "%s/foreign-tc-%d", T.dir, node);
	if (open_batches(f, t, &ip, &tc))
		return -1;
	for (int i = 0; i < FOREIGN; i++) {
		fprintf(ip, "link add lxc%02d type veth peer name lxcp%02d\n", i, i);
		fprintf(ip, "link set lxc%02d up\nlink set lxcp%02d up\n", i, i);
		fprintf(ip, "addr add 10.244.%d.1/32 dev lxc%02d\n", i, i);
		fprintf(ip, "route add 10.245.%d.0/24 dev lxc%02d\n", i, i);
		fprintf(ip, "route add 10.245.%d.0/24 dev lxc%02d table 2004\n", i, i);
		fprintf(ip, "rule add from 10.245.%d.0/24 lookup 2004 pref 30000\n", i);
		fprintf(ip, "neigh add 10.245.%d.7 lladdr 02:00:00:00:01:%02x dev lxc%02d\n", i, i, i);
		fprintf(tc, "qdisc add dev lxc%02d clsact\n", i);
		fprintf(tc, "filter add dev lxc%02d ingress protocol all prio 1 u32 match u32 0 0\n", i);
	}
	fclose(ip);
	fclose(tc);
	rc = topo_sh("ip -n %s -batch %s && tc -n %s -batch %s", ns, f, ns, t);
	/* their deletion: filters, then rules, then the links (routes, addresses
	 * and neighbours go with them) */
	if (open_batches(f, t, &ip, &tc))
		return -1;
	for (int i = 0; i < FOREIGN; i++) {
		fprintf(tc, "filter del dev lxc%02d ingress\n", i);
		fprintf(ip, "rule del from 10.245.%d.0/24 lookup 2004 pref 30000\n", i);
		fprintf(ip, "link del lxc%02d\n", i);
	}
	fclose(ip);
	fclose(tc);
	return rc || topo_sh("tc -n %s -batch %s && ip -n %s -batch %s", ns, t, ns, f);
}

/* Polls until cond(node) holds (up to secs); returns the seconds it took or -1. */
static double wait_for(int node, bool (*cond)(int node), double secs)
{
	double t0 = gt_now();

	while (gt_now() - t0 < secs) {
		if (cond(node))
			return gt_now() - t0;
		usleep(20 * 1000);
	}
	return -1;
}

static double base_apply, base_drift;

static bool applied_more(int node)
{
	return passes(node, "apply") > base_apply && metric(node, "galactic_agent_objects{state=\"failed\"}") >= 1;
}

static bool repaired(int node)
{
	return drift(node, "attachment") > base_drift && metric(node, "galactic_agent_objects{state=\"failed\"}") == 0;
}

/*
 * The churn causes nothing; our own host veth's deletion causes a full
 * pass, its return a repair that is counted.
 */
static void foreign_then_own(int node)
{
	const struct topo_pod *p = topo_pod(&T, node == 1 ? "a1" : "a2");
	double apply0, verify0, t;
	char ns[64], log[600];

	ck_assert_ptr_nonnull(p);
	topo_node_ns(&T, node, ns, sizeof(ns));
	snprintf(log, sizeof(log), "%s/n%d/agent.log", T.dir, node);
	/* settle: the start's passes (and an adoption's read-back) are over */
	usleep(1200 * 1000);
	apply0 = passes(node, "apply");
	verify0 = passes(node, "verify");
	ck_assert_double_ge(apply0, 1);
	t = gt_now();
	ck_assert_int_eq(foreign_churn(node), 0);
	printf("n%d: %d foreign veths created and deleted in %.2f s\n", node, FOREIGN, gt_now() - t);
	/* a notification's pass is asked 100 ms after it and runs once the
	 * record has been quiet for 500 ms: 1.5 s leaves room for both */
	usleep(1500 * 1000);
	ck_assert_msg(passes(node, "apply") == apply0, "n%d: %.0f passes after foreign veths (see %s)", node,
		      passes(node, "apply") - apply0, log);
	ck_assert_msg(passes(node, "verify") == verify0, "n%d: %.0f read-backs after foreign veths (see %s)", node,
		      passes(node, "verify") - verify0, log);
	ck_assert_double_eq(metric(node, "galactic_agent_objects{state=\"failed\"}"), 0);

	/* One of our own host veths deleted (the pod's end goes with it): a full pass finds its attachment broken. */
	base_apply = passes(node, "apply");
	base_drift = drift(node, "attachment");
	ck_assert_int_eq(topo_sh("ip -n %s link del %s", ns, p->hostif), 0);
	t = wait_for(node, applied_more, 5);
	printf("n%d: host veth %s deleted: a pass found its attachment failed after %.2f s\n", node, p->hostif, t);
	ck_assert_msg(t >= 0, "n%d: no pass after our host veth was deleted (see %s)", node, log);
	/* back, as the runtime's CNI ADD would make it (same MAC, addresses): repaired and counted */
	ck_assert_int_eq(topo_sh("ip -n %s link add %s mtu 1400 type veth peer name eth0 mtu 1400 address %s netns %s-%s && "
				 "ip netns exec %s-%s sysctl -qw net.ipv6.conf.eth0.accept_dad=0 && "
				 "ip -n %s-%s link set eth0 up && ip -n %s-%s addr add %s/128 dev eth0 nodad",
				 ns, p->hostif, p->mac, T.prefix, p->name, T.prefix, p->name, T.prefix, p->name,
				 T.prefix, p->name, p->a6),
			 0);
	t = wait_for(node, repaired, 5);
	printf("n%d: host veth back: repaired and counted after %.2f s\n", node, t);
	ck_assert_msg(t >= 0, "n%d: attachment not repaired/counted after its host veth came back (drift %.0f, failed %.0f; see %s)",
		      node, drift(node, "attachment") - base_drift, metric(node, "galactic_agent_objects{state=\"failed\"}"),
		      log);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table %d | grep -q '^fd00:a::%d dev %s'", ns, TOPO_TABLE_A, node,
				 p->hostif),
			 0);
}

START_TEST(t_kernel_foreign_veths_cause_no_pass)
{
	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	foreign_then_own(1);
}
END_TEST

static bool filter_back(int node)
{
	return drift(node, "filter") > base_drift;
}

START_TEST(t_bpf_foreign_veths_cause_no_pass)
{
	const struct topo_pod *p;
	char ns[64];
	double t;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf_ok)
		GT_SKIP("bpf preflight refused on this kernel");
	foreign_then_own(2);
	/* and a filter of ours deleted on the (new) host veth: read back at once, repaired, counted */
	p = topo_pod(&T, "a2");
	topo_node_ns(&T, 2, ns, sizeof(ns));
	base_drift = drift(2, "filter");
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev %s ingress", ns, p->hostif), 0);
	t = wait_for(2, filter_back, 5);
	printf("n2: encap filter deleted: repaired and counted after %.2f s\n", t);
	ck_assert_msg(t >= 0, "n2: deleted filter not repaired and counted");
}
END_TEST

/* Full passes the agent on node logged so far ("reconcile #N:"; incremental ones are "incremental pass #N:"). */
static long full_passes(int node)
{
	char out[32];

	if (topo_out(out, sizeof(out), "grep -c 'msg=\"reconcile #' %s/n%d/agent.log; true", T.dir, node))
		return -1;
	return atol(out);
}

/* ADD or DEL of own pod i on node, as a runtime calls galactic-cni. */
static int own_cni(int node, const char *cmd, int i)
{
	char conf[1024], sock[512], bin[512], cid[32], ns[300];

	cnirt_sock(&T, node, sock, sizeof(sock));
	snprintf(conf, sizeof(conf),
		 "{\"cniVersion\":\"1.1.0\",\"name\":\"own\",\"type\":\"galactic-cni\",\"vpc\":\"%s\","
		 "\"vpcattachment\":\"D%d\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		 "\"addresses\":[{\"address\":\"fd00:a::d:%x/128\",\"gateway\":\"fe80::1\"},"
		 "{\"address\":\"10.1.13.%d/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		 "\"agentSocket\":\"%s\",\"timeoutSeconds\":60}",
		 TOPO_VPC_A, i, i + 1, i + 1, sock);
	snprintf(bin, sizeof(bin), "%s/build/rel/bin/galactic-cni", cnirt_top());
	snprintf(cid, sizeof(cid), "cown%d", i);
	snprintf(ns, sizeof(ns), "/run/netns/%s-own%dx%d", T.prefix, node, i);
	return cnirt_exec(&(struct cnirt_call){ bin, cmd, cid, ns, "IgnoreUnknown=1;K8S_POD_NAMESPACE=own", "/opt/cni/bin", -1 },
			  conf);
}

/*
 * OWN pods ADDed one after another, then DELed one after another (a pause
 * before each, so a full pass a notification asked for would run in
 * between): every route, rule, neighbour, address, filter and veth the
 * verbs' passes remove comes back as a notification, and none of them is
 * drift. No full pass, no read-back; the DELs leave no host veth.
 */
static void own_verbs(int node)
{
	double verify0;
	long full0, full1;
	char log[600], pod[32], out[64];

	snprintf(log, sizeof(log), "%s/n%d/agent.log", T.dir, node);
	for (int i = 0; i < OWN; i++) {
		snprintf(pod, sizeof(pod), "own%dx%d", node, i);
		ck_assert_int_eq(cnirt_mkns(&T, pod), 0);
	}
	usleep(1200 * 1000); /* settle: the start's passes (an adoption's read-back) are over */
	full0 = full_passes(node);
	verify0 = passes(node, "verify");
	ck_assert_int_ge(full0, 1);
	for (int i = 0; i < OWN; i++) {
		usleep(150 * 1000);
		ck_assert_msg(own_cni(node, "ADD", i) == 0, "n%d: ADD of own pod %d failed (see %s)", node, i, log);
	}
	usleep(800 * 1000);
	full1 = full_passes(node);
	ck_assert_msg(full1 == full0, "n%d: %ld full passes after %d ADDs (see %s)", node, full1 - full0, OWN, log);
	for (int i = 0; i < OWN; i++) {
		/* a notification's full pass is asked 100 ms after it, run once the record is quiet for 500 ms */
		usleep(700 * 1000);
		ck_assert_msg(own_cni(node, "DEL", i) == 0, "n%d: DEL of own pod %d failed (see %s)", node, i, log);
		ck_assert_msg(full_passes(node) == full0, "n%d: a full pass after DEL %d (see %s)", node, i, log);
	}
	usleep(1500 * 1000);
	ck_assert_msg(full_passes(node) == full0, "n%d: %ld full passes after %d DELs (see %s)", node,
		      full_passes(node) - full0, OWN, log);
	ck_assert_msg(passes(node, "verify") == verify0, "n%d: %.0f read-backs after our own ADDs and DELs (see %s)", node,
		      passes(node, "verify") - verify0, log);
	/* the verbs' host veths (gc + 13 hex digits) are gone */
	ck_assert_int_eq(topo_out(out, sizeof(out), "ip -n %s-n%d -o link show type veth | grep -cE '^[0-9]+: gc[0-9a-f]{13}@'; true",
				  T.prefix, node),
			 0);
	ck_assert_int_eq(atoi(out), 0);
	ck_assert_double_eq(metric(node, "galactic_agent_objects{state=\"failed\"}"), 0);
}

START_TEST(t_kernel_own_verbs_cause_no_full_pass)
{
	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	own_verbs(1);
}
END_TEST

START_TEST(t_bpf_own_verbs_cause_no_full_pass)
{
	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf_ok)
		GT_SKIP("bpf preflight refused on this kernel");
	own_verbs(2);
}
END_TEST

/* Whether dev on n3 has a filter of ours of that program ("decap", "encap"). */
static bool has_filter(const char *dev, const char *prog)
{
	char ns[64];

	topo_node_ns(&T, 3, ns, sizeof(ns));
	return topo_sh("tc -n %s filter show dev %s ingress 2>/dev/null | grep -q galactic_%s", ns, dev, prog) == 0;
}

START_TEST(t_bpf_guessed_uplink_skips_foreign_devices)
{
	const struct topo_pod *p;
	static const char *const devs[] = { "lxg0", "lxgp0", "cnig0", "vxg0", "up0" };
	double apply0;
	char ns[64];

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf_ok)
		GT_SKIP("bpf preflight refused on this kernel");
	p = topo_pod(&T, "a3");
	ck_assert_ptr_nonnull(p);
	topo_node_ns(&T, 3, ns, sizeof(ns));
	/* the start's passes ran the link sweep: the pod's host veth has its encap filter */
	for (int i = 0; i < 100 && !has_filter(p->hostif, "encap"); i++)
		usleep(50 * 1000);
	ck_assert_msg(has_filter(p->hostif, "encap"), "n3: no encap filter on %s (see %s/n3/agent.log)", p->hostif,
		      T.dir);
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		ck_assert_msg(!has_filter(devs[i], "decap"), "n3: %s (not an uplink's kind) took the decap filter",
			      devs[i]);
	/* one more veth gets a global IPv6 address while the agent runs: no pass, no filter */
	usleep(1200 * 1000);
	apply0 = passes(3, "apply");
	ck_assert_int_eq(topo_sh("ip -n %s link add lxg1 type veth peer name lxgp1 && ip -n %s link set lxg1 up && "
				 "ip -n %s link set lxgp1 up && ip -n %s addr add 2001:db8:73::1/64 dev lxg1 nodad",
				 ns, ns, ns, ns), 0);
	usleep(1500 * 1000);
	ck_assert_msg(passes(3, "apply") == apply0, "n3: %.0f passes after a foreign veth's global address",
		      passes(3, "apply") - apply0);
	/* and a full pass (the sweep runs again) leaves it alone too */
	ck_assert_int_gt(topo_agent_pid(&T, 3), 0);
	ck_assert_int_eq(kill(topo_agent_pid(&T, 3), SIGHUP), 0);
	for (int i = 0; i < 100 && passes(3, "apply") == apply0; i++)
		usleep(50 * 1000);
	ck_assert_msg(passes(3, "apply") > apply0, "n3: no pass after SIGHUP");
	usleep(300 * 1000);
	ck_assert(!has_filter("lxg1", "decap"));
	ck_assert(!has_filter("lxg0", "decap"));
	ck_assert(has_filter(p->hostif, "encap"));
	ck_assert_double_eq(metric(3, "galactic_agent_objects{state=\"failed\"}"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("foreign_links");
	TCase *tc = tcase_create("agent");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_kernel_own_verbs_cause_no_full_pass);
	tcase_add_test(tc, t_bpf_own_verbs_cause_no_full_pass);
	tcase_add_test(tc, t_kernel_foreign_veths_cause_no_pass);
	tcase_add_test(tc, t_bpf_foreign_veths_cause_no_pass);
	tcase_add_test(tc, t_bpf_guessed_uplink_skips_foreign_devices);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
