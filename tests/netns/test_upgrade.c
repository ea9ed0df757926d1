/*
 * Upgrade from the three files of agents before the record, on both
 * backends, under traffic.
 *
 *   n1: a1 (vpcA fd00:a::1 10.1.0.1), attached through CNI: the old CNI
 *       server's cni-attachments.json; state.json has the node and vpcA;
 *       remotes.json (the old learner's) has a2's routes
 *   n2: a2 (vpcA fd00:a::2 10.1.0.2), declared in state.json; remotes.json
 *       has a1's routes
 *
 * The old agent's behaviour on those files is what the kernel holds before
 * the upgrade: the files are written in the old formats (docs/dataplane-
 * kernel.md, docs/cni.md; the CNI configuration normalized by the parser the
 * old server stored it with) and their merged desired state is applied
 * through the same backend the old agent used, with the old agents' pod
 * steering: one `iif <host veth> lookup <table>` rule per attachment and
 * family instead of the VPC's fwmark rules and the steering map of today's
 * (docs/dataplane-kernel.md, "Pod steering"). Then a 100 pps ping runs for
 * 6 s while both nodes are switched to the new agent, which migrates the
 * files into its record: 600/600 echo replies, the first pass adopts what is
 * there and changes only the steering (the VPC's two rules and the
 * attachment's map element added, its two iif rules removed, in that
 * order), the old files are renamed aside.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cni/config.h"
#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "agent/record.h"
#include "agent/record_legacy.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

static struct topo T;
static char skip_why[256];
static const char *backend_name;

static void pins(int node, char *buf, size_t n)
{
	snprintf(buf, n, "/sys/fs/bpf/%s-up-n%d", T.prefix, node);
}

static void sid_of(int node, unsigned fn, uint16_t arg, struct in6_addr *out)
{
	struct gdp_node nd = { .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = (uint16_t)node };

	gdp_sid(&nd, fn, arg, out);
}

/* The node's desired state as the old agent merged it (state.json + the CNI
 * server's attachments + remotes.json). */
static void desired(int node, struct gdp_state *st)
{
	struct gdp_vpc v = { .id = TOPO_VPC_A, .arg = 1, .table = TOPO_TABLE_A, .n_prefixes = 2 };

	gdp_state_init(st);
	st->node = (struct gdp_node){ .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = (uint16_t)node };
	snprintf(st->node.uplink, sizeof(st->node.uplink), "up0");
	gdp_prefix_parse("fd00:a::/64", &v.prefixes[0]);
	gdp_prefix_parse("10.1.0.0/16", &v.prefixes[1]);
	ck_assert_int_eq(gdp_state_add_vpc(st, &v), 0);
	for (int i = 0; i < T.npods; i++) {
		const struct topo_pod *p = &T.pods[i];
		struct gdp_attachment a = { .arg = p->arg, .mtu = 1400 };
		struct gdp_remote r = { .vpc_ix = gdp_vpc_ix(TOPO_VPC_A) };
		unsigned m[6];

		if (p->node == node) {
			snprintf(a.vpc, sizeof(a.vpc), "%s", p->vpc);
			snprintf(a.id, sizeof(a.id), "%s", p->name);
			snprintf(a.container_id, sizeof(a.container_id), "c-%s", p->name);
			snprintf(a.host_ifname, sizeof(a.host_ifname), "%s", p->hostif);
			gdp_prefix_parse(p->a6, &a.addrs[0]);
			gdp_prefix_parse(p->a4, &a.addrs[1]);
			a.n_addrs = 2;
			a.nh4 = gdp_default_nh4(p->arg);
			sscanf(p->mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
			for (int k = 0; k < 6; k++)
				a.pod_mac[k] = (uint8_t)m[k];
			ck_assert_int_eq(gdp_state_add_attachment(st, &a), 0);
			continue;
		}
		gdp_prefix_parse(p->a6, &r.prefix);
		sid_of(p->node, GDP_FN_DECAP, 1, &r.sid);
		ck_assert_int_eq(gdp_state_add_remote(st, &r), 0);
		gdp_prefix_parse(p->a4, &r.prefix);
		sid_of(p->node, GDP_FN_DX4, p->arg, &r.sid);
		ck_assert_int_eq(gdp_state_add_remote(st, &r), 0);
	}
}

/* cni-attachments.json as the old CNI server's store_json wrote it. */
static void write_cni_file(int node, const struct gdp_attachment *a)
{
	char conf[1024], path[600], d[512];
	struct cni_conf c;
	struct cni_err e;
	json_t *doc;

	snprintf(conf, sizeof(conf),
		 "{\"cniVersion\":\"1.1.0\",\"name\":\"net-a\",\"type\":\"galactic-cni\",\"vpc\":\"%s\","
		 "\"vpcattachment\":\"%s\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],\"addresses\":["
		 "{\"address\":\"%s/128\",\"gateway\":\"fe80::1\"},{\"address\":\"%s/32\",\"gateway\":\"169.254.1.1\"}],"
		 "\"mtu\":1400,\"egress\":{\"internet\":{\"families\":[\"IPv4\"]}}}",
		 a->vpc, a->id, topo_pod(&T, a->id)->a6, topo_pod(&T, a->id)->a4);
	ck_assert_msg(cni_conf_parse(conf, strlen(conf), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	doc = json_pack("{s:i, s:[{s:s, s:i, s:i}], s:[{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o}]}",
			"version", 1, "vpcs", "id", a->vpc, "arg", 1, "table", TOPO_TABLE_A, "attachments",
			"network", "net-a", "containerID", a->container_id, "ifname", "eth0", "netns",
			"/var/run/netns/upgrade-a1", "podNamespace", "default", "podName", "web-a1", "podUID", "u-a1",
			"hostIfname", a->host_ifname, "hostMac", "02:00:00:00:aa:01", "mac",
			topo_pod(&T, a->id)->mac, "mtu", 1400, "arg", (int)a->arg, "config", cni_conf_to_json(&c));
	ck_assert_ptr_nonnull(doc);
	cni_conf_free(&c);
	snprintf(path, sizeof(path), "%s/%s", topo_state_dir(&T, node, d, sizeof(d)), LEGACY_CNI);
	ck_assert_int_eq(json_dump_file(doc, path, JSON_INDENT(1) | JSON_SORT_KEYS), 0);
	json_decref(doc);
}

/* The old agent on node: its three files, and the kernel as it programmed it. */
static void old_agent(int node)
{
	const struct gdp_backend_ops *ops = !strcmp(backend_name, "bpf") ? &gdp_bpf_backend : &gdp_kernel_backend;
	struct gdp_backend_opts bo = { 0 };
	struct gdp_backend *be;
	struct gdp_results res;
	struct gdp_state st, files;
	char d[512], ns[64], err[512], pin[128];

	desired(node, &st);
	ck_assert_int_eq(gdp_state_copy(&files, &st), 0);
	if (node == 1) { /* a1 came through CNI: in the CNI file, not in state.json */
		write_cni_file(node, &st.atts[0]);
		files.n_atts = 0;
	}
	topo_state_dir(&T, node, d, sizeof(d));
	ck_assert_int_eq(legacy_save_state(d, &files, err, sizeof(err)), 0);
	ck_assert_int_eq(legacy_save_remotes(d, &files, err, sizeof(err)), 0);
	gdp_state_free(&files);
	bo.netns = topo_node_ns(&T, node, ns, sizeof(ns));
	pins(node, pin, sizeof(pin));
	bo.bpffs_dir = pin;
	ck_assert_msg(ops->open(&be, &bo, err, sizeof(err)) == 0, "open %s: %s", ops->name, err);
	gdp_results_init(&res);
	ck_assert_msg(ops->apply(be, &st, &res) == 0, "old agent's apply on n%d failed", node);
	ops->close(be); /* what the old agent left: kernel state (and pins) in place */
	/* ... with its pod steering: iif rules, no VPC rules, no steering table */
	ck_assert_int_eq(topo_sh("ip -n %s -6 rule add pref 1000 iif %s lookup %d proto 154 && "
				 "ip -n %s -4 rule add pref 1000 iif %s lookup %d proto 154 && "
				 "ip -n %s -6 rule del pref 1000 fwmark 0x%x/0x%x lookup %d && "
				 "ip -n %s -4 rule del pref 1000 fwmark 0x%x/0x%x lookup %d && "
				 "ip netns exec %s nft delete table inet %s",
				 ns, st.atts[0].host_ifname, TOPO_TABLE_A, ns, st.atts[0].host_ifname, TOPO_TABLE_A,
				 ns, GDE_MARK_POD | 1, GDE_MARK_MASK, TOPO_TABLE_A, ns, GDE_MARK_POD | 1, GDE_MARK_MASK,
				 TOPO_TABLE_A, ns, GDS_TABLE), 0);
	gdp_results_free(&res);
	gdp_state_free(&st);
}

static void setup(void)
{
	skip_why[0] = 0;
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	if (!strcmp(backend_name, "bpf") &&
	    topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d >/dev/null 2>&1",
		    (int)getpid())) {
		snprintf(skip_why, sizeof(skip_why), "bpf preflight refused on this kernel");
		return;
	}
	ck_assert_int_eq(topo_up(&T, 2), 0);
	ck_assert_int_ge(topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2"), 0);
}

static void teardown(void)
{
	char prefix[sizeof(T.prefix)];

	snprintf(prefix, sizeof(prefix), "%s", T.prefix);
	if (T.nodes)
		topo_down(&T);
	topo_sh("rm -rf /sys/fs/bpf/%s-up-n1 /sys/fs/bpf/%s-up-n2 /sys/fs/bpf/galactic-preflight-%d", prefix, prefix,
		(int)getpid());
}

static void setup_kernel(void) { backend_name = "kernel"; setup(); }
static void setup_bpf(void) { backend_name = "bpf"; setup(); }

static int exists(int node, const char *name)
{
	char d[512];

	return topo_sh("test -e %s/%s", topo_state_dir(&T, node, d, sizeof(d)), name) == 0;
}

static void upgrade_under_ping(void)
{
	char out[64], log[600], args[300], pin[128], d[512];
	struct gdp_state st;
	char err[512];
	pid_t pp;
	int stt;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	old_agent(1);
	old_agent(2);
	/* the underlay may still be resolving on a loaded machine: 3 replies within 5 s */
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 ping -q -c 3 -i 0.05 -w 5 -W 1 fd00:a::2 >/dev/null", T.prefix), 0);
	snprintf(log, sizeof(log), "%s/ping-upgrade.txt", T.dir);
	pp = fork();
	ck_assert_int_ge(pp, 0);
	if (pp == 0) {
		char cmd[1024];

		/* 100 pps for 6 s: the restart of both nodes lies inside it. */
		snprintf(cmd, sizeof(cmd), "exec ip netns exec %s-a1 ping -q -c 600 -i 0.01 -W 1 fd00:a::2 > %s 2>&1",
			 T.prefix, log);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	usleep(1000 * 1000);
	for (int n = 1; n <= 2; n++) {
		pins(n, pin, sizeof(pin));
		snprintf(args, sizeof(args), "--backend %s --bpffs %s", backend_name, pin);
		ck_assert_int_gt(topo_agent_start(&T, n, args), 0);
	}
	for (int n = 1; n <= 2; n++)
		ck_assert_msg(topo_wait_reconciled(&T, n, 1, 20) == 0, "new agent on n%d did not reconcile (see %s/agent.log)",
			      n, topo_state_dir(&T, n, d, sizeof(d)));
	ck_assert_int_eq(waitpid(pp, &stt, 0), pp);
	topo_out(out, sizeof(out), "sed -n 's/.*transmitted, \\([0-9]*\\) received.*/\\1/p' %s", log);
	printf("upgrade (%s backend): ping across the migrating restart of both nodes: %s/600 received\n", backend_name,
	       out);
	ck_assert_int_eq(atol(out), 600);
	for (int n = 1; n <= 2; n++) {
		char ns[64];

		/* Adopted, not flushed: the first pass changed only the steering. */
		printf("n%d first pass: added %ld, removed %ld, unchanged %ld\n", n, topo_status_int(&T, n, "added"),
		       topo_status_int(&T, n, "removed"), topo_status_int(&T, n, "unchanged"));
		/* the very first pass of the new agent (its log line): the VPC's two
		 * rules and the map element in, the attachment's two iif rules out */
		ck_assert_msg(topo_sh("grep -q 'reconcile #1: .*added/replaced 3, removed 2' %s/agent.log",
				      topo_state_dir(&T, n, d, sizeof(d))) == 0 || strcmp(backend_name, "kernel"),
			      "the new agent's first pass on n%d changed more than the steering", n);
		ck_assert_msg(topo_sh("grep -q 'reconcile #1: .*removed 2' %s/agent.log", topo_state_dir(&T, n, d, sizeof(d))) == 0,
			      "the new agent's first pass on n%d removed more than the two iif rules", n);
		topo_node_ns(&T, n, ns, sizeof(ns));
		ck_assert_int_ne(topo_sh("ip -n %s rule | grep -q ' iif '", ns), 0);
		ck_assert_int_eq(topo_sh("ip -n %s -6 rule | grep -q 'fwmark 0x%x/0x%x lookup %d proto 154' && "
					 "ip -n %s -4 rule | grep -q 'fwmark 0x%x/0x%x lookup %d proto 154'",
					 ns, GDE_MARK_POD | 1, GDE_MARK_MASK, TOPO_TABLE_A, ns, GDE_MARK_POD | 1, GDE_MARK_MASK,
					 TOPO_TABLE_A), 0);
		ck_assert_int_eq(topo_sh("ip netns exec %s nft list map inet %s %s | grep -q '\"%s\" : 0x%08x'", ns, GDS_TABLE,
					 GDS_MAP, topo_pod(&T, n == 1 ? "a1" : "a2")->hostif, GDE_MARK_POD | 1), 0);
		ck_assert(exists(n, RECORD_FILE) && exists(n, RECORD_REMOTES_FILE));
		ck_assert(!exists(n, LEGACY_STATE) && !exists(n, LEGACY_REMOTES));
		ck_assert(exists(n, LEGACY_STATE LEGACY_ASIDE_SUFFIX) && exists(n, LEGACY_REMOTES LEGACY_ASIDE_SUFFIX));
		ck_assert_int_eq(record_load_state(topo_state_dir(&T, n, d, sizeof(d)), &st, err, sizeof(err)), 0);
		ck_assert_uint_eq(st.n_atts, 1);
		ck_assert_uint_eq(st.n_remotes, 2);
		ck_assert_uint_eq(st.node.node_id, (unsigned)n);
		gdp_state_free(&st);
	}
	ck_assert(!exists(1, LEGACY_CNI) && exists(1, LEGACY_CNI LEGACY_ASIDE_SUFFIX));
	/* The CNI facts came along: pod name and network in the record. */
	ck_assert_int_eq(topo_sh("jq -e '.attachments[0] | .podName == \"web-a1\" and .network == \"net-a\" and .egress == [\"IPv4\"]' %s/record.json >/dev/null",
				 topo_state_dir(&T, 1, d, sizeof(d))), 0);
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 ping -q -c 5 -i 0.05 -W 1 10.1.0.2 >/dev/null", T.prefix), 0);
	/* And the new agent restarts on its own record. */
	topo_agent_stop(&T, 1, SIGTERM);
	pins(1, pin, sizeof(pin));
	snprintf(args, sizeof(args), "--backend %s --bpffs %s", backend_name, pin);
	topo_sh("rm -f %s/status.json", topo_state_dir(&T, 1, d, sizeof(d)));
	ck_assert_int_gt(topo_agent_start(&T, 1, args), 0);
	ck_assert_int_eq(topo_wait_reconciled(&T, 1, 1, 20), 0);
	ck_assert_int_eq(topo_status_int(&T, 1, "removed"), 0);
	if (!strcmp(backend_name, "kernel"))
		ck_assert_int_eq(topo_status_int(&T, 1, "added"), 0);
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 ping -q -c 5 -i 0.05 -W 1 fd00:a::2 >/dev/null", T.prefix), 0);
}

START_TEST(t_upgrade_kernel)
{
	upgrade_under_ping();
}
END_TEST

START_TEST(t_upgrade_bpf)
{
	upgrade_under_ping();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("upgrade");
	TCase *k = tcase_create("kernel"), *b = tcase_create("bpf");

	tcase_add_unchecked_fixture(k, setup_kernel, teardown);
	tcase_set_timeout(k, 120);
	tcase_add_test(k, t_upgrade_kernel);
	tcase_add_unchecked_fixture(b, setup_bpf, teardown);
	tcase_set_timeout(b, 120);
	tcase_add_test(b, t_upgrade_bpf);
	suite_add_tcase(s, k);
	suite_add_tcase(s, b);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
