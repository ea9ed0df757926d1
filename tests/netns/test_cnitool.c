/*
 * galactic-cni driven by the reference CNI client: libcni's cnitool (and
 * cnigc, libcni's GC with GC args, which cnitool cannot pass), built from
 * the containernetworking Go modules by tests/controlplane/build-cni.sh,
 * against real galactic-agents on a two-node SRv6 topology (tests/lib/topo.*).
 *
 * 1. Three conflists shaped exactly as the VPC operator renders them
 *    (cniVersion 1.0.0, name = the attachment, plugins galactic-veth then
 *    galactic-bgp, `namespace`; veth with ipam, veth without ipam, a /96
 *    block) attach pods through our binary installed under the upstream
 *    names; traffic crosses nodes and stays inside its VPC.
 *
 *      n1: pa (vpcA, ipam 10.1.0.81/32 fd00:a::81/128)
 *          pn (vpcA, no ipam: the guest addresses itself, fd00:a::83)
 *          pb (vpcA, ipam fd00:a::1:0:0/96 with a gateway outside the block)
 *          pt (vpcA, 1.1.0: veth, bgp, then the reference plugin tuning)
 *      n2: p2 (vpcA, 10.1.0.82 fd00:a::82)   q2 (vpcB, the same addresses)
 *
 * 2. Every verb through libcni on a 1.1.0 conflist with tuning chained
 *    after ours: ADD (prevResult flows: tuning's effect shows and its result
 *    is ours), CHECK, STATUS (and code 50 with the agent away), GC with and
 *    without valid attachments (a GC naming no attachments removes none),
 *    DEL twice.
 *
 * Cross-node routes are fed to each agent through a remotes.json drop-in (SIGHUP), as the
 * other netns suites do (in a cell they come from the other nodes' reports).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "agent/dp/model.h"
#include "tests/lib/cnirt.h"
#include "tests/lib/gtest.h"
#include "agent/record.h"
#include "tests/lib/noderec.h"
#include "tests/lib/topo.h"

static struct topo T;
static int setup_ok;
static char setup_why[1024];

static const char *jstr(json_t *j, const char *k)
{
	const char *s = json_string_value(json_object_get(j, k));

	return s ? s : "";
}

/* ---- the attachments ----------------------------------------------------- */

enum shape { IPAM_HOST, NO_IPAM, BLOCK96 };

struct cpod {
	const char *name, *vpc, *att;
	int node;
	enum shape shape;
	const char *a4, *a6; /* ipam addresses (a6 may be the block) */
	const char *gw6;
};

static const struct cpod pods[] = {
	{ "pa", TOPO_VPC_A, "PA", 1, IPAM_HOST, "10.1.0.81", "fd00:a::81/128", "fe80::1" },
	{ "pn", TOPO_VPC_A, "PN", 1, NO_IPAM, NULL, NULL, NULL },
	{ "pb", TOPO_VPC_A, "PB", 1, BLOCK96, NULL, "fd00:a::1:0:0/96", "fd00:a::1" },
	{ "p2", TOPO_VPC_A, "P2", 2, IPAM_HOST, "10.1.0.82", "fd00:a::82/128", "fe80::1" },
	{ "q2", TOPO_VPC_B, "Q2", 2, IPAM_HOST, "10.1.0.82", "fd00:a::82/128", "fe80::1" },
};
#define NPODS (sizeof(pods) / sizeof(pods[0]))
static json_t *results[NPODS];

static const char *net_of(const char *pod, char *buf, size_t n)
{
	snprintf(buf, n, "%s-att-%s", T.prefix, pod);
	return buf;
}

/* The NetworkAttachmentDefinition's spec.config as the VPC operator renders
 * it (UPSTREAM.md §6): nothing of ours added. */
static json_t *operator_conflist(const struct cpod *p, const char *ver)
{
	char net[128], a4[40];
	struct cnirt_att a = { .net = net_of(p->name, net, sizeof(net)), .vpc = p->vpc, .att = p->att };

	if (p->shape == IPAM_HOST) {
		snprintf(a4, sizeof(a4), "%s/32", p->a4);
		a.addrs[a.n_addrs].address = a4, a.addrs[a.n_addrs++].gateway = "169.254.1.1";
	}
	if (p->shape != NO_IPAM)
		a.addrs[a.n_addrs].address = p->a6, a.addrs[a.n_addrs++].gateway = p->gw6;
	/* the operator omits an mtu of 0: pn's stanza has none (the agent's default) */
	a.mtu = p->shape != NO_IPAM ? 1400 : 0;
	return cnirt_operator_conflist(&a, ver);
}

static int cnitool_add(const struct cpod *p, json_t **res, char *out, size_t n)
{
	char net[128], nsp[256];
	int rc = cnirt_tool(&T, p->node, NULL, NULL, out, n, "cnitool add %s %s", net_of(p->name, net, sizeof(net)),
			    cnirt_ns_path(&T, p->name, nsp, sizeof(nsp)));

	*res = rc == 0 ? cnirt_json(out) : NULL;
	return rc == 0 && *res ? 0 : -1;
}

/* ---- node state ------------------------------------------------------------ */

/* GC requests node's agent answered for network net (its log lines). */
static long gc_count(int node, const char *net)
{
	char out[64];

	topo_out(out, sizeof(out), "grep -c 'GC container .* network %s .*: ok' %s/n%d/agent.log", net, T.dir, node);
	return atol(out);
}

static int link_exists(int node, const char *ifn)
{
	return topo_sh("ip -n %s-n%d link show %s >/dev/null 2>&1", T.prefix, node, ifn) == 0;
}

static void sid_str(int node, unsigned fn, unsigned arg, char *buf, size_t n)
{
	struct gdp_node nd = { .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = (uint16_t)node };
	struct in6_addr a;

	gdp_sid(&nd, fn, (uint16_t)arg, &a);
	inet_ntop(AF_INET6, &a, buf, (socklen_t)n);
}

static int pt_remote; /* n2 also routes pt's IPv6 address to n1 */

/* remotes.json of each node: the other node's attachments with addresses
 * (IPv6, the /96 block included, via the VPC's decap SID; IPv4 via the
 * attachment's End.DX4 SID from the agent's record). */
static int write_remotes(void)
{
	for (int node = 1; node <= 2; node++) {
		json_t *arr = json_array(), *doc = json_object();
		char path[600], sid[64];

		for (size_t i = 0; i < NPODS; i++) {
			const struct cpod *p = &pods[i];
			unsigned varg = !strcmp(p->vpc, TOPO_VPC_A) ? 1 : 2;
			json_t *a;
			int arg;

			if (p->node == node)
				continue;
			a = noderec_att(&T, p->node, p->att);
			if (!a)
				continue;
			arg = (int)json_integer_value(json_object_get(a, "arg"));
			if (p->shape == NO_IPAM) {
				/* what the node learned of the guest (its report lists the same) */
				json_t *x;
				size_t k;

				json_array_foreach(json_object_get(a, "addrs"), k, x) {
					const char *pf = json_string_value(x);

					sid_str(p->node, strchr(pf, ':') ? GDP_FN_DECAP : GDP_FN_DX4,
						strchr(pf, ':') ? varg : (unsigned)arg, sid, sizeof(sid));
					json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "vpc", p->vpc, "prefix", pf,
									     "sid", sid));
				}
				json_decref(a);
				continue;
			}
			json_decref(a);
			sid_str(p->node, GDP_FN_DECAP, varg, sid, sizeof(sid));
			json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "vpc", p->vpc, "prefix", p->a6, "sid", sid));
			if (p->a4) {
				sid_str(p->node, GDP_FN_DX4, (unsigned)arg, sid, sizeof(sid));
				json_array_append_new(arr, json_pack("{s:s,s:s+,s:s}", "vpc", p->vpc, "prefix", p->a4,
								     "/32", "sid", sid));
			}
		}
		if (node == 2 && pt_remote) {
			sid_str(1, GDP_FN_DECAP, 1, sid, sizeof(sid));
			json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "vpc", TOPO_VPC_A, "prefix", "fd00:a::84/128",
							     "sid", sid));
		}
		json_object_set_new(doc, "remotes", arr);
		snprintf(path, sizeof(path), "%s/n%d/remotes.json.tmp", T.dir, node);
		if (json_dump_file(doc, path, JSON_INDENT(1)))
			return -1;
		json_decref(doc);
		/* a drop-in file, imported into the agent's record on SIGHUP */
		if (topo_sh("mv %s/n%d/remotes.json.tmp %s/n%d/remotes.json", T.dir, node, T.dir, node) ||
		    topo_agent_pid(&T, node) <= 0 || kill(topo_agent_pid(&T, node), SIGHUP))
			return -1;
	}
	return 0;
}

/* ---- the verbs conflist: 1.1.0 (GC, STATUS), tuning chained after ours ------ */

#define VERBS_TXQLEN 2345

static json_t *verbs_conflist(const char *att, const char *a4, const char *a6)
{
	char net[128], dd[600];
	json_t *l = operator_conflist(&(struct cpod){ "pt", TOPO_VPC_A, att, 1, IPAM_HOST, a4, a6, "fe80::1" },
				      "1.1.0");

	snprintf(dd, sizeof(dd), "%s/n1/tuning", T.dir);
	json_array_append_new(json_object_get(l, "plugins"),
			      json_pack("{s:s,s:i,s:s}", "type", "tuning", "txQLen", VERBS_TXQLEN, "dataDir", dd));
	json_object_set_new(l, "name", json_string(net_of("pt", net, sizeof(net))));
	return l;
}

/* ---- setup --------------------------------------------------------------------- */

static int use_bpf; /* the second run: agents on the bpf (TC) backend */

static void setup(void)
{
	char out[16384], extra[600], p[512];

	setup_ok = 0;
	setup_why[0] = 0;
	memset(results, 0, sizeof(results));
	if (geteuid() != 0)
		return;
	if (use_bpf && topo_sh("%s/build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d >/dev/null 2>&1",
			       cnirt_top(), (int)getpid())) {
		snprintf(setup_why, sizeof(setup_why), "bpf preflight refused on this kernel");
		return;
	}
	/* The reference client and plugins (cached by version; built on a cold machine). */
	if (cnirt_init(setup_why, sizeof(setup_why)))
		return;
	if (topo_up(&T, 2)) {
		snprintf(setup_why, sizeof(setup_why), "topo_up failed");
		return;
	}
	for (int n = 1; n <= 2; n++) {
		if (use_bpf)
			snprintf(extra, sizeof(extra), "--cni-socket %s --backend bpf --bpffs /sys/fs/bpf/%s-n%d",
				 cnirt_sock(&T, n, p, sizeof(p)), T.prefix, n);
		else
			snprintf(extra, sizeof(extra), "--cni-socket %s", cnirt_sock(&T, n, p, sizeof(p)));
		if (topo_write_state(&T, n, 0) || cnirt_node(&T, n) ||
		    topo_agent_start(&T, n, extra) <= 0 || cnirt_wait_socket(&T, n, 20)) {
			snprintf(setup_why, sizeof(setup_why), "agent on n%d did not open its CNI socket (see %s/n%d/agent.log)",
				 n, T.dir, n);
			return;
		}
	}
	for (size_t i = 0; i < NPODS; i++) {
		if (cnirt_mkns(&T, pods[i].name) || cnirt_write_conflist(&T, pods[i].node, pods[i].name, operator_conflist(&pods[i], "1.0.0"))) {
			snprintf(setup_why, sizeof(setup_why), "netns/conflist for %s", pods[i].name);
			return;
		}
		if (cnitool_add(&pods[i], &results[i], out, sizeof(out))) {
			snprintf(setup_why, sizeof(setup_why), "cnitool add %s: %.900s", pods[i].name, out);
			return;
		}
	}
	/* pn's guest addresses itself (no ipam): an address and default routes
	 * via the host end's gateways. */
	if (topo_sh("ip -n %s-pn addr add fd00:a::83/128 dev eth0 nodad && ip -n %s-pn -6 route add default via fe80::1 dev eth0"
		    " && ip -n %s-pn addr add 10.1.0.83/32 dev eth0"
		    " && ip -n %s-pn route add 169.254.1.1 dev eth0 scope link && ip -n %s-pn route add default via 169.254.1.1 dev eth0",
		    T.prefix, T.prefix, T.prefix, T.prefix, T.prefix) ||
	    /* pb uses one more address of its delegated block */
	    topo_sh("ip -n %s-pb addr add fd00:a::1:0:5/128 dev eth0 nodad", T.prefix)) {
		snprintf(setup_why, sizeof(setup_why), "guest addressing in pn/pb failed");
		return;
	}
	if (write_remotes()) {
		snprintf(setup_why, sizeof(setup_why), "write remotes.json failed");
		return;
	}
	setup_ok = 1;
}

static void setup_bpf(void)
{
	use_bpf = 1;
	pt_remote = 0;
	setup();
}

static void teardown(void)
{
	char net[128], prefix[sizeof(T.prefix)];

	for (size_t i = 0; i < NPODS; i++)
		json_decref(results[i]);
	snprintf(prefix, sizeof(prefix), "%s", T.prefix);
	if (T.prefix[0]) {
		topo_sh("rm -f /run/galactic/%s-n*.sock", T.prefix);
		/* libcni's cache (cnitool has no option for another directory) */
		for (size_t i = 0; i < NPODS; i++)
			topo_sh("rm -f /var/lib/cni/results/%s-* 2>/dev/null", net_of(pods[i].name, net, sizeof(net)));
		topo_sh("rm -f /var/lib/cni/results/%s-* 2>/dev/null", net_of("pt", net, sizeof(net)));
	}
	topo_down(&T);
	if (use_bpf && prefix[0])
		topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2 /sys/fs/bpf/galactic-preflight-%d", prefix, prefix,
			(int)getpid());
}

#define NEED_TOPO()                                                                          \
	do {                                                                                 \
		if (geteuid() != 0)                                                          \
			GT_SKIP("needs root for network namespaces");                       \
		ck_assert_msg(setup_ok, "setup failed: %s (logs in %s)", setup_why, T.dir); \
	} while (0)

static size_t pod_index(const char *name)
{
	for (size_t i = 0; i < NPODS; i++)
		if (!strcmp(pods[i].name, name))
			return i;
	ck_abort_msg("no pod %s", name);
	return 0;
}

/* ---- 1. the operator's conflists ------------------------------------------------- */

START_TEST(t_operator_conflists_attach)
{
	json_t *r, *rec, *ips;
	const char *host;
	char out[4096];

	NEED_TOPO();
	/* veth with ipam: both addresses in the result (through galactic-bgp unchanged) */
	r = results[pod_index("pa")];
	ck_assert_str_eq(jstr(r, "cniVersion"), "1.0.0");
	host = jstr(json_array_get(json_object_get(r, "interfaces"), 0), "name");
	ck_assert_msg(!strncmp(host, "gc", 2) && strlen(host) == 15, "host end %s", host);
	ips = json_object_get(r, "ips");
	ck_assert_int_eq(json_array_size(ips), 2);
	ck_assert_str_eq(jstr(json_array_get(ips, 0), "address"), "10.1.0.81/32");
	ck_assert_str_eq(jstr(json_array_get(ips, 1), "address"), "fd00:a::81/128");
	rec = noderec_att(&T, 1, "PA");
	ck_assert_ptr_nonnull(rec);
	ck_assert_str_eq(jstr(json_object_get(rec, "config"), "namespace"), "galactic-system");
	ck_assert_str_eq(jstr(json_object_get(rec, "config"), "type"), "galactic-veth");
	json_decref(rec);

	/* veth without ipam: an interface, no addresses; rules into vpcA's table */
	r = results[pod_index("pn")];
	ck_assert_int_eq(json_array_size(json_object_get(r, "ips")), 0);
	host = jstr(json_array_get(json_object_get(r, "interfaces"), 0), "name");
	ck_assert(link_exists(1, host));
	/* its stanza has no mtu (the operator omits 0): the agent's default,
	 * the uplink's MTU less the encapsulation */
	{
		long up, mtu;

		topo_out(out, sizeof(out), "ip netns exec %s-n1 cat /sys/class/net/up0/mtu", T.prefix);
		up = atol(out);
		topo_out(out, sizeof(out), "ip netns exec %s-pn cat /sys/class/net/eth0/mtu", T.prefix);
		mtu = atol(out);
		ck_assert_msg(up > 1320 && mtu == up - 40, "pn mtu %ld, uplink %ld", mtu, up);
	}
	/* steered into vpcA's table: the VPC's mark on its host end's ingress,
	 * the VPC's fwmark rule in both families */
	topo_out(out, sizeof(out), "ip -n %s-n1 -6 rule; ip -n %s-n1 -4 rule", T.prefix, T.prefix);
	{
		char want[64];

		snprintf(want, sizeof(want), "/0x%x lookup %d", GDE_MARK_MASK, TOPO_TABLE_A);
		ck_assert_msg(strstr(out, want) && strstr(strstr(out, want) + 1, want), "rules: %s", out);
	}
	ck_assert_int_eq(topo_sh("m=$(ip -n %s-n1 -6 rule | sed -n 's/.*fwmark \\(0x[0-9a-f]*\\)\\/0x%x lookup %d.*/\\1/p'); "
				 "ip netns exec %s-n1 nft list map inet %s %s | grep -q \"\\\"%s\\\" : $(printf 0x%%08x $m)\"",
				 T.prefix, GDE_MARK_MASK, TOPO_TABLE_A, T.prefix, GDS_TABLE, GDS_MAP, host), 0);
	/* its host end carries both gateways for the self-addressing guest */
	ck_assert_int_eq(topo_sh("ip -n %s-n1 addr show dev %s | grep -q 'fe80::1/64' && ip -n %s-n1 addr show dev %s | grep -q '169.254.1.1/32'",
				 T.prefix, host, T.prefix, host), 0);

	/* the /96: the pod has the block's address, the node routes the whole
	 * block toward it in vpcA's table */
	r = results[pod_index("pb")];
	ips = json_object_get(r, "ips");
	ck_assert_int_eq(json_array_size(ips), 1);
	ck_assert_str_eq(jstr(json_array_get(ips, 0), "address"), "fd00:a::1:0:0/96");
	host = jstr(json_array_get(json_object_get(r, "interfaces"), 0), "name");
	topo_out(out, sizeof(out), "ip -n %s-n1 -6 route show table %d", T.prefix, TOPO_TABLE_A);
	{
		char want[96];

		snprintf(want, sizeof(want), "fd00:a::1:0:0/96 dev %s", host);
		ck_assert_msg(strstr(out, want), "no block route '%s' in: %s", want, out);
	}
	ck_assert_int_eq(topo_sh("ip -n %s-pb -6 addr show dev eth0 | grep -q 'fd00:a::1:0:0/96'", T.prefix), 0);
	/* a delegated block is the pod's own: no route for it back out of the pod */
	topo_out(out, sizeof(out), "ip -n %s-pb -6 route show", T.prefix);
	ck_assert_msg(!strstr(out, "fd00:a::1:0:0/96"), "pod routes its own block away: %s", out);
}
END_TEST

START_TEST(t_operator_traffic_and_isolation)
{
	long before, got, other;

	NEED_TOPO();
	/* veth with ipam: both families across nodes; q2 (vpcB, same address) sees nothing */
	ck_assert_msg(cnirt_wait_ping(&T, "pa", "fd00:a::82", 15) == 0, "pa never reached p2 over IPv6");
	ck_assert_msg(cnirt_wait_ping(&T, "pa", "10.1.0.82", 15) == 0, "pa never reached p2 over IPv4");
	got = cnirt_ping_isolated(&T, "pa", "fd00:a::82", 20, "q2", &other);
	printf("cnitool traffic: pa->p2 v6 %ld/20, q2 (vpcB, same address) saw %ld\n", got, other);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(other, 0);
	got = cnirt_ping_isolated(&T, "pa", "10.1.0.82", 20, "q2", &other);
	printf("cnitool traffic: pa->p2 v4 %ld/20, q2 saw %ld\n", got, other);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(other, 0);

	/* the /96: p2 reaches the block's address and another address the pod
	 * took from its block (the whole block is routed), and back */
	ck_assert_msg(cnirt_wait_ping(&T, "p2", "fd00:a::1:0:5", 15) == 0, "p2 never reached pb's block");
	got = cnirt_ping(&T, "p2", "fd00:a::1:0:5", 20);
	printf("cnitool traffic: p2->pb block address fd00:a::1:0:5 %ld/20\n", got);
	ck_assert_int_eq(got, 20);
	got = cnirt_ping(&T, "p2", "fd00:a::1:0:0", 10);
	ck_assert_int_eq(got, 10);
	got = cnirt_ping_isolated(&T, "pb", "fd00:a::82", 10, "q2", &other);
	ck_assert_int_eq(got, 10);
	ck_assert_int_eq(other, 0);

	/* without ipam: the self-addressed guest's traffic enters vpcA and
	 * reaches p2 across nodes, never q2; its first packets taught n1 its
	 * addresses (agent/cni/learn.h), checked below. */
	before = topo_snmp(&T, "p2", "Icmp6InEchos");
	other = topo_snmp(&T, "q2", "Icmp6InEchos");
	cnirt_ping(&T, "pn", "fd00:a::82", 20);
	got = topo_snmp(&T, "p2", "Icmp6InEchos") - before;
	other = topo_snmp(&T, "q2", "Icmp6InEchos") - other;
	printf("cnitool traffic: pn (no ipam) -> p2: p2 saw %ld/20 echo requests, q2 %ld\n", got, other);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(other, 0);
	before = topo_snmp(&T, "p2", "Icmp:InEchos");
	cnirt_ping(&T, "pn", "10.1.0.82", 10);
	got = topo_snmp(&T, "p2", "Icmp:InEchos") - before;
	ck_assert_int_eq(got, 10);

	/* the reply path: n1 learned both addresses from the host end's
	 * neighbour entries, recorded them (guestAddressed), routed them to
	 * the host end in vpcA's table; fed to n2 like the other attachments
	 * (remotes.json from n1's record), p2's replies come back */
	{
		char out[4096], want[96];
		const char *host = jstr(json_array_get(json_object_get(results[pod_index("pn")], "interfaces"), 0), "name");
		json_t *a = NULL;
		double end = cnirt_now() + 10;
		char *addrs = NULL;

		while (cnirt_now() < end) {
			json_decref(a);
			a = noderec_att(&T, 1, "PN");
			free(addrs);
			addrs = a ? json_dumps(json_object_get(a, "addrs"), JSON_COMPACT) : NULL;
			if (addrs && strstr(addrs, "fd00:a::83/128") && strstr(addrs, "10.1.0.83/32"))
				break;
			usleep(100000);
		}
		ck_assert_msg(addrs && strstr(addrs, "fd00:a::83/128") && strstr(addrs, "10.1.0.83/32"),
			      "n1 did not learn pn's addresses: %s", addrs ? addrs : "(no record)");
		ck_assert(json_is_true(json_object_get(a, "guestAddressed")));
		free(addrs);
		json_decref(a);
		topo_out(out, sizeof(out), "ip -n %s-n1 -6 route show table %d; ip -n %s-n1 -4 route show table %d",
			 T.prefix, TOPO_TABLE_A, T.prefix, TOPO_TABLE_A);
		snprintf(want, sizeof(want), "fd00:a::83 dev %s", host);
		ck_assert_msg(strstr(out, want), "no route '%s' in: %s", want, out);
		snprintf(want, sizeof(want), "10.1.0.83 dev %s", host);
		ck_assert_msg(strstr(out, want), "no route '%s' in: %s", want, out);
		ck_assert_int_eq(write_remotes(), 0);
		ck_assert_msg(cnirt_wait_ping(&T, "pn", "fd00:a::82", 15) == 0, "pn gets no IPv6 reply from p2");
		ck_assert_msg(cnirt_wait_ping(&T, "p2", "10.1.0.83", 15) == 0, "p2 never reached pn over IPv4");
		got = cnirt_ping(&T, "p2", "fd00:a::83", 20);
		other = cnirt_ping(&T, "q2", "fd00:a::83", 5);
		printf("cnitool traffic: p2 -> pn (learned fd00:a::83) %ld/20; q2 (vpcB) -> it %ld/5\n", got, other);
		ck_assert_int_eq(got, 20);
		ck_assert_int_eq(other, 0);
		got = cnirt_ping(&T, "pn", "10.1.0.82", 10);
		ck_assert_int_eq(got, 10);

		/* addresses outside vpcA's prefixes (n1's record: fd00:a::/64,
		 * 10.1.0.0/16) are refused: not recorded, not routed, logged */
		ck_assert_int_eq(topo_sh("ip -n %s-pn addr add 10.9.0.83/32 dev eth0 && "
					 "ip -n %s-pn addr add fd00:b::83/128 dev eth0 nodad && ip -n %s-pn neigh flush dev eth0 && "
					 "{ ip netns exec %s-pn ping -c 2 -i 0.2 -W 1 -I 10.9.0.83 10.1.0.82; "
					 "ip netns exec %s-pn ping -c 2 -i 0.2 -W 1 -I fd00:b::83 fd00:a::82; true; } >/dev/null 2>&1",
					 T.prefix, T.prefix, T.prefix, T.prefix, T.prefix), 0);
		ck_assert_int_eq(topo_sh("for _ in $(seq 50); do grep -q 'not learned: 10.9.0.83/32 is outside the address ranges of vpc vpcA' %s/n1/agent.log && "
					 "grep -q 'not learned: fd00:b::83/128 is outside' %s/n1/agent.log && exit 0; sleep 0.1; done; exit 1",
					 T.dir, T.dir), 0);
		a = noderec_att(&T, 1, "PN");
		addrs = a ? json_dumps(json_object_get(a, "addrs"), JSON_COMPACT) : NULL;
		ck_assert_msg(addrs && !strstr(addrs, "10.9.0.83") && !strstr(addrs, "fd00:b::83") &&
			      strstr(addrs, "fd00:a::83/128"), "pn's record: %s", addrs ? addrs : "(none)");
		free(addrs);
		json_decref(a);
		topo_out(out, sizeof(out), "{ ip -n %s-n1 route show table all; ip -n %s-n1 -6 route show table all; } | "
			 "grep -c -e 10.9.0.83 -e fd00:b::83", T.prefix, T.prefix);
		ck_assert_msg(!strcmp(out, "0"), "routes toward a refused address: %s", out);
		topo_sh("ip -n %s-pn addr del 10.9.0.83/32 dev eth0; ip -n %s-pn addr del fd00:b::83/128 dev eth0", T.prefix,
			T.prefix);
	}
}
END_TEST

/* ---- 2. every verb through libcni -------------------------------------------- */

/* The other runtime's attachment on the same network: made by running the
 * plugin directly (not in cnitool's cache), still in use by that runtime. */
static int other_runtime_add(const char *cid, char *out, size_t n)
{
	char s[512], nsp[256], net[128], *conf;
	json_t *st = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:[{s:s},{s:s}]}}", "cniVersion", "1.1.0",
			       "name", net_of("pt", net, sizeof(net)), "type", "galactic-veth", "vpc", TOPO_VPC_A,
			       "vpcattachment", "T2", "namespace", "galactic-system", "mtu", 1400, "ipam",
			       "type", "galactic-ipam", "addresses", "address", "10.1.0.85/32", "address",
			       "fd00:a::85/128");
	int rc;

	conf = json_dumps(st, 0);
	json_decref(st);
	rc = topo_out(out, n,
		      "echo '%s' | CNI_COMMAND=ADD CNI_CONTAINERID=%s CNI_IFNAME=eth0 CNI_NETNS=%s CNI_PATH=%s/build/san/bin "
		      "GALACTIC_AGENT_SOCKET=%s %s/build/san/bin/galactic-veth 2>&1",
		      conf, cid, cnirt_ns_path(&T, "t2", nsp, sizeof(nsp)), cnirt_top(), cnirt_sock(&T, 1, s, sizeof(s)), cnirt_top());
	free(conf);
	return rc;
}

START_TEST(t_cnitool_every_verb)
{
	char out[16384], net[128], nsp[256], cid[64], host[16], pair[128];
	json_t *r, *rec;
	long gcs;

	NEED_TOPO();
	net_of("pt", net, sizeof(net));
	cnirt_ns_path(&T, "pt", nsp, sizeof(nsp));
	ck_assert_int_eq(cnirt_mkns(&T, "pt"), 0);
	ck_assert_int_eq(cnirt_mkns(&T, "t2"), 0);
	ck_assert_int_eq(cnirt_write_conflist(&T, 1, "pt", verbs_conflist("PT", "10.1.0.84", "fd00:a::84/128")), 0);

	/* ADD: veth -> bgp -> tuning. tuning requires a prevResult and passes it
	 * on: the printed (final) result is ours, and its txQLen is applied. */
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool add %s %s", net, nsp) == 0, "cnitool add: %s", out);
	r = cnirt_json(out);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(jstr(r, "cniVersion"), "1.1.0");
	snprintf(host, sizeof(host), "%s", jstr(json_array_get(json_object_get(r, "interfaces"), 0), "name"));
	ck_assert_msg(!strncmp(host, "gc", 2), "final result lacks our host end: %s", out);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "interfaces"), 1), "sandbox"), nsp);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "ips"), 1), "address"), "fd00:a::84/128");
	json_decref(r);
	ck_assert_int_eq(topo_sh("ip -n %s-pt link show eth0 | grep -q 'qlen %d'", T.prefix, VERBS_TXQLEN), 0);
	rec = noderec_att(&T, 1, "PT");
	ck_assert_ptr_nonnull(rec);
	snprintf(cid, sizeof(cid), "%s", jstr(rec, "containerID"));
	ck_assert_msg(!strncmp(cid, "cnitool-", 8), "container id %s", cid);
	json_decref(rec);
	pt_remote = 1;
	ck_assert_int_eq(write_remotes(), 0);
	ck_assert_msg(cnirt_wait_ping(&T, "pt", "fd00:a::82", 15) == 0, "pt never reached p2");

	/* CHECK: libcni hands every plugin the cached final result */
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool check %s %s", net, nsp) == 0, "cnitool check: %s", out);
	/* STATUS: the agent answers; with the agent away, code 50 */
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool status %s %s", net, nsp) == 0, "cnitool status: %s", out);
	ck_assert_msg(cnirt_tool(&T, 1, "/run/galactic/no-such-agent.sock", NULL, out, sizeof(out), "cnitool status %s %s", net, nsp) != 0,
		      "STATUS succeeded without an agent: %s", out);
	ck_assert_msg(strstr(out, "galactic-agent is not available"), "STATUS without agent: %s", out);

	/* GC without GC args (cnitool gc): libcni DELs the attachments in its
	 * own cache (pt) and then sends GC naming no attachments: the agent
	 * must keep the other runtime's T2. */
	ck_assert_msg(other_runtime_add("other-runtime-1", out, sizeof(out)) == 0, "direct ADD T2: %s", out);
	ck_assert_ptr_nonnull((rec = noderec_att(&T, 1, "T2")));
	json_decref(rec);
	gcs = gc_count(1, net);
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool gc %s %s", net, nsp) == 0, "cnitool gc: %s", out);
	ck_assert_int_eq(gc_count(1, net), gcs + 1); /* libcni did send GC (1.1.0) to galactic-veth */
	rec = noderec_att(&T, 1, "T2");
	ck_assert_msg(rec != NULL, "a GC naming no attachments removed T2");
	json_decref(rec);
	ck_assert_ptr_null(noderec_att(&T, 1, "PT")); /* libcni's own DEL of its cached attachment */
	ck_assert(!link_exists(1, host));

	/* GC with GC args: pt (re-added) is valid, T2 is not: T2 goes, pt stays */
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool add %s %s", net, nsp) == 0, "cnitool add again: %s", out);
	snprintf(pair, sizeof(pair), "%s/eth0", cid);
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnigc %s %s", net, pair) == 0, "cnigc: %s", out);
	ck_assert_int_eq(gc_count(1, net), gcs + 2);
	ck_assert_ptr_null(noderec_att(&T, 1, "T2"));
	rec = noderec_att(&T, 1, "PT");
	ck_assert_msg(rec != NULL, "GC removed the valid attachment");
	json_decref(rec);
	ck_assert(link_exists(1, host));
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool check %s %s", net, nsp) == 0, "check after GC: %s", out);
	ck_assert_msg(cnirt_wait_ping(&T, "pt", "fd00:a::82", 10) == 0, "pt lost traffic after GC");

	/* DEL, twice: the second succeeds */
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool del %s %s", net, nsp) == 0, "cnitool del: %s", out);
	ck_assert_ptr_null(noderec_att(&T, 1, "PT"));
	ck_assert(!link_exists(1, host));
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool del %s %s", net, nsp) == 0, "second cnitool del: %s", out);

	/* GC with GC args naming nothing (a nil list: JSON null): every
	 * attachment of the network goes, the other runtime's too */
	ck_assert_msg(other_runtime_add("other-runtime-2", out, sizeof(out)) == 0, "direct ADD T2 again: %s", out);
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnigc %s", net) == 0, "cnigc (null list): %s", out);
	ck_assert_ptr_null(noderec_att(&T, 1, "T2"));
	/* other networks are untouched throughout */
	rec = noderec_att(&T, 1, "PA");
	ck_assert_ptr_nonnull(rec);
	json_decref(rec);
	ck_assert_msg(cnirt_wait_ping(&T, "pa", "fd00:a::82", 10) == 0, "GC of another network broke pa");
	topo_sh("ip netns del %s-pt; ip netns del %s-t2", T.prefix, T.prefix);
}
END_TEST

/* Hypervisor mode as the operator renders it (galactic-tap, then
 * galactic-bgp): refused through libcni with an error naming galactic-tap;
 * nothing is made, and DEL succeeds. */
START_TEST(t_operator_tap_refused)
{
	char out[4096], net[128], nsp[256], *before, *after;
	json_t *l;

	NEED_TOPO();
	ck_assert_int_eq(cnirt_mkns(&T, "tap"), 0);
	l = operator_conflist(&(struct cpod){ "tap", TOPO_VPC_A, "TP", 1, IPAM_HOST, "10.1.0.86", "fd00:a::86/128",
					     "fe80::1" }, "1.0.0");
	json_object_set_new(json_array_get(json_object_get(l, "plugins"), 0), "type", json_string("galactic-tap"));
	ck_assert_int_eq(cnirt_write_conflist(&T, 1, "tap", l), 0);
	net_of("tap", net, sizeof(net));
	cnirt_ns_path(&T, "tap", nsp, sizeof(nsp));
	before = malloc(65536);
	after = malloc(65536);
	topo_out(before, 65536, "ip -n %s-n1 -o link show | cut -d: -f2 | sort", T.prefix);
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool add %s %s", net, nsp) != 0, "tap ADD succeeded: %s", out);
	ck_assert_msg(strstr(out, "galactic-tap") && strstr(out, "Hypervisor"), "tap ADD error: %s", out);
	ck_assert_ptr_null(noderec_att(&T, 1, "TP"));
	topo_out(after, 65536, "ip -n %s-n1 -o link show | cut -d: -f2 | sort", T.prefix);
	ck_assert_str_eq(before, after);
	ck_assert_msg(cnirt_tool(&T, 1, NULL, NULL, out, sizeof(out), "cnitool del %s %s", net, nsp) == 0, "tap DEL: %s", out);
	free(before);
	free(after);
	topo_sh("ip netns del %s-tap; rm -f /var/lib/cni/results/%s-*", T.prefix, net);
}
END_TEST

/* The operator's 1.0.0 conflists through DEL (twice), then nothing is left. */
START_TEST(t_operator_conflists_del)
{
	char out[4096], net[128], nsp[256];

	NEED_TOPO();
	for (size_t i = 0; i < NPODS; i++) {
		const char *host = jstr(json_array_get(json_object_get(results[i], "interfaces"), 0), "name");

		net_of(pods[i].name, net, sizeof(net));
		cnirt_ns_path(&T, pods[i].name, nsp, sizeof(nsp));
		ck_assert_msg(cnirt_tool(&T, pods[i].node, NULL, NULL, out, sizeof(out), "cnitool del %s %s", net, nsp) == 0,
			      "del %s: %s", pods[i].name, out);
		ck_assert_msg(cnirt_tool(&T, pods[i].node, NULL, NULL, out, sizeof(out), "cnitool del %s %s", net, nsp) == 0,
			      "second del %s: %s", pods[i].name, out);
		ck_assert_ptr_null(noderec_att(&T, pods[i].node, pods[i].att));
		ck_assert(!link_exists(pods[i].node, host));
	}
	topo_out(out, sizeof(out), "ip -n %s-n1 -6 route show table %d", T.prefix, TOPO_TABLE_A);
	ck_assert_msg(!strstr(out, "fd00:a::1:0:0/96"), "block route left behind: %s", out);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cnitool");
	TCase *t = tcase_create("cnitool");

	tcase_add_unchecked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 240);
	tcase_add_test(t, t_operator_conflists_attach);
	tcase_add_test(t, t_operator_traffic_and_isolation);
	tcase_add_test(t, t_cnitool_every_verb);
	tcase_add_test(t, t_operator_tap_refused);
	tcase_add_test(t, t_operator_conflists_del);
	suite_add_tcase(s, t);
	/* The operator's conflists again with both agents on the bpf backend. */
	t = tcase_create("cnitool-bpf");
	tcase_add_unchecked_fixture(t, setup_bpf, teardown);
	tcase_set_timeout(t, 240);
	tcase_add_test(t, t_operator_conflists_attach);
	tcase_add_test(t, t_operator_traffic_and_isolation);
	tcase_add_test(t, t_operator_conflists_del);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
