/*
 * galactic-translator on a real kube-apiserver: NetworkInterface and
 * NetworkInterfaceClaim status (Prepared, Programmed; attachmentRef, vpc),
 * whose CRDs declare status.conditions as ATOMIC lists.
 *
 * Two replicas of the real (sanitized) binary run against the control plane
 * (--watch-namespace tenant-a). Stand-ins write what others own:
 *  - "nso" (NSO) keeps interface status phase/networkContextRef/Allocated and
 *    claim status networkInterfaceRef/addresses/Bound/Allocated/Ready with a
 *    read-modify-write PUT of /status (resourceVersion lock, as
 *    controller-runtime's Status().Update does), from a thread that runs
 *    concurrently with the translator; claim Ready = Bound ∧ Allocated ∧
 *    Prepared ∧ Programmed. In "churn" mode it also rotates its own entries
 *    in the list on every pass, so the translator's cached layout goes stale
 *    and its guarded patches are refused (422) and retried.
 *    Every pass checks that what it wrote last is still there, untouched.
 *  - "vpc-operator" (attachment ids, Ready) and "galactic-agent/node-a"
 *    (the NodeAttachment report), with server-side apply.
 * Measured numbers are printed with "MEASURE:".
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/translator_e2e.h"
#include "translator/nic.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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
/* Members every upstream condition requires besides type, status, reason. */
#define MLT "\"message\":\"\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\""
#define RNS "galactic-system"
#define TNS "tenant-a"
#define GNS "guard-ns" /* not watched by the replicas */
#define NI_BASE "/apis/networking.datumapis.com/v1alpha/namespaces/"
#define NI_PATH NI_BASE TNS "/networkinterfaces"
#define NIC_PATH NI_BASE TNS "/networkinterfaceclaims"
#define ATT_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" TNS "/vpcattachments"
#define REP_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define AGENT_MGR "galactic-agent/node-a"
#define VPCOP_MGR "vpc-operator"
#define NSO_MGR "nso"
#define TR_MGR "galactic-translator"

static struct cp cp;
static struct replica {
	char id[16];
	int port;
	pid_t pid;
} rep[2];
static int standin_apply_409s;
static const char *ready_reason = "Allocated"; /* the VPC operator's reason for Ready=True */

static pid_t start_replica(struct replica *r)
{
	char port[32], log[400];
	char *argv[] = { BIN, "--kubeconfig", cp.kubeconfig, "--namespace", RNS, "--watch-namespace",
			 TNS, "--id", r->id, "--lease-namespace", RNS, "--lease-duration", "4",
			 "--renew-deadline", "3", "--retry-period", "0.5", "--metrics-addr", port,
			 "--log-level", "info", NULL };
	pid_t pid;

	snprintf(port, sizeof(port), "127.0.0.1:%d", r->port);
	snprintf(log, sizeof(log), "%s/translator-%s.log", cp.dir, r->id);
	pid = gt_spawn(log, argv);
	ck_assert_int_ge(pid, 0);
	return pid;
}

/* ---- HTTP helpers ---- */

#define W_NI "galactic_translator_status_writes_total{kind=\"NetworkInterface\"}"
#define W_NIC "galactic_translator_status_writes_total{kind=\"NetworkInterfaceClaim\"}"
#define REJ_NI "galactic_translator_guarded_patch_rejections_total{kind=\"NetworkInterface\"}"
#define REJ_NIC "galactic_translator_guarded_patch_rejections_total{kind=\"NetworkInterfaceClaim\"}"
#define STALE_NI "galactic_translator_stale_apply_refusals_total{kind=\"NetworkInterface\"}"
#define STALE_NIC "galactic_translator_stale_apply_refusals_total{kind=\"NetworkInterfaceClaim\"}"
#define SKIP_NI "galactic_translator_status_write_skips_total{kind=\"NetworkInterface\"}"
#define SKIP_NIC "galactic_translator_status_write_skips_total{kind=\"NetworkInterfaceClaim\"}"
#define CONFLICTS "galactic_translator_conflicts_total"
#define LEADER "galactic_translator_leader"

static int leader_index(void)
{
	double a = gt_metric((&rep[0])->port, LEADER), b = gt_metric((&rep[1])->port, LEADER);
	if (a == 1 && b == 0)
		return 0;
	if (b == 1 && a == 0)
		return 1;
	return -1;
}

/* Waits until the leader's counters stop moving, then returns the sample. */
static double settled(int l, const char *sample)
{
	double w = gt_metric((&rep[l])->port, sample), w2;
	for (int i = 0; i < 40; i++) {
		usleep(250 * 1000);
		w2 = gt_metric((&rep[l])->port, sample);
		if (w2 == w)
			return w;
		w = w2;
	}
	return w;
}

static long apply(const char *path, const char *mgr, const char *body)
{
	return kapply(&cp, path, mgr, body, &standin_apply_409s);
}

static json_t *get(const char *path, long *code)
{
	return kget(&cp, path, code);
}

static json_t *obj_get(const char *base, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", base, name);
	return get(p, NULL);
}

static const char *sget(const json_t *o, const char *a, const char *b)
{
	return kstr(o, a, b);
}

static const json_t *cond(const json_t *o, const char *type)
{
	return kcond(o, type);
}

static int count_type(const json_t *o, const char *type)
{
	const json_t *c;
	size_t i;
	int n = 0;
	json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, c)
		n += !strcmp(json_string_value(json_object_get(c, "type")) ?: "", type);
	return n;
}

/* Polls until condition `type` has status (and reason if given). */
static json_t *wait_cond(const char *base, const char *name, const char *type, const char *status,
			 const char *reason, double timeout_s, double *took)
{
	double t0 = gt_now();
	while (gt_now() - t0 < timeout_s) {
		json_t *o = obj_get(base, name);
		const json_t *c = cond(o, type);
		if (c && !strcmp(json_string_value(json_object_get(c, "status")) ?: "", status) &&
		    (!reason || !strcmp(json_string_value(json_object_get(c, "reason")) ?: "", reason))) {
			if (took)
				*took = gt_now() - t0;
			return o;
		}
		json_decref(o);
		usleep(5000);
	}
	json_t *o = obj_get(base, name);
	char *d = o ? json_dumps(json_object_get(o, "status"), JSON_COMPACT) : NULL;
	ck_abort_msg("%s %s: %s did not become %s/%s within %.0fs; status %s", base, name, type, status,
		     reason ? reason : "*", timeout_s, d ? d : "(none)");
	return NULL;
}

/* ---- ownership table from docs/architecture.md ---- */

enum { K_IF, K_CLAIM };

struct names {
	char v[12][48];
	int n;
};
/* [kind][0 = NSO, 1 = translator], fields (lowercase) and conditions (Capitalised). */
static struct names tbl_fields[2][2], tbl_conds[2][2];

static bool names_has(const struct names *o, const char *s)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->v[i], s))
			return true;
	return false;
}

/* The NetworkInterface and NetworkInterfaceClaim rows written by NSO or the translator. */
static void table_rows(void)
{
	FILE *f = fopen("docs/architecture.md", "r");
	char line[1024];
	int kind = -1;

	memset(tbl_fields, 0, sizeof(tbl_fields));
	memset(tbl_conds, 0, sizeof(tbl_conds));
	ck_assert_msg(f, "docs/architecture.md: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *cells[5] = { 0 }, *p = line, *q;
		int n = 0, who;

		if (line[0] != '|')
			continue;
		while (n < 5 && (q = strchr(p, '|'))) {
			*q = 0;
			cells[n++] = p;
			p = q + 1;
		}
		if (n < 4)
			continue;
		if (strstr(cells[1], "NetworkInterfaceClaim"))
			kind = K_CLAIM;
		else if (strstr(cells[1], "NetworkInterface"))
			kind = K_IF;
		else if (strspn(cells[1], " ") != strlen(cells[1]))
			kind = -1;
		if (kind < 0)
			continue;
		who = strstr(cells[3], "NSO") ? 0 : strstr(cells[3], "translator") ? 1 : -1;
		if (who < 0)
			continue;
		for (char *b = strchr(cells[2], '`'); b; b = strchr(b + 1, '`')) {
			char *e = strchr(b + 1, '`');
			struct names *dst;
			if (!e)
				break;
			*e = 0;
			dst = b[1] >= 'A' && b[1] <= 'Z' ? &tbl_conds[kind][who] : &tbl_fields[kind][who];
			if (dst->n < 12)
				snprintf(dst->v[dst->n++], sizeof(dst->v[0]), "%s", b + 1);
			b = e;
		}
	}
	fclose(f);
	/* What this suite's stand-ins and the translator write must be what the table says. */
	ck_assert_msg(tbl_conds[K_IF][1].n == 2 && names_has(&tbl_conds[K_IF][1], "Prepared") &&
			      names_has(&tbl_conds[K_IF][1], "Programmed") &&
			      tbl_conds[K_CLAIM][1].n == 2 && names_has(&tbl_conds[K_CLAIM][1], "Prepared") &&
			      names_has(&tbl_conds[K_CLAIM][1], "Programmed"),
		      "translator conditions in the table are not Prepared, Programmed");
	ck_assert_msg(tbl_fields[K_IF][1].n == 2 && tbl_fields[K_CLAIM][1].n == 0 &&
			      tbl_fields[K_IF][0].n >= 2 && tbl_fields[K_CLAIM][0].n >= 3 &&
			      tbl_conds[K_IF][0].n >= 1 && tbl_conds[K_CLAIM][0].n >= 3,
		      "NetworkInterface/Claim rows of the ownership table not found");
}

/* ---- the stand-in NSO ---- */

#define NSO_MAX 4

static struct nso {
	pthread_t thr;
	pthread_mutex_t mu;
	atomic_bool stop, churn;
	struct nso_obj {
		int kind;
		char name[64];
		char ifname[64]; /* claims: the interface NSO bound */
		json_t *last;    /* NSO's part as last written */
		atomic_bool poke; /* next pass: one update that changes nothing the translator reads */
	} o[NSO_MAX];
	int n;
	atomic_int writes, conflicts, lost, ready_true;
	char lost_what[512];
} nso;

/* NSO's condition types: the table's NSO rows. */
static bool is_nso_type(int kind, const char *t)
{
	return names_has(&tbl_conds[kind][0], t);
}

/* NSO's part of an object: its status fields and its condition entries, in order. */
static json_t *nso_part(int kind, const json_t *obj)
{
	const json_t *st = json_object_get(obj, "status"), *c;
	json_t *p = json_object(), *conds = json_array();
	const struct names *f = &tbl_fields[kind][0];
	size_t i;

	for (int k = 0; k < f->n; k++)
		if (json_object_get(st, f->v[k]))
			json_object_set(p, f->v[k], json_object_get(st, f->v[k]));
	json_array_foreach(json_object_get(st, "conditions"), i, c)
		if (is_nso_type(kind, json_string_value(json_object_get(c, "type")) ?: ""))
			json_array_append(conds, (json_t *)c);
	json_object_set_new(p, "conditions", conds);
	return p;
}

static bool cond_true(const json_t *o, const char *type)
{
	return !strcmp(sget(cond(o, type), "status", NULL) ?: "", "True");
}

/* Sets NSO's condition `type` in list (in place or appended). */
static void upsert(json_t *list, const char *type, const char *status, const char *reason)
{
	json_t *c;
	size_t i;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_array_foreach(list, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", type)) {
			if (strcmp(json_string_value(json_object_get(c, "status")) ?: "", status))
				json_object_set_new(c, "lastTransitionTime", json_string(now));
			json_object_set_new(c, "status", json_string(status));
			json_object_set_new(c, "reason", json_string(reason));
			json_object_set_new(c, "message", json_string("set by nso"));
			return;
		}
	json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status,
					      "reason", reason, "message", "set by nso",
					      "lastTransitionTime", now));
}

/*
 * Moves NSO's first own entry to the end of the list, or to the front when it
 * is first already (legal: the list is atomic, its order means nothing), so
 * the layout always changes while the list has another entry.
 */
static void rotate_own(int kind, json_t *list)
{
	json_t *c;
	size_t i;
	json_array_foreach(list, i, c)
		if (is_nso_type(kind, json_string_value(json_object_get(c, "type")) ?: "")) {
			json_incref(c);
			json_array_remove(list, i);
			if (i == 0)
				json_array_append_new(list, c);
			else
				json_array_insert_new(list, 0, c);
			return;
		}
}

static void nso_pass(struct nso_obj *x)
{
	char p[256], *body;
	const char *base = x->kind == K_IF ? NI_PATH : NIC_PATH;
	json_t *o, *st, *list, *before, *mine, *out = NULL;
	long code;

	o = obj_get(base, x->name);
	if (!o)
		return;
	/* What NSO wrote last must still be there, unchanged by anybody else. */
	mine = nso_part(x->kind, o);
	pthread_mutex_lock(&nso.mu);
	if (x->last && !json_equal(x->last, mine)) {
		char *a = json_dumps(x->last, JSON_COMPACT), *b = json_dumps(mine, JSON_COMPACT);
		atomic_fetch_add(&nso.lost, 1);
		snprintf(nso.lost_what, sizeof(nso.lost_what), "%s: wrote %s, found %s", x->name, a, b);
		free(a);
		free(b);
	}
	pthread_mutex_unlock(&nso.mu);
	json_decref(mine);
	before = json_deep_copy(json_object_get(o, "status"));
	st = json_object_get(o, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(o, "status", st);
	}
	list = json_object_get(st, "conditions");
	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(st, "conditions", list);
	}
	if (x->kind == K_IF) {
		json_object_set_new(st, "phase", json_string("Bound"));
		json_object_set_new(st, "networkContextRef", json_pack("{s:s}", "name", "ctx-1"));
		upsert(list, "Allocated", "True", "AddressesAllocated");
	} else {
		json_object_set_new(st, "networkInterfaceRef", json_pack("{s:s}", "name", x->ifname));
		/* Objects, as upstream declares them. */
		json_object_set_new(st, "addresses", json_pack("[{s:s, s:s, s:b}]", "family", "IPv6",
							       "address", "fd20:60:ff03:0:1::/96", "primary", 1));
		json_object_set_new(st, "externalAddresses",
				    json_pack("[{s:s, s:s, s:s}]", "family", "IPv4", "address", "203.0.113.5", "class", "public"));
		upsert(list, "Bound", "True", "Bound");
		upsert(list, "Allocated", "True", "AddressesAllocated");
		bool ready = cond_true(o, "Bound") && cond_true(o, "Allocated") &&
			     cond_true(o, "Prepared") && cond_true(o, "Programmed");
		upsert(list, "Ready", ready ? "True" : "False", ready ? "Ready" : "NotReady");
	}
	bool poked = atomic_exchange(&x->poke, false);
	if (atomic_load(&nso.churn) || poked)
		rotate_own(x->kind, list);
	if (json_equal(before, st)) {
		json_decref(before);
		json_decref(o);
		return;
	}
	json_decref(before);
	snprintf(p, sizeof(p), "%s/%s/status?fieldManager=" NSO_MGR, base, x->name);
	body = json_dumps(o, JSON_COMPACT);
	code = kreq(&cp, "PUT", p, "application/json", body, NULL, &out);
	free(body);
	if (code == 200) {
		atomic_fetch_add(&nso.writes, 1);
		pthread_mutex_lock(&nso.mu);
		json_decref(x->last);
		x->last = nso_part(x->kind, out);
		pthread_mutex_unlock(&nso.mu);
		if (x->kind == K_CLAIM && cond_true(out, "Ready"))
			atomic_store(&nso.ready_true, 1);
	} else {
		if (code == 409)
			atomic_fetch_add(&nso.conflicts, 1); /* someone wrote since our GET: read again */
		if (poked)
			atomic_store(&x->poke, true);
	}
	json_decref(out);
	json_decref(o);
}

static void *nso_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&nso.stop)) {
		int n;
		pthread_mutex_lock(&nso.mu);
		n = nso.n;
		pthread_mutex_unlock(&nso.mu);
		for (int i = 0; i < n; i++)
			nso_pass(&nso.o[i]);
		usleep(atomic_load(&nso.churn) ? 5 * 1000 : 20 * 1000);
	}
	return NULL;
}

static void nso_manage(int kind, const char *name, const char *ifname)
{
	pthread_mutex_lock(&nso.mu);
	ck_assert_int_lt(nso.n, NSO_MAX);
	nso.o[nso.n].kind = kind;
	snprintf(nso.o[nso.n].name, sizeof(nso.o[0].name), "%s", name);
	snprintf(nso.o[nso.n].ifname, sizeof(nso.o[0].ifname), "%s", ifname ? ifname : "");
	nso.n++;
	pthread_mutex_unlock(&nso.mu);
}

/* ---- other stand-ins ---- */

static void vpcop_write(const char *name, const char *vpc, const char *vatt, const char *ready)
{
	char body[1024], p[256];
	snprintf(p, sizeof(p), "%s/%s/status", ATT_PATH, name);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" TNS "\"},"
		 "\"status\":{\"vpc\":\"%s\",\"vpcAttachment\":\"%s\",\"networkAttachmentDefinition\":\"nad-%s\","
		 "\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\","
		 "\"reason\":\"%s\",\"message\":\"ids\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
		 name, vpc, vatt, name, ready, !strcmp(ready, "True") ? ready_reason : "Allocating");
	ck_assert_int_eq(apply(p, VPCOP_MGR, body), 200);
}

static void report_write(const char *rname, const char *vpc, const char *vatt, const char *status)
{
	char body[1400], p[256];
	snprintf(p, sizeof(p), "%s/%s", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"spec\":{\"node\":\"node-a\",\"vpc\":\"%s\",\"vpcAttachment\":\"%s\",\"containerID\":\"c0ffee01\","
		 "\"pod\":{\"namespace\":\"" TNS "\",\"name\":\"pod-1\"},\"hostInterface\":\"gv1f2e\","
		 "\"guestInterface\":\"eth0\",\"table\":100,"
		 "\"podSubnets\":[\"10.1.0.0/24\"],\"localSID\":\"fc00:0:1:1:e001::\"}}",
		 rname, vpc, vatt);
	ck_assert_int_ge(apply(p, AGENT_MGR, body), 200);
	snprintf(p, sizeof(p), "%s/%s/status", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"status\":{\"observedGeneration\":1,\"reporter\":{\"node\":\"node-a\",\"datapath\":\"kernel\","
		 "\"agentInstance\":\"agent-1\"},"
		 "\"conditions\":[{\"type\":\"Programmed\",\"status\":\"%s\",\"reason\":\"%s\","
		 "\"message\":\"checked in the kernel\",\"observedGeneration\":1,"
		 "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
		 rname, status, !strcmp(status, "True") ? "KernelVerified" : "RouteMissing");
	ck_assert_int_eq(apply(p, AGENT_MGR, body), 200);
}

static void create(const char *path, const char *body)
{
	long code = 0;
	for (int i = 0; i < 100; i++) {
		code = kreq(&cp, "POST", path, "application/json", body, NULL, NULL);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(code, 201);
}

static void create_claim(const char *base, const char *name)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterfaceClaim\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"network\":{\"name\":\"net-1\"},"
		 "\"attachmentMode\":\"Netns\",\"ipFamilies\":[\"IPv4\"]}}",
		 name);
	create(base, body);
}

/* Creates an interface bound to claim; returns its uid (static buffer). */
static const char *create_iface(const char *base, const char *name, const char *claim)
{
	static char uid[64];
	char body[512];
	json_t *o;

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"network\":{\"name\":\"net-1\"},"
		 "\"claimRef\":{\"name\":\"%s\"},\"interfaceName\":\"eth0\",\"mtu\":1500}}",
		 name, claim);
	create(base, body);
	o = obj_get(base, name);
	ck_assert_ptr_nonnull(o);
	snprintf(uid, sizeof(uid), "%s", sget(json_object_get(o, "metadata"), "uid", NULL));
	json_decref(o);
	return uid;
}

/* An attachment as the cloud NetworkInterfaceReconciler makes it: controller-owned by the
 * interface (owner_uid), spec.interfaceRef.name (upstream has no uid there). */
static void create_att(const char *name, const char *ifname, const char *owner_uid)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"ownerReferences\":[{\"apiVersion\":"
		 "\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\",\"name\":\"%s\","
		 "\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
		 "\"spec\":{\"vpc\":{\"name\":\"vpc-blue\"},\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},"
		 "\"interfaceRef\":{\"name\":\"%s\"}}}",
		 name, ifname, owner_uid, ifname);
	create(ATT_PATH, body);
}

/* Deletes an attachment (a garbage collector may have removed one whose owner uid is gone). */
static void delete_att(const char *name)
{
	char p[256];
	long code;
	snprintf(p, sizeof(p), "%s/%s", ATT_PATH, name);
	code = kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL);
	ck_assert_msg(code == 200 || code == 404, "DELETE %s: %ld", p, code);
	for (int i = 0; i < 200 && code != 404; i++) {
		json_decref(kget(&cp, p, &code));
		usleep(20 * 1000);
	}
}

/* ---- ownership checks ---- */

/* Fields (f:...) under status owned by manager with operation op; NULL if no entry. */
static const json_t *owned(const json_t *o, const char *mgr, const char *op)
{
	const json_t *e;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e)
		if (!strcmp(sget(e, "manager", NULL) ?: "", mgr) &&
		    !strcmp(sget(e, "operation", NULL) ?: "", op) &&
		    !strcmp(sget(e, "subresource", NULL) ?: "", "status"))
			return json_object_get(json_object_get(e, "fieldsV1"), "f:status");
	return NULL;
}

/* Asserts the status owners: field f only by (mgr_f, op); nobody else owns it. */
static void assert_sole_owner(const json_t *o, const char *field, const char *mgr, const char *op)
{
	const json_t *e;
	size_t i;
	int owners = 0;
	char fk[64];

	snprintf(fk, sizeof(fk), "f:%s", field);
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e) {
		const json_t *s = json_object_get(json_object_get(e, "fieldsV1"), "f:status");
		if (!json_object_get(s, fk))
			continue;
		owners++;
		ck_assert_msg(!strcmp(sget(e, "manager", NULL) ?: "", mgr) &&
				      !strcmp(sget(e, "operation", NULL) ?: "", op),
			      "status.%s owned by %s/%s, want %s/%s", field, sget(e, "manager", NULL),
			      sget(e, "operation", NULL), mgr, op);
	}
	ck_assert_msg(owners == 1, "status.%s has %d owners", field, owners);
}

static const bool MAPLIST = !strcmp(GT_CRD_VARIANT, "maplist");

/* The one manager owning condition entry `type` of a map list (asserted single), or NULL. */
static const char *entry_owner(const json_t *o, const char *type)
{
	const json_t *e;
	size_t i;
	const char *who = NULL;
	char ck[96];
	snprintf(ck, sizeof(ck), "k:{\"type\":\"%s\"}", type);
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e) {
		const json_t *s = json_object_get(json_object_get(e, "fieldsV1"), "f:status");
		if (!json_object_get(json_object_get(s, "f:conditions"), ck))
			continue;
		ck_assert_msg(!who, "condition %s owned by %s and %s", type, who, sget(e, "manager", NULL));
		who = sget(e, "manager", NULL);
	}
	return who;
}

/*
 * Atomic list: exactly one manager owns f:conditions, and it is one of its
 * writers. Map list (maplist variant): every entry has one owner, the
 * translator's Prepared/Programmed the translator, the others NSO (or
 * nobody: the schema's seeds); returns "per-entry".
 */
static const char *conditions_owner(const json_t *o)
{
	const json_t *e;
	size_t i;
	const char *who = NULL;
	if (MAPLIST) {
		json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, e) {
			const char *t = sget(e, "type", NULL) ?: "";
			const char *w = entry_owner(o, t);
			bool ours = !strcmp(t, "Prepared") || !strcmp(t, "Programmed");
			ck_assert_msg(!w || !strcmp(w, ours ? TR_MGR : NSO_MGR), "condition %s owned by %s", t, w);
		}
		return "per-entry";
	}
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e) {
		const json_t *s = json_object_get(json_object_get(e, "fieldsV1"), "f:status");
		if (!json_object_get(s, "f:conditions"))
			continue;
		ck_assert_msg(!who, "f:conditions owned by %s and %s", who, sget(e, "manager", NULL));
		who = sget(e, "manager", NULL);
		/* An atomic list has no per-entry keys (k:{"type":...}) in managedFields. */
		ck_assert_int_le(json_object_size(json_object_get(s, "f:conditions")), 1);
	}
	ck_assert_msg(who && (!strcmp(who, NSO_MGR) || !strcmp(who, TR_MGR)),
		      "f:conditions owned by %s", who ? who : "nobody");
	return who;
}

/*
 * One object against the table: every status field of a row is present and
 * owned by that row's writer alone (NSO: its Update entry; translator: its
 * Apply entry); every condition of a row appears exactly once, the
 * translator's with the translator's reasons, NSO's as NSO wrote them (the
 * NSO thread checks that on every pass). Nobody else owns anything under
 * status, and f:conditions, atomic, belongs to one of the two.
 */
static void check_table(const json_t *o, int kind)
{
	const json_t *e;
	size_t i;

	for (int w = 0; w < 2; w++) {
		for (int k = 0; k < tbl_fields[kind][w].n; k++)
			assert_sole_owner(o, tbl_fields[kind][w].v[k], w ? TR_MGR : NSO_MGR,
					  w ? "Apply" : "Update");
		for (int k = 0; k < tbl_conds[kind][w].n; k++) {
			const char *t = tbl_conds[kind][w].v[k];
			ck_assert_msg(count_type(o, t) == 1, "condition %s appears %d times", t,
				      count_type(o, t));
			if (w)
				ck_assert_msg(!strncmp(sget(cond(o, t), "reason", NULL), "Attachment", 10) ||
						      !strncmp(sget(cond(o, t), "reason", NULL), "Interface", 9),
					      "%s has reason %s, not the translator's", t,
					      sget(cond(o, t), "reason", NULL));
			else
				ck_assert_str_eq(sget(cond(o, t), "message", NULL), "set by nso");
		}
	}
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e) {
		const char *m = sget(e, "manager", NULL) ?: "";
		if (json_object_get(json_object_get(e, "fieldsV1"), "f:status"))
			ck_assert_msg(!strcmp(m, NSO_MGR) || !strcmp(m, TR_MGR),
				      "%s owns status fields", m);
	}
	conditions_owner(o);
}

static void o_check_lost(void)
{
	ck_assert_msg(atomic_load(&nso.lost) == 0, "NSO lost data: %s", nso.lost_what);
}

/* ---- fixture ---- */

static void setup(void)
{
	te_up(&cp, GT_CRD_VARIANT, true, (const char *const[]){ RNS, TNS, GNS, NULL });
	pthread_mutex_init(&nso.mu, NULL);
	table_rows();
	for (int i = 0; i < 2; i++) {
		snprintf(rep[i].id, sizeof(rep[i].id), "tr-%c", 'a' + i);
		rep[i].port = gt_free_port();
		rep[i].pid = start_replica(&rep[i]);
	}
}

static void nso_stop(void)
{
	if (nso.thr) {
		atomic_store(&nso.stop, true);
		pthread_join(nso.thr, NULL);
		nso.thr = 0;
	}
}

static void teardown(void)
{
	nso_stop();
	for (int i = 0; i < nso.n; i++)
		json_decref(nso.o[i].last);
	for (int i = 0; i < 2; i++)
		te_kill(&rep[i].pid);
	te_down(&cp, "translator-*.log");
}

/* ---- tests (in order, sharing the control plane, the replicas and the NSO thread) ---- */

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
	ck_assert_msg(l >= 0, "no single leader within 60s");
	printf("MEASURE: leader %s elected %.2fs after start\n", rep[l].id, gt_now() - t0);
}
END_TEST

/*
 * The patch builder's guards, sent as built to the real API server (in a
 * namespace the replicas do not watch): a list that grew, shrank or was
 * reordered since the snapshot refuses the patch (422) and changes nothing;
 * the same patch rebuilt from the fresh object applies and keeps every
 * other entry in place.
 */
START_TEST(test_guards_on_real_apiserver)
{
	const char *base = NI_BASE GNS "/networkinterfaces";
	char p[256], err[256], *body;
	json_t *snap, *want, *ops, *o, *out = NULL;
	long code;

	create_iface(base, "g1", "c1");
	snprintf(p, sizeof(p), "%s/g1/status?fieldManager=" NSO_MGR, base);
	ck_assert_int_eq(kreq(&cp, "PATCH", p, "application/merge-patch+json",
			      "{\"status\":{\"phase\":\"Bound\",\"conditions\":["
			      "{\"type\":\"Allocated\",\"status\":\"True\",\"reason\":\"A\"," MLT "},"
			      "{\"type\":\"Bound\",\"status\":\"True\",\"reason\":\"B\"," MLT "}]}}",
			      NULL, NULL), 200);
	want = json_loads("[{\"type\":\"Prepared\",\"status\":\"True\",\"reason\":\"AttachmentReady\","
			  "\"message\":\"m\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]", 0, NULL);
	snap = obj_get(base, "g1");
	ops = cond_patch_build(snap, want, err, sizeof(err));
	ck_assert_msg(ops && json_array_size(ops) == 4, "%s", err); /* 2 type tests, length, add */
	body = json_dumps(ops, JSON_COMPACT);
	snprintf(p, sizeof(p), "%s/g1/status?fieldManager=" TR_MGR, base);

	static const char *const changes[] = {
		/* grew: NSO appended an entry */
		"[{\"type\":\"Allocated\",\"status\":\"True\",\"reason\":\"A\"," MLT "},"
		"{\"type\":\"Bound\",\"status\":\"True\",\"reason\":\"B\"," MLT "},"
		"{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"R\"," MLT "}]",
		/* reordered */
		"[{\"type\":\"Bound\",\"status\":\"True\",\"reason\":\"B\"," MLT "},"
		"{\"type\":\"Allocated\",\"status\":\"True\",\"reason\":\"A\"," MLT "}]",
		/* shrank */
		"[{\"type\":\"Allocated\",\"status\":\"True\",\"reason\":\"A\"," MLT "}]",
	};
	for (int i = 0; i < 3; i++) {
		char np[256], nb[600];
		snprintf(np, sizeof(np), "%s/g1/status?fieldManager=" NSO_MGR, base);
		snprintf(nb, sizeof(nb), "{\"status\":{\"conditions\":%s}}", changes[i]);
		ck_assert_int_eq(kreq(&cp, "PATCH", np, "application/merge-patch+json", nb, NULL, NULL), 200);
		code = kreq(&cp, "PATCH", p, "application/json-patch+json", body, NULL, NULL);
		ck_assert_msg(code == 422, "stale patch (change %d) answered %ld, want 422", i, code);
		o = obj_get(base, "g1");
		json_t *exp = json_loads(changes[i], 0, NULL);
		ck_assert_msg(json_equal(json_object_get(json_object_get(o, "status"), "conditions"), exp),
			      "a refused patch changed the list");
		json_decref(exp);
		json_decref(o);
	}
	/* Rebuilt from the fresh object: applies; NSO's entry stays first and unchanged. */
	json_decref(ops);
	json_decref(snap);
	free(body);
	snap = obj_get(base, "g1");
	ops = cond_patch_build(snap, want, err, sizeof(err));
	body = json_dumps(ops, JSON_COMPACT);
	ck_assert_int_eq(kreq(&cp, "PATCH", p, "application/json-patch+json", body, NULL, &out), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(out, "status"), "conditions")), 2);
	ck_assert_str_eq(sget(cond(out, "Allocated"), "reason", NULL), "A");
	ck_assert_str_eq(sget(cond(out, "Prepared"), "reason", NULL), "AttachmentReady");
	ck_assert_str_eq(sget(json_object_get(out, "status"), "phase", NULL), "Bound");
	/* managedFields of an atomic list: the JSON Patch (an Update) took the whole list;
	 * of a map list: only the entry it wrote. */
	if (MAPLIST) {
		ck_assert_str_eq(entry_owner(out, "Prepared"), TR_MGR);
		ck_assert_str_eq(entry_owner(out, "Allocated"), NSO_MGR);
	} else {
		ck_assert_str_eq(conditions_owner(out), TR_MGR);
	}
	assert_sole_owner(out, "phase", NSO_MGR, "Update");
	/* And rebuilt against the result: nothing left to do. */
	json_decref(ops);
	ops = cond_patch_build(out, want, err, sizeof(err));
	ck_assert_uint_eq(json_array_size(ops), 0);
	printf("MEASURE: guarded patch on a grown/reordered/shrunk list: 3 x 422, list unchanged; "
	       "rebuilt: 200\n");
	free(body);
	json_decref(ops);
	json_decref(out);
	json_decref(snap);
	json_decref(want);
}
END_TEST

static const char *nic1_uid;
static char nic1_uid_buf[64];

/*
 * The whole path in a quiet phase (NSO only writes when something changes):
 * missing attachment, attachment not ready, ready, programmed; claim Ready
 * by NSO; managedFields; one write per transition.
 */
START_TEST(test_interface_and_claim_follow)
{
	int l = leader_index();
	double took, w0i, w0c, w1i, w1c, t0;
	json_t *o;

	ck_assert_int_ge(l, 0);
	create_claim(NIC_PATH, "claim1");
	nic1_uid = create_iface(NI_PATH, "nic1", "claim1");
	snprintf(nic1_uid_buf, sizeof(nic1_uid_buf), "%s", nic1_uid);
	nic1_uid = nic1_uid_buf;
	nso_manage(K_IF, "nic1", NULL);
	nso_manage(K_CLAIM, "claim1", "nic1");
	ck_assert_int_eq(pthread_create(&nso.thr, NULL, nso_loop, NULL), 0);

	/* No attachment yet: the interface says so; the claim too, through the interface. */
	o = wait_cond(NI_PATH, "nic1", "Prepared", "False", "AttachmentMissing", 20, NULL);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "attachmentRef"));
	json_decref(o);
	o = wait_cond(NIC_PATH, "claim1", "Programmed", "False", "AttachmentMissing", 20, NULL);
	ck_assert_str_eq(sget(cond(o, "Programmed"), "message", NULL),
			 "no VPCAttachment nic1 controlled by NetworkInterface nic1");
	ck_assert_str_eq(sget(cond(o, "Bound"), "status", NULL), "True");
	ck_assert_str_eq(sget(cond(o, "Ready"), "status", NULL), "False");
	json_decref(o);

	/* An attachment controlled by an older incarnation (owner uid) does not count,
	 * nor one of another name controlled by this one. */
	create_att("nic1", "nic1", "not-the-uid");
	create_att("att-other", "nic1", nic1_uid);
	sleep(1);
	o = obj_get(NI_PATH, "nic1");
	ck_assert_str_eq(sget(cond(o, "Prepared"), "reason", NULL), "AttachmentMissing");
	json_decref(o);
	delete_att("nic1");
	delete_att("att-other");

	/* The attachment appears, not ready yet. */
	w0i = settled(l, W_NI);
	w0c = settled(l, W_NIC);
	create_att("nic1", "nic1", nic1_uid);
	vpcop_write("nic1", "Vb1", "Ab1", "False");
	o = wait_cond(NI_PATH, "nic1", "Prepared", "False", "AttachmentNotReady", 20, NULL);
	ck_assert_str_eq(sget(json_object_get(json_object_get(o, "status"), "attachmentRef"), "name", NULL), "nic1");
	ck_assert_str_eq(sget(json_object_get(json_object_get(o, "status"), "attachmentRef"), "kind", NULL), "VPCAttachment");
	ck_assert_str_eq(sget(json_object_get(json_object_get(o, "status"), "attachmentRef"), "apiGroup", NULL), "cloud.datumapis.com");
	/* The VPC operator's base62 VPC id from the attachment's status, not spec.vpc.name. */
	ck_assert_str_eq(sget(json_object_get(o, "status"), "vpc", NULL), "Vb1");
	json_decref(o);
	json_decref(wait_cond(NIC_PATH, "claim1", "Prepared", "False", "AttachmentNotReady", 20, NULL));
	w1i = settled(l, W_NI);
	w1c = settled(l, W_NIC);
	printf("MEASURE: attachment created + VPC operator status: interface %.0f writes, claim %.0f writes\n",
	       w1i - w0i, w1c - w0c);

	/* Ready -> Prepared=True: one write each. */
	vpcop_write("nic1", "Vb1", "Ab1", "True");
	json_decref(wait_cond(NI_PATH, "nic1", "Prepared", "True", "AttachmentReady", 20, &took));
	printf("MEASURE: attachment Ready=True -> interface Prepared=True in %.1f ms\n", took * 1e3);
	json_decref(wait_cond(NIC_PATH, "claim1", "Prepared", "True", "AttachmentReady", 20, NULL));
	w0i = settled(l, W_NI);
	w0c = settled(l, W_NIC);
	printf("MEASURE: Prepared False->True: interface %.0f writes, claim %.0f writes\n", w0i - w1i,
	       w0c - w1c);
	ck_assert_msg(w0i - w1i == 1 && w0c - w1c == 1, "Prepared transition took %.0f/%.0f writes",
		      w0i - w1i, w0c - w1c);

	/* The node's report: attachment Programmed, then interface and claim, then claim Ready. */
	t0 = gt_now();
	report_write("node-a-vb1-ab1", "Vb1", "Ab1", "True");
	json_decref(wait_cond(ATT_PATH, "nic1", "Programmed", "True", NULL, 20, NULL));
	json_decref(wait_cond(NI_PATH, "nic1", "Programmed", "True", "AttachmentProgrammed", 20, NULL));
	json_decref(wait_cond(NIC_PATH, "claim1", "Programmed", "True", "AttachmentProgrammed", 20, NULL));
	printf("MEASURE: report Programmed=True -> claim Programmed=True (translator only, 2 hops) in %.1f ms\n",
	       (gt_now() - t0) * 1e3);
	o = wait_cond(NIC_PATH, "claim1", "Ready", "True", NULL, 20, NULL);
	printf("MEASURE: report Programmed=True -> claim Ready=True (via translator and NSO) in %.1f ms\n",
	       (gt_now() - t0) * 1e3);
	json_decref(o);
	w1i = settled(l, W_NI);
	w1c = settled(l, W_NIC);
	printf("MEASURE: Programmed False->True: interface %.0f writes, claim %.0f writes\n", w1i - w0i,
	       w1c - w0c);
	ck_assert_msg(w1i - w0i == 1 && w1c - w0c == 1, "Programmed transition took %.0f/%.0f writes",
		      w1i - w0i, w1c - w0c);

	/* Ownership against the table in docs/architecture.md. */
	o = obj_get(NI_PATH, "nic1");
	check_table(o, K_IF);
	const json_t *tra = owned(o, TR_MGR, "Apply");
	/* attachmentRef, vpc; on a map list also its two condition entries (one apply). */
	ck_assert_uint_eq(json_object_size((json_t *)tra) - (json_object_get(tra, ".") ? 1 : 0),
			  MAPLIST ? 3 : 2);
	if (MAPLIST) {
		ck_assert_ptr_nonnull(json_object_get(json_object_get(tra, "f:conditions"), "k:{\"type\":\"Prepared\"}"));
		ck_assert_ptr_nonnull(json_object_get(json_object_get(tra, "f:conditions"), "k:{\"type\":\"Programmed\"}"));
	}
	printf("MEASURE: interface f:conditions owned by %s (atomic list: whole list, last writer)\n",
	       conditions_owner(o));
	ck_assert_int_eq(json_integer_value(json_object_get(cond(o, "Programmed"), "observedGeneration")),
			 json_integer_value(json_object_get(json_object_get(o, "metadata"), "generation")));
	json_decref(o);
	o = obj_get(NIC_PATH, "claim1");
	check_table(o, K_CLAIM);
	/* The claim gets no apply at all on an atomic list; on a map list its conditions only. */
	if (MAPLIST) {
		const json_t *ca = owned(o, TR_MGR, "Apply");
		ck_assert_uint_eq(json_object_size((json_t *)ca) - (json_object_get(ca, ".") ? 1 : 0), 1);
		ck_assert_ptr_nonnull(json_object_get(ca, "f:conditions"));
	} else {
		ck_assert_ptr_null(owned(o, TR_MGR, "Apply"));
	}
	printf("MEASURE: claim f:conditions owned by %s\n", conditions_owner(o));
	json_decref(o);
	ck_assert_int_eq(atomic_load(&nso.lost), 0);

	/* Same status, new reason upstream: the message follows, lastTransitionTime stays. */
	char ltt[64];
	o = obj_get(NI_PATH, "nic1");
	snprintf(ltt, sizeof(ltt), "%s", sget(cond(o, "Prepared"), "lastTransitionTime", NULL));
	json_decref(o);
	sleep(1); /* timestamps have second precision */
	ready_reason = "Reallocated";
	vpcop_write("nic1", "Vb1", "Ab1", "True");
	for (t0 = gt_now(); gt_now() - t0 < 20; usleep(5000)) {
		o = obj_get(NI_PATH, "nic1");
		if (strstr(sget(cond(o, "Prepared"), "message", NULL) ?: "", "(Reallocated)"))
			break;
		json_decref(o);
		o = NULL;
	}
	ck_assert_msg(o, "Prepared message did not follow the attachment's reason");
	ck_assert_str_eq(sget(cond(o, "Prepared"), "status", NULL), "True");
	ck_assert_str_eq(sget(cond(o, "Prepared"), "lastTransitionTime", NULL), ltt);
	json_decref(o);
	ck_assert_int_eq(settled(l, W_NI) - w1i, 1);
}
END_TEST

/* Unrelated NSO updates: reconciled and skipped; no write, resourceVersion untouched by us. */
START_TEST(test_steady_state_no_writes)
{
	int l = leader_index();
	double wi, wc, si, sc;

	ck_assert_int_ge(l, 0);
	wi = settled(l, W_NI);
	wc = settled(l, W_NIC);
	si = gt_metric((&rep[l])->port, SKIP_NI);
	sc = gt_metric((&rep[l])->port, SKIP_NIC);
	/* One NSO write per object (its entries move in the list), then quiet. */
	int nw = atomic_load(&nso.writes);
	for (int i = 0; i < nso.n; i++)
		atomic_store(&nso.o[i].poke, true);
	for (int i = 0; i < 200 && atomic_load(&nso.writes) < nw + nso.n; i++)
		usleep(10 * 1000);
	ck_assert_int_ge(atomic_load(&nso.writes), nw + nso.n);
	sleep(3);
	printf("MEASURE: steady state with NSO updates: interface %.0f writes (%.0f skips), "
	       "claim %.0f writes (%.0f skips)\n",
	       gt_metric((&rep[l])->port, W_NI) - wi, gt_metric((&rep[l])->port, SKIP_NI) - si, gt_metric((&rep[l])->port, W_NIC) - wc,
	       gt_metric((&rep[l])->port, SKIP_NIC) - sc);
	ck_assert_msg(gt_metric((&rep[l])->port, W_NI) == wi && gt_metric((&rep[l])->port, W_NIC) == wc,
		      "steady state wrote");
	ck_assert(gt_metric((&rep[l])->port, SKIP_NI) > si && gt_metric((&rep[l])->port, SKIP_NIC) > sc);
}
END_TEST

/* Guard refusals of the leader l on interfaces (0) or claims (1): condition patches refused
 * (atomic lists) plus applies refused by their resourceVersion precondition (map lists). */
static double refusals(int l, int claims)
{
	double a = gt_metric((&rep[l])->port, claims ? REJ_NIC : REJ_NI);
	double b = gt_metric((&rep[l])->port, claims ? STALE_NIC : STALE_NI);
	return (a > 0 ? a : 0) + (b > 0 ? b : 0);
}

/*
 * NSO rewrites both objects every few milliseconds and moves its entries in
 * the list each time, while the report flips: the translator's patches built
 * on a stale layout are refused, retried, and every flip converges; nothing
 * NSO wrote is ever lost or changed; claim Ready follows.
 */
START_TEST(test_flips_under_nso_churn)
{
	/* At least N flips; more (up to MAXN) until a refused patch has been seen,
	 * since whether NSO's write lands inside the translator's window is timing. */
	enum { N = 10, MAXN = 40 };
	int l = leader_index(), n = 0;
	double r0i, r0c, w0i, w0c, lat[MAXN], t0;
	int nw0 = atomic_load(&nso.writes), nc0 = atomic_load(&nso.conflicts);

	ck_assert_int_ge(l, 0);
	r0i = refusals(l, 0);
	r0c = refusals(l, 1);
	w0i = settled(l, W_NI);
	w0c = settled(l, W_NIC);
	atomic_store(&nso.churn, true);
	for (int i = 0; i < MAXN; i++) {
		bool up = i % 2 == 1;
		if (i >= N && i % 2 == 0 &&
		    refusals(l, 0) + refusals(l, 1) > r0i + r0c)
			break;
		const char *st = up ? "True" : "False";
		t0 = gt_now();
		report_write("node-a-vb1-ab1", "Vb1", "Ab1", st);
		json_decref(wait_cond(NI_PATH, "nic1", "Programmed", st, NULL, 30, NULL));
		json_decref(wait_cond(NIC_PATH, "claim1", "Programmed", st, NULL, 30, NULL));
		json_decref(wait_cond(NIC_PATH, "claim1", "Ready", st, NULL, 30, NULL));
		lat[i] = gt_now() - t0;
		n++;
	}
	atomic_store(&nso.churn, false);
	double wi = settled(l, W_NI) - w0i, wc = settled(l, W_NIC) - w0c;
	double ri = refusals(l, 0) - r0i, rc = refusals(l, 1) - r0c;
	double mx = 0, sum = 0;
	for (int i = 0; i < n; i++) {
		sum += lat[i];
		mx = lat[i] > mx ? lat[i] : mx;
	}
	printf("MEASURE: %d report flips under NSO churn (%d NSO writes, %d NSO 409s): "
	       "interface %.0f writes, %.0f refused patches; claim %.0f writes, %.0f refused; "
	       "report -> claim Ready mean %.1f ms, max %.1f ms\n",
	       n, atomic_load(&nso.writes) - nw0, atomic_load(&nso.conflicts) - nc0, wi, ri, wc, rc,
	       sum / n * 1e3, mx * 1e3);
	ck_assert_msg(atomic_load(&nso.lost) == 0, "NSO lost data: %s", nso.lost_what);
	/* Every successful write is a transition; refused ones are retried, never doubled. */
	ck_assert_msg(wi == n && wc == n, "%d flips: %.0f interface, %.0f claim writes", n, wi, wc);
	ck_assert_msg(ri + rc >= 1, "NSO churn caused no refused write (the guards were not exercised)");
	json_t *o = obj_get(NIC_PATH, "claim1");
	for (int i = 0; i < 5; i++) {
		static const char *t[] = { "Bound", "Allocated", "Ready", "Prepared", "Programmed" };
		ck_assert_int_eq(count_type(o, t[i]), 1);
	}
	json_decref(o);
}
END_TEST

/* The attachment goes: interface and claim say so, the translator's fields are withdrawn. */
START_TEST(test_attachment_deleted)
{
	char p[256];
	json_t *o;

	snprintf(p, sizeof(p), "%s/nic1", ATT_PATH);
	ck_assert_int_eq(kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL), 200);
	o = wait_cond(NI_PATH, "nic1", "Programmed", "False", "AttachmentMissing", 20, NULL);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "attachmentRef"));
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "vpc"));
	/* Its Apply entry owns nothing under status any more but the conditions (on a
	 * map list: only its own entries; on an atomic list the whole list, which its
	 * apply carries with the fields in one write, as the list's last writer). */
	const json_t *ap = owned(o, TR_MGR, "Apply");
	size_t allowed = (json_object_get(ap, ".") ? 1u : 0u) +
			 (json_object_get(ap, "f:conditions") ? 1u : 0u);
	ck_assert_msg(!ap || json_object_size(ap) == allowed,
		      "translator still owns status fields through apply");
	if (MAPLIST && ap && json_object_get(ap, "f:conditions")) {
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(ap, "f:conditions"), k, v)
			ck_assert_msg(!strcmp(k, ".") || !strcmp(k, "k:{\"type\":\"Prepared\"}") ||
					      !strcmp(k, "k:{\"type\":\"Programmed\"}"),
				      "translator's apply owns condition %s", k);
	}
	ck_assert_str_eq(sget(json_object_get(o, "status"), "phase", NULL), "Bound");
	json_decref(o);
	json_decref(wait_cond(NIC_PATH, "claim1", "Ready", "False", NULL, 20, NULL));
	ck_assert_int_eq(atomic_load(&nso.lost), 0);
}
END_TEST

/* Links that do not hold: facts about the claim's own objects, no crash. */
START_TEST(test_broken_links)
{
	char p[256];
	json_t *o;
	int l = leader_index();

	ck_assert_int_ge(l, 0);
	/* A claim whose interface names another claim. */
	create_claim(NIC_PATH, "claim2");
	create_iface(NI_PATH, "nic2", "someone-else");
	snprintf(p, sizeof(p), "%s/claim2/status?fieldManager=" NSO_MGR, NIC_PATH);
	ck_assert_int_eq(kreq(&cp, "PATCH", p, "application/merge-patch+json",
			      "{\"status\":{\"networkInterfaceRef\":{\"name\":\"nic2\"}}}", NULL, NULL), 200);
	o = wait_cond(NIC_PATH, "claim2", "Prepared", "False", "InterfaceNotBoundToClaim", 20, NULL);
	ck_assert_str_eq(sget(cond(o, "Prepared"), "message", NULL),
			 "NetworkInterface nic2 does not name this claim in spec.claimRef");
	json_decref(o);
	/* Pointing to an interface that does not exist. */
	ck_assert_int_eq(kreq(&cp, "PATCH", p, "application/merge-patch+json",
			      "{\"status\":{\"networkInterfaceRef\":{\"name\":\"nope/../x\"}}}", NULL, NULL), 200);
	json_decref(wait_cond(NIC_PATH, "claim2", "Prepared", "False", "InterfaceMissing", 20, NULL));
	/* No reference yet. */
	create_claim(NIC_PATH, "claim3");
	json_decref(wait_cond(NIC_PATH, "claim3", "Programmed", "Unknown", "InterfacePending", 20, NULL));
	ck_assert_int_eq(gt_http_get(rep[l].port, "/healthz", NULL), 200);
}
END_TEST

/*
 * SIGTERM of the leader: the follower takes over with warm caches, its first
 * pass over every interface and claim writes nothing (the skip checks hold on
 * objects another replica wrote), then one flip = one write per object.
 */
START_TEST(test_handover_no_rewrites)
{
	int l = leader_index(), f, status = 0;
	double t0, wi, wc;

	ck_assert_int_ge(l, 0);
	f = 1 - l;
	wi = gt_metric((&rep[f])->port, W_NI);
	wc = gt_metric((&rep[f])->port, W_NIC);
	printf("MEASURE: leader %s before handover: %.0f 409s, %.0f+%.0f refused patches\n", rep[l].id,
	       gt_metric((&rep[l])->port, CONFLICTS), gt_metric((&rep[l])->port, REJ_NI), gt_metric((&rep[l])->port, REJ_NIC));
	ck_assert_msg(gt_metric((&rep[l])->port, CONFLICTS) == 0, "leader saw 409s");
	t0 = gt_now();
	ck_assert_int_eq(kill(rep[l].pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(rep[l].pid, &status, 0), rep[l].pid);
	rep[l].pid = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "leader exit status 0x%x", status);
	while (gt_now() - t0 < 20 && gt_metric((&rep[f])->port, LEADER) != 1)
		usleep(50 * 1000);
	ck_assert_msg(gt_metric((&rep[f])->port, LEADER) == 1, "follower did not take over");
	printf("MEASURE: handover (SIGTERM -> follower leading) %.2f s\n", gt_now() - t0);
	usleep(1500 * 1000);
	ck_assert_msg(gt_metric((&rep[f])->port, W_NI) == wi && gt_metric((&rep[f])->port, W_NIC) == wc,
		      "new leader rewrote steady interfaces/claims (%g, %g)", gt_metric((&rep[f])->port, W_NI) - wi,
		      gt_metric((&rep[f])->port, W_NIC) - wc);
	ck_assert(gt_metric((&rep[f])->port, SKIP_NI) >= 2 && gt_metric((&rep[f])->port, SKIP_NIC) >= 3);
	/* And it acts: the attachment comes back for nic1 (same interface uid). */
	create_att("nic1", "nic1", nic1_uid);
	vpcop_write("nic1", "Vb1", "Ab1", "True");
	json_decref(wait_cond(NI_PATH, "nic1", "Programmed", "True", "AttachmentProgrammed", 20, NULL));
	json_decref(wait_cond(NIC_PATH, "claim1", "Ready", "True", NULL, 20, NULL));
	o_check_lost();
}
END_TEST

START_TEST(test_conflicts_and_clean_exit)
{
	int status = 0;

	nso_stop();
	for (int i = 0; i < 2; i++) {
		if (rep[i].pid <= 0)
			continue;
		double c = gt_metric((&rep[i])->port, CONFLICTS);
		printf("MEASURE: %s saw %.0f 409s on status writes\n", rep[i].id, c);
		ck_assert_msg(c == 0, "%s saw %g 409s", rep[i].id, c);
	}
	printf("MEASURE: NSO stand-in: %d writes, %d 409s (its read-modify-write lost the race); "
	       "server-side-apply stand-ins: %d 409s\n",
	       atomic_load(&nso.writes), atomic_load(&nso.conflicts), standin_apply_409s);
	ck_assert_int_eq(standin_apply_409s, 0);
	ck_assert_int_eq(atomic_load(&nso.lost), 0);
	for (int i = 0; i < 2; i++) {
		if (rep[i].pid <= 0)
			continue; /* handed over earlier */
		ck_assert_int_eq(kill(rep[i].pid, SIGTERM), 0);
		ck_assert_int_eq(waitpid(rep[i].pid, &status, 0), rep[i].pid);
		rep[i].pid = 0;
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "%s did not exit cleanly (status 0x%x)", rep[i].id, status);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_nic");
	TCase *tc = tcase_create("nic");

	setenv("CK_FORK", "no", 1);
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_ready_and_one_leader);
	tcase_add_test(tc, test_guards_on_real_apiserver);
	tcase_add_test(tc, test_interface_and_claim_follow);
	tcase_add_test(tc, test_steady_state_no_writes);
	tcase_add_test(tc, test_flips_under_nso_churn);
	tcase_add_test(tc, test_attachment_deleted);
	tcase_add_test(tc, test_broken_links);
	tcase_add_test(tc, test_handover_no_rewrites);
	tcase_add_test(tc, test_conflicts_and_clean_exit);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
