/*
 * The daemons under valgrind (release builds, as shipped):
 *  - a galactic-agent in a network-namespace node serves real CNI requests
 *    (ADD, CHECK, DEL through the galactic-cni binary, itself under
 *    valgrind), reconciles, reads the kernel back on verify ticks (the
 *    kernel backend's observer, beside the passes; /metrics counts them),
 *    and exits on SIGTERM;
 *  - a galactic-translator on the real API server (tests/lib/cp.h, the
 *    upstream CRDs) takes the lease and carries one chain through its
 *    states: a claim and its interface, the attachment the interface
 *    controls, the VPC operator's ids and Ready, the node's report with a
 *    64-hex container id (withheld, one FieldWithheld Event) going
 *    Programmed True, False, True, the report deleted, the attachment
 *    deleted; then SIGTERM (it releases the lease and exits).
 * Each run must end with no memory error and no definitely-lost block;
 * valgrind's own exit code says so (--error-exitcode), and the logs are
 * checked: the agent's and the plugin's hold no report (--quiet), the
 * translator's summary says 0 errors and 0 bytes definitely lost.
 */
#include "tests/lib/cp.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"
#include "tests/lib/translator_e2e.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The suppressions cover only libnftables' own uninitialised netlink padding
 * (tests/valgrind/libnftables.supp says why). */
#define VG "valgrind --quiet --error-exitcode=99 --leak-check=full " \
	   "--errors-for-leak-kinds=definite --show-leak-kinds=definite " \
	   "--suppressions=tests/valgrind/libnftables.supp"

static struct topo T;
static char skip_why[256];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	if (topo_sh("command -v valgrind >/dev/null")) {
		snprintf(skip_why, sizeof(skip_why), "valgrind not installed");
		return;
	}
	ck_assert_int_eq(topo_up(&T, 1), 0);
	ck_assert_int_eq(topo_write_state(&T, 1, 0), 0);
}

static void teardown(void)
{
	if (getenv("GT_KEEP"))
		return;
	if (T.nodes)
		topo_down(&T);
}

/*
 * Runs galactic-cni under valgrind as a runtime would; returns its exit
 * status. CHECK and DEL carry the ADD result as prevResult (CNI spec).
 */
static int cni(const char *cmd, const char *sock, const char *out)
{
	int rc;

	rc = topo_sh("echo '{\"cniVersion\":\"1.1.0\",\"name\":\"vg\",\"type\":\"galactic-cni\","
		     "\"vpc\":\"Vg1\",\"vpcattachment\":\"At1\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		     "\"addresses\":[{\"address\":\"fd00:a::21/128\",\"gateway\":\"fe80::1\"},"
		     "{\"address\":\"10.1.0.21/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		     "\"agentSocket\":\"%s\"}' >%s.conf && "
		     "if [ %s != ADD ]; then jq --slurpfile p %s.ADD.out '. + {prevResult: $p[0]}' %s.conf "
		     ">%s.conf.tmp && mv %s.conf.tmp %s.conf; fi",
		     sock, out, cmd, out, out, out, out, out);
	if (rc)
		return rc;
	rc = topo_sh("CNI_COMMAND=%s CNI_CONTAINERID=vg-ctr CNI_NETNS=/var/run/netns/%s-vgpod "
		     "CNI_IFNAME=eth0 CNI_PATH=build/rel/bin %s --log-file=%s.%s.vg "
		     "build/rel/bin/galactic-cni <%s.conf >%s.%s.out 2>&1",
		     cmd, T.prefix, VG, out, cmd, out, out, cmd);
	if (rc) /* the plugin's CNI error or valgrind's report, for the test log */
		topo_sh("cat %s.%s.out %s.%s.vg >&2", out, cmd, out, cmd);
	return rc;
}

START_TEST(test_agent_and_plugin_clean_under_valgrind)
{
	char dir[300], ns[64], sock[400], log[400], base[400];
	pid_t pid;
	int st, i, port = 30000 + (int)(getpid() % 20000);
	struct stat sb;
	double end;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	topo_state_dir(&T, 1, dir, sizeof(dir));
	topo_node_ns(&T, 1, ns, sizeof(ns));
	snprintf(sock, sizeof(sock), "%s/cni.sock", dir);
	snprintf(log, sizeof(log), "%s/agent.vg", dir);
	snprintf(base, sizeof(base), "%s/cni", dir);
	ck_assert_int_eq(topo_sh("ip netns add %s-vgpod && ip -n %s-vgpod link set lo up",
				 T.prefix, T.prefix), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char cmd[2048];

		snprintf(cmd, sizeof(cmd),
			 "exec " VG " --log-file=%s build/rel/bin/galactic-agent --state-dir %s "
			 "--netns %s --interval 1 --cni-socket %s --metrics-addr 127.0.0.1:%d --verify-interval 0.5 "
			 ">%s/agent.out 2>&1",
			 log, dir, ns, sock, port, dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* valgrind slows start-up a lot: wait for the socket. */
	end = now_s() + 120;
	while (stat(sock, &sb) != 0 && now_s() < end)
		usleep(200 * 1000);
	ck_assert_msg(stat(sock, &sb) == 0, "agent under valgrind did not open its socket");

	ck_assert_int_eq(cni("ADD", sock, base), 0);
	ck_assert_int_eq(topo_sh("ip -n %s-vgpod -6 addr show dev eth0 | grep -q fd00:a::21", T.prefix), 0);
	ck_assert_int_eq(cni("CHECK", sock, base), 0);
	/* A few periodic reconciles and verify ticks under valgrind, then
	 * remove the attachment. */
	sleep(3);
	for (i = 0; i < 100; i++) {
		char out[64];

		topo_out(out, sizeof(out), "curl -s http://127.0.0.1:%d/metrics | "
			 "sed -n 's/^galactic_agent_passes_total{kind=\"verify\",result=\"verified\"} //p'", port);
		if (atof(out) >= 1)
			break;
		usleep(200 * 1000);
	}
	ck_assert_msg(i < 100, "no verify tick read the kernel back under valgrind (see %s/agent.out)", dir);
	ck_assert_int_eq(cni("DEL", sock, base), 0);
	ck_assert_int_ne(topo_sh("ip -n %s-vgpod link show eth0 >/dev/null 2>&1", T.prefix), 0);

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	for (i = 0; i < 600 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(100 * 1000);
	ck_assert_msg(i < 600, "agent did not exit on SIGTERM");
	ck_assert_msg(WIFEXITED(st), "agent died by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	ck_assert_msg(WEXITSTATUS(st) != 99, "valgrind found errors in galactic-agent: see %s", log);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	/* The log exists (valgrind did run the agent) and, with --quiet, holds no
	 * error or leak report. */
	ck_assert_int_eq(stat(log, &sb), 0);
	ck_assert_int_ne(topo_sh("grep -qE 'Invalid|uninitialised|definitely lost' %s", log), 0);
	ck_assert_int_ne(topo_sh("grep -qE 'Invalid|uninitialised|definitely lost' %s.*.vg", base), 0);
}
END_TEST

/* ---- the translator ---- */

#define RNS "galactic-system"
#define TNS "tenant-vg"
#define NI_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaces"
#define NIC_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaceclaims"
#define ATT_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" TNS "/vpcattachments"
#define REP_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define REP_NAME "node-a-vv1-av1"
#define HEX64 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define TR_LOG "translator.vg"

static struct cp cp;
static pid_t tr_pid;
static char tr_skip_why[64];

/* The translator needs neither root nor a namespace: only the control plane. */
static void setup_cp(void)
{
	if (topo_sh("command -v valgrind >/dev/null")) {
		snprintf(tr_skip_why, sizeof(tr_skip_why), "valgrind not installed");
		return;
	}
	te_up(&cp, "atomic", false, (const char *const[]){ RNS, TNS, NULL });
}

static void teardown_cp(void)
{
	te_kill(&tr_pid);
	if (cp.dir[0])
		te_down(&cp, "translator.*");
}

static void post(const char *path, const char *body)
{
	ck_assert_int_eq(kreq(&cp, "POST", path, "application/json", body, NULL, NULL), 201);
}

static void del(const char *path, const char *name)
{
	char p[300];
	long code = 0;

	snprintf(p, sizeof(p), "%s/%s", path, name);
	ck_assert_int_eq(kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL), 200);
	for (int i = 0; i < 500 && code != 404; i++) {
		json_decref(kget(&cp, p, &code));
		usleep(20 * 1000);
	}
	ck_assert_msg(code == 404, "%s not deleted", p);
}

/* The node's report, spec then status, by server-side apply as the agent writes it. */
static void report(const char *programmed)
{
	char body[1600];

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"" REP_NAME "\",\"namespace\":\"" RNS "\"},"
		 "\"spec\":{\"node\":\"node-a\",\"vpc\":\"Vv1\",\"vpcAttachment\":\"Av1\","
		 "\"containerID\":\"" HEX64 "\",\"pod\":{\"namespace\":\"" TNS "\",\"name\":\"pod-1\"},"
		 "\"hostInterface\":\"gv1f2e\",\"guestInterface\":\"eth0\",\"table\":100,"
		 "\"podSubnets\":[\"10.1.0.0/24\"],\"localSID\":\"fc00:0:1:1:e001::\"}}");
	ck_assert_int_ge(kapply(&cp, REP_PATH "/" REP_NAME, "galactic-agent/node-a", body, NULL), 200);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"" REP_NAME "\",\"namespace\":\"" RNS "\"},"
		 "\"status\":{\"observedGeneration\":1,\"reporter\":{\"node\":\"node-a\","
		 "\"datapath\":\"kernel\",\"agentInstance\":\"agent-1\"},"
		 "\"conditions\":[{\"type\":\"Programmed\",\"status\":\"%s\",\"reason\":\"%s\","
		 "\"message\":\"checked in the kernel\",\"observedGeneration\":1,"
		 "\"lastTransitionTime\":\"2026-01-01T00:00:0%dZ\"}]}}",
		 programmed, !strcmp(programmed, "True") ? "KernelVerified" : "RouteMissing",
		 !strcmp(programmed, "True") ? 0 : 1);
	ck_assert_int_eq(kapply(&cp, REP_PATH "/" REP_NAME "/status", "galactic-agent/node-a", body, NULL), 200);
}

/* Polls until list/name's condition type has status (and reason, when given). */
static void wait_cond(const char *list, const char *name, const char *type, const char *status,
		      const char *reason)
{
	for (double t0 = gt_now(); gt_now() - t0 < 120; usleep(50 * 1000)) {
		char p[300];
		json_t *o;
		const json_t *c;
		bool ok;

		snprintf(p, sizeof(p), "%s/%s", list, name);
		o = kget(&cp, p, NULL);
		c = kcond(o, type);
		ok = c && !strcmp(kstr(c, "status", NULL) ?: "", status) &&
		     (!reason || !strcmp(kstr(c, "reason", NULL) ?: "", reason));
		json_decref(o);
		if (ok)
			return;
	}
	ck_abort_msg("%s %s: %s did not become %s/%s under valgrind", list, name, type, status,
		     reason ? reason : "*");
}

/* FieldWithheld Events about the attachment. */
static int withheld_events(void)
{
	json_t *l = NULL, *e;
	size_t i;
	int n = 0;

	ck_assert_int_eq(kreq(&cp, "GET", "/api/v1/namespaces/" TNS "/events", NULL, NULL, NULL, &l), 200);
	json_array_foreach(json_object_get(l, "items"), i, e)
		n += !strcmp(kstr(e, "reason", NULL) ?: "", "FieldWithheld");
	json_decref(l);
	return n;
}

START_TEST(test_translator_clean_under_valgrind)
{
	char log[400], port_s[32], body[1024], uid[64];
	int port = gt_free_port(), st = 0, i, events = 0;
	json_t *o;

	if (tr_skip_why[0])
		GT_SKIP("%s", tr_skip_why);
	snprintf(log, sizeof(log), "%s/" TR_LOG, cp.dir);
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%d", port);
	{
		char *argv[] = { "valgrind", "--error-exitcode=99", "--leak-check=full",
				 "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
				 "--log-file=" /* filled below */, "build/rel/bin/galactic-translator",
				 "--kubeconfig", cp.kubeconfig, "--namespace", RNS, "--watch-namespace", TNS,
				 "--id", "tr-vg", "--lease-namespace", RNS, "--lease-duration", "10",
				 "--renew-deadline", "8", "--retry-period", "1", "--metrics-addr", port_s,
				 "--log-level", "info", NULL };
		char logarg[420], out[420], vg[256];

		/* gt_spawn execs a path */
		topo_out(vg, sizeof(vg), "command -v valgrind");
		ck_assert_msg(vg[0] == '/', "valgrind not found on PATH");
		argv[0] = vg;
		snprintf(logarg, sizeof(logarg), "--log-file=%s", log);
		argv[5] = logarg;
		snprintf(out, sizeof(out), "%s/translator.out", cp.dir);
		tr_pid = gt_spawn(out, argv);
		ck_assert_int_gt(tr_pid, 0);
	}
	for (double t0 = gt_now(); gt_now() - t0 < 120 && gt_metric(port, "galactic_translator_leader") != 1;)
		usleep(200 * 1000);
	ck_assert_msg(gt_metric(port, "galactic_translator_leader") == 1,
		      "translator under valgrind did not lead (see %s/translator.out)", cp.dir);

	/* The chain: claim, its interface, the attachment the interface controls. */
	post(NIC_PATH, "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterfaceClaim\","
		       "\"metadata\":{\"name\":\"claim1\"},\"spec\":{\"network\":{\"name\":\"net-1\"},"
		       "\"attachmentMode\":\"Netns\",\"ipFamilies\":[\"IPv4\"]}}");
	post(NI_PATH, "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\","
		      "\"metadata\":{\"name\":\"nic1\"},\"spec\":{\"network\":{\"name\":\"net-1\"},"
		      "\"claimRef\":{\"name\":\"claim1\"},\"interfaceName\":\"eth0\",\"mtu\":1500}}");
	o = kget(&cp, NI_PATH "/nic1", NULL);
	ck_assert_ptr_nonnull(o);
	snprintf(uid, sizeof(uid), "%s", kstr(json_object_get(o, "metadata"), "uid", NULL) ?: "");
	json_decref(o);
	/* NSO binds the claim to the interface (a merge patch of its own fields). */
	ck_assert_int_eq(kreq(&cp, "PATCH", NIC_PATH "/claim1/status?fieldManager=nso", "application/merge-patch+json",
			      "{\"status\":{\"networkInterfaceRef\":{\"name\":\"nic1\"},\"conditions\":["
			      "{\"type\":\"Bound\",\"status\":\"True\",\"reason\":\"Bound\",\"message\":\"\","
			      "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
			      NULL, NULL), 200);
	wait_cond(NI_PATH, "nic1", "Prepared", "False", "AttachmentMissing");
	wait_cond(NIC_PATH, "claim1", "Programmed", "False", "AttachmentMissing");
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"nic1\",\"ownerReferences\":[{\"apiVersion\":"
		 "\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\",\"name\":\"nic1\","
		 "\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
		 "\"spec\":{\"vpc\":{\"name\":\"vpc-blue\"},\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},"
		 "\"interfaceRef\":{\"name\":\"nic1\"}}}",
		 uid);
	post(ATT_PATH, body);
	/* The VPC operator's ids and Ready. */
	ck_assert_int_eq(kapply(&cp, ATT_PATH "/nic1/status", "vpc-operator",
				"{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
				"\"metadata\":{\"name\":\"nic1\",\"namespace\":\"" TNS "\"},"
				"\"status\":{\"vpc\":\"Vv1\",\"vpcAttachment\":\"Av1\","
				"\"networkAttachmentDefinition\":\"nad-nic1\",\"observedGeneration\":1,"
				"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Allocated\","
				"\"message\":\"ids\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
				NULL), 200);
	wait_cond(NI_PATH, "nic1", "Prepared", "True", "AttachmentReady");
	wait_cond(NIC_PATH, "claim1", "Prepared", "True", "AttachmentReady");
	/* The report: Programmed through the chain, a flip, back. */
	report("True");
	wait_cond(ATT_PATH, "nic1", "Programmed", "True", NULL);
	wait_cond(NI_PATH, "nic1", "Programmed", "True", "AttachmentProgrammed");
	wait_cond(NIC_PATH, "claim1", "Programmed", "True", "AttachmentProgrammed");
	for (i = 0; i < 200 && (events = withheld_events()) < 1; i++)
		usleep(100 * 1000);
	ck_assert_int_eq(events, 1); /* the 64-hex id the upstream schema cannot hold */
	report("False");
	wait_cond(ATT_PATH, "nic1", "Programmed", "False", NULL);
	wait_cond(NIC_PATH, "claim1", "Programmed", "False", NULL);
	report("True");
	wait_cond(NIC_PATH, "claim1", "Programmed", "True", "AttachmentProgrammed");
	/* The report goes, then the attachment. */
	del(REP_PATH, REP_NAME);
	wait_cond(ATT_PATH, "nic1", "Programmed", "False", NULL);
	del(ATT_PATH, "nic1");
	wait_cond(NI_PATH, "nic1", "Prepared", "False", "AttachmentMissing");

	ck_assert_int_eq(kill(tr_pid, SIGTERM), 0);
	for (i = 0; i < 1200 && waitpid(tr_pid, &st, WNOHANG) == 0; i++)
		usleep(100 * 1000);
	ck_assert_msg(i < 1200, "translator did not exit on SIGTERM under valgrind");
	tr_pid = 0;
	ck_assert_msg(WIFEXITED(st), "translator died by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	ck_assert_msg(WEXITSTATUS(st) != 99, "valgrind found errors in galactic-translator: see %s", log);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	/* valgrind's own summary: no error, nothing definitely lost (all freed, or 0 bytes). */
	ck_assert_msg(topo_sh("grep -q 'ERROR SUMMARY: 0 errors from 0 contexts' %s", log) == 0,
		      "no clean error summary in %s", log);
	ck_assert_msg(topo_sh("grep -qE 'definitely lost: 0 bytes in 0 blocks|All heap blocks were freed' %s",
			      log) == 0, "definitely-lost blocks in %s", log);
	ck_assert_int_ne(topo_sh("grep -qE 'Invalid|uninitialised' %s", log), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("daemons");
	TCase *tt = tcase_create("translator");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_agent_and_plugin_clean_under_valgrind);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(tt, setup_cp, teardown_cp);
	tcase_set_timeout(tt, 400);
	tcase_add_test(tt, test_translator_clean_under_valgrind);
	suite_add_tcase(s, tt);
	return gt_run(s);
}
