#include "translator/controller.h"

#include "common/gmap.h"
#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "common/workqueue.h"
#include "translator/intent.h"
#include "translator/nic.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WORKERS 16

static const struct kube_resource VPCATT = { "cloud.datumapis.com", "v1alpha1", "vpcattachments",
					     true };
static const struct kube_resource NI = { NIC_GROUP, "v1alpha", "networkinterfaces", true };
static const struct kube_resource NIC = { NIC_GROUP, "v1alpha", "networkinterfaceclaims", true };

/* Queue keys: "ns/name" for attachments, these prefixes + "ns/name" for the others. */
#define KEY_NI "ni:"
#define KEY_NIC "nic:"

/* What we last wrote to a key: lets a worker recognise a cache that lags our own write. */
struct memo {
	char uid[64];
	uint64_t rv;
	char *intent; /* intent without lastTransitionTime, compact JSON */
};

/* Handler data of a report informer: which mapping reads its objects. */
struct rep_ud {
	struct controller *c;
	const struct report_mapping *m;
};

struct controller {
	struct kube_client *kc;
	const struct mapping_set *maps;
	struct controller_opts o;
	struct leader *leader;
	struct informer *att;
	struct informer *ni, *nic; /* NetworkInterfaces, NetworkInterfaceClaims */
	struct informer **rep; /* one per mapping entry */
	struct rep_ud *rud;    /* handler data of each report informer */
	struct wq *q;
	pthread_t thr[MAX_WORKERS];
	int nthr;
	atomic_bool running;

	pthread_mutex_t mu;
	struct gmap *memo;

	struct metric *m_writes, *m_skips, *m_errors, *m_conflicts, *m_invalid, *m_leader,
		*m_takeover, *m_reconciles, *m_deferred, *m_rejects;
};

/* ---- indexes and event handlers ---- */

static void att_ids_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	char k[512];
	(void)ud;
	if (!mapping_ids_key(gj_str(obj, "status.vpc"), gj_str(obj, "status.vpcAttachment"), k,
			     sizeof(k)))
		kube_index_values_add(out, k);
}

static void report_ids_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	const struct report_mapping *m = ud;
	struct report_view v;
	char err[512], k[512];

	report_extract(m, obj, &v, err, sizeof(err)); /* ids are set even if a later field is bad */
	if (!mapping_ids_key(v.v[MF_VPC], v.v[MF_ATTACHMENT], k, sizeof(k)))
		kube_index_values_add(out, k);
	report_view_clear(&v);
}

static void enqueue_obj(struct controller *c, const json_t *obj)
{
	char key[512];
	if (!gj_object_key(obj, key, sizeof(key)))
		wq_add(c->q, key);
}

static void enqueue_prefixed(struct controller *c, const char *prefix, const char *ns,
			     const char *name)
{
	char key[600];
	if (!ns || !name || !*name || strchr(name, '/') || strlen(name) > 253)
		return; /* not a name: nothing to queue (bad objects never crash us) */
	snprintf(key, sizeof(key), "%s%s/%s", prefix, ns, name);
	wq_add(c->q, key);
}

/* An interface changed (or its attachment did): queue the claims that name it or that it names. */
static void enqueue_claims_of_iface(struct controller *c, const char *ns, const char *ifname,
				    const char *claimref)
{
	char k[600];
	json_t *cl, *o;
	size_t i;

	enqueue_prefixed(c, KEY_NIC, ns, claimref);
	if (!ns || !ifname || !c->nic)
		return;
	snprintf(k, sizeof(k), "%s/%s", ns, ifname);
	cl = kube_store_by_index(informer_store(c->nic), "ifref", k);
	json_array_foreach(cl, i, o)
		enqueue_prefixed(c, KEY_NIC, ns, gj_str(o, "metadata.name"));
	json_decref(cl);
}

/* An attachment changed: queue the interface of its name (upstream names an
 * attachment after its interface) and that interface's claims. */
static void enqueue_iface_of_att(struct controller *c, const json_t *att)
{
	const char *ns = gj_str(att, "metadata.namespace"), *ifn = gj_str(att, "metadata.name");
	json_t *iface;

	if (!att || !ns || !ifn)
		return;
	enqueue_prefixed(c, KEY_NI, ns, ifn);
	iface = c->ni ? kube_store_get_nn(informer_store(c->ni), ns, ifn) : NULL;
	enqueue_claims_of_iface(c, ns, ifn, gj_str(iface, "spec.claimRef.name"));
	json_decref(iface);
}

static void att_add(json_t *obj, void *ud)
{
	enqueue_obj(ud, obj);
	enqueue_iface_of_att(ud, obj);
}
static void att_update(json_t *old, json_t *nw, void *ud)
{
	enqueue_obj(ud, nw);
	enqueue_iface_of_att(ud, old);
	enqueue_iface_of_att(ud, nw);
}
static void att_delete(json_t *obj, void *ud)
{
	enqueue_obj(ud, obj);
	enqueue_iface_of_att(ud, obj);
}

static void ni_changed(struct controller *c, const json_t *o)
{
	const char *ns = gj_str(o, "metadata.namespace"), *n = gj_str(o, "metadata.name");
	if (!o)
		return;
	enqueue_prefixed(c, KEY_NI, ns, n);
	enqueue_claims_of_iface(c, ns, n, gj_str(o, "spec.claimRef.name"));
}
static void ni_add(json_t *obj, void *ud) { ni_changed(ud, obj); }
static void ni_update(json_t *old, json_t *nw, void *ud)
{
	ni_changed(ud, old);
	ni_changed(ud, nw);
}
static void ni_delete(json_t *obj, void *ud) { ni_changed(ud, obj); }

static void nic_ifref_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	char k[600];
	const char *ns = gj_str(obj, "metadata.namespace");
	const char *n = gj_str(obj, "status.networkInterfaceRef.name");
	(void)ud;
	if (ns && n && *n && !strchr(n, '/') && strlen(n) <= 253) {
		snprintf(k, sizeof(k), "%s/%s", ns, n);
		kube_index_values_add(out, k);
	}
}
static void nic_changed(struct controller *c, const json_t *o)
{
	enqueue_prefixed(c, KEY_NIC, gj_str(o, "metadata.namespace"), gj_str(o, "metadata.name"));
}
static void nic_add(json_t *obj, void *ud) { nic_changed(ud, obj); }
static void nic_update(json_t *old, json_t *nw, void *ud)
{
	(void)old;
	nic_changed(ud, nw);
}
static void nic_delete(json_t *obj, void *ud) { nic_changed(ud, obj); }

static void enqueue_attachments_of(struct controller *c, const struct report_mapping *m,
				   const json_t *obj, bool log_invalid)
{
	struct report_view v;
	char err[512], k[512];
	json_t *atts, *a;
	size_t i;

	if (!obj)
		return;
	if (report_extract(m, obj, &v, err, sizeof(err)) && log_invalid) {
		glog_kv(GLOG_WARN, "translator", "invalid report", "error", err, NULL);
		metric_add(c->m_invalid, m->name, 1);
	}
	if (!mapping_ids_key(v.v[MF_VPC], v.v[MF_ATTACHMENT], k, sizeof(k))) {
		atts = kube_store_by_index(informer_store(c->att), "ids", k);
		json_array_foreach(atts, i, a)
			enqueue_obj(c, a);
		json_decref(atts);
	}
	report_view_clear(&v);
}

static void rep_add(json_t *obj, void *ud)
{
	struct rep_ud *r = ud;
	enqueue_attachments_of(r->c, r->m, obj, true);
}
static void rep_update(json_t *old, json_t *nw, void *ud)
{
	struct rep_ud *r = ud;
	/* Ids are immutable in our CRD, but another data plane's may not be. */
	enqueue_attachments_of(r->c, r->m, old, false);
	enqueue_attachments_of(r->c, r->m, nw, true);
}
static void rep_delete(json_t *obj, void *ud)
{
	struct rep_ud *r = ud;
	enqueue_attachments_of(r->c, r->m, obj, false);
}

/* ---- reconcile ---- */

static void now_rfc3339(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool is_leader(struct controller *c) { return !c->leader || leader_is_leader(c->leader); }

static bool parse_rv(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

static char *intent_fingerprint(const json_t *intent)
{
	json_t *cp = json_deep_copy(intent);
	char *s;
	json_object_del(json_array_get(gj_get(cp, "status.conditions"), 0), "lastTransitionTime");
	s = gj_dumps(cp);
	json_decref(cp);
	return s;
}

static void memo_free(void *p)
{
	struct memo *m = p;
	if (m)
		free(m->intent);
	free(m);
}

/*
 * True when our last write for key already carried this intent and the
 * cached object predates that write: the informer has not caught up with our
 * own write, and the watch event that will re-queue the key is on its way.
 * Resource versions are opaque in the API contract; they are etcd revisions
 * in practice, so they are compared only when both parse as integers.
 */
static bool cache_lags_our_write(struct controller *c, const char *key, const json_t *att,
				 const char *fp)
{
	uint64_t rv;
	bool lag = false;

	if (!parse_rv(gj_str(att, "metadata.resourceVersion"), &rv))
		return false;
	pthread_mutex_lock(&c->mu);
	struct memo *m = gmap_get(c->memo, key);
	if (m && !strcmp(m->uid, gj_str(att, "metadata.uid") ?: "") && m->intent &&
	    !strcmp(m->intent, fp) && rv < m->rv)
		lag = true;
	pthread_mutex_unlock(&c->mu);
	return lag;
}

static void memo_put(struct controller *c, const char *key, const json_t *out, char *fp)
{
	struct memo *m = calloc(1, sizeof(*m));
	int err = 0;

	if (!m || !parse_rv(gj_str(out, "metadata.resourceVersion"), &m->rv)) {
		free(m);
		free(fp);
		return;
	}
	snprintf(m->uid, sizeof(m->uid), "%s", gj_str(out, "metadata.uid") ?: "");
	m->intent = fp;
	pthread_mutex_lock(&c->mu);
	memo_free(gmap_put(c->memo, key, m, &err));
	pthread_mutex_unlock(&c->mu);
	if (err)
		memo_free(m);
}

static void memo_del(struct controller *c, const char *key)
{
	bool found;
	pthread_mutex_lock(&c->mu);
	memo_free(gmap_del(c->memo, key, &found));
	pthread_mutex_unlock(&c->mu);
}

/* Logs when another manager also owns one of our fields: apply with force takes it back. */
static void note_foreign_owners(struct controller *c, const char *key, const json_t *att)
{
	const json_t *e;
	size_t i;

	json_array_foreach(gj_get(att, "metadata.managedFields"), i, e) {
		const char *mgr = json_string_value(json_object_get(e, "manager"));
		const json_t *st = gj_get(e, "fieldsV1.f:status");
		if (!mgr || !strcmp(mgr, TRANSLATOR_MANAGER) || !st)
			continue;
		for (int f = 0; f < 7; f++) {
			char fk[64];
			snprintf(fk, sizeof(fk), "f:%s", VPCATT_TRANSLATOR_FIELDS[f]);
			if (json_object_get(st, fk)) {
				glog_kv(GLOG_WARN, "translator", "field owned by another manager; taking it back",
					"object", key, "field", fk + 2, "manager", mgr, NULL);
				metric_add(c->m_takeover, VPCATT_TRANSLATOR_FIELDS[f], 1);
			}
		}
		if (gj_get(st, "f:conditions") &&
		    json_object_get(gj_get(st, "f:conditions"), "k:{\"type\":\"Programmed\"}")) {
			glog_kv(GLOG_WARN, "translator", "condition owned by another manager; taking it back",
				"object", key, "condition", "Programmed", "manager", mgr, NULL);
			metric_add(c->m_takeover, "Programmed", 1);
		}
	}
}

/* Reports of every mapped kind whose ids equal the attachment's. */
static size_t collect_reports(struct controller *c, const char *ids, struct report_candidate **out)
{
	struct report_candidate *v = NULL;
	size_t n = 0, i;
	json_t *objs, *o;

	*out = NULL;
	for (size_t k = 0; k < c->maps->n; k++) {
		objs = kube_store_by_index(informer_store(c->rep[k]), "ids", ids);
		json_array_foreach(objs, i, o) {
			struct report_candidate *nv = realloc(v, (n + 1) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			v[n].valid = report_extract(&c->maps->e[k], o, &v[n].v, v[n].err,
						    sizeof(v[n].err)) == 0;
			n++;
		}
		json_decref(objs);
	}
	*out = v;
	return n;
}

#define NEW_REPORT_GRACE_S 2.0

/* Seconds since an RFC 3339 UTC timestamp (second precision); -1 if unreadable. */
static double report_age_s(const char *ts)
{
	struct tm tm = { 0 };
	const char *end;

	if (!ts || !(end = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm)) || (*end != 'Z' && *end != '.'))
		return -1;
	return difftime(time(NULL), timegm(&tm));
}

/* 0 done (forget), 1 retry with backoff; *retry_after > 0: look again after that delay. */
static int reconcile(struct controller *c, const char *key, double *retry_after)
{
	struct report_candidate *cands = NULL;
	const struct report_candidate *pick;
	struct kube_error err;
	char ids[512], now[32], why[512], ebuf[512];
	const char *ns, *name;
	json_t *att, *intent = NULL, *out = NULL;
	size_t n = 0;
	int ret = 0;
	char *fp = NULL;

	if (!is_leader(c))
		return 0; /* becoming leader re-queues every key */
	metric_add(c->m_reconciles, NULL, 1);
	att = kube_store_get(informer_store(c->att), key);
	if (!att) {
		memo_del(c, key);
		return 0;
	}
	if (!mapping_ids_key(gj_str(att, "status.vpc"), gj_str(att, "status.vpcAttachment"), ids,
			     sizeof(ids)))
		n = collect_reports(c, ids, &cands);
	pick = report_pick(cands, n);
	/* A new report is written in two steps (spec, then status through its
	 * subresource). Writing "not reported yet" in between would cost one
	 * write per workload start for a state that lasts milliseconds: give the
	 * agent a moment; its status write re-queues the key at once. */
	if (pick && pick->valid && pick->v.programmed == PS_ABSENT) {
		double age = report_age_s(pick->v.created);
		if (age >= 0 && age < NEW_REPORT_GRACE_S) {
			metric_add(c->m_deferred, NULL, 1);
			*retry_after = NEW_REPORT_GRACE_S - age + 0.1;
			goto out;
		}
	}
	now_rfc3339(now, sizeof(now));
	intent = vpcatt_intent(att, pick, now, ebuf, sizeof(ebuf));
	if (!intent) {
		glog_kv(GLOG_WARN, "translator", "cannot compute intent", "object", key, "error", ebuf,
			NULL);
		goto out;
	}
	if (vpcatt_intent_satisfied(att, intent, TRANSLATOR_MANAGER, why, sizeof(why))) {
		metric_add(c->m_skips, "VPCAttachment", 1);
		goto out;
	}
	fp = intent_fingerprint(intent);
	if (fp && cache_lags_our_write(c, key, att, fp)) {
		metric_add(c->m_skips, "VPCAttachment", 1);
		goto out;
	}
	note_foreign_owners(c, key, att);
	ns = gj_str(att, "metadata.namespace");
	name = gj_str(att, "metadata.name");
	if (!is_leader(c))
		goto out; /* lost the lease while computing: the new leader writes */
	/* force: the ownership table makes these fields ours alone (client-go
	 * guidance for controllers); note_foreign_owners logs any takeover. */
	if (kube_apply(c->kc, &VPCATT, ns, name, "status", intent, TRANSLATOR_MANAGER, true, &out,
		       &err)) {
		char code[16];
		snprintf(code, sizeof(code), "%ld", err.http_status);
		metric_add(c->m_errors, code, 1);
		if (err.http_status == 409)
			metric_add(c->m_conflicts, NULL, 1);
		if (err.code == KUBE_ERR_NOT_FOUND) {
			/* Deleted since the cache saw it; the delete event follows. */
			glog_kv(GLOG_DEBUG, "translator", "attachment gone", "object", key, NULL);
			memo_del(c, key);
			goto out;
		}
		glog_kv(GLOG_WARN, "translator", "status apply failed", "object", key, "error",
			err.message, NULL);
		ret = 1;
		goto out;
	}
	metric_add(c->m_writes, "VPCAttachment", 1);
	if (strcmp(gj_str(out, "metadata.uid") ?: "", gj_str(intent, "metadata.uid"))) {
		/* The /status subresource does not enforce metadata.uid (it keeps the stored
		 * metadata), so a same-name re-creation can slip in between cache and write.
		 * The cache brings the new incarnation shortly; retry against it. */
		glog_kv(GLOG_WARN, "translator", "wrote to a newer incarnation; will redo", "object", key,
			"uid", gj_str(out, "metadata.uid") ?: "?", NULL);
		memo_del(c, key);
		ret = 1;
		goto out;
	}
	glog_kv(GLOG_INFO, "translator", "applied status", "object", key, "because", why,
		"programmed",
		json_string_value(json_object_get(
			json_array_get(gj_get(intent, "status.conditions"), 0), "status")),
		NULL);
	memo_put(c, key, out, fp);
	fp = NULL;
out:
	free(fp);
	json_decref(out);
	json_decref(intent);
	for (size_t i = 0; i < n; i++)
		report_view_clear(&cands[i].v);
	free(cands);
	json_decref(att);
	return ret;
}

/* ---- NetworkInterface and NetworkInterfaceClaim ---- */

/* Fingerprint of an intent without lastTransitionTimes (cache-lag check). */
static char *nic_fingerprint(const json_t *fields_status, const json_t *conds)
{
	json_t *cp = json_pack("{s:O*, s:o}", "fields", fields_status, "conditions",
			       json_deep_copy(conds));
	json_t *e;
	size_t i;
	char *s;

	if (!cp)
		return NULL;
	json_array_foreach(json_object_get(cp, "conditions"), i, e)
		json_object_del(e, "lastTransitionTime");
	s = gj_dumps(cp);
	json_decref(cp);
	return s;
}

/* Counts a failed write; 1 when the key should be retried, 0 when it is done (404). */
static int write_failed(struct controller *c, const char *kind, const char *key, const char *what,
			const struct kube_error *err)
{
	char code[16];

	snprintf(code, sizeof(code), "%ld", err->http_status);
	metric_add(c->m_errors, code, 1);
	if (err->http_status == 409)
		metric_add(c->m_conflicts, NULL, 1);
	if (err->code == KUBE_ERR_NOT_FOUND) {
		glog_kv(GLOG_DEBUG, "translator", "object gone", "object", key, NULL);
		memo_del(c, key);
		return 0;
	}
	if (!strcmp(what, "guarded condition patch") &&
	    (err->http_status == 409 || err->http_status == 422)) {
		/* Someone changed the list (or the object) since our cache saw it: the
		 * guards refused to write on a stale layout. Their event re-queues the
		 * key; the rate-limited retry covers a lost event. */
		metric_add(c->m_rejects, kind, 1);
		glog_kv(GLOG_INFO, "translator", "guarded condition patch refused; will retry",
			"object", key, "error", err->message, NULL);
		return 1;
	}
	glog_kv(GLOG_WARN, "translator", what, "object", key, "error", err->message, NULL);
	return 1;
}

/*
 * Writes the translator's conditions into obj's atomic list with a guarded
 * JSON Patch (none when obj already shows them). *out gets the written
 * object, or stays NULL when nothing was sent. 0 ok/skip, 1 retry.
 */
static int patch_conditions(struct controller *c, const struct kube_resource *r, const char *kind,
			    const char *key, const json_t *obj, const json_t *conds, json_t **out,
			    bool *wrote)
{
	struct kube_error err;
	char ebuf[256];
	json_t *ops = cond_patch_build(obj, conds, ebuf, sizeof(ebuf)), *guard;
	int ret = 0;

	*wrote = false;
	if (!ops) {
		/* Someone else's bad status (wrong types): nothing we can patch safely. */
		glog_kv(GLOG_WARN, "translator", "cannot patch conditions", "object", key, "error",
			ebuf, NULL);
		return 0;
	}
	if (!json_array_size(ops))
		goto out;
	/* The same incarnation only: a JSON Patch applies to the stored object, metadata too. */
	guard = json_pack("{s:s, s:s, s:s}", "op", "test", "path", "/metadata/uid", "value",
			  gj_str(obj, "metadata.uid") ?: "");
	if (!guard || json_array_insert_new(ops, 0, guard)) {
		ret = 1;
		goto out;
	}
	if (!is_leader(c))
		goto out;
	if (kube_json_patch(c->kc, r, gj_str(obj, "metadata.namespace"), gj_str(obj, "metadata.name"),
			    "status", ops, TRANSLATOR_MANAGER, out, &err)) {
		ret = write_failed(c, kind, key, "guarded condition patch", &err);
		goto out;
	}
	*wrote = true;
	metric_add(c->m_writes, kind, 1);
out:
	json_decref(ops);
	return ret;
}

static void log_conds(const char *what, const char *key, const json_t *conds)
{
	glog_kv(GLOG_INFO, "translator", what, "object", key, "prepared",
		gj_str(json_array_get(conds, 0), "status") ?: "?", "programmed",
		gj_str(json_array_get(conds, 1), "status") ?: "?", NULL);
}

/* The attachment of an interface (cache: same name, linked as upstream links them), or NULL. */
static json_t *iface_attachment(struct controller *c, const json_t *iface, const char *nskey)
{
	json_t *a = kube_store_get(informer_store(c->att), nskey);
	if (nic_attachment_links(iface, a))
		return a;
	json_decref(a);
	return NULL;
}

/* Logs and counts another manager owning attachmentRef or vpc: apply with force takes them back. */
static void note_foreign_iface_owners(struct controller *c, const char *key, const json_t *iface)
{
	static const char *const F[] = { "attachmentRef", "vpc" };
	const json_t *e;
	size_t i;

	json_array_foreach(gj_get(iface, "metadata.managedFields"), i, e) {
		const char *mgr = json_string_value(json_object_get(e, "manager"));
		const char *op = json_string_value(json_object_get(e, "operation"));
		const json_t *st = gj_get(e, "fieldsV1.f:status");
		if (!mgr || !st || (!strcmp(mgr, TRANSLATOR_MANAGER) && op && !strcmp(op, "Apply")))
			continue;
		for (size_t f = 0; f < 2; f++) {
			char fk[32];
			snprintf(fk, sizeof(fk), "f:%s", F[f]);
			if (json_object_get(st, fk)) {
				glog_kv(GLOG_WARN, "translator", "field owned by another manager; taking it back",
					"object", key, "field", F[f], "manager", mgr, NULL);
				metric_add(c->m_takeover, F[f], 1);
			}
		}
	}
}

static int reconcile_ni(struct controller *c, const char *key, const char *nskey)
{
	struct kube_error err;
	char now[32], ebuf[512], why[256] = "";
	json_t *iface, *att = NULL, *fields = NULL, *conds = NULL, *ops = NULL, *out = NULL,
			*out2 = NULL;
	char *fp = NULL;
	bool fields_ok, wrote = false;
	int ret = 0;

	if (!is_leader(c))
		return 0;
	metric_add(c->m_reconciles, NULL, 1);
	iface = kube_store_get(informer_store(c->ni), nskey);
	if (!iface) {
		memo_del(c, key);
		return 0;
	}
	att = iface_attachment(c, iface, nskey);
	now_rfc3339(now, sizeof(now));
	fields = nic_fields_intent(iface, att, ebuf, sizeof(ebuf));
	conds = nic_conditions(iface, att, NULL, now);
	if (!fields || !conds) {
		glog_kv(GLOG_WARN, "translator", "cannot compute intent", "object", key, "error",
			fields ? "out of memory" : ebuf, NULL);
		goto out;
	}
	fields_ok = nic_fields_satisfied(iface, fields, TRANSLATOR_MANAGER, why, sizeof(why));
	ops = cond_patch_build(iface, conds, ebuf, sizeof(ebuf));
	if (fields_ok && ops && !json_array_size(ops)) {
		metric_add(c->m_skips, "NetworkInterface", 1);
		goto out;
	}
	fp = nic_fingerprint(json_object_get(fields, "status"), conds);
	if (fp && cache_lags_our_write(c, key, iface, fp)) {
		metric_add(c->m_skips, "NetworkInterface", 1);
		goto out;
	}
	if (!is_leader(c))
		goto out;
	if (!fields_ok) {
		/* Non-list fields: server-side apply, ours alone (force, as for attachments). */
		note_foreign_iface_owners(c, key, iface);
		if (kube_apply(c->kc, &NI, gj_str(iface, "metadata.namespace"),
			       gj_str(iface, "metadata.name"), "status", fields, TRANSLATOR_MANAGER,
			       true, &out, &err)) {
			ret = write_failed(c, "NetworkInterface", key, "status apply failed", &err);
			goto out;
		}
		metric_add(c->m_writes, "NetworkInterface", 1);
		glog_kv(GLOG_INFO, "translator", "applied interface fields", "object", key, "because",
			why, NULL);
		if (strcmp(gj_str(out, "metadata.uid") ?: "", gj_str(iface, "metadata.uid") ?: "")) {
			memo_del(c, key);
			ret = 1; /* a newer incarnation: redo against it once cached */
			goto out;
		}
		/* The answer is fresher than the cache: derive the conditions from it. */
		json_decref(conds);
		conds = nic_conditions(out, att, NULL, now);
		if (!conds)
			goto out;
	}
	ret = patch_conditions(c, &NI, "NetworkInterface", key, out ? out : iface, conds, &out2,
			       &wrote);
	if (wrote)
		log_conds("patched interface conditions", key, conds);
	if (!ret && (out2 || out)) {
		memo_put(c, key, out2 ? out2 : out, fp);
		fp = NULL;
	}
out:
	free(fp);
	json_decref(ops);
	json_decref(out);
	json_decref(out2);
	json_decref(conds);
	json_decref(fields);
	json_decref(att);
	json_decref(iface);
	return ret;
}

static int reconcile_nic(struct controller *c, const char *key, const char *nskey)
{
	char now[32], ifkey[600], msg[600];
	json_t *claim, *iface = NULL, *att = NULL, *conds = NULL, *ops = NULL, *out = NULL;
	struct nic_missing miss = { 0 };
	const char *ns, *ifn;
	char *fp = NULL;
	char ebuf[256];
	bool wrote = false;
	int ret = 0;

	if (!is_leader(c))
		return 0;
	metric_add(c->m_reconciles, NULL, 1);
	claim = kube_store_get(informer_store(c->nic), nskey);
	if (!claim) {
		memo_del(c, key);
		return 0;
	}
	ns = gj_str(claim, "metadata.namespace");
	ifn = gj_str(claim, "status.networkInterfaceRef.name");
	if (!ifn || !*ifn) {
		miss = (struct nic_missing){ "Unknown", R_IF_PENDING,
					     "status.networkInterfaceRef is not set yet" };
	} else if (strchr(ifn, '/') || strlen(ifn) > 253) {
		miss = (struct nic_missing){ "False", R_IF_MISSING,
					     "status.networkInterfaceRef.name is not a valid name" };
	} else {
		snprintf(ifkey, sizeof(ifkey), "%s/%s", ns ? ns : "", ifn);
		iface = kube_store_get(informer_store(c->ni), ifkey);
		if (!iface) {
			snprintf(msg, sizeof(msg), "NetworkInterface %s does not exist", ifn);
			miss = (struct nic_missing){ "False", R_IF_MISSING, msg };
		} else if (strcmp(gj_str(iface, "spec.claimRef.name") ?: "",
				  gj_str(claim, "metadata.name") ?: "")) {
			snprintf(msg, sizeof(msg),
				 "NetworkInterface %s does not name this claim in spec.claimRef", ifn);
			miss = (struct nic_missing){ "False", R_IF_MISMATCH, msg };
		} else if (!(att = iface_attachment(c, iface, ifkey))) {
			snprintf(msg, sizeof(msg),
				 "no VPCAttachment %s controlled by NetworkInterface %s", ifn, ifn);
			miss = (struct nic_missing){ "False", R_ATT_MISSING, msg };
		}
	}
	now_rfc3339(now, sizeof(now));
	conds = nic_conditions(claim, att, att ? NULL : &miss, now);
	if (!conds)
		goto out;
	ops = cond_patch_build(claim, conds, ebuf, sizeof(ebuf));
	if (ops && !json_array_size(ops)) {
		metric_add(c->m_skips, "NetworkInterfaceClaim", 1);
		goto out;
	}
	fp = nic_fingerprint(NULL, conds);
	if (fp && cache_lags_our_write(c, key, claim, fp)) {
		metric_add(c->m_skips, "NetworkInterfaceClaim", 1);
		goto out;
	}
	ret = patch_conditions(c, &NIC, "NetworkInterfaceClaim", key, claim, conds, &out, &wrote);
	if (wrote) {
		log_conds("patched claim conditions", key, conds);
		memo_put(c, key, out, fp);
		fp = NULL;
	}
out:
	free(fp);
	json_decref(ops);
	json_decref(out);
	json_decref(conds);
	json_decref(att);
	json_decref(iface);
	json_decref(claim);
	return ret;
}

static int reconcile_key(struct controller *c, const char *key, double *after)
{
	if (!strncmp(key, KEY_NIC, strlen(KEY_NIC)))
		return reconcile_nic(c, key, key + strlen(KEY_NIC));
	if (!strncmp(key, KEY_NI, strlen(KEY_NI)))
		return reconcile_ni(c, key, key + strlen(KEY_NI));
	return reconcile(c, key, after);
}

static void *worker(void *arg)
{
	struct controller *c = arg;
	char *key;

	while ((key = wq_get(c->q, -1))) {
		double after = 0;
		if (reconcile_key(c, key, &after)) {
			wq_add_rate_limited(c->q, key);
		} else {
			wq_forget(c->q, key);
			if (after > 0)
				wq_add_after(c->q, key, after);
		}
		wq_done(c->q, key);
		free(key);
	}
	return NULL;
}

/* ---- lifecycle ---- */

struct controller *controller_new(struct kube_client *kc, const struct mapping_set *maps,
				  struct metrics *m, const struct controller_opts *o)
{
	struct controller *c = calloc(1, sizeof(*c));
	struct informer_opts io = { 0 };
	struct wq_opts qo = { .base_delay_s = 0.05, .max_delay_s = 60, .qps = 50, .burst = 200 };

	if (!c)
		return NULL;
	c->kc = kc;
	c->maps = maps;
	c->o = *o;
	if (c->o.workers <= 0)
		c->o.workers = 2;
	if (c->o.workers > MAX_WORKERS)
		c->o.workers = MAX_WORKERS;
	pthread_mutex_init(&c->mu, NULL);
	c->memo = gmap_new();
	c->q = wq_new(&qo);
	c->rep = calloc(maps->n, sizeof(*c->rep));
	c->rud = calloc(maps->n, sizeof(*c->rud));
	if (!c->memo || !c->q || !c->rep || !c->rud)
		goto fail;

	c->m_writes = metrics_counter(m, "galactic_translator_status_writes_total",
				      "Status writes (server-side apply) that were sent", "kind");
	c->m_skips = metrics_counter(m, "galactic_translator_status_write_skips_total",
				     "Reconciles that found the object already showing the intent", "kind");
	c->m_errors = metrics_counter(m, "galactic_translator_status_write_errors_total",
				      "Failed status writes by HTTP status (0: transport)", "code");
	c->m_conflicts = metrics_counter(m, "galactic_translator_conflicts_total",
					 "HTTP 409 responses seen on status writes", NULL);
	c->m_invalid = metrics_counter(m, "galactic_translator_invalid_reports_total",
				       "Report events that could not be read through their mapping", "mapping");
	c->m_takeover = metrics_counter(m, "galactic_translator_field_takeovers_total",
					"Translator-owned fields found owned by another manager", "field");
	c->m_reconciles = metrics_counter(m, "galactic_translator_reconciles_total",
					  "Attachment keys reconciled while leading", NULL);
	c->m_deferred = metrics_counter(m, "galactic_translator_new_report_deferrals_total",
					"Reconciles put off briefly because a new report has no Programmed yet", NULL);
	c->m_leader = metrics_gauge(m, "galactic_translator_leader",
				    "1 while this replica holds the lease", NULL);
	c->m_rejects = metrics_counter(m, "galactic_translator_guarded_patch_rejections_total",
				       "Guarded condition patches refused (409/422): the list changed under us",
				       "kind");
	if (!c->m_writes || !c->m_skips || !c->m_errors || !c->m_conflicts || !c->m_invalid ||
	    !c->m_takeover || !c->m_reconciles || !c->m_leader || !c->m_deferred || !c->m_rejects)
		goto fail;
	/* Present from the start, so a scrape can tell 0 from "not exported". */
	metric_add(c->m_writes, "VPCAttachment", 0);
	metric_add(c->m_skips, "VPCAttachment", 0);
	for (int k = 0; k < 2; k++) {
		const char *kind = k ? "NetworkInterfaceClaim" : "NetworkInterface";
		metric_add(c->m_writes, kind, 0);
		metric_add(c->m_skips, kind, 0);
		metric_add(c->m_rejects, kind, 0);
	}
	metric_add(c->m_conflicts, NULL, 0);
	metric_add(c->m_reconciles, NULL, 0);
	metric_set(c->m_leader, NULL, 0);

	io.res = VPCATT;
	io.ns = o->watch_ns;
	io.name = "vpcattachments";
	if (!(c->att = informer_new(kc, &io)) ||
	    informer_add_index(c->att, "ids", att_ids_index, NULL) ||
	    informer_add_handlers(c->att, &(struct informer_handlers){ att_add, att_update,
								       att_delete, c }))
		goto fail;
	/* managedFields stay in the caches: the skip checks read them. */
	memset(&io, 0, sizeof(io));
	io.res = NI;
	io.ns = o->watch_ns;
	io.name = "networkinterfaces";
	if (!(c->ni = informer_new(kc, &io)) ||
	    informer_add_handlers(c->ni, &(struct informer_handlers){ ni_add, ni_update, ni_delete, c }))
		goto fail;
	memset(&io, 0, sizeof(io));
	io.res = NIC;
	io.ns = o->watch_ns;
	io.name = "networkinterfaceclaims";
	if (!(c->nic = informer_new(kc, &io)) ||
	    informer_add_index(c->nic, "ifref", nic_ifref_index, NULL) ||
	    informer_add_handlers(c->nic,
				  &(struct informer_handlers){ nic_add, nic_update, nic_delete, c }))
		goto fail;
	for (size_t i = 0; i < maps->n; i++) {
		const struct report_mapping *rm = &maps->e[i];
		memset(&io, 0, sizeof(io));
		io.res = (struct kube_resource){ rm->group, rm->version, rm->resource, rm->namespaced };
		io.ns = rm->namespaced ? o->report_ns : NULL;
		io.name = rm->name;
		c->rud[i] = (struct rep_ud){ c, rm };
		if (!(c->rep[i] = informer_new(kc, &io)) ||
		    informer_add_index(c->rep[i], "ids", report_ids_index, (void *)rm) ||
		    informer_add_handlers(c->rep[i], &(struct informer_handlers){ rep_add, rep_update,
										  rep_delete, &c->rud[i] }))
			goto fail;
	}
	return c;
fail:
	controller_free(c);
	return NULL;
}

void controller_set_leader(struct controller *c, struct leader *l) { c->leader = l; }

void controller_on_started_leading(void *ud)
{
	struct controller *c = ud;
	json_t *keys = kube_store_keys(informer_store(c->att));
	json_t *k;
	size_t i;

	metric_set(c->m_leader, NULL, 1);
	/* Everything may have changed while another replica led: look at every key. */
	json_array_foreach(keys, i, k)
		wq_add(c->q, json_string_value(k));
	json_decref(keys);
	for (int p = 0; p < 2; p++) {
		const char *prefix = p ? KEY_NIC : KEY_NI;
		keys = kube_store_keys(informer_store(p ? c->nic : c->ni));
		json_array_foreach(keys, i, k) {
			char key[600];
			snprintf(key, sizeof(key), "%s%s", prefix, json_string_value(k) ?: "");
			wq_add(c->q, key);
		}
		json_decref(keys);
	}
}

void controller_on_stopped_leading(void *ud)
{
	struct controller *c = ud;
	metric_set(c->m_leader, NULL, 0);
}

int controller_start(struct controller *c)
{
	for (size_t i = 0; i < c->maps->n; i++)
		if (informer_start(c->rep[i]))
			return -1;
	if (informer_start(c->att) || informer_start(c->ni) || informer_start(c->nic))
		return -1;
	if (!c->leader)
		metric_set(c->m_leader, NULL, 1);
	atomic_store(&c->running, true);
	for (int i = 0; i < c->o.workers; i++) {
		if (pthread_create(&c->thr[i], NULL, worker, c))
			return -1;
		c->nthr++;
	}
	return 0;
}

bool controller_synced(void *ud)
{
	struct controller *c = ud;
	for (size_t i = 0; i < c->maps->n; i++)
		if (!informer_synced(c->rep[i]))
			return false;
	return informer_synced(c->att) && informer_synced(c->ni) && informer_synced(c->nic);
}

bool controller_alive(void *ud)
{
	struct controller *c = ud;
	return atomic_load(&c->running) && !wq_shutting_down(c->q);
}

void controller_stop(struct controller *c)
{
	if (c->q)
		wq_shutdown(c->q);
	for (int i = 0; i < c->nthr; i++)
		pthread_join(c->thr[i], NULL);
	c->nthr = 0;
	atomic_store(&c->running, false);
	for (size_t i = 0; c->rep && i < c->maps->n; i++)
		if (c->rep[i])
			informer_stop(c->rep[i]);
	if (c->att)
		informer_stop(c->att);
	if (c->ni)
		informer_stop(c->ni);
	if (c->nic)
		informer_stop(c->nic);
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	controller_stop(c);
	for (size_t i = 0; c->rep && i < c->maps->n; i++)
		informer_free(c->rep[i]);
	free(c->rep);
	free(c->rud);
	informer_free(c->att);
	informer_free(c->ni);
	informer_free(c->nic);
	wq_free(c->q);
	gmap_free(c->memo, memo_free);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
