#include "translator/controller.h"

#include "common/gmap.h"
#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "common/workqueue.h"
#include "translator/intent.h"

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
	struct informer **rep; /* one per mapping entry */
	struct rep_ud *rud;    /* handler data of each report informer */
	struct wq *q;
	pthread_t thr[MAX_WORKERS];
	int nthr;
	atomic_bool running;

	pthread_mutex_t mu;
	struct gmap *memo;

	struct metric *m_writes, *m_skips, *m_errors, *m_conflicts, *m_invalid, *m_leader,
		*m_takeover, *m_reconciles, *m_deferred;
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

static void att_add(json_t *obj, void *ud) { enqueue_obj(ud, obj); }
static void att_update(json_t *old, json_t *nw, void *ud)
{
	(void)old;
	enqueue_obj(ud, nw);
}
static void att_delete(json_t *obj, void *ud) { enqueue_obj(ud, obj); }

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

static void *worker(void *arg)
{
	struct controller *c = arg;
	char *key;

	while ((key = wq_get(c->q, -1))) {
		double after = 0;
		if (reconcile(c, key, &after)) {
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
	if (!c->m_writes || !c->m_skips || !c->m_errors || !c->m_conflicts || !c->m_invalid ||
	    !c->m_takeover || !c->m_reconciles || !c->m_leader || !c->m_deferred)
		goto fail;
	/* Present from the start, so a scrape can tell 0 from "not exported". */
	metric_add(c->m_writes, "VPCAttachment", 0);
	metric_add(c->m_skips, "VPCAttachment", 0);
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
	if (informer_start(c->att))
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
	return informer_synced(c->att);
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
	wq_free(c->q);
	gmap_free(c->memo, memo_free);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
