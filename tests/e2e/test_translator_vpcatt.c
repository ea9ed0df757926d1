/*
 * galactic-translator on a real kube-apiserver: the VPCAttachment <- NodeAttachment path.
 *
 * Two replicas of the real (sanitized) binary run against the control plane.
 * Stand-ins write what the other components own, each under its own field
 * manager with server-side apply: a "VPC operator" (status ids, attachment
 * definition, Ready) and an "agent" (the NodeAttachment report). The suite
 * checks that
 *  - only the leader writes; the follower's write counter stays 0;
 *  - the translator's fields follow the report, and Programmed flips with it;
 *  - managedFields match the ownership table in docs/architecture.md
 *    (read from the file, so the table and the code cannot drift apart);
 *  - each report transition costs exactly one status write, a steady state
 *    costs none (resourceVersion and counters unchanged), and no writer sees
 *    a 409;
 *  - a foreign writer of a translator field is overridden and counted;
 *  - a leader that cannot renew stops writing, and nobody writes until the
 *    Lease is free again;
 *  - a deleted attachment is not re-created; a leader that hands over leaves
 *    a follower that takes over without rewriting steady objects;
 *  - both replicas exit 0 under ASan/LSan on SIGTERM and release the lease;
 *  - a second, minimal data plane plugs in by configuration alone, and a
 *    wrong-typed report from it gives a clear condition, not a crash.
 * Measured numbers are printed with "MEASURE:".
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/translator_e2e.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The NI/NIC condition-list variant (tests/lib/crds.h); the _maplist build sets it. */
#ifndef GT_CRD_VARIANT
#define GT_CRD_VARIANT "atomic"
#endif

#define BIN "build/san/bin/galactic-translator"
#define RNS "galactic-system"
#define TNS "tenant-a"
#define ATT_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" TNS "/vpcattachments"
#define REP_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/" RNS "/leases/galactic-translator"
/* A container id the upstream schema can hold (exactly 46 characters). */
#define CID46 "c0ffee010123456789abcdef0123456789abcdef012345"
#define AGENT_MGR "galactic-agent/node-a"
#define VPCOP_MGR "vpc-operator"

static struct cp cp;
static struct replica {
	char id[16];
	int port;
	pid_t pid;
	const char *mapping; /* --mapping-config, or NULL */
} rep[3];
static int standin_409s; /* 409s seen by the stand-in writers */
/* Values the stand-ins change without touching anything the translator derives. */
static const char *agent_instance = "agent-1", *nad_suffix = "";

static pid_t start_replica(struct replica *r)
{
	char port[32], log[400];
	char *argv[] = { BIN, "--kubeconfig", cp.kubeconfig, "--namespace", RNS, "--id", r->id,
			 "--lease-namespace", RNS, "--lease-name", "galactic-translator",
			 "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
			 "--metrics-addr", port, "--log-level", "info",
			 r->mapping ? "--mapping-config" : NULL, (char *)r->mapping, NULL };
	pid_t pid;

	snprintf(port, sizeof(port), "127.0.0.1:%d", r->port);
	snprintf(log, sizeof(log), "%s/translator-%s.log", cp.dir, r->id);
	pid = gt_spawn(log, argv);
	ck_assert_int_ge(pid, 0);
	return pid;
}

/* ---- small HTTP helpers ---- */

#define WRITES "galactic_translator_status_writes_total{kind=\"VPCAttachment\"}"
#define CONFLICTS "galactic_translator_conflicts_total"
#define LEADER "galactic_translator_leader"

static long apply(const char *path, const char *mgr, const char *body)
{
	return kapply(&cp, path, mgr, body, &standin_409s);
}

static json_t *get(const char *path, long *code)
{
	return kget(&cp, path, code);
}

static json_t *att_get(const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", ATT_PATH, name);
	return get(p, NULL);
}

static const char *sget(const json_t *o, const char *a, const char *b)
{
	return kstr(o, a, b);
}

static const json_t *cond(const json_t *att, const char *type)
{
	return kcond(att, type);
}

/* Polls the attachment until its Programmed condition has status (and reason if given). */
static json_t *wait_programmed(const char *name, const char *status, const char *reason,
			       double timeout_s, double *took)
{
	double t0 = gt_now();
	while (gt_now() - t0 < timeout_s) {
		json_t *a = att_get(name);
		const json_t *c = cond(a, "Programmed");
		if (c && !strcmp(json_string_value(json_object_get(c, "status")) ?: "", status) &&
		    (!reason || !strcmp(json_string_value(json_object_get(c, "reason")) ?: "", reason))) {
			if (took)
				*took = gt_now() - t0;
			return a;
		}
		json_decref(a);
		usleep(5000);
	}
	ck_abort_msg("%s: Programmed did not become %s/%s within %.0fs", name, status,
		     reason ? reason : "*", timeout_s);
	return NULL;
}

static int leader_index(void)
{
	double a = gt_metric((&rep[0])->port, LEADER), b = gt_metric((&rep[1])->port, LEADER);
	if (a == 1 && b == 0)
		return 0;
	if (b == 1 && a == 0)
		return 1;
	return -1;
}

/* Waits until the leader's write counter stops moving, then returns it. */
static double settled_writes(int l)
{
	double w = gt_metric((&rep[l])->port, WRITES), w2;
	for (int i = 0; i < 40; i++) {
		usleep(250 * 1000);
		w2 = gt_metric((&rep[l])->port, WRITES);
		if (w2 == w)
			return w;
		w = w2;
	}
	return w;
}

/* ---- ownership table from docs/architecture.md ---- */

struct owned {
	char f[16][48];
	int n;
};

static void owned_add(struct owned *o, const char *s)
{
	if (o->n < 16)
		snprintf(o->f[o->n++], sizeof(o->f[0]), "%s", s);
}

static bool owned_has(const struct owned *o, const char *s)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->f[i], s))
			return true;
	return false;
}

/*
 * The VPCAttachment rows of the table: status fields and conditions written by
 * the VPC operator, and by the translator "from the node's report".
 */
static void table_rows(struct owned *vpcop, struct owned *tr)
{
	FILE *f = fopen("docs/architecture.md", "r");
	char line[1024];
	bool in = false;

	memset(vpcop, 0, sizeof(*vpcop));
	memset(tr, 0, sizeof(*tr));
	ck_assert_msg(f, "docs/architecture.md: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *cells[5] = { 0 }, *p = line, *q;
		int n = 0;

		if (line[0] != '|')
			continue;
		while (n < 5 && (q = strchr(p, '|'))) {
			*q = 0;
			cells[n++] = p;
			p = q + 1;
		}
		cells[n < 5 ? n : 4] = p;
		if (n < 4)
			continue;
		if (strstr(cells[1], "VPCAttachment"))
			in = true;
		else if (strspn(cells[1], " ") != strlen(cells[1]))
			in = false;
		if (!in)
			continue;
		struct owned *dst = strstr(cells[3], "VPC operator") ? vpcop
				    : strstr(cells[3], "from the node's report") ? tr : NULL;
		if (!dst)
			continue;
		for (char *b = strchr(cells[2], '`'); b; b = strchr(b + 1, '`')) {
			char *e = strchr(b + 1, '`');
			if (!e)
				break;
			*e = 0;
			owned_add(dst, b + 1);
			b = e;
		}
	}
	fclose(f);
	ck_assert_msg(vpcop->n >= 5 && tr->n >= 8, "ownership table not found (vpc operator %d, translator %d)",
		      vpcop->n, tr->n);
}

/* Checks one manager's status fieldsV1 against the table: exactly the listed fields. */
static void check_manager(const json_t *att, const char *mgr, const struct owned *want)
{
	const json_t *e, *st = NULL, *v;
	const char *k;
	size_t i;
	int seen = 0;

	json_array_foreach(json_object_get(json_object_get(att, "metadata"), "managedFields"), i, e) {
		const char *m = json_string_value(json_object_get(e, "manager"));
		const json_t *s = json_object_get(json_object_get(e, "fieldsV1"), "f:status");
		if (!m || !s)
			continue;
		if (!strcmp(m, mgr)) {
			ck_assert_str_eq(json_string_value(json_object_get(e, "operation")), "Apply");
			ck_assert_str_eq(json_string_value(json_object_get(e, "subresource")), "status");
			st = s;
		}
	}
	ck_assert_msg(st, "%s owns no status fields", mgr);
	json_object_foreach((json_t *)st, k, v) {
		if (!strcmp(k, "."))
			continue;
		if (!strcmp(k, "f:conditions")) {
			const char *ck;
			const json_t *cv;
			json_object_foreach((json_t *)v, ck, cv) {
				char type[64];
				if (!strcmp(ck, "."))
					continue;
				ck_assert_msg(sscanf(ck, "k:{\"type\":\"%63[^\"]\"}", type) == 1, "%s", ck);
				ck_assert_msg(owned_has(want, type), "%s owns condition %s, not in the table",
					      mgr, type);
				seen++;
			}
			continue;
		}
		ck_assert_msg(owned_has(want, k + 2), "%s owns status.%s, not in the table", mgr, k + 2);
		seen++;
	}
	ck_assert_msg(seen == want->n, "%s owns %d of the %d fields the table gives it", mgr, seen,
		      want->n);
}

/* No manager other than the table's writer owns a field of the table. */
static void check_no_foreign(const json_t *att, const char *mgr, const struct owned *mine)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(att, "metadata"), "managedFields"), i, e) {
		const char *m = json_string_value(json_object_get(e, "manager"));
		const json_t *s = json_object_get(json_object_get(e, "fieldsV1"), "f:status");
		if (!m || !s || !strcmp(m, mgr))
			continue;
		for (int j = 0; j < mine->n; j++) {
			char fk[64], ck[96];
			snprintf(fk, sizeof(fk), "f:%s", mine->f[j]);
			snprintf(ck, sizeof(ck), "k:{\"type\":\"%s\"}", mine->f[j]);
			ck_assert_msg(!json_object_get(s, fk) &&
					      !json_object_get(json_object_get(s, "f:conditions"), ck),
				      "%s also owns %s (single writer: %s)", m, mine->f[j], mgr);
		}
	}
}

/* ---- stand-ins ---- */

static void vpcop_write(const char *name, const char *vpc, const char *vatt)
{
	char body[1024], p[256];
	snprintf(p, sizeof(p), "%s/%s/status", ATT_PATH, name);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" TNS "\"},"
		 "\"status\":{\"vpc\":\"%s\",\"vpcAttachment\":\"%s\",\"networkAttachmentDefinition\":\"nad-%s%s\","
		 "\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
		 "\"reason\":\"Allocated\",\"message\":\"ids allocated\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
		 name, vpc, vatt, name, nad_suffix);
	ck_assert_int_eq(apply(p, VPCOP_MGR, body), 200);
}

static void report_spec(const char *rname, const char *vpc, const char *vatt)
{
	char body[1024], p[256];
	snprintf(p, sizeof(p), "%s/%s", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"spec\":{\"node\":\"node-a\",\"vpc\":\"%s\",\"vpcAttachment\":\"%s\",\"containerID\":\"" CID46 "\","
		 "\"pod\":{\"namespace\":\"" TNS "\",\"name\":\"pod-1\"},\"hostInterface\":\"gv1f2e\","
		 "\"guestInterface\":\"eth0\",\"vrfInterface\":\"vrf-1f\",\"table\":100,"
		 "\"podSubnets\":[\"10.1.0.0/24\",\"fd00:1::/64\"],\"localSID\":\"fc00:0:1:1:e001::\"}}",
		 rname, vpc, vatt);
	ck_assert_int_ge(apply(p, AGENT_MGR, body), 200);
}

static void report_programmed(const char *rname, const char *status, const char *reason)
{
	char body[1024], p[256];
	snprintf(p, sizeof(p), "%s/%s/status", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"status\":{\"observedGeneration\":1,\"reporter\":{\"node\":\"node-a\",\"datapath\":\"kernel\","
		 "\"agentInstance\":\"%s\"},"
		 "\"conditions\":[{\"type\":\"Programmed\",\"status\":\"%s\",\"reason\":\"%s\","
		 "\"message\":\"checked in the kernel\",\"observedGeneration\":1,"
		 "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
		 rname, agent_instance, status, reason);
	ck_assert_int_eq(apply(p, AGENT_MGR, body), 200);
}

static void create_att(const char *name)
{
	char body[512];
	long code = 0;
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"vpc\":{\"name\":\"vpc-1\"},"
		 "\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},\"interfaceRef\":{\"name\":\"%s\"}}}",
		 name, name);
	for (int i = 0; i < 100; i++) {
		code = kreq(&cp, "POST", ATT_PATH, "application/json", body, NULL, NULL);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(code, 201);
}

/* ---- fixture ---- */

static void setup(void)
{
	te_up(&cp, GT_CRD_VARIANT, true, (const char *const[]){ RNS, TNS, NULL });
	for (int i = 0; i < 2; i++) {
		snprintf(rep[i].id, sizeof(rep[i].id), "tr-%c", 'a' + i);
		rep[i].port = gt_free_port();
		rep[i].pid = start_replica(&rep[i]);
	}
}

static void teardown(void)
{
	for (int i = 0; i < 3; i++)
		te_kill(&rep[i].pid);
	te_down(&cp, "translator-*.log");
}

/* ---- tests (run in order, sharing the control plane and the replicas) ---- */

/* Bad start-up configuration is refused with the place of the problem, before any API call. */
START_TEST(test_bad_config_refused)
{
	char path[400], cmd[1200], out[2048] = "";
	FILE *f, *pp;
	int st;

	snprintf(path, sizeof(path), "%s/bad-mapping.json", cp.dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"reportKinds\":[{\"name\":\"x\",\"group\":\"g.io\",\"version\":\"v1\",\"resource\":\"r\","
	      "\"fields\":{\"node\":\"spec.node\",\"vpc\":\"spec.vpc\"},\"programmed\":{\"path\":\"s.up\"}}]}",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s --kubeconfig %s --metrics-addr 127.0.0.1:0 --mapping-config %s 2>&1",
		 BIN, cp.kubeconfig, path);
	pp = popen(cmd, "r");
	ck_assert_ptr_nonnull(pp);
	size_t n = fread(out, 1, sizeof(out) - 1, pp);
	out[n] = 0;
	st = pclose(pp);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status 0x%x: %s", st, out);
	ck_assert_msg(strstr(out, "reportKinds[0].fields.vpcAttachment: required"), "%s", out);
	snprintf(cmd, sizeof(cmd), "%s --renew-deadline 20 >/dev/null 2>&1", BIN);
	st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "renew deadline above lease duration accepted");
	snprintf(cmd, sizeof(cmd), "%s --metrics-addr nope >/dev/null 2>&1", BIN);
	st = system(cmd);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "bad --metrics-addr accepted");
}
END_TEST

START_TEST(test_ready_and_one_leader)
{
	double t0 = gt_now();
	int l = -1;

	while (gt_now() - t0 < 60) {
		if (gt_http_get(rep[0].port, "/readyz", NULL) == 200 &&
		    gt_http_get(rep[1].port, "/readyz", NULL) == 200 && (l = leader_index()) >= 0)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(l >= 0, "no single leader within 60s (a=%g b=%g)", gt_metric((&rep[0])->port, LEADER),
		      gt_metric((&rep[1])->port, LEADER));
	ck_assert_int_eq(gt_http_get(rep[l].port, "/healthz", NULL), 200);
	json_t *lease = get(LEASE_PATH, NULL);
	ck_assert_ptr_nonnull(lease);
	ck_assert_str_eq(sget(json_object_get(lease, "spec"), "holderIdentity", NULL), rep[l].id);
	json_decref(lease);
	printf("MEASURE: leader %s elected %.2fs after start\n", rep[l].id, gt_now() - t0);
}
END_TEST

START_TEST(test_attachment_follows_report)
{
	int l = leader_index(), f = 1 - l;
	double took, w0, w1, w2;
	json_t *a;
	struct owned vpcop, tr;

	ck_assert_int_ge(l, 0);
	create_att("att1");
	/* No ids yet: the translator says so, as a fact about this attachment. */
	json_decref(wait_programmed("att1", "Unknown", "AttachmentIDsPending", 20, NULL));
	vpcop_write("att1", "5gHk2", "9ZzA");
	a = wait_programmed("att1", "False", "ReportMissing", 20, NULL);
	ck_assert_str_eq(sget(cond(a, "Programmed"), "message", NULL),
			 "no data-plane report for vpc 5gHk2 attachment 9ZzA");
	ck_assert_ptr_null(json_object_get(json_object_get(a, "status"), "node"));
	json_decref(a);

	/* The agent publishes its report (spec, then status: two writes, as the
	 * status subresource requires), not yet programmed: one attachment write. */
	w0 = settled_writes(l);
	report_spec("node-a-1f-2e", "5gHk2", "9ZzA");
	report_programmed("node-a-1f-2e", "False", "RoutesPending");
	a = wait_programmed("att1", "False", "RoutesPending", 20, NULL);
	json_decref(a);
	w1 = settled_writes(l);
	printf("MEASURE: status writes for a new report (spec + status): %.0f\n", w1 - w0);
	ck_assert_msg(w1 - w0 == 1, "a new report took %.0f attachment writes, want 1", w1 - w0);
	ck_assert(gt_metric((&rep[l])->port, "galactic_translator_new_report_deferrals_total") >= 1);
	w0 = w1;

	/* Programmed=True in the report -> on the attachment: one write, timed. */
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	a = wait_programmed("att1", "True", "KernelVerified", 20, &took);
	printf("MEASURE: report Programmed=True -> attachment Programmed=True in %.1f ms\n", took * 1e3);
	w1 = settled_writes(l);
	printf("MEASURE: status writes for the False->True transition: %.0f\n", w1 - w0);
	ck_assert_msg(w1 - w0 == 1, "False->True took %.0f writes, want 1", w1 - w0);
	const json_t *st = json_object_get(a, "status");
	ck_assert_str_eq(sget(st, "node", NULL), "node-a");
	ck_assert_str_eq(sget(st, "containerID", NULL), CID46);
	ck_assert_str_eq(sget(st, "podName", NULL), "pod-1");
	ck_assert_str_eq(sget(st, "hostInterface", NULL), "gv1f2e");
	ck_assert_str_eq(sget(st, "guestInterface", NULL), "eth0");
	ck_assert_str_eq(sget(st, "vrfInterface", NULL), "vrf-1f");
	ck_assert_str_eq(sget(st, "podSubnet", NULL), "10.1.0.0/24");
	/* The VPC operator's fields are untouched. */
	ck_assert_str_eq(sget(st, "vpc", NULL), "5gHk2");
	ck_assert_str_eq(sget(st, "networkAttachmentDefinition", NULL), "nad-att1");
	ck_assert_str_eq(sget(cond(a, "Ready"), "status", NULL), "True");
	ck_assert_str_eq(sget(cond(a, "Programmed"), "message", NULL), "node node-a: checked in the kernel");
	ck_assert_int_eq(json_integer_value(json_object_get(cond(a, "Programmed"), "observedGeneration")),
			 json_integer_value(json_object_get(json_object_get(a, "metadata"), "generation")));

	/* managedFields against the table in docs/architecture.md. */
	table_rows(&vpcop, &tr);
	check_manager(a, "galactic-translator", &tr);
	check_manager(a, VPCOP_MGR, &vpcop);
	check_no_foreign(a, "galactic-translator", &tr);
	check_no_foreign(a, VPCOP_MGR, &vpcop);
	const char *ltt = sget(cond(a, "Programmed"), "lastTransitionTime", NULL);
	char ltt_true[64];
	snprintf(ltt_true, sizeof(ltt_true), "%s", ltt);
	json_decref(a);

	/* Same status, new reason and message: lastTransitionTime stays. */
	sleep(1);
	report_programmed("node-a-1f-2e", "True", "KernelReverified");
	a = wait_programmed("att1", "True", "KernelReverified", 20, NULL);
	ck_assert_str_eq(sget(cond(a, "Programmed"), "lastTransitionTime", NULL), ltt_true);
	json_decref(a);

	/* And back to False: one write, lastTransitionTime moves. */
	w1 = settled_writes(l);
	report_programmed("node-a-1f-2e", "False", "RouteMissing");
	a = wait_programmed("att1", "False", "RouteMissing", 20, &took);
	printf("MEASURE: report Programmed=False -> attachment in %.1f ms\n", took * 1e3);
	ck_assert_str_ne(sget(cond(a, "Programmed"), "lastTransitionTime", NULL), ltt_true);
	json_decref(a);
	w2 = settled_writes(l);
	printf("MEASURE: status writes for the True->False transition: %.0f\n", w2 - w1);
	ck_assert_msg(w2 - w1 == 1, "True->False took %.0f writes, want 1", w2 - w1);

	/* Only the leader wrote. */
	ck_assert_msg(gt_metric((&rep[f])->port, WRITES) == 0, "follower %s wrote %g times", rep[f].id,
		      gt_metric((&rep[f])->port, WRITES));
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	json_decref(wait_programmed("att1", "True", "KernelVerified", 20, NULL));
}
END_TEST

#define SKIPS "galactic_translator_status_write_skips_total{kind=\"VPCAttachment\"}"

START_TEST(test_steady_state_no_writes)
{
	int l = leader_index();
	json_t *a;
	char rv[64];
	double w0, w1, s0, s1;

	ck_assert_int_ge(l, 0);
	w0 = settled_writes(l);
	s0 = gt_metric((&rep[l])->port, SKIPS);
	/* Churn by the others that changes nothing the translator derives: the
	 * agent restarts (new instance in its report), the VPC operator rewrites
	 * the attachment definition. Both cause events and reconciles. */
	agent_instance = "agent-2";
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	nad_suffix = "-v2";
	vpcop_write("att1", "5gHk2", "9ZzA");
	a = att_get("att1");
	snprintf(rv, sizeof(rv), "%s", sget(json_object_get(a, "metadata"), "resourceVersion", NULL));
	ck_assert_str_eq(sget(json_object_get(a, "status"), "networkAttachmentDefinition", NULL), "nad-att1-v2");
	json_decref(a);
	sleep(4);
	a = att_get("att1");
	w1 = gt_metric((&rep[l])->port, WRITES);
	s1 = gt_metric((&rep[l])->port, SKIPS);
	printf("MEASURE: steady state over 4 s with 2 unrelated updates: %.0f writes, %.0f skipped "
	       "reconciles, resourceVersion %s -> %s\n",
	       w1 - w0, s1 - s0, rv, sget(json_object_get(a, "metadata"), "resourceVersion", NULL));
	ck_assert_str_eq(sget(json_object_get(a, "metadata"), "resourceVersion", NULL), rv);
	ck_assert_msg(w1 == w0, "steady state wrote %g times", w1 - w0);
	ck_assert_msg(s1 - s0 >= 2, "the updates caused %g reconciles, want >= 2 (one per event)", s1 - s0);
	json_decref(a);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A series of report flips: latency distribution and exactly one write each. */
START_TEST(test_flip_series)
{
	enum { N = 20 };
	int l = leader_index();
	double lat[N], w0, w1;

	ck_assert_int_ge(l, 0);
	w0 = settled_writes(l);
	for (int i = 0; i < N; i++) {
		bool up = i % 2 == 1; /* starts True: first flip to False */
		report_programmed("node-a-1f-2e", up ? "True" : "False", up ? "KernelVerified" : "RouteMissing");
		json_decref(wait_programmed("att1", up ? "True" : "False", up ? "KernelVerified" : "RouteMissing",
					    20, &lat[i]));
	}
	w1 = settled_writes(l);
	qsort(lat, N, sizeof(lat[0]), cmp_double);
	printf("MEASURE: %d report flips -> attachment: min %.1f ms, median %.1f ms, max %.1f ms; "
	       "%.0f status writes\n", N, lat[0] * 1e3, lat[N / 2] * 1e3, lat[N - 1] * 1e3, w1 - w0);
	ck_assert_msg(w1 - w0 == N, "%d flips took %.0f writes", N, w1 - w0);
}
END_TEST

START_TEST(test_report_deleted_clears_fields)
{
	char p[256];
	json_t *a;
	struct owned vpcop, tr, cond_only = { 0 };

	snprintf(p, sizeof(p), "%s/node-a-1f-2e", REP_PATH);
	ck_assert_int_eq(kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL), 200);
	a = wait_programmed("att1", "False", "ReportMissing", 20, NULL);
	for (int i = 0; i < 7; i++) {
		static const char *f[] = { "node", "containerID", "podName", "hostInterface",
					   "vrfInterface", "guestInterface", "podSubnet" };
		ck_assert_msg(!json_object_get(json_object_get(a, "status"), f[i]),
			      "status.%s still set without a report", f[i]);
	}
	/* The translator now owns just its condition; the VPC operator all of its fields. */
	owned_add(&cond_only, "Programmed");
	check_manager(a, "galactic-translator", &cond_only);
	table_rows(&vpcop, &tr);
	check_manager(a, VPCOP_MGR, &vpcop);
	json_decref(a);
}
END_TEST

START_TEST(test_deleted_attachment_not_recreated)
{
	char p[256];
	long code = 0;
	json_t *a;

	create_att("att2");
	vpcop_write("att2", "7Qx", "1Ab");
	json_decref(wait_programmed("att2", "False", "ReportMissing", 20, NULL));
	snprintf(p, sizeof(p), "%s/att2", ATT_PATH);
	ck_assert_int_eq(kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL), 200);
	/* A report for it arrives after the delete: must not bring the object back. */
	report_spec("node-a-7qx-1ab", "7Qx", "1Ab");
	report_programmed("node-a-7qx-1ab", "True", "KernelVerified");
	sleep(3);
	a = get(p, &code);
	ck_assert_msg(code == 404, "deleted attachment came back (GET -> %ld)", code);
	json_decref(a);
}
END_TEST

START_TEST(test_no_conflicts)
{
	for (int i = 0; i < 2; i++) {
		double c = gt_metric((&rep[i])->port, CONFLICTS);
		printf("MEASURE: %s saw %.0f 409s on status writes\n", rep[i].id, c);
		ck_assert_msg(c == 0, "%s saw %g 409s", rep[i].id, c);
	}
	printf("MEASURE: stand-in writers saw %d 409s\n", standin_409s);
	ck_assert_int_eq(standin_409s, 0);
}
END_TEST

/*
 * A leader whose renewals fail stops writing: another identity takes the
 * Lease (as a partition would let a third party do), so neither replica may
 * write; once the Lease is free again, one replica takes over and catches up.
 */
static void lease_set(const char *holder, int duration)
{
	char body[512], now[64];
	time_t t = time(NULL);
	struct tm tm;
	json_t *l = get(LEASE_PATH, NULL);

	ck_assert_ptr_nonnull(l);
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
	snprintf(body, sizeof(body),
		 "{\"metadata\":{\"resourceVersion\":\"%s\"},\"spec\":{\"holderIdentity\":\"%s\","
		 "\"leaseDurationSeconds\":%d,\"renewTime\":\"%s\",\"acquireTime\":\"%s\"}}",
		 sget(json_object_get(l, "metadata"), "resourceVersion", NULL), holder, duration, now, now);
	json_decref(l);
	/* Optimistic lock: a racing renewal makes this 409; try again on fresh state. */
	long code = kreq(&cp, "PATCH", LEASE_PATH, "application/merge-patch+json", body, NULL, NULL);
	if (code == 409)
		return lease_set(holder, duration);
	ck_assert_int_eq(code, 200);
}

/*
 * Someone violates the contract and force-applies a translator field: the
 * translator restores its value and its sole ownership (and counts it).
 */
START_TEST(test_foreign_writer_overridden)
{
	int l = leader_index();
	char p[256];
	json_t *a = NULL;
	double t0;
	struct owned vpcop, tr;

	ck_assert_int_ge(l, 0);
	report_spec("node-a-1f-2e", "5gHk2", "9ZzA");
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	json_decref(wait_programmed("att1", "True", "KernelVerified", 20, NULL));
	snprintf(p, sizeof(p), "%s/att1/status", ATT_PATH);
	ck_assert_int_eq(apply(p, "rogue&force=true",
			       "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
			       "\"metadata\":{\"name\":\"att1\",\"namespace\":\"" TNS "\"},"
			       "\"status\":{\"node\":\"rogue-node\"}}"), 200);
	t0 = gt_now();
	while (gt_now() - t0 < 20) {
		json_decref(a);
		a = att_get("att1");
		if (!strcmp(sget(json_object_get(a, "status"), "node", NULL) ?: "", "node-a"))
			break;
		usleep(10 * 1000);
	}
	ck_assert_str_eq(sget(json_object_get(a, "status"), "node", NULL), "node-a");
	printf("MEASURE: foreign write of status.node undone in %.1f ms\n", (gt_now() - t0) * 1e3);
	table_rows(&vpcop, &tr);
	check_manager(a, "galactic-translator", &tr);
	check_no_foreign(a, "galactic-translator", &tr);
	json_decref(a);
	ck_assert(gt_metric((&rep[l])->port, "galactic_translator_field_takeovers_total{field=\"node\"}") >= 1);
}
END_TEST

START_TEST(test_lost_lease_stops_writes)
{
	int l = leader_index();
	double t0, w[2], took;
	json_t *a;

	ck_assert_int_ge(l, 0);
	report_spec("node-a-1f-2e", "5gHk2", "9ZzA");
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	json_decref(wait_programmed("att1", "True", "KernelVerified", 20, NULL));
	lease_set("intruder", 60);
	t0 = gt_now();
	while (gt_now() - t0 < 15 && (gt_metric((&rep[0])->port, LEADER) != 0 || gt_metric((&rep[1])->port, LEADER) != 0))
		usleep(50 * 1000);
	ck_assert_msg(gt_metric((&rep[0])->port, LEADER) == 0 && gt_metric((&rep[1])->port, LEADER) == 0,
		      "a replica still leads with the lease held elsewhere");
	printf("MEASURE: leader stopped leading %.2f s after losing the lease (renew deadline 3 s)\n",
	       gt_now() - t0);
	w[0] = gt_metric((&rep[0])->port, WRITES);
	w[1] = gt_metric((&rep[1])->port, WRITES);
	report_programmed("node-a-1f-2e", "False", "RouteMissing");
	sleep(2);
	a = att_get("att1");
	ck_assert_msg(!strcmp(sget(cond(a, "Programmed"), "status", NULL), "True"),
		      "a replica without the lease wrote the attachment");
	json_decref(a);
	ck_assert(gt_metric((&rep[0])->port, WRITES) == w[0] && gt_metric((&rep[1])->port, WRITES) == w[1]);

	/* The intruder lets go: a replica takes over and applies what it missed. */
	lease_set("", 1);
	a = wait_programmed("att1", "False", "RouteMissing", 20, &took);
	json_decref(a);
	printf("MEASURE: lease freed -> attachment caught up in %.2f s\n", took);
	ck_assert_int_ge(leader_index(), 0);
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	json_decref(wait_programmed("att1", "True", "KernelVerified", 20, NULL));
}
END_TEST

START_TEST(test_handover)
{
	int l = leader_index(), f = 1 - l, status = 0;
	double t0, wf0, took;
	json_t *lease;

	ck_assert_int_ge(l, 0);
	wf0 = gt_metric((&rep[f])->port, WRITES);
	/* SIGTERM: workers stop, then the lease is released for an immediate handover. */
	t0 = gt_now();
	ck_assert_int_eq(kill(rep[l].pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(rep[l].pid, &status, 0), rep[l].pid);
	rep[l].pid = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "leader %s did not exit cleanly (status 0x%x; see its log for sanitizer reports)",
		      rep[l].id, status);
	while (gt_now() - t0 < 20 && gt_metric((&rep[f])->port, LEADER) != 1)
		usleep(50 * 1000);
	ck_assert_msg(gt_metric((&rep[f])->port, LEADER) == 1, "follower %s did not take over", rep[f].id);
	printf("MEASURE: handover, from SIGTERM of the leader to the follower leading: %.2f s\n", gt_now() - t0);
	lease = get(LEASE_PATH, NULL);
	ck_assert_str_eq(sget(json_object_get(lease, "spec"), "holderIdentity", NULL), rep[f].id);
	json_decref(lease);
	/* Its first pass over every attachment finds them all up to date. */
	usleep(1500 * 1000);
	ck_assert_msg(gt_metric((&rep[f])->port, WRITES) == wf0, "new leader rewrote steady objects (%g writes)",
		      gt_metric((&rep[f])->port, WRITES) - wf0);
	/* And it acts on new reports: two transitions, two writes. */
	report_programmed("node-a-1f-2e", "False", "RouteMissing");
	json_decref(wait_programmed("att1", "False", "RouteMissing", 20, NULL));
	report_programmed("node-a-1f-2e", "True", "KernelVerified");
	json_decref(wait_programmed("att1", "True", "KernelVerified", 20, &took));
	printf("MEASURE: new leader: report -> attachment Programmed=True in %.1f ms\n", took * 1e3);
	ck_assert_msg(settled_writes(f) - wf0 == 2, "new leader wrote %g times for 2 transitions",
		      gt_metric((&rep[f])->port, WRITES) - wf0);
}
END_TEST

START_TEST(test_clean_exit_releases_lease)
{
	int status = 0;
	json_t *lease;

	for (int i = 0; i < 2; i++) {
		if (rep[i].pid <= 0)
			continue;
		ck_assert_msg(gt_metric((&rep[i])->port, CONFLICTS) == 0, "%s saw 409s", rep[i].id);
		ck_assert_int_eq(kill(rep[i].pid, SIGTERM), 0);
		ck_assert_int_eq(waitpid(rep[i].pid, &status, 0), rep[i].pid);
		rep[i].pid = 0;
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "%s did not exit cleanly (status 0x%x)", rep[i].id, status);
	}
	lease = get(LEASE_PATH, NULL);
	ck_assert_str_eq(sget(json_object_get(lease, "spec"), "holderIdentity", NULL), "");
	json_decref(lease);
}
END_TEST

/*
 * A second, minimal data plane plugs in with configuration alone: its own CRD
 * (created here; schemaless so that a writer can also get types wrong) and a
 * mapping file. A fresh replica (a restart, in effect) with both mappings
 * first finds the Galactic attachment up to date, then serves the new kind.
 */
#define PORT_PATH "/apis/dp.example.com/v1/minimalports"

START_TEST(test_second_dataplane_by_config)
{
	struct replica *r = &rep[2];
	char mapping[400], cmd[1200];
	double t0;
	json_t *a;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "%s/kubectl --kubeconfig %s apply -f - >/dev/null <<'EOF'\n"
		 "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
		 "metadata: {name: minimalports.dp.example.com}\n"
		 "spec:\n  group: dp.example.com\n  scope: Cluster\n"
		 "  names: {plural: minimalports, singular: minimalport, kind: MinimalPort}\n"
		 "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
		 "    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
		 "EOF\n"
		 "%s/kubectl --kubeconfig %s wait --for condition=Established crd/minimalports.dp.example.com --timeout 60s >/dev/null",
		 cp.bin, cp.kubeconfig, cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "minimal data plane CRD not established");
	snprintf(mapping, sizeof(mapping), "%s/mapping.json", cp.dir);
	f = fopen(mapping, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"reportKinds\":[{\"name\":\"minimal\",\"group\":\"dp.example.com\",\"version\":\"v1\","
	      "\"resource\":\"minimalports\",\"namespaced\":false,"
	      "\"fields\":{\"node\":\"spec.host\",\"vpc\":\"spec.network\",\"vpcAttachment\":\"spec.port\","
	      "\"hostInterface\":\"spec.dev\"},\"programmed\":{\"path\":\"status.up\"}}]}", f);
	fclose(f);

	snprintf(r->id, sizeof(r->id), "tr-c");
	r->port = gt_free_port();
	r->mapping = mapping;
	r->pid = start_replica(r);
	t0 = gt_now();
	while (gt_now() - t0 < 60 && gt_metric((r)->port, LEADER) != 1)
		usleep(100 * 1000);
	ck_assert_msg(gt_metric((r)->port, LEADER) == 1, "tr-c did not lead");
	usleep(1500 * 1000);
	ck_assert_msg(gt_metric((r)->port, WRITES) == 0, "a restarted translator rewrote %g steady objects",
		      gt_metric((r)->port, WRITES));
	json_decref(wait_programmed("att1", "True", "KernelVerified", 5, NULL));

	create_att("att3");
	vpcop_write("att3", "Net9", "Port9");
	json_decref(wait_programmed("att3", "False", "ReportMissing", 20, NULL));
	ck_assert_int_eq(kreq(&cp, "POST", PORT_PATH, "application/json",
			      "{\"apiVersion\":\"dp.example.com/v1\",\"kind\":\"MinimalPort\","
			      "\"metadata\":{\"name\":\"p9\"},\"spec\":{\"host\":\"node-m\",\"network\":\"Net9\","
			      "\"port\":\"Port9\",\"dev\":\"tap9\"},\"status\":{\"up\":true}}",
			      NULL, NULL), 201);
	a = wait_programmed("att3", "True", "Programmed", 20, NULL);
	ck_assert_str_eq(sget(json_object_get(a, "status"), "node", NULL), "node-m");
	ck_assert_str_eq(sget(json_object_get(a, "status"), "hostInterface", NULL), "tap9");
	ck_assert_ptr_null(json_object_get(json_object_get(a, "status"), "podName"));
	json_decref(a);

	/* A wrong type from that writer: a clear condition, no crash, fields withdrawn. */
	ck_assert_int_eq(kreq(&cp, "PATCH", PORT_PATH "/p9", "application/merge-patch+json",
			      "{\"spec\":{\"dev\":42}}", NULL, NULL), 200);
	a = wait_programmed("att3", "Unknown", "ReportInvalid", 20, NULL);
	ck_assert_msg(strstr(sget(cond(a, "Programmed"), "message", NULL), "spec.dev (hostInterface) is an integer"),
		      "message: %s", sget(cond(a, "Programmed"), "message", NULL));
	ck_assert_ptr_null(json_object_get(json_object_get(a, "status"), "node"));
	json_decref(a);
	ck_assert_int_eq(gt_http_get(r->port, "/healthz", NULL), 200);
	ck_assert_int_eq(kreq(&cp, "PATCH", PORT_PATH "/p9", "application/merge-patch+json",
			      "{\"spec\":{\"dev\":\"tap9\"},\"status\":{\"up\":false}}", NULL, NULL), 200);
	a = wait_programmed("att3", "False", "NotProgrammed", 20, NULL);
	ck_assert_str_eq(sget(json_object_get(a, "status"), "hostInterface", NULL), "tap9");
	json_decref(a);
	ck_assert(gt_metric((r)->port, "galactic_translator_invalid_reports_total{mapping=\"minimal\"}") >= 1);
	ck_assert_int_eq(gt_metric((r)->port, CONFLICTS), 0);
	ck_assert_int_eq(standin_409s, 0);

	int status = 0;
	ck_assert_int_eq(kill(r->pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(r->pid, &status, 0), r->pid);
	r->pid = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tr-c exit status 0x%x", status);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_vpcatt");
	TCase *tc = tcase_create("vpcattachment");

	/* The tests share the replicas (child processes of this one): no forking per test. */
	setenv("CK_FORK", "no", 1);
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_bad_config_refused);
	tcase_add_test(tc, test_ready_and_one_leader);
	tcase_add_test(tc, test_attachment_follows_report);
	tcase_add_test(tc, test_steady_state_no_writes);
	tcase_add_test(tc, test_flip_series);
	tcase_add_test(tc, test_report_deleted_clears_fields);
	tcase_add_test(tc, test_deleted_attachment_not_recreated);
	tcase_add_test(tc, test_foreign_writer_overridden);
	tcase_add_test(tc, test_lost_lease_stops_writes);
	tcase_add_test(tc, test_no_conflicts);
	tcase_add_test(tc, test_handover);
	tcase_add_test(tc, test_clean_exit_releases_lease);
	tcase_add_test(tc, test_second_dataplane_by_config);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
