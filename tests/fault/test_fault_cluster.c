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
 * with more kills.
 */
#include "tests/lib/cnirt.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cni/base62.h"

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

static struct cp cp;
static struct topo T;
static int setup_ok, cp_is_up;
static char setup_why[1024], work[600], tokdir[600], kcfg[700];
static int aport[3]; /* agents' metrics ports (n1, n2) */

static int soak(void)
{
	const char *s = getenv("GT_SOAK");

	return s && *s && strcmp(s, "0");
}

/* ---- pods ----------------------------------------------------------------- */

struct fpod {
	char name[16], att[16];
	int node, host, up;
};
#define MAXP 128
static struct fpod P[MAXP];
static int np;

static struct fpod *new_pod(const char *prefix, int node)
{
	struct fpod *p;

	ck_assert_int_lt(np, MAXP);
	p = &P[np];
	p->node = node;
	p->host = 20 + np;
	snprintf(p->name, sizeof(p->name), "%s%d", prefix, np);
	b62_encode(2000 + (uint64_t)np, p->att, sizeof(p->att));
	np++;
	return p;
}

static const char *a6_of(const struct fpod *p, char *b, size_t n)
{
	snprintf(b, n, "fd00:a::%x", p->host);
	return b;
}

static const char *a4_of(const struct fpod *p, char *b, size_t n)
{
	snprintf(b, n, "10.1.%d.%d", p->host / 250, p->host % 250 + 1);
	return b;
}

static int rt(const struct fpod *p, const char *verb, char *out, size_t n)
{
	char env[512], nsp[256], cid[80];

	if (topo_out(cid, sizeof(cid), "printf '%s-%s' | sha256sum | cut -c1-64", T.prefix, p->name))
		return -1;
	snprintf(env, sizeof(env), "CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=" TNS ";K8S_POD_NAME=%s;"
		 "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-%s'", p->name, cid, p->name);
	return cnirt_tool(&T, p->node, NULL, env, out, n, "cnirt %s %s %s %s eth0", verb, p->name,
			  cnirt_ns_path(&T, p->name, nsp, sizeof(nsp)), cid);
}

/*
 * What happens on a cell before the runtime calls CNI: compute's claim,
 * NSO's interface (bound, addressed), the VPC operator's attachment and its
 * status; then the pod's netns and the conflist the operator renders.
 */
static void incumbents_and_conflist(const struct fpod *p)
{
	char a4[40], a6[48], x[40];
	struct cnirt_att a = { .net = p->name, .vpc = VPC, .att = p->att, .mtu = 1400, .n_addrs = 2 };

	snprintf(a6, sizeof(a6), "%s/128", a6_of(p, x, sizeof(x)));
	snprintf(a4, sizeof(a4), "%s/32", a4_of(p, x, sizeof(x)));
	ck_assert_msg(topo_sh("bash -c 'set -euo pipefail; . %s/tests/lib/incumbents.sh; inc_init %s %s " TNS "; "
			      "inc_claim %s net-" VPC "; uid=$(inc_interface %s net-" VPC " %s %s); "
			      "inc_vpc_operator %s " VPC " %s \"$uid\" %s %s' >>%s/incumbents.log 2>&1",
			      cnirt_top(), cp.dir, work, p->name, p->name, a6, a4, p->name, p->att, a6, a4, cp.dir) == 0,
		      "stand-in incumbents for %s (%s/incumbents.log)", p->name, cp.dir);
	a.addrs[0].address = a6, a.addrs[0].gateway = "fe80::1";
	a.addrs[1].address = a4, a.addrs[1].gateway = "169.254.1.1";
	ck_assert_int_eq(cnirt_mkns(&T, p->name), 0);
	ck_assert_int_eq(cnirt_write_conflist(&T, p->node, p->name, cnirt_operator_conflist(&a, "1.1.0")), 0);
}

static void add_ok(struct fpod *p)
{
	char out[8192];

	ck_assert_msg(rt(p, "add", out, sizeof(out)) == 0, "cnirt add %s: %s", p->name, out);
	p->up = 1;
}

/* ---- daemons -------------------------------------------------------------- */

static void start_agent(int node)
{
	char extra[1400], s[512];

	if (!aport[node])
		aport[node] = gt_free_port();
	snprintf(extra, sizeof(extra), "--cni-socket %s --kubeconfig %s --node n%d --report-namespace " RNS
		 " --metrics-addr 127.0.0.1:%d", cnirt_sock(&T, node, s, sizeof(s)), kcfg, node, aport[node]);
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

static void start_translator(struct replica *r)
{
	char p[32], log[700];
	char *argv[] = { "build/rel/bin/galactic-translator", "--kubeconfig", kcfg, "--namespace", RNS, "--id", r->id,
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
	if (topo_up(&T, 2)) {
		snprintf(setup_why, sizeof(setup_why), "topo_up failed");
		return;
	}
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

static void teardown(void)
{
	if (getenv("GT_KEEP"))
		return;
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
		for (int i = 0; i < np; i++)
			topo_sh("ip netns del %s-%s 2>/dev/null; true", T.prefix, P[i].name);
	}
	topo_down(&T);
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

/* Every up pod: its claim Ready=True and its attachment Programmed=True; "" or the first that is not. */
static int statuses_converged(char *why, size_t n)
{
	json_t *l[2] = { NULL, NULL };
	int ok = 1;

	why[0] = 0;
	if (kreq(&cp, "GET", NIC_PATH, NULL, NULL, NULL, &l[0]) != 200 ||
	    kreq(&cp, "GET", VA_PATH, NULL, NULL, NULL, &l[1]) != 200) {
		snprintf(why, n, "list failed");
		ok = 0;
	}
	for (int i = 0; i < np && ok; i++) {
		json_t *x, *c = NULL, *a = NULL;
		size_t k;

		if (!P[i].up)
			continue;
		json_array_foreach(json_object_get(l[0], "items"), k, x)
			if (!strcmp(kstr(json_object_get(x, "metadata"), "name", NULL) ?: "", P[i].name))
				c = x;
		json_array_foreach(json_object_get(l[1], "items"), k, x)
			if (!strcmp(kstr(json_object_get(x, "metadata"), "name", NULL) ?: "", P[i].name))
				a = x;
		if (!c || strcmp(cond_of(c, "Ready"), "True")) {
			snprintf(why, n, "claim %s Ready=%s", P[i].name, c ? cond_of(c, "Ready") : "(no claim)");
			ok = 0;
		} else if (!a || strcmp(cond_of(a, "Programmed"), "True")) {
			snprintf(why, n, "attachment %s Programmed=%s", P[i].name, a ? cond_of(a, "Programmed") : "(none)");
			ok = 0;
		}
	}
	json_decref(l[0]);
	json_decref(l[1]);
	return ok;
}

static double statuses_converge_within(const char *tag, double limit)
{
	double t0 = gt_now();
	char why[512];
	int ok;

	while (!(ok = statuses_converged(why, sizeof(why))) && gt_now() - t0 < limit)
		usleep(200 * 1000);
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
	for (int i = 0; i < np; i++) {
		if (!P[i].up)
			continue;
		for (int k = 0; k < 3; k++) {
			json_t *o;

			snprintf(p, sizeof(p), "%s/%s", lists[k], P[i].name);
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
		struct fpod *p = new_pod("t", i % 2 ? 2 : 1);

		incumbents_and_conflist(p);
		add_ok(p);
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
	for (int i = 0; i < np; i++)
		if (P[i].up) {
			ck_assert_msg(rt(&P[i], "del", out, sizeof(out)) == 0, "del %s: %s", P[i].name, out);
			P[i].up = 0;
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
	p[0] = new_pod("k", 1);
	incumbents_and_conflist(p[0]);
	add_ok(p[0]);
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
		p[i] = new_pod("k", i % 2 ? 2 : 1);
		incumbents_and_conflist(p[i]);
		add_ok(p[i]);
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
		ck_assert_msg(rt(p[i], "del", out, sizeof(out)) == 0, "del %s: %s", p[i]->name, out);
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
		       "%s/n%d/record-remotes.json >/dev/null 2>&1", a6_of(p, a6, sizeof(a6)), a4_of(p, a4, sizeof(a4)),
		       T.dir, node) == 0;
}

/* Whether node's kernel routes p's addresses (any table). */
static int routed(int node, const struct fpod *p)
{
	char a6[48], a4[32];

	return topo_sh("{ ip -n %s-n%d -6 route show table all; ip -n %s-n%d -4 route show table all; } | "
		       "grep -q -e '^%s ' -e '^%s '", T.prefix, node, T.prefix, node, a6_of(p, a6, sizeof(a6)),
		       a4_of(p, a4, sizeof(a4))) == 0;
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
	d[0] = new_pod("d", 2);
	d[1] = new_pod("d", 2);
	e = new_pod("d", 1);
	for (int i = 0; i < 2; i++) {
		incumbents_and_conflist(d[i]);
		add_ok(d[i]);
	}
	incumbents_and_conflist(e);
	add_ok(e);
	statuses_converge_within("before the node is deleted", 60);
	for (t0 = gt_now(); gt_now() - t0 < 30 && !(learned(1, d[0]) && learned(1, d[1])); usleep(100 * 1000))
		;
	ck_assert_msg(learned(1, d[0]) && learned(1, d[1]) && routed(1, d[0]) && routed(1, d[1]),
		      "n1 never learned n2's pods");
	{
		char a6[48];

		ck_assert_msg(cnirt_wait_ping(&T, e->name, a6_of(d[0], a6, sizeof(a6)), 20) == 0, "%s -> %s", e->name,
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
	ck_assert_msg(rt(e, "del", out, sizeof(out)) == 0, "del %s: %s", e->name, out);
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
	tcase_set_timeout(tc, soak() ? 1800 : 400);
	tcase_add_test(tc, t_translator_killed_during_burst);
	tcase_add_test(tc, t_token_rotated);
	tcase_add_test(tc, t_node_deleted); /* last: the node is gone after it */
	suite_add_tcase(s, tc);
	return gt_run(s);
}
