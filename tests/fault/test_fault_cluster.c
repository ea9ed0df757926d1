/*
 * Faults of the cluster around the agents (issue 12 item 2,
 * docs/reliability.md "Faults"), on the real system: a real control plane
 * (etcd + kube-apiserver, our CRDs and the upstream stand-ins, a
 * kube-controller-manager running the garbage collector), two netns nodes
 * each running the release galactic-agent (reports published, routes learned
 * from the other node's reports), two replicas of the release
 * galactic-translator, the stand-in upstream writers (tests/lib/incumbents.sh:
 * compute's claims, NSO's interfaces, bindings and Ready, the VPC operator's
 * attachments) and pods attached by libcni (cnirt) with the conflists as the
 * VPC operator renders them.
 *
 * Every daemon authenticates with a service-account token read from a file
 * (kubeconfig `tokenFile`), as a pod's projected token: the token fault
 * rotates it.
 *
 *   - the active translator killed (SIGKILL) repeatedly during a burst of
 *     pods: each handover measured (kill -> the other replica leads) and
 *     bounded by the lease; 0 conflicts (409) counted by any translator
 *     incarnation; no status field owned by two managers (managedFields);
 *     every claim Ready=True and every attachment Programmed=True, the
 *     time to converge measured;
 *   - the token file replaced by a new token and the old one invalidated
 *     (its bound Secret deleted) while everything runs: no 401 storm
 *     (each daemon's galactic_kube_requests_total{code="401"}), no restart
 *     (same pids), writes continue (new pods reach Ready/Programmed);
 *   - a node deleted from the cluster: its reports go (garbage collection
 *     through their ownerReference to the Node) and the other node's routes
 *     toward it go; its agent, still running, does not bring them back.
 *
 * `make test` runs the short form; `make soak` (GT_SOAK=1) a longer burst
 * with more kills. By hand: GT_ALLOW_FILTER=1 GT_FAULT_ONLY=apiserver runs
 * only the faults whose function name contains the value;
 * GT_FAULT_LOGS=DIR keeps the daemons' logs and the stand-ins' files there.
 */
#include "tests/lib/cnirt.h"
#include "tests/lib/common_proxy.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/fpod.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/noderec.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define RNS "galactic-system"
#define TNS "tenant-fault"
#define SA "galactic-fault"
#define NATT_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define VA_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" TNS "/vpcattachments"
#define NI_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaces"
#define NIC_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaceclaims"
#define VPC "7Hq2x9Lm"

/* the translators' lease (short, as the e2e suites: a handover is seconds) */
#define LEASE_S 4.0
#define RENEW_S 3.0
#define RETRY_S 0.5
/* After an API server outage: the leader's informers have listed again at
 * most this long after it led again (s). What is left of it is the server's
 * own: its 429 "storage is (re)initializing" and Retry-After (about 2 s at
 * load 8); before the informers' backoff ended on the server's answer it
 * was 6-10 s (the quiet kinds' relist waited the outage's 5 s backoff). */
#define TR_BACK_S 4.0

static struct cp cp;
static struct topo T;
static int setup_ok, cp_is_up;
static char setup_why[1024], work[600], tokdir[600], kcfg[700];
static int aport[3]; /* agents' metrics ports (n1, n2) */
/*
 * Every daemon reaches the API server through a proxy of its own
 * (tests/lib/common_proxy.h), as through its node's network, with its own
 * kubeconfig (the token file's, server changed): the compaction fault cuts
 * them all. 0: n1's agent, 1: n2's, 2 and 3: the translator slots X[0], X[1].
 */
#define NPX 4
static struct tproxy *PX[NPX];
static char pkcfg[NPX][760];

static int soak(void)
{
	const char *s = getenv("GT_SOAK");

	return s && *s && strcmp(s, "0");
}

/* ---- pods ----------------------------------------------------------------- */

static struct fpods F; /* tests/lib/fpod.h */

/*
 * What happens on a cell before the runtime calls CNI: compute's claim,
 * NSO's interface (bound, addressed), the VPC operator's attachment and its
 * status; then the pod's netns and the conflist the operator renders.
 */
static void incumbents_and_conflist(const struct fpod *p)
{
	char a4[40], a6[48], x[40];

	snprintf(a6, sizeof(a6), "%s/128", fp_a6(p, x, sizeof(x)));
	snprintf(a4, sizeof(a4), "%s/32", fp_a4(p, x, sizeof(x)));
	ck_assert_msg(topo_sh("bash -c 'set -euo pipefail; . %s/tests/lib/incumbents.sh; inc_init %s %s " TNS "; "
			      "inc_claim %s net-" VPC "; uid=$(inc_interface %s net-" VPC " %s %s); "
			      "inc_vpc_operator %s " VPC " %s \"$uid\" %s %s' >>%s/incumbents.log 2>&1",
			      cnirt_top(), cp.dir, work, p->name, p->name, a6, a4, p->name, p->att, a6, a4, cp.dir) == 0,
		      "stand-in incumbents for %s (%s/incumbents.log)", p->name, cp.dir);
	ck_assert_int_eq(fp_prepare(&F, p), 0);
}

/* The same for n pods scheduled together: one apply per kind (incumbents.sh pods). */
static void incumbents_and_conflists(struct fpod *const *p, int n)
{
	char a4[40], a6[48], list[700];
	FILE *f;

	snprintf(list, sizeof(list), "%s/pods.in", cp.dir);
	f = fopen(list, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s net-" VPC " " VPC " %s %s/128 %s/32\n", p[i]->name, p[i]->att, fp_a6(p[i], a6, sizeof(a6)),
			fp_a4(p[i], a4, sizeof(a4)));
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(topo_sh("%s/tests/lib/incumbents.sh %s %s " TNS " pods <%s >>%s/incumbents.log 2>&1", cnirt_top(),
			      cp.dir, work, list, cp.dir) == 0,
		      "stand-in incumbents for %d pods (%s/incumbents.log)", n, cp.dir);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(fp_prepare(&F, p[i]), 0);
}

/* ---- daemons -------------------------------------------------------------- */

static void start_agent(int node)
{
	char extra[1400], s[512];

	if (!aport[node])
		aport[node] = gt_free_port();
	snprintf(extra, sizeof(extra), "--cni-socket %s --kubeconfig %s --node n%d --report-namespace " RNS
		 " --metrics-addr 127.0.0.1:%d", cnirt_sock(&T, node, s, sizeof(s)), pkcfg[node - 1], node, aport[node]);
	ck_assert_int_gt(topo_agent_start(&T, node, extra), 0);
	ck_assert_msg(cnirt_wait_socket(&T, node, 30) == 0, "agent n%d did not open its socket (%s/n%d/agent.log)",
		      node, T.dir, node);
}

/* A translator replica: a process with its own identity and metrics port. */
struct replica {
	pid_t pid;
	int port;
	char id[16];
};
static struct replica X[2];
static int incarnations;

/* who leads, sampled while a fault runs (lead_run) */
struct lead_watch {
	pthread_t thr;
	atomic_bool stop;
	int running, samples, both, last;
	char seq[512];
};
static struct lead_watch LW; /* not on a test's stack: a failing test leaves it running until teardown */

static void start_translator(struct replica *r)
{
	char p[32], log[700];
	char *argv[] = { "build/rel/bin/galactic-translator", "--kubeconfig", pkcfg[2 + (r - X)], "--namespace", RNS, "--id", r->id,
			 "--lease-namespace", RNS, "--lease-duration", "4", "--renew-deadline", "3",
			 "--retry-period", "0.5", "--metrics-addr", p, "--log-level", "info", NULL };
	double t0 = gt_now();

	snprintf(r->id, sizeof(r->id), "tr-%d", ++incarnations);
	r->port = gt_free_port();
	snprintf(p, sizeof(p), "127.0.0.1:%d", r->port);
	snprintf(log, sizeof(log), "%s/translator-%s.log", cp.dir, r->id);
	r->pid = gt_spawn(log, argv);
	ck_assert_int_gt(r->pid, 0);
	/* ready: serving metrics (leading or standing by) */
	while (gt_now() - t0 < 30 && gt_metric(r->port, "galactic_translator_leader") < 0)
		usleep(50 * 1000);
	ck_assert_msg(gt_metric(r->port, "galactic_translator_leader") >= 0, "translator %s not serving (%s)", r->id, log);
}

/* The replica leading now (waits up to timeout_s), or -1. */
static int leader(double timeout_s)
{
	double t0 = gt_now();

	do {
		for (int i = 0; i < 2; i++)
			if (X[i].pid > 0 && gt_metric(X[i].port, "galactic_translator_leader") == 1)
				return i;
		usleep(20 * 1000);
	} while (gt_now() - t0 < timeout_s);
	return -1;
}

/* Sum of the samples of a metric family whose line contains every needle (NULL-terminated). */
static double metric_sum(int port, const char *family, ...)
{
	char *body = NULL;
	double sum = 0;

	long code = gt_http_get(port, "/metrics", &body);

	if (code != 200) {
		fprintf(stderr, "GET 127.0.0.1:%d/metrics: HTTP %ld\n", port, code);
		free(body);
		return -1;
	}
	for (char *l = strtok(body, "\n"); l; l = strtok(NULL, "\n")) {
		va_list ap;
		const char *n;
		int ok = !strncmp(l, family, strlen(family)) && (l[strlen(family)] == '{' || l[strlen(family)] == ' ');

		va_start(ap, family);
		while (ok && (n = va_arg(ap, const char *)))
			ok = strstr(l, n) != NULL;
		va_end(ap);
		if (ok && strrchr(l, ' '))
			sum += atof(strrchr(l, ' ') + 1);
	}
	free(body);
	return sum;
}

/* 409s on status writes a replica counted (galactic_translator_conflicts_total, every kind). */
static double conflicts(const struct replica *r)
{
	return metric_sum(r->port, "galactic_translator_conflicts_total", (char *)NULL);
}

/* ---- setup ---------------------------------------------------------------- */

/* A token of the test ServiceAccount bound to Secret `secret` (deleting it invalidates the token), into path. */
static int mint_token(const char *secret, const char *path)
{
	char p[256], body[640];
	json_t *s = NULL, *r = NULL;
	const char *uid, *tok;
	long code;
	FILE *f;

	snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\"},\"type\":\"Opaque\"}",
		 secret);
	if (kreq(&cp, "POST", "/api/v1/namespaces/" RNS "/secrets", "application/json", body, NULL, &s) != 201 ||
	    !(uid = kstr(json_object_get(s, "metadata"), "uid", NULL))) {
		json_decref(s);
		return -1;
	}
	snprintf(body, sizeof(body), "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{"
		 "\"expirationSeconds\":7200,\"boundObjectRef\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
		 "\"name\":\"%s\",\"uid\":\"%s\"}}}", secret, uid);
	snprintf(p, sizeof(p), "/api/v1/namespaces/" RNS "/serviceaccounts/" SA "/token");
	code = kreq(&cp, "POST", p, "application/json", body, NULL, &r);
	json_decref(s);
	tok = code == 201 ? kstr(json_object_get(r, "status"), "token", NULL) : NULL;
	if (!tok) {
		json_decref(r);
		return -1;
	}
	/* replaced in one rename, as the kubelet swaps a projected volume's files */
	snprintf(p, sizeof(p), "%s.new", path);
	f = fopen(p, "w");
	if (!f || fputs(tok, f) < 0 || fclose(f) || rename(p, path)) {
		json_decref(r);
		return -1;
	}
	json_decref(r);
	return 0;
}

/* The API server's answer to a request with the token in file (HTTP status). */
static long api_status_with(const char *file)
{
	char out[32];

	if (topo_out(out, sizeof(out), "curl -s -o /dev/null -w '%%{http_code}' --cacert %s -H \"Authorization: Bearer $(cat %s)\" "
		     "%s/api/v1/namespaces/" RNS "/serviceaccounts/" SA, cp.ca, file, cp.apiserver))
		return 0;
	return atol(out);
}

static void setup(void)
{
	setup_ok = 0;
	if (geteuid() != 0)
		return;
	if (cnirt_init(setup_why, sizeof(setup_why)))
		return;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (cp_up(&cp)) {
		snprintf(setup_why, sizeof(setup_why), "control plane did not start");
		return;
	}
	cp_is_up = 1;
	snprintf(work, sizeof(work), "%s/incumbents", cp.dir);
	snprintf(tokdir, sizeof(tokdir), "%s/sa", cp.dir);
	snprintf(kcfg, sizeof(kcfg), "%s/kubeconfig-sa", cp.dir);
	if (crds_install(&cp, "atomic") ||
	    topo_sh("k() { %s/kubectl --kubeconfig %s \"$@\" >/dev/null; }; k create namespace " RNS " && k create namespace " TNS
		    " && k -n " RNS " create serviceaccount " SA " && k create clusterrolebinding " SA
		    " --clusterrole cluster-admin --serviceaccount " RNS ":" SA " && mkdir -p %s", cp.bin, cp.kubeconfig, tokdir)) {
		snprintf(setup_why, sizeof(setup_why), "CRDs, namespaces or the ServiceAccount");
		return;
	}
	/* the garbage collector, once the CRDs it must see exist */
	if (cp_ctl(&cp, "start-controller-manager")) {
		snprintf(setup_why, sizeof(setup_why), "kube-controller-manager did not start");
		return;
	}
	{
		char tf[700];

		snprintf(tf, sizeof(tf), "%s/token", tokdir);
		if (mint_token("token-1", tf) ||
		    topo_sh("printf 'apiVersion: v1\\nkind: Config\\nclusters:\\n- name: c\\n  cluster:\\n    server: %s\\n"
			    "    certificate-authority: %s\\nusers:\\n- name: sa\\n  user:\\n    tokenFile: %s\\n"
			    "contexts:\\n- name: c\\n  context: {cluster: c, user: sa}\\ncurrent-context: c\\n' >%s",
			    cp.apiserver, cp.ca, tf, kcfg) ||
		    api_status_with(tf) != 200) {
			snprintf(setup_why, sizeof(setup_why), "service-account token or its kubeconfig");
			return;
		}
	}
	for (int k = 0; k < NPX; k++) {
		const char *port = strrchr(cp.apiserver, ':');

		snprintf(pkcfg[k], sizeof(pkcfg[k]), "%s-px%d", kcfg, k);
		if (!port || !(PX[k] = tproxy_start(atoi(port + 1))) ||
		    topo_sh("sed 's#server: %s#server: https://127.0.0.1:%d#' %s >%s && grep -q 'server: https://127.0.0.1:%d$' %s",
			    cp.apiserver, tproxy_port(PX[k]), kcfg, pkcfg[k], tproxy_port(PX[k]), pkcfg[k])) {
			snprintf(setup_why, sizeof(setup_why), "proxy %d to the API server or its kubeconfig", k);
			return;
		}
	}
	if (topo_up(&T, 2)) {
		snprintf(setup_why, sizeof(setup_why), "topo_up failed");
		return;
	}
	fp_init(&F, &T, &cp, TNS, VPC, NATT_PATH, 2000);
	for (int n = 1; n <= 2; n++) {
		char body[128];

		/* the Node objects a kubelet registers; the agents' reports are owned by them */
		snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\"}}", n);
		if (kreq(&cp, "POST", "/api/v1/nodes", "application/json", body, NULL, NULL) != 201 ||
		    topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,\"uplink\":\"up0\"},"
			    "\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json", n, T.dir, n) ||
		    cnirt_node(&T, n)) {
			snprintf(setup_why, sizeof(setup_why), "node n%d", n);
			return;
		}
	}
	if (topo_sh("setsid %s/tests/lib/incumbents.sh %s %s " TNS " nso-loop >%s/nso.log 2>&1 </dev/null & echo $! >%s/nso.pid",
		    cnirt_top(), cp.dir, work, cp.dir, cp.dir)) {
		snprintf(setup_why, sizeof(setup_why), "NSO stand-in loop");
		return;
	}
	setup_ok = 1;
}

static void lead_watch_stop(struct lead_watch *w);

static void teardown(void)
{
	lead_watch_stop(&LW);
	if (getenv("GT_KEEP"))
		return;
	if (getenv("GT_FAULT_LOGS") && cp_is_up) /* kept for reading after the run */
		topo_sh("mkdir -p %s && cp -r %s/*.log %s/incumbents %s/ 2>/dev/null; for n in 1 2; do cp %s/n$n/agent.log %s/agent-n$n.log; done; true",
			getenv("GT_FAULT_LOGS"), cp.dir, cp.dir, getenv("GT_FAULT_LOGS"), T.dir, getenv("GT_FAULT_LOGS"));
	if (T.prefix[0]) /* a fault's continuous ping, when it failed before stopping it */
		topo_sh("test -e %s/ping.pid && kill -INT $(cat %s/ping.pid) 2>/dev/null; true", T.dir, T.dir);
	if (cp_is_up)
		topo_sh("touch %s/nso.stop; for _ in $(seq 30); do kill -0 $(cat %s/nso.pid) 2>/dev/null || exit 0; sleep 0.1; done;"
			" kill $(cat %s/nso.pid) 2>/dev/null; true", work, cp.dir, cp.dir);
	for (int i = 0; i < 2; i++)
		if (X[i].pid > 0) {
			kill(X[i].pid, SIGKILL);
			waitpid(X[i].pid, NULL, 0);
		}
	if (T.prefix[0]) {
		topo_sh("rm -f /run/galactic/%s-n*.sock", T.prefix);
		for (int i = 0; i < F.n; i++)
			topo_sh("ip netns del %s-%s 2>/dev/null; true", T.prefix, F.p[i].name);
	}
	topo_down(&T);
	for (int k = 0; k < NPX; k++)
		if (PX[k])
			tproxy_stop(PX[k]);
	if (cp_is_up)
		cp_down(&cp);
}

#define NEED_SETUP()                                                                                    \
	do {                                                                                            \
		if (geteuid() != 0)                                                                     \
			GT_SKIP("needs root for network namespaces");                                  \
		ck_assert_msg(setup_ok, "setup failed: %s (logs in %s, %s)", setup_why, T.dir, cp.dir); \
	} while (0)

/* Agents and both translator replicas running (each test leaves them so). */
static void bring_up(void)
{
	for (int n = 1; n <= 2; n++)
		if (topo_agent_pid(&T, n) <= 0 || kill(topo_agent_pid(&T, n), 0))
			start_agent(n);
	for (int i = 0; i < 2; i++)
		if (X[i].pid <= 0)
			start_translator(&X[i]);
	ck_assert_msg(leader(30) >= 0, "no translator leads (%s)", cp.dir);
}

/* ---- the statuses, checked ------------------------------------------------ */

static const char *cond_of(const json_t *o, const char *type)
{
	return kstr(kcond(o, type), "status", NULL) ?: "-";
}

static const char *sstr(const json_t *o, const char *k)
{
	return kstr(json_object_get(o, "status"), k, NULL) ?: "";
}

/* The item of list l named name; how many there are in *n. */
static json_t *named(json_t *l, const char *name, int *n)
{
	json_t *x, *hit = NULL;
	size_t k;

	*n = 0;
	json_array_foreach(json_object_get(l, "items"), k, x)
		if (!strcmp(kstr(json_object_get(x, "metadata"), "name", NULL) ?: "", name))
			hit = x, (*n)++;
	return hit;
}

/*
 * Every up pod: exactly one claim, interface and attachment; its claim
 * Ready=True (the NSO stand-in's derivation of Bound, Allocated and the
 * translator's Prepared and Programmed, both True too); its attachment
 * Programmed=True with the translator's fields right (node, podName,
 * hostInterface: the host veth its node's record holds); its interface's
 * vpc and attachmentRef. "" or the first that is not.
 */
static const struct fpod *stuck; /* the pod statuses_converged last stopped at */

static int statuses_converged(char *why, size_t n)
{
	json_t *l[3] = { NULL, NULL, NULL }, *rec[3] = { NULL, noderec(&T, 1), noderec(&T, 2) };
	int ok = 1;

	why[0] = 0;
	if (kreq(&cp, "GET", NIC_PATH, NULL, NULL, NULL, &l[0]) != 200 ||
	    kreq(&cp, "GET", VA_PATH, NULL, NULL, NULL, &l[1]) != 200 ||
	    kreq(&cp, "GET", NI_PATH, NULL, NULL, NULL, &l[2]) != 200) {
		snprintf(why, n, "list failed");
		ok = 0;
	}
	for (int i = 0; i < F.n && ok; i++) {
		const struct fpod *p = &F.p[i];
		int nc, na, ni;
		json_t *c, *a, *f, *r;
		char node[8], hif[32] = "";
		size_t k;

		if (!p->up)
			continue;
		stuck = p;
		c = named(l[0], p->name, &nc), a = named(l[1], p->name, &na), f = named(l[2], p->name, &ni);
		snprintf(node, sizeof(node), "n%d", p->node);
		json_array_foreach(json_object_get(rec[p->node], "attachments"), k, r)
			if (!strcmp(kstr(r, "id", NULL) ?: "", p->att))
				snprintf(hif, sizeof(hif), "%s", kstr(r, "hostIfname", NULL) ?: "");
		if (nc != 1 || na != 1 || ni != 1) {
			snprintf(why, n, "%s: %d claims, %d interfaces, %d attachments (want one of each)", p->name, nc, ni, na);
			ok = 0;
		} else if (strcmp(cond_of(c, "Ready"), "True") || strcmp(cond_of(c, "Prepared"), "True") ||
			   strcmp(cond_of(c, "Programmed"), "True")) {
			snprintf(why, n, "claim %s Ready=%s Prepared=%s Programmed=%s", p->name, cond_of(c, "Ready"),
				 cond_of(c, "Prepared"), cond_of(c, "Programmed"));
			ok = 0;
		} else if (strcmp(cond_of(a, "Programmed"), "True")) {
			snprintf(why, n, "attachment %s Programmed=%s", p->name, cond_of(a, "Programmed"));
			ok = 0;
		} else if (strcmp(sstr(a, "vpc"), VPC) || strcmp(sstr(a, "node"), node) || strcmp(sstr(a, "podName"), p->name) ||
			   !hif[0] || strcmp(sstr(a, "hostInterface"), hif)) {
			snprintf(why, n, "attachment %s status vpc=%s node=%s podName=%s hostInterface=%s, want %s %s %s %s", p->name,
				 sstr(a, "vpc"), sstr(a, "node"), sstr(a, "podName"), sstr(a, "hostInterface"), VPC, node, p->name,
				 hif[0] ? hif : "(not in the record)");
			ok = 0;
		} else if (strcmp(sstr(f, "vpc"), VPC) ||
			   strcmp(kstr(json_object_get(json_object_get(f, "status"), "attachmentRef"), "name", NULL) ?: "", p->name)) {
			snprintf(why, n, "interface %s status vpc=%s attachmentRef %s", p->name, sstr(f, "vpc"),
				 kstr(json_object_get(json_object_get(f, "status"), "attachmentRef"), "name", NULL) ?: "(none)");
			ok = 0;
		}
	}
	for (int k = 0; k < 3; k++)
		json_decref(l[k]), json_decref(rec[k]);
	return ok;
}

/* What a pod that did not converge has (stderr): its claim, interface, attachment and report, and what the daemons logged of it. */
static void dump_pod(const struct fpod *p)
{
	const char *lists[3] = { NIC_PATH, NI_PATH, VA_PATH };
	json_t *l = NULL, *x;
	char path[300];
	size_t k;

	if (!p)
		return;
	for (int i = 0; i < 3; i++) {
		json_t *o;
		char *txt;

		snprintf(path, sizeof(path), "%s/%s", lists[i], p->name);
		o = kget(&cp, path, NULL);
		json_object_del(json_object_get(o, "metadata"), "managedFields");
		txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
		fprintf(stderr, "stuck %s: %s\n", path, txt ? txt : "(none)");
		free(txt);
		json_decref(o);
	}
	if (kreq(&cp, "GET", NATT_PATH, NULL, NULL, NULL, &l) == 200)
		json_array_foreach(json_object_get(l, "items"), k, x)
			if (!strcmp(kstr(x, "spec", "vpcAttachment") ?: "", p->att)) {
				char *txt;

				json_object_del(json_object_get(x, "metadata"), "managedFields");
				txt = json_dumps(x, JSON_COMPACT);
				fprintf(stderr, "stuck report: %s\n", txt ? txt : "?");
				free(txt);
			}
	json_decref(l);
	topo_sh("for f in %s/translator-*.log %s/n%d/agent.log; do echo \"== $f\"; grep -e '%s' -e '%s' -e leader -e relist "
		"-e 'watch failed' $f | tail -40; done >&2", cp.dir, T.dir, p->node, p->name, p->att);
}

static double statuses_converge_within(const char *tag, double limit)
{
	double t0 = gt_now();
	char why[512];
	int ok;

	while (!(ok = statuses_converged(why, sizeof(why))) && gt_now() - t0 < limit)
		usleep(200 * 1000);
	if (!ok)
		dump_pod(stuck);
	ck_assert_msg(ok, "%s: statuses not converged in %.0f s: %s (logs %s)", tag, limit, why, cp.dir);
	return gt_now() - t0;
}

/*
 * managedFields of one object: the leaf paths each manager owns. A leaf
 * owned by two managers, or one of the translator's own fields owned by
 * anyone else, is a conflicting write; "" or what.
 */
static void leaves(const json_t *f, const char *path, const char *mgr, json_t *owners)
{
	const char *k;
	json_t *v;
	char p[512];

	if (!json_object_size(f) || json_object_get(f, ".")) {
		json_t *m = json_object_get(owners, path);

		if (!m)
			json_object_set_new(owners, path, m = json_array());
		for (size_t i = 0; i < json_array_size(m); i++)
			if (!strcmp(json_string_value(json_array_get(m, i)), mgr))
				goto kids;
		json_array_append_new(m, json_string(mgr));
	}
kids:
	json_object_foreach((json_t *)f, k, v) {
		if (!strcmp(k, "."))
			continue;
		snprintf(p, sizeof(p), "%s.%s", path, k);
		leaves(v, p, mgr, owners);
	}
}

static int owners_ok(const json_t *o, const char *const *mine, char *why, size_t n)
{
	json_t *owners = json_object(), *e, *m;
	const char *path;
	size_t i;
	int ok = 1;

	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e)
		leaves(json_object_get(e, "fieldsV1"), "", kstr(e, "manager", NULL) ?: "?", owners);
	json_object_foreach(owners, path, m) {
		if (json_array_size(m) > 1) {
			char *s = json_dumps(m, JSON_COMPACT);

			snprintf(why, n, "%s: %s owned by %s", kstr(json_object_get(o, "metadata"), "name", NULL), path, s);
			free(s);
			ok = 0;
			break;
		}
		for (const char *const *f = mine; *f && ok; f++)
			if (!strcmp(path, *f) && strcmp(json_string_value(json_array_get(m, 0)), "galactic-translator")) {
				snprintf(why, n, "%s: the translator's %s owned by %s",
					 kstr(json_object_get(o, "metadata"), "name", NULL), path,
					 json_string_value(json_array_get(m, 0)));
				ok = 0;
			}
	}
	json_decref(owners);
	return ok;
}

/* Every up pod's claim, interface and attachment: no field written by two managers. */
static void check_managed_fields(int *checked)
{
	static const char *const va_mine[] = { ".f:status.f:node", ".f:status.f:podName", ".f:status.f:hostInterface", NULL };
	static const char *const ni_mine[] = { ".f:status.f:attachmentRef", ".f:status.f:vpc", NULL };
	static const char *const none[] = { NULL };
	const char *lists[3] = { VA_PATH, NI_PATH, NIC_PATH };
	const char *const *mine[3] = { va_mine, ni_mine, none };
	char why[512], p[300];

	*checked = 0;
	for (int i = 0; i < F.n; i++) {
		if (!F.p[i].up)
			continue;
		for (int k = 0; k < 3; k++) {
			json_t *o;

			snprintf(p, sizeof(p), "%s/%s", lists[k], F.p[i].name);
			o = kget(&cp, p, NULL);
			ck_assert_msg(o, "GET %s", p);
			ck_assert_msg(owners_ok(o, mine[k], why, sizeof(why)), "conflicting writes: %s", why);
			json_decref(o);
			(*checked)++;
		}
	}
}

/* 409s the API server answered to PATCHes of the upstream kinds' status (the translator's writes). */
static double apiserver_status_patch_409s(void)
{
	char out[64];

	if (topo_out(out, sizeof(out), "curl -s --cacert %s -H 'Authorization: Bearer %s' %s/metrics | "
		     "awk '/^apiserver_request_total\\{/ && /code=\"409\"/ && /verb=\"PATCH\"/ && /subresource=\"status\"/ && "
		     "/resource=\"(vpcattachments|networkinterfaces|networkinterfaceclaims)\"/ {s += $NF} END {print s + 0}'",
		     cp.ca, cp.token, cp.apiserver))
		return -1;
	return atof(out);
}

/* ---- the faults ----------------------------------------------------------- */

/*
 * The active translator killed (SIGKILL) repeatedly during a burst of pods
 * (short: 12 pods, 3 kills; soak: 36 pods, 6 kills), a new replica started
 * after each kill so two always run.
 */
START_TEST(t_translator_killed_during_burst)
{
	const double t_test = gt_now();
	int burst = soak() ? 36 : 12, kills = soak() ? 6 : 3, every = burst / (kills + 1), done = 0, checked;
	double handover[8], worst = 0, conf = 0, conv, p409;
	char out[8192];

	NEED_SETUP();
	bring_up();
	for (int i = 0; i < burst; i++) {
		struct fpod *p = fp_new(&F, "t", i % 2 ? 2 : 1);

		incumbents_and_conflist(p);
		fp_add_ok(&F, p);
		if ((i + 1) % every == 0 && done < kills) {
			int l = leader(20), o;
			double t0, c;

			ck_assert_msg(l >= 0, "no translator leads before kill %d", done + 1);
			o = 1 - l;
			c = conflicts(&X[l]); /* its count, a moment before it dies */
			ck_assert_msg(c >= 0, "metrics of %s", X[l].id);
			conf += c;
			t0 = gt_now();
			kill(X[l].pid, SIGKILL);
			waitpid(X[l].pid, NULL, 0);
			X[l].pid = 0;
			while (gt_now() - t0 < 30 && gt_metric(X[o].port, "galactic_translator_leader") != 1)
				usleep(20 * 1000);
			handover[done] = gt_now() - t0;
			ck_assert_msg(gt_metric(X[o].port, "galactic_translator_leader") == 1,
				      "kill %d: %s did not take over in 30 s", done + 1, X[o].id);
			printf("fault translator: kill %d of %s (after %d pods): %s leads %.2f s later\n", done + 1, X[l].id,
			       i + 1, X[o].id, handover[done]);
			worst = handover[done] > worst ? handover[done] : worst;
			done++;
			start_translator(&X[l]); /* the Deployment's new pod */
		}
	}
	ck_assert_int_eq(done, kills);
	conv = statuses_converge_within("after the burst", soak() ? 180 : 90);
	for (int i = 0; i < 2; i++) {
		double c = conflicts(&X[i]);

		ck_assert_msg(c >= 0, "metrics of %s", X[i].id);
		conf += c;
	}
	p409 = apiserver_status_patch_409s();
	check_managed_fields(&checked);
	printf("fault translator: %d pods, %d kills of the leader, handovers", burst, kills);
	for (int i = 0; i < kills; i++)
		printf(" %.2f", handover[i]);
	printf(" s (lease %.0f s, retry %.1f s); every claim Ready and attachment Programmed %.2f s after the last ADD; "
	       "409s counted by the translators %g; 409s the API server gave to status PATCHes of the upstream kinds %g; "
	       "managedFields of %d objects: no field of two managers\n", LEASE_S, RETRY_S, conv, conf, p409, checked);
	/* a kill lands anywhere in the renew cycle: the follower sees the lease
	 * expire at most LEASE_S after the last renew it observed, which it
	 * observes up to RETRY_S late, then acts at its next retry */
	ck_assert_msg(worst <= LEASE_S + 2 * RETRY_S + 1.0, "a handover took %.2f s (lease %.0f s)", worst, LEASE_S);
	ck_assert_msg(conf == 0, "the translators counted %g conflicts (409)", conf);
	for (int i = 0; i < F.n; i++)
		if (F.p[i].up) {
			ck_assert_msg(fp_rt(&F, &F.p[i], "del", out, sizeof(out)) == 0, "del %s: %s", F.p[i].name, out);
			F.p[i].up = 0;
		}
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/* Sum of 401s a daemon's clients counted. */
static double unauthorized(int port)
{
	return metric_sum(port, "galactic_kube_requests_total", "code=\"401\"", (char *)NULL);
}

/*
 * The service-account token rotated under running agents and translators:
 * a new token bound to a new Secret replaces the file (one rename), and the
 * old one is invalidated at once (its Secret deleted), before any
 * periodic re-read: every client meets a 401 on its next request, re-reads
 * the file and carries on.
 */
START_TEST(t_token_rotated)
{
	const double t_test = gt_now();
	int ports[4], nd = 0;
	pid_t pids[4];
	double before[4], after[4], later[4], t0, t_invalid, conv;
	char tf[700], old[700], out[8192];
	struct fpod *p[4];

	NEED_SETUP();
	bring_up();
	for (int n = 1; n <= 2; n++)
		ports[nd] = aport[n], pids[nd++] = topo_agent_pid(&T, n);
	for (int i = 0; i < 2; i++)
		ports[nd] = X[i].port, pids[nd++] = X[i].pid;
	/* writes before the rotation, so every client has used the old token */
	p[0] = fp_new(&F, "k", 1);
	incumbents_and_conflist(p[0]);
	fp_add_ok(&F, p[0]);
	statuses_converge_within("before the rotation", 60);
	for (int i = 0; i < nd; i++) {
		before[i] = unauthorized(ports[i]);
		ck_assert_msg(before[i] >= 0, "metrics of daemon %d", i);
		/* the counter is there: 401s, if any, would be counted */
		ck_assert_msg(metric_sum(ports[i], "galactic_kube_requests_total", "code=\"20", (char *)NULL) > 0,
			      "daemon %d counts no API response", i);
	}
	snprintf(tf, sizeof(tf), "%s/token", tokdir);
	snprintf(old, sizeof(old), "%s/token.old", tokdir);
	ck_assert_int_eq(topo_sh("cp %s %s", tf, old), 0);
	ck_assert_int_eq(mint_token("token-2", tf), 0);
	ck_assert_int_eq(kreq(&cp, "DELETE", "/api/v1/namespaces/" RNS "/secrets/token-1", NULL, NULL, NULL, NULL), 200);
	t0 = gt_now();
	while (api_status_with(old) != 401 && gt_now() - t0 < 60)
		usleep(200 * 1000);
	t_invalid = gt_now() - t0;
	ck_assert_int_eq(api_status_with(old), 401);
	ck_assert_int_eq(api_status_with(tf), 200);
	/* writes continue: new pods on both nodes, their reports and statuses */
	t0 = gt_now();
	for (int i = 1; i < 4; i++) {
		p[i] = fp_new(&F, "k", i % 2 ? 2 : 1);
		incumbents_and_conflist(p[i]);
		fp_add_ok(&F, p[i]);
	}
	conv = statuses_converge_within("after the rotation", 90);
	for (int i = 0; i < nd; i++)
		after[i] = unauthorized(ports[i]);
	sleep(3);
	for (int i = 0; i < nd; i++)
		later[i] = unauthorized(ports[i]);
	printf("fault token: old token refused %.1f s after its Secret was deleted; new pods Ready/Programmed %.2f s "
	       "after the first ADD; 401s per daemon (agent n1, agent n2, %s, %s) during the rotation:", t_invalid,
	       conv, X[0].id, X[1].id);
	for (int i = 0; i < nd; i++)
		printf(" %g", after[i] - before[i]);
	printf("; in the 3 s after:");
	for (int i = 0; i < nd; i++)
		printf(" %g", later[i] - after[i]);
	printf("\n");
	for (int i = 0; i < nd; i++) {
		ck_assert_msg(kill(pids[i], 0) == 0, "daemon %d (pid %d) is gone", i, (int)pids[i]);
		/* no storm: at most a few clients' one 401 each, then none */
		ck_assert_msg(after[i] >= 0 && after[i] - before[i] <= 10, "daemon %d: %g 401s", i, after[i] - before[i]);
		ck_assert_msg(later[i] == after[i], "daemon %d still gets 401s (%g more)", i, later[i] - after[i]);
	}
	ck_assert_int_eq(topo_agent_pid(&T, 1), pids[0]);
	ck_assert_int_eq(topo_agent_pid(&T, 2), pids[1]);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(fp_rt(&F, p[i], "del", out, sizeof(out)) == 0, "del %s: %s", p[i]->name, out);
		p[i]->up = 0;
	}
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/* Whether node's record of remote routes holds pod p's IPv6 /128 or IPv4 /32. */
static int learned(int node, const struct fpod *p)
{
	char a6[48], a4[32];

	return topo_sh("jq -e --arg a '%s/128' --arg b '%s/32' 'any(.remotes[]; .prefix == $a or .prefix == $b)' "
		       "%s/n%d/record-remotes.json >/dev/null 2>&1", fp_a6(p, a6, sizeof(a6)), fp_a4(p, a4, sizeof(a4)),
		       T.dir, node) == 0;
}

/* Whether node's kernel routes p's addresses (any table). */
static int routed(int node, const struct fpod *p)
{
	char a6[48], a4[32];

	return topo_sh("{ ip -n %s-n%d -6 route show table all; ip -n %s-n%d -4 route show table all; } | "
		       "grep -q -e '^%s ' -e '^%s '", T.prefix, node, T.prefix, node, fp_a6(p, a6, sizeof(a6)),
		       fp_a4(p, a4, sizeof(a4))) == 0;
}

/* NodeAttachments whose spec.node is node (-1 when the list fails); with owner uid, how many are owned by it. */
static int reports_of(const char *node, const char *uid, int *owned)
{
	json_t *l = NULL, *x, *r;
	size_t i, k;
	int n = 0;

	if (owned)
		*owned = 0;
	if (kreq(&cp, "GET", NATT_PATH, NULL, NULL, NULL, &l) != 200) {
		json_decref(l);
		return -1;
	}
	json_array_foreach(json_object_get(l, "items"), i, x) {
		if (strcmp(kstr(json_object_get(x, "spec"), "node", NULL) ?: "", node))
			continue;
		n++;
		json_array_foreach(json_object_get(json_object_get(x, "metadata"), "ownerReferences"), k, r)
			if (owned && uid && !strcmp(kstr(r, "kind", NULL) ?: "", "Node") &&
			    !strcmp(kstr(r, "uid", NULL) ?: "", uid))
				(*owned)++;
	}
	json_decref(l);
	return n;
}

/* ---- the control plane's faults --------------------------------------------- */

/* The steady pair s1 (n1) and s2 (n2), with their upstream objects: made once, kept by the faults that ping across. */
static struct fpod *S[2];

static void steady_pods(void)
{
	for (int i = 0; i < 2; i++)
		if (!S[i]) {
			S[i] = fp_new(&F, "s", i + 1);
			incumbents_and_conflist(S[i]);
		}
	for (int i = 0; i < 2; i++)
		if (!S[i]->up)
			fp_add_ok(&F, S[i]);
}

/*
 * Who leads, sampled every 100 ms from both replicas' metrics while a fault
 * runs: two leaders at once must never be seen; the changes are kept
 * ("tr-1 - tr-2": tr-1 led, none did, tr-2 took over).
 */

static void *lead_run(void *arg)
{
	struct lead_watch *w = arg;

	while (!atomic_load(&w->stop)) {
		int l0 = gt_metric(X[0].port, "galactic_translator_leader") == 1;
		int l1 = gt_metric(X[1].port, "galactic_translator_leader") == 1;
		int cur = l0 ? 0 : l1 ? 1 : -1;

		w->samples++;
		w->both += l0 && l1;
		if (cur != w->last && strlen(w->seq) < sizeof(w->seq) - 24) {
			snprintf(w->seq + strlen(w->seq), sizeof(w->seq) - strlen(w->seq), "%s%s", w->seq[0] ? " " : "",
				 cur < 0 ? "-" : X[cur].id);
			w->last = cur;
		}
		usleep(100 * 1000);
	}
	return NULL;
}

static void lead_watch_stop(struct lead_watch *w)
{
	if (!w->running)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thr, NULL);
	w->running = 0;
}

static void lead_watch_start(struct lead_watch *w)
{
	lead_watch_stop(w);
	memset(w, 0, sizeof(*w));
	w->last = -2;
	atomic_store(&w->stop, false);
	ck_assert_int_eq(pthread_create(&w->thr, NULL, lead_run, w), 0);
	w->running = 1;
}

/* The translators' Lease: its holder (into buf) and leaseTransitions (-1 when unreadable). */
static long lease_of(char *holder, size_t n)
{
	json_t *l = kget(&cp, "/apis/coordination.k8s.io/v1/namespaces/" RNS "/leases/galactic-translator", NULL);
	long tr = -1;

	holder[0] = 0;
	if (l) {
		snprintf(holder, n, "%s", kstr(json_object_get(l, "spec"), "holderIdentity", NULL) ?: "");
		tr = (long)json_integer_value(json_object_get(json_object_get(l, "spec"), "leaseTransitions"));
	}
	json_decref(l);
	return tr;
}


/* ---- the translator's own part after an outage, from its log --------------- */

/* Seconds (UTC, since the epoch) of a daemon log line's ts=, or -1. */
static double line_ts(const char *line)
{
	struct tm tm = { 0 };
	double sec;

	if (sscanf(line, "ts=%d-%d-%dT%d:%d:%lfZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &sec) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + sec;
}

static double wall_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The value of key=VALUE in a log line (unquoted values only). */
static void line_val(const char *line, const char *key, char *out, size_t n)
{
	char k[64];
	const char *p;
	size_t l;

	snprintf(k, sizeof(k), " %s=", key);
	out[0] = 0;
	if (!(p = strstr(line, k)))
		return;
	p += strlen(k);
	l = strcspn(p, " \n");
	snprintf(out, n, "%.*s", (int)(l < n - 1 ? l : n - 1), p);
}

/*
 * After the API server came back: when the replica began to lead again (its
 * first Lease write after `since`, wall seconds: the first 2xx it got), and
 * how long after that the slowest of its informers that relisted (410 after
 * the restart) had its list again ("listed again after failures"). Fills
 * *relisted with how many relisted, *slowest with the slowest one's name;
 * returns the delay (s), or -1 with why in `why`.
 */
static double informers_back_after_lead(const struct replica *r, double since, int *relisted, char *slowest,
					size_t sn, char *why, size_t wn)
{
	char path[700], line[2048], name[160], names[24][160];
	double lead = -1, listed[24], worst = -1;
	int n = 0, missing = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/translator-%s.log", cp.dir, r->id);
	if (!(f = fopen(path, "r"))) {
		snprintf(why, wn, "cannot read %s", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		double t = line_ts(line);
		int i;

		if (t < since)
			continue;
		if (strstr(line, "msg=\"became leader\""))
			lead = t; /* the last term begun: a term of a moment and a new one count as the new one */
		if (!strstr(line, "msg=\"watch expired, relisting\"") && !strstr(line, "msg=\"listed again after failures\""))
			continue;
		line_val(line, "informer", name, sizeof(name));
		for (i = 0; i < n && strcmp(names[i], name); i++)
			;
		if (i == n && n < 24) {
			snprintf(names[n], sizeof(names[n]), "%s", name);
			listed[n++] = -1;
		}
		if (i < n && strstr(line, "listed again"))
			listed[i] = t;
		else if (i < n)
			listed[i] = -1; /* relisting: its list is still to come */
	}
	fclose(f);
	*relisted = n;
	if (lead < 0) {
		snprintf(why, wn, "%s did not log a new term after the outage (%s)", r->id, path);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (listed[i] < 0)
			missing = i;
		else if (listed[i] - lead > worst) {
			worst = listed[i] - lead;
			snprintf(slowest, sn, "%s", names[i]);
		}
	}
	if (missing >= 0) {
		snprintf(why, wn, "informer %s of %s relisted but logged no list after it (%s)", names[missing], r->id, path);
		return -1;
	}
	return worst < 0 ? 0 : worst;
}

/* Waits until both the node state (records, veths, reports) and the upstream statuses match: the time each took. */
static void converge_all(const char *tag, double t0, double limit, double *t_node, double *t_up)
{
	char why_n[4096] = "", why_s[1024] = "";

	*t_node = *t_up = -1;
	while (gt_now() - t0 < limit && (*t_node < 0 || *t_up < 0)) {
		if (*t_node < 0 && fp_state_matches(&F, why_n, sizeof(why_n)))
			*t_node = gt_now() - t0;
		if (*t_up < 0 && statuses_converged(why_s, sizeof(why_s)))
			*t_up = gt_now() - t0;
		usleep(200 * 1000);
	}
	ck_assert_msg(*t_node >= 0, "%s: node state not converged in %.0f s: %s (logs %s)", tag, limit, why_n, T.dir);
	ck_assert_msg(*t_up >= 0, "%s: statuses not converged in %.0f s: %s (logs %s)", tag, limit, why_s, cp.dir);
	fp_converge(&F, tag); /* matches still, and every pod pings across */
}

/*
 * kube-apiserver stopped during a burst of ADDs (short: 30 ADDs, 12 s
 * down; soak: 200 ADDs, 60 s down) with both translator replicas and the
 * stand-in incumbents running. The burst's upstream objects exist before
 * the outage (compute, NSO and the VPC operator wrote them as the pods were
 * scheduled); then: every ADD succeeds while the API is down and the new
 * pod pings its node's steady pod at once; the continuous s1 -> s2 ping
 * loses nothing; after the restart every record, report (exactly one per
 * pod) and veth matches, every claim is Ready and every attachment
 * Programmed with the translator's fields right (exactly one claim,
 * interface and attachment per pod), 0 conflicts, no managedFields leaf of
 * two managers, never two leaders at once and one leader at the end,
 * holding the Lease; no daemon restarted.
 */
START_TEST(t_apiserver_down_during_add_burst)
{
	const double t_test = gt_now();
	int burst = soak() ? 200 : 30, before = soak() ? 20 : 6, checked, l0, l1;
	double down_s = soak() ? 60 : 12, t_stop, t_call, t_up, t_burst, worst = 0, t_node, t_st, c0 = 0, c1 = 0, p409a, p409b;
	double w_stop, back;
	int relisted = 0;
	char slowest[160] = "", why[1024] = "";
	struct fpod *b[200];
	struct lead_watch *lw = &LW;
	pid_t pids[4];
	long tx, rx, tr0, tr1;
	char out[8192], dst[48], h0[32], h1[32];

	NEED_SETUP();
	bring_up();
	steady_pods();
	for (int i = 0; i < burst; i++)
		b[i] = fp_new(&F, "b", i % 2 ? 2 : 1);
	incumbents_and_conflists(b, burst);
	statuses_converge_within("the steady pods", 60);
	l0 = leader(20);
	ck_assert_int_ge(l0, 0);
	tr0 = lease_of(h0, sizeof(h0));
	for (int i = 0; i < 2; i++) {
		double c = conflicts(&X[i]);

		ck_assert_msg(c >= 0, "metrics of %s", X[i].id);
		c0 += c;
		pids[i] = X[i].pid;
	}
	pids[2] = topo_agent_pid(&T, 1), pids[3] = topo_agent_pid(&T, 2);
	p409a = apiserver_status_patch_409s(); /* the API server's counters start again with it */
	fp_ping_start(&F, S[0], S[1]);
	lead_watch_start(lw);
	for (int i = 0; i < before; i++)
		fp_add_ok(&F, b[i]);
	w_stop = wall_now();
	ck_assert_int_eq(cp_ctl(&cp, "stop-apiserver"), 0);
	t_stop = gt_now();
	for (int i = before; i < burst; i++) {
		double t0 = gt_now();

		ck_assert_msg(fp_rt(&F, b[i], "add", out, sizeof(out)) == 0, "ADD %s with the API down: %s", b[i]->name, out);
		b[i]->up = 1;
		if (gt_now() - t0 > 2) /* when, to read beside the agent's log */
			topo_sh("echo \"slow ADD: %s on n%d took %.2f s, ended $(date -u +%%H:%%M:%%S.%%N)\" >&2", b[i]->name,
				b[i]->node, gt_now() - t0);
		worst = gt_now() - t0 > worst ? gt_now() - t0 : worst;
		/* attached and forwarding on its node while the API is away */
		fp_a6(S[b[i]->node - 1], dst, sizeof(dst));
		ck_assert_msg(cnirt_wait_ping(&T, b[i]->name, dst, 10) == 0, "%s -> %s (same node) with the API down",
			      b[i]->name, dst);
	}
	t_burst = gt_now() - t_stop;
	/* every ADD of the burst ran with the API away (still no answer after the
	 * last); a burst slower than down_s (a loaded machine) makes the outage longer */
	ck_assert_msg(kreq(&cp, "GET", "/readyz", NULL, NULL, NULL, NULL) == 0,
		      "the API server answered right after the burst (%.1f s after the stop)", t_burst);
	while (gt_now() - t_stop < down_s)
		usleep(100 * 1000);
	t_call = gt_now();
	ck_assert_int_eq(cp_ctl(&cp, "start-apiserver"), 0);
	t_up = gt_now();
	converge_all("after the API server returned", t_up, soak() ? 240 : 90, &t_node, &t_st);
	lead_watch_stop(lw);
	l1 = leader(20);
	ck_assert_msg(l1 >= 0, "no translator leads after the outage (%s)", cp.dir);
	tr1 = lease_of(h1, sizeof(h1));
	back = informers_back_after_lead(&X[l1], w_stop, &relisted, slowest, sizeof(slowest), why, sizeof(why));
	for (int i = 0; i < 2; i++) {
		double c = conflicts(&X[i]);

		ck_assert_msg(c >= 0, "metrics of %s", X[i].id);
		c1 += c;
	}
	p409b = apiserver_status_patch_409s();
	check_managed_fields(&checked);
	fp_ping_stop(&F, &tx, &rx);
	printf("fault api: %d ADDs (%d before the stop, %d while down, the last %.1f s after the stop), API stopped "
	       "%.1f s before start-apiserver, which took %.1f s (down %.1f s in all); slowest ADD while down %.2f s; "
	       "after the API server was back: records, reports and veths matched in %.2f s, every claim Ready and "
	       "attachment Programmed (fields right, one of each per pod) in %.2f s\n", burst, before, burst - before,
	       t_burst, t_call - t_stop, t_up - t_call, t_up - t_stop, worst, t_node, t_st);
	printf("fault api: leader %s before (Lease holder %s, %ld transitions), %s after (holder %s, %ld transitions); "
	       "sampled %d times: leaders seen [%s], both leading %d times; conflicts counted by the translators %g; "
	       "status-PATCH 409s at the API server %g before the stop, %g since its restart; managedFields of %d "
	       "objects: no field of two managers; continuous ping s1 -> s2: %ld sent, %ld received, %ld lost\n",
	       X[l0].id, h0, tr0, X[l1].id, h1, tr1, lw->samples, lw->seq, lw->both, c1 - c0, p409a, p409b, checked, tx, rx,
	       tx - rx);
	printf("fault api: the translator's own part: %s led again (its first Lease write after the restart), its %d "
	       "informers that relisted had their lists %.2f s after that at the latest (%s)\n", X[l1].id, relisted,
	       back, slowest);
	ck_assert_msg(back >= 0, "%s", why);
	ck_assert_msg(relisted >= 4, "only %d informers of %s relisted after the API server's restart (%s)", relisted,
		      X[l1].id, cp.dir);
	/* The informers wait no reconnect backoff once the API server answers
	 * (kube_client_recoveries): before, up to TK_INFORMER_BACKOFF_MAX_S (5 s)
	 * after it did, and the claims behind a stale attachment cache. */
	ck_assert_msg(back <= TR_BACK_S, "informer %s of %s listed again %.2f s after %s led (bound %.1f s; %s)", slowest,
		      X[l1].id, back, X[l1].id, TR_BACK_S, cp.dir);
	ck_assert_msg(lw->both == 0, "two translators led at once in %d samples", lw->both);
	ck_assert_str_eq(h1, X[l1].id); /* the one leading holds the Lease */
	ck_assert_msg(tr1 >= tr0, "leaseTransitions went back (%ld -> %ld)", tr0, tr1);
	ck_assert_msg(c1 - c0 == 0, "the translators counted %g conflicts (409) during the outage", c1 - c0);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(X[i].pid == pids[i] && kill(pids[i], 0) == 0, "translator %s restarted or died", X[i].id);
	ck_assert_msg(topo_agent_pid(&T, 1) == pids[2] && topo_agent_pid(&T, 2) == pids[3], "an agent restarted");
	ck_assert_int_gt(tx, 50);
	ck_assert_msg(tx - rx <= 1, "running pods lost %ld of %ld echoes while the API was down", tx - rx, tx);
	for (int i = 0; i < burst; i++)
		fp_del_ok(&F, b[i]);
	fp_converge(&F, "burst pods deleted");
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/* Relists a daemon's log shows ("watch expired, relisting"), of one informer or (NULL) all. */
static long relists(const char *log, const char *informer)
{
	long n = fp_log_count(log, "watch expired, relisting", informer);

	ck_assert_msg(n >= 0, "cannot read %s", log);
	return n;
}

static const char *tlog(const struct replica *r, char *b, size_t n)
{
	snprintf(b, n, "%s/translator-%s.log", cp.dir, r->id);
	return b;
}

static const char *alog(int node, char *b, size_t n)
{
	snprintf(b, n, "%s/n%d/agent.log", T.dir, node);
	return b;
}

/* The translator's informers of the kinds the compaction fault changes (named by resource; the reports' by its mapping, "galactic" by default). */
static const char *const TINF[] = { "vpcattachments", "networkinterfaces", "networkinterfaceclaims", "galactic" };
#define NTINF (sizeof(TINF) / sizeof(TINF[0]))

/* Attachment p's Programmed condition: its status ("-" when none) and reason into reason. */
static const char *programmed_of(const struct fpod *p, char *reason, size_t n)
{
	static char st[16];
	char path[300];
	json_t *a;

	snprintf(path, sizeof(path), "%s/%s", VA_PATH, p->name);
	a = kget(&cp, path, NULL);
	snprintf(st, sizeof(st), "%s", a ? cond_of(a, "Programmed") : "-");
	snprintf(reason, n, "%s", kstr(kcond(a, "Programmed"), "reason", NULL) ?: "-");
	json_decref(a);
	return st;
}

/*
 * etcd compacted past every watcher. Each daemon reaches the API server
 * through a proxy of its own (agents n1 and n2, both translator replicas);
 * the test cuts them all, then changes what every watcher cares about:
 * on each node a pod attached (its upstream objects written first, as the
 * incumbents do), one deleted (CNI DEL: its report goes, its upstream
 * objects stay, as while the pod terminates) and one churned (ADD/DEL three
 * times). etcd is compacted at its current revision and the API server
 * restarted (no watch-cache history to serve the old revisions from), then
 * the proxies restored. Every daemon's informers must relist (a new "watch
 * expired, relisting" in each agent's log, and in each translator's for
 * every informer of a changed kind) and everything converge: records,
 * reports, veths; each node learned the other's new pod and forgot the
 * deleted and churned ones (record and kernel), pings across both ways;
 * the new pods' claims Ready and attachments Programmed with the fields
 * right; the deleted pods' attachments Programmed=False (ReportMissing: the
 * delete was only seen through the relist); the continuous ping loses
 * nothing; the leader is one, holding the Lease.
 */
START_TEST(t_etcd_compaction_past_every_watcher)
{
	const double t_test = gt_now();
	struct fpod *d[2], *e[2], *f[2];
	char out[8192], rev[64], a6[48], lg[700], reason[64], h[32];
	long a0[2], a1[2], t0r[2][NTINF], t1r[2][NTINF], tall0[2], tall1[2], tx, rx;
	double t0, t_node, t_st, t_routes = -1;
	int l;

	NEED_SETUP();
	bring_up();
	steady_pods();
	for (int n = 0; n < 2; n++) {
		d[n] = fp_new(&F, "c", n + 1);
		e[n] = fp_new(&F, "c", n + 1);
		f[n] = fp_new(&F, "c", n + 1);
	}
	{
		struct fpod *all[6] = { d[0], d[1], e[0], e[1], f[0], f[1] };

		incumbents_and_conflists(all, 2); /* d: attached before the cut */
		fp_add_ok(&F, d[0]);
		fp_add_ok(&F, d[1]);
		converge_all("before the cut", gt_now(), 90, &t_node, &t_st);
		ck_assert(fp_learned_pod(&F, 1, d[1]) && fp_learned_pod(&F, 2, d[0]));
		fp_ping_start(&F, S[0], S[1]);
		for (int k = 0; k < NPX; k++)
			tproxy_cut(PX[k]);
		incumbents_and_conflists(all + 2, 4); /* the incumbents reach the API server themselves */
	}
	for (int n = 0; n < 2; n++) {
		fp_add_ok(&F, e[n]);
		fp_del_ok(&F, d[n]);
		for (int i = 0; i < 3; i++) {
			fp_add_ok(&F, f[n]);
			fp_del_ok(&F, f[n]);
		}
	}
	sleep(2); /* the NSO stand-in's writes for the new claims */
	ck_assert_int_eq(topo_out(rev, sizeof(rev), "%s/tests/controlplane/cp.sh etcdctl %s endpoint status -w json | "
				  "jq -r '.[0].Status.header.revision'", cnirt_top(), cp.dir), 0);
	ck_assert_int_gt(atol(rev), 0);
	snprintf(out, sizeof(out), "etcdctl compact %s", rev);
	ck_assert_int_eq(cp_ctl(&cp, out), 0);
	ck_assert_int_eq(cp_ctl(&cp, "restart-apiserver"), 0);
	/* cut off, nobody can have heard of the changes */
	ck_assert_msg(fp_learned_pod(&F, 1, d[1]) && fp_learned_pod(&F, 2, d[0]), "a node forgot a deleted pod while cut off");
	for (int n = 1; n <= 2; n++)
		a0[n - 1] = relists(alog(n, lg, sizeof(lg)), NULL);
	for (int i = 0; i < 2; i++) {
		tall0[i] = relists(tlog(&X[i], lg, sizeof(lg)), NULL);
		for (size_t k = 0; k < NTINF; k++)
			t0r[i][k] = relists(lg, TINF[k]);
	}
	t0 = gt_now();
	for (int k = 0; k < NPX; k++)
		tproxy_restore(PX[k]);
	converge_all("after compaction", t0, 90, &t_node, &t_st);
	for (; gt_now() - t0 < 90; usleep(100 * 1000))
		if (fp_learned_pod(&F, 1, e[1]) && fp_learned_pod(&F, 2, e[0]) && !learned(1, d[1]) && !learned(2, d[0]) &&
		    !learned(1, f[1]) && !learned(2, f[0]) && routed(1, e[1]) && routed(2, e[0]) && !routed(1, d[1]) &&
		    !routed(2, d[0]) && !routed(1, f[1]) && !routed(2, f[0])) {
			t_routes = gt_now() - t0;
			break;
		}
	ck_assert_msg(t_routes >= 0, "routes not converged 90 s after the restore: n1 learned %s %d, forgot %s %d, %s %d; "
		      "n2 learned %s %d, forgot %s %d, %s %d", e[1]->name, fp_learned_pod(&F, 1, e[1]), d[1]->name,
		      !learned(1, d[1]), f[1]->name, !learned(1, f[1]), e[0]->name, fp_learned_pod(&F, 2, e[0]), d[0]->name,
		      !learned(2, d[0]), f[0]->name, !learned(2, f[0]));
	ck_assert_msg(cnirt_wait_ping(&T, S[0]->name, fp_a6(e[1], a6, sizeof(a6)), 20) == 0, "s1 -> %s", e[1]->name);
	ck_assert_msg(cnirt_wait_ping(&T, S[1]->name, fp_a6(e[0], a6, sizeof(a6)), 20) == 0, "s2 -> %s", e[0]->name);
	/* the deletes, seen only through the relists: the report is gone, the translator says so */
	for (int n = 0; n < 2; n++) {
		for (t0 = gt_now(); gt_now() - t0 < 30 && strcmp(programmed_of(d[n], reason, sizeof(reason)), "False");
		     usleep(200 * 1000))
			;
		ck_assert_msg(!strcmp(programmed_of(d[n], reason, sizeof(reason)), "False") &&
				      !strcmp(reason, "ReportMissing"),
			      "deleted %s: attachment Programmed=%s (%s), want False (ReportMissing)", d[n]->name,
			      programmed_of(d[n], reason, sizeof(reason)), reason);
	}
	for (int n = 1; n <= 2; n++)
		a1[n - 1] = relists(alog(n, lg, sizeof(lg)), NULL);
	for (int i = 0; i < 2; i++) {
		tall1[i] = relists(tlog(&X[i], lg, sizeof(lg)), NULL);
		for (size_t k = 0; k < NTINF; k++)
			t1r[i][k] = relists(lg, TINF[k]);
	}
	l = leader(20);
	ck_assert_int_ge(l, 0);
	lease_of(h, sizeof(h));
	fp_ping_stop(&F, &tx, &rx);
	printf("fault compaction: etcd compacted at revision %s past every watcher (4 proxies cut); after the restore: "
	       "records, reports and veths matched in %.2f s, statuses in %.2f s, routes both ways (new pods learned, "
	       "deleted and churned ones forgotten, record and kernel) in %.2f s; deleted pods' attachments "
	       "Programmed=False (ReportMissing)\n", rev, t_node, t_st, t_routes);
	printf("fault compaction: relists logged: agent n1 %ld, agent n2 %ld", a1[0] - a0[0], a1[1] - a0[1]);
	for (int i = 0; i < 2; i++) {
		printf(", %s %ld (", X[i].id, tall1[i] - tall0[i]);
		for (size_t k = 0; k < NTINF; k++)
			printf("%s%s %ld", k ? ", " : "", TINF[k], t1r[i][k] - t0r[i][k]);
		printf(")");
	}
	printf("; leader %s (Lease holder %s); continuous ping s1 -> s2: %ld sent, %ld received, %ld lost\n", X[l].id, h,
	       tx, rx, tx - rx);
	for (int n = 0; n < 2; n++)
		ck_assert_msg(a1[n] > a0[n], "agent n%d did not relist after the compaction (%s)", n + 1,
			      alog(n + 1, lg, sizeof(lg)));
	for (int i = 0; i < 2; i++)
		for (size_t k = 0; k < NTINF; k++)
			ck_assert_msg(t1r[i][k] > t0r[i][k], "%s: informer %s did not relist after the compaction (%s)", X[i].id,
				      TINF[k], tlog(&X[i], lg, sizeof(lg)));
	ck_assert_str_eq(h, X[l].id);
	ck_assert_int_gt(tx, 20);
	ck_assert_msg(tx - rx <= 1, "running pods lost %ld of %ld echoes", tx - rx, tx);
	for (int n = 0; n < 2; n++)
		fp_del_ok(&F, e[n]);
	for (int i = 0; i < 2; i++)
		fp_del_ok(&F, S[i]);
	fp_converge(&F, "compaction pods deleted");
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

/*
 * A node deleted from the cluster (its Node object) while its agent still
 * runs, as an operator decommissioning it does before the machine goes:
 * the garbage collector deletes its reports (ownerReference to the Node),
 * the other node's learner drops its routes toward the node's pods (record
 * and kernel), the node's agent does not write them back.
 */
START_TEST(t_node_deleted)
{
	const double t_test = gt_now();
	struct fpod *d[2], *e;
	char uid[64], out[8192];
	double t0, t_reports = -1, t_routes = -1;
	int owned = 0, n2pods = 0;

	NEED_SETUP();
	bring_up();
	d[0] = fp_new(&F, "d", 2);
	d[1] = fp_new(&F, "d", 2);
	e = fp_new(&F, "d", 1);
	for (int i = 0; i < 2; i++) {
		incumbents_and_conflist(d[i]);
		fp_add_ok(&F, d[i]);
	}
	incumbents_and_conflist(e);
	fp_add_ok(&F, e);
	statuses_converge_within("before the node is deleted", 60);
	for (t0 = gt_now(); gt_now() - t0 < 30 && !(learned(1, d[0]) && learned(1, d[1])); usleep(100 * 1000))
		;
	ck_assert_msg(learned(1, d[0]) && learned(1, d[1]) && routed(1, d[0]) && routed(1, d[1]),
		      "n1 never learned n2's pods");
	{
		char a6[48];

		ck_assert_msg(cnirt_wait_ping(&T, e->name, fp_a6(d[0], a6, sizeof(a6)), 20) == 0, "%s -> %s", e->name,
			      d[0]->name);
	}
	{
		json_t *node = kget(&cp, "/api/v1/nodes/n2", NULL);

		ck_assert_ptr_nonnull(node);
		snprintf(uid, sizeof(uid), "%s", kstr(json_object_get(node, "metadata"), "uid", NULL) ?: "");
		json_decref(node);
	}
	/* every report of n2 is owned by its Node */
	for (t0 = gt_now(); gt_now() - t0 < 20; usleep(100 * 1000))
		if ((n2pods = reports_of("n2", uid, &owned)) > 0 && owned == n2pods)
			break;
	ck_assert_msg(n2pods >= 2 && owned == n2pods, "n2's reports: %d, %d owned by Node n2 (uid %s)", n2pods, owned, uid);
	ck_assert_int_eq(kreq(&cp, "DELETE", "/api/v1/nodes/n2", NULL, NULL, NULL, NULL), 200);
	t0 = gt_now();
	while (gt_now() - t0 < 60 && (t_reports < 0 || t_routes < 0)) {
		if (t_reports < 0 && reports_of("n2", NULL, NULL) == 0)
			t_reports = gt_now() - t0;
		if (t_routes < 0 && !learned(1, d[0]) && !learned(1, d[1]) && !routed(1, d[0]) && !routed(1, d[1]))
			t_routes = gt_now() - t0;
		usleep(50 * 1000);
	}
	ck_assert_msg(t_reports >= 0, "n2's reports still there 60 s after its Node was deleted (%s/controller-manager.log)",
		      cp.dir);
	ck_assert_msg(t_routes >= 0, "n1 still routes toward n2's pods 60 s after the Node was deleted");
	/* n2's agent, still running, knows its Node is gone and writes nothing back */
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do grep -q 'Node n2 was deleted' %s/n2/agent.log && exit 0; sleep 0.1; done;"
				 " exit 1", T.dir), 0);
	sleep(3);
	ck_assert_int_eq(reports_of("n2", NULL, NULL), 0);
	ck_assert(!learned(1, d[0]) && !routed(1, d[0]));
	ck_assert_int_gt(reports_of("n1", NULL, NULL), 0); /* the other node's stay */
	printf("fault node: Node n2 (%d reports, all owned by it) deleted with its agent running: its reports gone "
	       "%.2f s later (garbage collector), n1's routes toward its pods gone %.2f s later (record and kernel); "
	       "none written back in the 3 s after\n", n2pods, t_reports, t_routes);
	topo_agent_stop(&T, 2, SIGTERM);
	ck_assert_msg(fp_rt(&F, e, "del", out, sizeof(out)) == 0, "del %s: %s", e->name, out);
	e->up = 0;
	d[0]->up = d[1]->up = 0; /* the node is gone */
	printf("fault time: %s %.1f s\n", __func__, gt_now() - t_test);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault_cluster");
	TCase *tc;

	/* One process: the agents' ports, the translator replicas (children of
	 * the test process, restarted by the first fault) and the pods are
	 * shared by the faults; the runner's outer timeout bounds a hang. */
	setenv("CK_FORK", "no", 1);
	tc = tcase_create("cluster");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, soak() ? 3000 : 900);
	if (getenv("GT_FAULT_ONLY") && !getenv("GT_ALLOW_FILTER")) {
		fprintf(stderr, "GT_FAULT_ONLY is set: refusing to run a subset (set GT_ALLOW_FILTER=1 to do that by hand)\n");
		return EXIT_FAILURE;
	}
#define ADD(t) do { if (!getenv("GT_FAULT_ONLY") || strstr(#t, getenv("GT_FAULT_ONLY"))) tcase_add_test(tc, t); } while (0)
	ADD(t_translator_killed_during_burst);
	ADD(t_token_rotated);
	ADD(t_apiserver_down_during_add_burst);
	ADD(t_etcd_compaction_past_every_watcher);
	ADD(t_node_deleted); /* last: the node is gone after it */
	suite_add_tcase(s, tc);
	return gt_run(s);
}
