/*
 * Fault: galactic-agent killed with SIGKILL at distinct points of its work
 * (issue 12 item 2), on the real system: a real control plane (etcd +
 * kube-apiserver, our CRDs), two netns nodes each running the release
 * galactic-agent with --kubeconfig (reports published, routes learned from
 * the other node's reports), pods attached by libcni (cnirt) with the
 * conflists as the VPC operator renders them.
 *
 * The crash points are gdb breakpoints on functions of the release binary
 * (built with -g): nothing in the shipped binary knows about them. For each
 * point: gdb attaches to n1's agent, breaks at the function, and kills the
 * agent there (gdb `kill`: SIGKILL, as kill -9); the operation that was in
 * flight is retried as a runtime retries it; the agent is restarted. Then:
 *   - record: the record of every node (record.json with its journal,
 *     record_dump) holds exactly the desired attachments;
 *   - reports: exactly one NodeAttachment per desired pod (no duplicates,
 *     none left behind), each Programmed=True;
 *   - kernel: every desired pod's host veth exists, no other veth than the
 *     uplink and the desired ones; every desired pod on n1 pings across
 *     nodes;
 * and a continuous ping between two other pods (s1 on n1 -> s2 on n2)
 * runs through every kill: its loss is measured and must be 0 (at most the
 * one echo in flight when ping is interrupted at the end).
 *
 * Two more faults share the control plane and the nodes (each test says
 * its invariant): netlink ENOMEM/EBUSY injected, and kill -9 inside a bpf
 * map rebuild (docs/reliability.md "Faults"). The control-plane faults
 * (API server down, etcd compaction) are in test_fault_cluster.c, where
 * the translators and the upstream objects run too.
 *
 * `make test` runs the short form (points marked 1); `make soak`
 * (GT_SOAK=1) every point GT_SOAK_ROUNDS times (default 3).
 */
#include "tests/lib/cnirt.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/fpod.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#define RNS "galactic-system"
#define TNS "tenant-fault"
#define NATT_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define VPC "7Hq2x9Lm"

static struct cp cp;
static struct fpods F; /* the pods; F.p[0] s1 (n1), F.p[1] s2 (n2): the steady pair */
static struct topo T;
static int setup_ok, cp_is_up;
static char setup_why[1024];

enum op { OP_ADD, OP_DEL, OP_GC, OP_LEARN };
static const char *const op_name[] = { "ADD", "DEL", "GC", "LEARN" };

/* A crash point: the agent function gdb breaks in, and the operation that gets it there. */
static const struct point {
	const char *fn;
	enum op op;
	const char *what;
	int short_form;
} points[] = {
	{ "gcni_verb_add", OP_ADD, "ADD received, nothing done yet", 0 },
	{ "record_reserve", OP_ADD, "ADD: reserving the attachment in the record", 0 },
	{ "pod_setup", OP_ADD, "ADD: before the veth pair is made", 1 },
	{ "pod_configure", OP_ADD, "ADD: veth made, pod side being addressed", 0 },
	{ "record_activate", OP_ADD, "ADD: pod set up, record entry not yet active", 0 },
	{ "record_commit_ahead", OP_ADD, "ADD: the verb's own commit before the pass (its journal line being written)", 1 },
	{ "record_commit", OP_ADD, "record commit (files being written)", 1 },
	{ "kb_apply", OP_ADD, "route sync: kernel backend apply pass", 0 },
	{ "rpt_update", OP_ADD, "report: new intent handed to the publisher", 0 },
	{ "rpt_spec", OP_ADD, "report: the publisher building a report", 0 },
	{ "gcni_verb_del", OP_DEL, "DEL received, nothing done yet", 0 },
	{ "record_remove", OP_DEL, "DEL: removing the record entry", 0 },
	{ "record_commit", OP_DEL, "record commit after DEL", 0 },
	{ "kb_apply", OP_DEL, "DEL: kernel backend removing the node side", 0 },
	{ "pod_teardown", OP_DEL, "DEL: node side removed, veth not yet deleted", 1 },
	{ "gcni_verb_gc", OP_GC, "GC received", 1 },
	/* libcni's GC first DELs the attachments in its own cache: these two are reached through that DEL */
	{ "record_remove", OP_GC, "GC: libcni's DEL of its cached attachment, record entry", 0 },
	{ "record_commit", OP_GC, "record commit after GC", 0 },
	{ "pod_teardown", OP_GC, "GC: libcni's DEL of its cached attachment, veth", 0 },
	{ "pod_sweep", OP_GC, "GC: sweeping veths no attachment owns", 0 },
	{ "rpt_routes_from_report", OP_LEARN, "route sync: reading another node's report", 0 },
	{ "set_remotes_locked", OP_LEARN, "route sync: remote routes learned from a report", 1 },
	{ "kb_apply", OP_LEARN, "route sync: applying learned remote routes", 0 },
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

/* `make test` runs the points marked 1 (6 points, one of each kind: ADD,
 * the verb's commit and the pass's, DEL, GC, route learning); `make soak`
 * every point. */
static int soak(void)
{
	const char *s = getenv("GT_SOAK");

	return s && *s && strcmp(s, "0");
}

/* The nodes run the bpf backend (t_agent_kill9_in_bpf_map_rebuild), each with its own pin directory. */
static int bpf_mode;

static const char *agent_args(int node, const char *kubeconfig, char *extra, size_t n)
{
	char s[512];

	snprintf(extra, n, "--cni-socket %s --kubeconfig %s --node n%d --report-namespace " RNS,
		 cnirt_sock(&T, node, s, sizeof(s)), kubeconfig, node);
	if (bpf_mode)
		snprintf(extra + strlen(extra), n - strlen(extra), " --backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix,
			 node);
	return extra;
}

static void start_agent_kc(int node, const char *kubeconfig)
{
	char extra[1400];

	ck_assert_int_gt(topo_agent_start(&T, node, agent_args(node, kubeconfig, extra, sizeof(extra))), 0);
	ck_assert_msg(cnirt_wait_socket(&T, node, 30) == 0, "agent n%d did not open its socket (%s/n%d/agent.log)",
		      node, T.dir, node);
}

static void start_agent(int node)
{
	start_agent_kc(node, cp.kubeconfig);
}

static void setup(void)
{
	setup_ok = 0;
	if (geteuid() != 0)
		return;
	if (cnirt_init(setup_why, sizeof(setup_why)))
		return;
	if (topo_sh("command -v gdb >/dev/null")) {
		snprintf(setup_why, sizeof(setup_why), "gdb not installed (the crash points are gdb breakpoints)");
		return;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (cp_up(&cp)) {
		snprintf(setup_why, sizeof(setup_why), "control plane did not start");
		return;
	}
	cp_is_up = 1;
	if (crds_install(&cp, NULL) ||
	    topo_sh("%s/kubectl --kubeconfig %s create namespace " RNS " >/dev/null", cp.bin, cp.kubeconfig)) {
		snprintf(setup_why, sizeof(setup_why), "CRDs or namespace");
		return;
	}
	if (topo_up(&T, 2)) {
		snprintf(setup_why, sizeof(setup_why), "topo_up failed");
		return;
	}
	for (int n = 1; n <= 2; n++)
		if (topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,\"uplink\":\"up0\"},"
			    "\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json", n, T.dir, n) ||
		    cnirt_node(&T, n)) {
			snprintf(setup_why, sizeof(setup_why), "node n%d state", n);
			return;
		}
	fp_init(&F, &T, &cp, TNS, VPC, NATT_PATH, 1000);
	fp_new(&F, "s", 1); /* F.p[0]: s1, the steady pods every test keeps attached */
	fp_new(&F, "s", 2); /* F.p[1]: s2 */
	setup_ok = 1;
}

static void teardown(void)
{
	if (getenv("GT_KEEP"))
		return;
	if (T.prefix[0]) {
		topo_sh("pkill -INT -F %s/ping.pid 2>/dev/null; rm -f /run/galactic/%s-n*.sock", T.dir, T.prefix);
		for (int i = 0; i < F.n; i++)
			topo_sh("ip netns del %s-%s 2>/dev/null; true", T.prefix, F.p[i].name);
	}
	topo_down(&T);
	if (T.prefix[0]) /* the bpf fault's pins (its agents are gone with topo_down) */
		topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2", T.prefix, T.prefix);
	if (cp_is_up)
		cp_down(&cp);
}

/* The process is gone (or a zombie nobody reaped yet). */
static int dead(pid_t pid)
{
	return kill(pid, 0) != 0 || topo_sh("grep -q '^State:.*Z' /proc/%d/status", (int)pid) == 0;
}

/* ---- the steady pair and its continuous ping ------------------------------ */

/* Agents running (started again if a previous test's process is gone), the
 * steady pods s1 (n1) and s2 (n2) attached (ADD is idempotent). */
static void bring_up(void)
{
	for (int n = 1; n <= 2; n++) {
		pid_t pid = topo_agent_pid(&T, n);

		if (pid <= 0 || dead(pid))
			start_agent(n);
	}
	for (int i = 0; i < 2; i++) {
		if (topo_sh("ip netns list | grep -q '^%s-%s\\b'", T.prefix, F.p[i].name))
			ck_assert_int_eq(fp_prepare(&F, &F.p[i]), 0);
		fp_add_ok(&F, &F.p[i]);
	}
	fp_converge(&F, "steady pods");
}


/* gdb attached to n1's agent, broken at fn, kills it there. Returns gdb's pid once armed. */
static pid_t arm(const struct point *pt, const char *log)
{
	char pid[16], brk[96], *argv[32];
	int a = 0;
	double t0 = gt_now();
	pid_t g;

	snprintf(pid, sizeof(pid), "%d", (int)topo_agent_pid(&T, 1));
	snprintf(brk, sizeof(brk), "break %s", pt->fn);
	argv[a++] = "/usr/bin/timeout", argv[a++] = "90", argv[a++] = "gdb", argv[a++] = "-q", argv[a++] = "-nx";
	argv[a++] = "-batch", argv[a++] = "-p", argv[a++] = pid;
	argv[a++] = "-ex", argv[a++] = "set pagination off";
	argv[a++] = "-ex", argv[a++] = "set confirm off";
	argv[a++] = "-ex", argv[a++] = "set debuginfod enabled off";
	argv[a++] = "-ex", argv[a++] = "handle all nostop noprint pass";
	argv[a++] = "-ex", argv[a++] = brk;
	argv[a++] = "-ex", argv[a++] = "echo ARMED\\n";
	argv[a++] = "-ex", argv[a++] = "continue";
	argv[a++] = "-ex", argv[a++] = "echo HIT\\n";
	argv[a++] = "-ex", argv[a++] = "bt 4";
	argv[a++] = "-ex", argv[a++] = "kill";
	argv[a] = NULL;
	unlink(log);
	g = gt_spawn(log, argv);
	ck_assert_int_gt(g, 0);
	while (gt_now() - t0 < 60 && topo_sh("grep -q '^ARMED' %s", log))
		usleep(100 * 1000);
	if (topo_sh("grep -q '^ARMED' %s && grep -q '^Breakpoint 1 at' %s", log, log))
		topo_sh("cat %s >&2", log);
	ck_assert_msg(topo_sh("grep -q '^ARMED' %s", log) == 0, "gdb did not arm at %s (%s)", pt->fn, log);
	ck_assert_msg(topo_sh("grep -q '^Breakpoint 1 at' %s", log) == 0, "no breakpoint at %s (%s)", pt->fn, log);
	usleep(300 * 1000); /* the continue itself */
	return g;
}

static void crash_at(const struct point *pt, int round)
{
	char log[700], out[8192], tag[160], dst[48];
	struct fpod *p = NULL, *q = NULL;
	pid_t g, old;
	int st = 0;
	double t0, tdead, tconv;

	snprintf(tag, sizeof(tag), "round %d: kill -9 in %s (%s: %s)", round, pt->fn, op_name[pt->op], pt->what);
	snprintf(log, sizeof(log), "%s/gdb-%d-%s-%s.log", T.dir, round, pt->fn, op_name[pt->op]);
	/* the pod the operation is about, in place before gdb arms */
	if (pt->op == OP_ADD) {
		p = fp_new(&F, "a", 1);
		ck_assert_int_eq(fp_prepare(&F, p), 0);
	} else if (pt->op == OP_DEL || pt->op == OP_GC) {
		p = fp_new(&F, pt->op == OP_DEL ? "d" : "g", 1);
		ck_assert_int_eq(fp_prepare(&F, p), 0);
		fp_add_ok(&F, p);
		fp_converge(&F, tag);
	} else {
		p = fp_new(&F, "l", 2); /* on n2: n1 learns its routes from n2's report */
		ck_assert_int_eq(fp_prepare(&F, p), 0);
	}
	old = topo_agent_pid(&T, 1);
	g = arm(pt, log);
	t0 = gt_now();
	/* the operation; the agent dies inside it (its result is the runtime's to retry) */
	if (pt->op == OP_ADD || pt->op == OP_LEARN)
		fp_rt(&F, p, "add", out, sizeof(out));
	else
		fp_rt(&F, p, pt->op == OP_DEL ? "del" : "gc", out, sizeof(out));
	while (waitpid(g, &st, WNOHANG) == 0 && gt_now() - t0 < 60)
		usleep(50 * 1000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || topo_sh("grep -q '^HIT' %s", log))
		topo_sh("cat %s >&2; tail -20 %s/n1/agent.log >&2", log, T.dir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "gdb did not finish (%s)", log);
	ck_assert_msg(topo_sh("grep -q '^HIT' %s", log) == 0, "%s: breakpoint never hit (%s)", tag, log);
	tdead = gt_now() - t0;
	topo_agent_stop(&T, 1, SIGKILL); /* reaps it */
	ck_assert_msg(dead(old), "%s: agent pid %d still alive", tag, (int)old);
	topo_sh("echo '--- killed at %s (round %d)' >>%s/n1/agent.log", pt->fn, round, T.dir);
	start_agent(1);
	/* the runtime retries what failed */
	if (pt->op == OP_ADD)
		fp_add_ok(&F, p);
	else if (pt->op == OP_LEARN)
		p->up = 1; /* the ADD was on n2, whose agent was not touched */
	else {
		ck_assert_msg(fp_rt(&F, p, pt->op == OP_DEL ? "del" : "gc", out, sizeof(out)) == 0, "%s: retried %s: %s", tag,
			      op_name[pt->op], out);
		p->up = 0;
	}
	tconv = fp_converge(&F, tag);
	if (pt->op == OP_LEARN) { /* n1 routes toward the new pod */
		q = &F.p[0];
		fp_a6(p, dst, sizeof(dst));
		ck_assert_msg(cnirt_wait_ping(&T, q->name, dst, 20) == 0, "%s: %s -> %s", tag, q->name, dst);
	}
	{
		char caller[128] = "";

		topo_out(caller, sizeof(caller), "sed -n 's/^#1 .* in \\([A-Za-z_0-9]*\\) .*/\\1/p; s/^#1  \\([A-Za-z_0-9]*\\) .*/\\1/p' %s | head -1",
			 log);
		printf("fault agent: %s [called from %s]: dead %.2f s after the operation began, converged %.2f s after restart\n",
		       tag, caller[0] ? caller : "?", tdead, tconv);
	}
	/* leave only the steady pods and the ADDed ones: DEL the ADDed pod to keep the node small */
	if (p->up && p != &F.p[0] && p != &F.p[1]) {
		ck_assert_msg(fp_rt(&F, p, "del", out, sizeof(out)) == 0, "cleanup del %s: %s", p->name, out);
		p->up = 0;
	}
}

START_TEST(t_agent_kill9_at_crash_points)
{
	const double t_test = gt_now();
	int rounds = 1, done = 0;
	long tx, rx;

	if (geteuid() != 0)
		GT_SKIP("needs root for network namespaces");
	ck_assert_msg(setup_ok, "setup failed: %s (logs in %s, %s)", setup_why, T.dir, cp.dir);
	if (soak()) {
		const char *r = getenv("GT_SOAK_ROUNDS");

		rounds = r && atoi(r) > 0 ? atoi(r) : 3;
	}
	bring_up();
	fp_ping_start(&F, &F.p[0], &F.p[1]);
	for (int r = 1; r <= rounds; r++)
		for (size_t i = 0; i < NPOINTS; i++) {
			if (!soak() && !points[i].short_form)
				continue;
			crash_at(&points[i], r);
			done++;
		}
	fp_ping_stop(&F, &tx, &rx);
	printf("fault agent: %d crash points (%d rounds): continuous ping s1 -> s2 across nodes: %ld sent, %ld received, "
	       "%ld lost\n", done, rounds, tx, rx, tx - rx);
	ck_assert_int_gt(tx, 20); /* the ping ran throughout (10 pps) */
	ck_assert_msg(tx - rx <= 1, "running pods lost %ld of %ld echoes across %d agent kills", tx - rx, tx, done);
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/*
 * netlink ENOMEM and EBUSY, injected: gdb (tests/fault/nl_inject.py) makes
 * the kernel refuse n1's agent's next netlink requests (the request gets an
 * invalid type: the kernel does nothing with it) and the agent read the
 * refusal as ENOMEM (3 requests in a row) or EBUSY (1), during an ADD on
 * n1. ENOMEM is retried inside the batch (gnl_batch_run: the request goes
 * again until the kernel takes it), so the ADD succeeds; EBUSY fails the
 * operation it was part of: the ADD fails or the pass reports it, and the
 * runtime's retry or the agent's next pass does it again. Either way:
 * nothing lost (the continuous ping), and record, reports and kernel
 * converge to the desired state.
 */
static void inject(int err, int count, int type, const char *caller, int *first_rc, char *callers, size_t cn)
{
	char log[700], out[8192], pid[16], py[128], script[600], tag[64];
	char *argv[40];
	int a = 0, st = 0;
	double t0;
	pid_t g;
	struct fpod *p;

	snprintf(tag, sizeof(tag), "netlink %s x%d", err == 12 ? "ENOMEM" : "EBUSY", count);
	p = fp_new(&F, "x", 1); /* not "n": <prefix>-n<i> are the nodes */
	ck_assert_int_eq(fp_prepare(&F, p), 0);
	snprintf(log, sizeof(log), "%s/gdb-nl-%d.log", T.dir, err);
	snprintf(pid, sizeof(pid), "%d", (int)topo_agent_pid(&T, 1));
	snprintf(py, sizeof(py), "python ERRNO = %d; COUNT = %d; TYPE = %d; CALLER = '%s'", err, count, type, caller);
	snprintf(script, sizeof(script), "%s/tests/fault/nl_inject.py", cnirt_top());
	argv[a++] = "/usr/bin/timeout", argv[a++] = "90", argv[a++] = "gdb", argv[a++] = "-q", argv[a++] = "-nx";
	argv[a++] = "-batch", argv[a++] = "-p", argv[a++] = pid;
	argv[a++] = "-ex", argv[a++] = "set pagination off";
	argv[a++] = "-ex", argv[a++] = "set confirm off";
	argv[a++] = "-ex", argv[a++] = "set debuginfod enabled off";
	argv[a++] = "-ex", argv[a++] = "handle all nostop noprint pass";
	argv[a++] = "-ex", argv[a++] = py;
	argv[a++] = "-x", argv[a++] = script;
	argv[a++] = "-ex", argv[a++] = "continue";
	argv[a++] = "-ex", argv[a++] = "echo DONE\\n";
	argv[a++] = "-ex", argv[a++] = "detach";
	argv[a] = NULL;
	unlink(log);
	g = gt_spawn(log, argv);
	ck_assert_int_gt(g, 0);
	for (t0 = gt_now(); gt_now() - t0 < 60 && topo_sh("grep -q '^ARMED' %s", log); usleep(100 * 1000))
		;
	ck_assert_msg(topo_sh("grep -q '^ARMED' %s", log) == 0, "%s: gdb did not arm (%s)", tag, log);
	usleep(500 * 1000); /* the continue itself */
	*first_rc = fp_rt(&F, p, "add", out, sizeof(out));
	while (waitpid(g, &st, WNOHANG) == 0 && gt_now() - t0 < 80)
		usleep(50 * 1000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || topo_sh("grep -q '^DONE' %s", log))
		topo_sh("cat %s >&2; tail -20 %s/n1/agent.log >&2", log, T.dir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: gdb did not finish (%s)", tag, log);
	ck_assert_msg(topo_sh("grep -q '^DONE' %s", log) == 0, "%s: the injections were not all answered (%s)", tag, log);
	ck_assert_msg(topo_sh("grep -q '^UNEXPECTED' %s", log) != 0, "%s: the kernel did not refuse the request (%s)", tag, log);
	ck_assert_int_eq(topo_out(out, sizeof(out), "grep -c '^REWRITE' %s", log), 0);
	ck_assert_int_eq(atoi(out), count);
	ck_assert_msg(dead(topo_agent_pid(&T, 1)) == 0, "%s: the agent died", tag);
	topo_out(callers, cn, "sed -n 's/^INJECT [0-9]*: \\(.*\\) seq [0-9]* by \\(.*\\)/\\1 by \\2/p' %s"
		 " | sort | uniq -c | sed 's/^ *//' | tr '\\n' ';'", log);
	if (*first_rc) /* the runtime retries what failed */
		fp_add_ok(&F, p);
	p->up = 1;
}

START_TEST(t_netlink_enomem_ebusy)
{
	const double t_test = gt_now();
	/* type 0: the first request sent (the ADD's pod setup); RTM_NEWROUTE (24)
	 * under kb_apply: a route of the kernel backend's apply pass. EBUSY once:
	 * the operation fails, and its retry (the runtime's, or the next pass)
	 * must not meet the injection again. */
	static const struct { int err, count, type; const char *caller, *name; } cases[] = {
		{ 12, 3, 0, "", "ENOMEM" }, { 16, 1, 0, "", "EBUSY" },
		{ 12, 3, 24, "kb_apply", "ENOMEM" }, { 16, 1, 24, "kb_apply", "EBUSY" },
	};
	char callers[512], out[8192];
	long tx, rx;

	if (geteuid() != 0)
		GT_SKIP("needs root for network namespaces");
	ck_assert_msg(setup_ok, "setup failed: %s (logs in %s, %s)", setup_why, T.dir, cp.dir);
	bring_up();
	fp_ping_start(&F, &F.p[0], &F.p[1]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int first_rc;
		double conv;
		char tag[64];
		struct fpod *p;

		snprintf(tag, sizeof(tag), "netlink %s x%d", cases[i].name, cases[i].count);
		inject(cases[i].err, cases[i].count, cases[i].type, cases[i].caller, &first_rc, callers, sizeof(callers));
		p = &F.p[F.n - 1];
		conv = fp_converge(&F, tag);
		printf("fault netlink: %s injected into %d request(s) [%s] during an ADD on n1: the ADD %s; "
		       "converged %.2f s later\n", cases[i].name, cases[i].count, callers,
		       first_rc ? "failed and the runtime's retry succeeded"
		       : cases[i].err == 12 ? "succeeded (the request retried inside the batch)"
					    : "succeeded (the pod is up; the failed route written again by the next pass)", conv);
		/* ENOMEM is the kernel's transient allocation failure: retried in the batch, never surfaced */
		if (cases[i].err == 12)
			ck_assert_msg(first_rc == 0, "%s: the ADD failed", tag);
		ck_assert_msg(fp_rt(&F, p, "del", out, sizeof(out)) == 0, "del %s: %s", p->name, out);
		p->up = 0;
	}
	fp_converge(&F, "netlink pods deleted");
	fp_ping_stop(&F, &tx, &rx);
	printf("fault netlink: continuous ping s1 -> s2 across nodes: %ld sent, %ld received, %ld lost\n", tx, rx, tx - rx);
	ck_assert_int_gt(tx, 20);
	ck_assert_msg(tx - rx <= 1, "running pods lost %ld of %ld echoes", tx - rx, tx);
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/*
 * kill -9 of the agent inside a bpf map rebuild. The nodes move to the bpf
 * backend; then, per point: n1's agent stops (SIGTERM: filters and pinned
 * maps stay and keep forwarding), its maps are moved to an older layout's
 * directory (v1 -> v0, as an upgrade finds them), and the agent starts
 * under gdb: it makes fresh maps, fills them from its desired state,
 * swaps its programs onto them and removes the old layout; gdb kills it
 * (SIGKILL) at the point. The agent is started again: it reuses what the
 * killed one pinned, completes the maps, prunes v0, and every check of the
 * crash points holds (record, reports, veths, pings across nodes), the
 * continuous ping loses nothing and only the current layout is left.
 */
static const struct point bpf_points[] = {
	{ "gbpf_set_cfg", OP_ADD, "rebuild: node config into the fresh maps", 0 },
	{ "gbpf_set_vpc", OP_ADD, "rebuild: VPC table", 0 },
	{ "gbpf_set_iface", OP_ADD, "rebuild: host veth -> VPC", 0 },
	{ "gbpf_set_routes", OP_ADD, "rebuild: routes (one batch)", 1 },
	{ "gbpf_attach", OP_ADD, "rebuild: programs swapped onto the fresh maps", 1 },
	{ "gbpf_prune_layouts", OP_ADD, "rebuild: the old layout's maps removed", 0 },
};

static void bpf_crash_at(const struct point *pt, int round)
{
	char log[700], cmd[4096], extra[1400], pins[300], out[256], tag[160];
	double t0, tdead, tconv;
	int st = 0;
	pid_t g;

	snprintf(tag, sizeof(tag), "round %d: kill -9 in %s (%s)", round, pt->fn, pt->what);
	snprintf(log, sizeof(log), "%s/gdb-bpf-%d-%s.log", T.dir, round, pt->fn);
	snprintf(pins, sizeof(pins), "/sys/fs/bpf/%s-n1", T.prefix);
	topo_agent_stop(&T, 1, SIGTERM);
	ck_assert_msg(topo_sh("test -d %s/v1 && mv %s/v1 %s/v0", pins, pins, pins) == 0, "%s: no %s/v1 to move", tag, pins);
	snprintf(cmd, sizeof(cmd), "exec /usr/bin/timeout 90 gdb -q -nx -batch -ex 'set pagination off' -ex 'set confirm off' "
		 "-ex 'set debuginfod enabled off' -ex 'handle all nostop noprint pass' -ex 'break %s' "
		 "-ex 'run --state-dir %s/n1 --netns %s-n1 --interval 1 %s >>%s/n1/agent.log 2>&1' -ex 'echo STOPPED\\n' "
		 "-ex 'bt 4' -ex kill %s/build/rel/bin/galactic-agent >%s 2>&1",
		 pt->fn, T.dir, T.prefix, agent_args(1, cp.kubeconfig, extra, sizeof(extra)), T.dir, cnirt_top(), log);
	t0 = gt_now();
	g = fork();
	if (g == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(g, 0);
	while (waitpid(g, &st, WNOHANG) == 0 && gt_now() - t0 < 80)
		usleep(50 * 1000);
	tdead = gt_now() - t0;
	if (topo_sh("grep -q 'hit Breakpoint 1\\|^Breakpoint 1, ' %s", log))
		topo_sh("cat %s >&2; tail -20 %s/n1/agent.log >&2", log, T.dir);
	ck_assert_msg(topo_sh("grep -q 'hit Breakpoint 1\\|^Breakpoint 1, ' %s", log) == 0, "%s: breakpoint never hit (%s)",
		      tag, log);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: gdb did not finish (%s)", tag, log);
	topo_sh("echo '--- killed at %s (bpf rebuild, round %d)' >>%s/n1/agent.log", pt->fn, round, T.dir);
	start_agent(1);
	tconv = fp_converge(&F, tag);
	/* the rebuild completed: the current layout only */
	for (double t1 = gt_now(); gt_now() - t1 < 20 && topo_sh("test ! -e %s/v0", pins); usleep(100 * 1000))
		;
	ck_assert_int_eq(topo_out(out, sizeof(out), "ls %s | tr '\\n' ' '", pins), 0);
	ck_assert_msg(!strcmp(out, "v1"), "%s: layouts left in %s: %s", tag, pins, out);
	{
		char caller[128] = "";

		topo_out(caller, sizeof(caller), "sed -n 's/^#1 .* in \\([A-Za-z_0-9]*\\) .*/\\1/p; s/^#1  \\([A-Za-z_0-9]*\\) .*/\\1/p' %s | head -1",
			 log);
		printf("fault bpf: %s [called from %s]: dead %.2f s after the start under gdb, converged %.2f s after the "
		       "restart, old layout pruned\n", tag, caller[0] ? caller : "?", tdead, tconv);
	}
}

START_TEST(t_agent_kill9_in_bpf_map_rebuild)
{
	const double t_test = gt_now();
	int rounds = 1, done = 0;
	long tx, rx;
	struct fpod *p;
	char out[8192];

	if (geteuid() != 0)
		GT_SKIP("needs root for network namespaces");
	ck_assert_msg(setup_ok, "setup failed: %s (logs in %s, %s)", setup_why, T.dir, cp.dir);
	/* (the preflight leaves its empty pin directory: removed either way) */
	if (topo_sh("r=0; build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d >/dev/null 2>&1 || r=1;"
		    " rmdir /sys/fs/bpf/galactic-preflight-%d 2>/dev/null; exit $r", (int)getpid(), (int)getpid()))
		GT_SKIP("bpf preflight refused on this kernel (bpf prog sched_cls (tc))");
	if (soak()) {
		const char *r = getenv("GT_SOAK_ROUNDS");

		rounds = r && atoi(r) > 0 ? atoi(r) : 3;
	}
	/* both nodes on the bpf backend */
	for (int n = 1; n <= 2; n++) {
		pid_t pid = topo_agent_pid(&T, n);

		if (pid > 0 && !dead(pid))
			topo_agent_stop(&T, n, SIGTERM);
	}
	bpf_mode = 1;
	bring_up();
	p = fp_new(&F, "r", 1); /* a pod of n1 besides s1: its routes and veth are in the rebuilt maps */
	ck_assert_int_eq(fp_prepare(&F, p), 0);
	fp_add_ok(&F, p);
	fp_converge(&F, "on the bpf backend");
	fp_ping_start(&F, &F.p[0], &F.p[1]);
	for (int r = 1; r <= rounds; r++)
		for (size_t i = 0; i < sizeof(bpf_points) / sizeof(bpf_points[0]); i++) {
			if (!soak() && !bpf_points[i].short_form)
				continue;
			bpf_crash_at(&bpf_points[i], r);
			done++;
		}
	fp_ping_stop(&F, &tx, &rx);
	printf("fault bpf: %d crash points in a map rebuild (%d rounds): continuous ping s1 -> s2 across nodes: %ld sent, "
	       "%ld received, %ld lost\n", done, rounds, tx, rx, tx - rx);
	ck_assert_int_gt(tx, 20);
	ck_assert_msg(tx - rx <= 1, "running pods lost %ld of %ld echoes across %d kills in a bpf map rebuild", tx - rx, tx,
		      done);
	ck_assert_msg(fp_rt(&F, p, "del", out, sizeof(out)) == 0, "del %s: %s", p->name, out);
	p->up = 0;
	fp_converge(&F, "bpf pod deleted");
	/* back to nothing: agents stopped, pins removed (the filters go with the namespaces) */
	for (int n = 1; n <= 2; n++)
		topo_agent_stop(&T, n, SIGTERM);
	topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2", T.prefix, T.prefix);
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault_agent");
	TCase *tc = tcase_create("kill9");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, soak() ? 3000 : 400);
	tcase_add_test(tc, t_agent_kill9_at_crash_points);
	tcase_add_test(tc, t_netlink_enomem_ebusy);
	tcase_add_test(tc, t_agent_kill9_in_bpf_map_rebuild); /* last: the nodes leave the kernel backend */
	suite_add_tcase(s, tc);
	return gt_run(s);
}
