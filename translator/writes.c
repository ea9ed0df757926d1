#include "translator/writes.h"

#include "common/gmap.h"
#include "common/json.h"
#include "common/kube_core_event.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A fingerprint's hash: two FNV-1a 64 with different offsets (a collision
 * would skip one write; at 2^-128 per pair it is not a concern). */
struct fph {
	uint64_t a, b;
};

static struct fph fph_of(const char *fp)
{
	struct fph h = { 0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL };
	for (const unsigned char *p = (const unsigned char *)fp; fp && *p; p++) {
		h.a = (h.a ^ *p) * 0x100000001b3ULL;
		h.b = (h.b ^ (*p + 0x9eu)) * 0x100000001b3ULL;
	}
	if (!h.a && !h.b)
		h.a = 1;
	return h;
}

static bool fph_set(struct fph h) { return h.a || h.b; }
static bool fph_eq(struct fph x, const char *fp)
{
	struct fph y = fph_of(fp);
	return fph_set(x) && x.a == y.a && x.b == y.b;
}

/* What we last did to a key. */
struct memo {
	char uid[64];
	uint64_t rv;      /* resourceVersion our last write returned */
	/* Fingerprints are kept as 128-bit hashes (one memo per object: at 10,000
	 * sets the strings were ~1 KB each); 0 = none. */
	struct fph intent;  /* of its intent */
	struct fph refused; /* of an intent refused 422 for this uid (set aside) */
	struct fph logged;  /* of the last refusal logged (once per intent) */
	json_t *reported;   /* withheld fields already reported for this uid: {field: true}; NULL: none */
};

/* A FieldWithheld Event waiting for the sender thread. */
struct evq_item {
	struct evq_item *next;
	enum tkind k;
	json_t *obj; /* metadata name, namespace, uid of the involved object */
	char *msg;
	char *lab;   /* "resource,field": posted again for the next object if this one fails */
};

/* Events queued at most; past it one is dropped (logged; the log line and
 * the metric of the withheld value were recorded already). */
#define EVQ_MAX 4096

struct writes {
	struct kube_client *kc;
	struct writes_opts o;
	char manager[64], instance[128];
	char gate[512]; /* test hook directory, "" when off */
	pthread_mutex_t mu;
	struct gmap *memo;
	/* "resource,field" pairs a FieldWithheld Event was posted for (under mu):
	 * one Event per pair and process, not per object (see writes_withheld). */
	json_t *evented;
	double schema_changed_at; /* monotonic seconds of the last target-schema change, 0: never */
	struct metric *m_writes, *m_skips, *m_errors, *m_conflicts, *m_takeover, *m_rejects,
		*m_stale, *m_withheld, *m_refused;
	/* FieldWithheld Events go out from their own thread, not the worker's:
	 * posted before the status write they cost every chain one round trip
	 * (every attachment of a 64-hex containerID has one: bench_burst). */
	pthread_mutex_t emu;
	pthread_cond_t ecv;
	struct evq_item *ehead, *etail;
	size_t en;
	bool estop, ethr_on;
	pthread_t ethr;
};

static int post_event_now(struct writes *w, enum tkind k, const json_t *obj, const char *msg);

static void evq_free(struct evq_item *e)
{
	json_decref(e->obj);
	free(e->msg);
	free(e->lab);
	free(e);
}

static void *event_sender(void *arg)
{
	struct writes *w = arg;

	pthread_mutex_lock(&w->emu);
	for (;;) {
		struct evq_item *e;
		while (!w->ehead && !w->estop)
			pthread_cond_wait(&w->ecv, &w->emu);
		if (w->estop)
			break;
		e = w->ehead;
		w->ehead = e->next;
		if (!w->ehead)
			w->etail = NULL;
		w->en--;
		pthread_mutex_unlock(&w->emu);
		/* Only the leader writes, Events included (it may have changed since). */
		if ((w->o.may_write && !w->o.may_write(w->o.ud)) || post_event_now(w, e->k, e->obj, e->msg)) {
			/* not posted: the next object withheld for this field tries again */
			pthread_mutex_lock(&w->mu);
			json_object_del(w->evented, e->lab);
			pthread_mutex_unlock(&w->mu);
		}
		evq_free(e);
		pthread_mutex_lock(&w->emu);
	}
	pthread_mutex_unlock(&w->emu);
	return NULL;
}

/* Within this long after a target CRD changed, a 422 may be the API server's
 * validator lagging the CRD: retried with backoff instead of set aside. */
#define SCHEMA_SETTLE_S 30.0

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void memo_free(void *p)
{
	struct memo *m = p;
	if (!m)
		return;
	json_decref(m->reported);
	free(m);
}

struct writes *writes_new(struct kube_client *kc, struct metrics *m, const struct writes_opts *o)
{
	struct writes *w = calloc(1, sizeof(*w));
	const char *gate = getenv("GALACTIC_TRANSLATOR_TEST_WRITE_GATE");

	if (!w)
		return NULL;
	w->kc = kc;
	w->o = *o;
	snprintf(w->manager, sizeof(w->manager), "%s", o->manager);
	snprintf(w->instance, sizeof(w->instance), "%s", o->instance ? o->instance : "");
	snprintf(w->gate, sizeof(w->gate), "%s", gate ? gate : "");
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->emu, NULL);
	pthread_cond_init(&w->ecv, NULL);
	w->memo = gmap_new();
	w->evented = json_object();
	w->m_writes = metrics_counter(m, "galactic_translator_status_writes_total",
				      "Status writes (server-side applies and JSON Patches) that succeeded", "kind");
	w->m_skips = metrics_counter(m, "galactic_translator_status_write_skips_total",
				     "Reconciles that found the object already showing the intent", "kind");
	w->m_errors = metrics_counter(m, "galactic_translator_status_write_errors_total",
				      "Failed status writes by HTTP status (0: transport); guard refusals excluded",
				      "code");
	w->m_conflicts = metrics_counter(m, "galactic_translator_conflicts_total",
					 "HTTP 409 responses on status writes other than guard refusals", NULL);
	w->m_takeover = metrics_counter(m, "galactic_translator_field_takeovers_total",
					"Translator-owned fields found owned by another manager", "field");
	w->m_rejects = metrics_counter(m, "galactic_translator_guarded_patch_rejections_total",
				       "Guarded condition patches refused (409/422): the list or object changed under us",
				       "kind");
	w->m_stale = metrics_counter(m, "galactic_translator_stale_apply_refusals_total",
				     "Server-side applies refused by their resourceVersion precondition (409): the object changed or was re-created",
				     "kind");
	w->m_withheld = metrics_counter(m, "galactic_translator_fields_withheld_total",
					"Values left out of a write because the target schema cannot hold them (once per object and field)",
					"resource,field");
	w->m_refused = metrics_counter(m, "galactic_translator_writes_refused_total",
				       "Status writes the API server refused as invalid (422) or failed (5xx)",
				       "kind,code");
	if (!w->memo || !w->evented || !w->m_writes || !w->m_skips || !w->m_errors || !w->m_conflicts ||
	    !w->m_takeover || !w->m_rejects || !w->m_stale || !w->m_withheld || !w->m_refused) {
		writes_free(w);
		return NULL;
	}
	/* Present from the start, so a scrape can tell 0 from "not exported". */
	for (int k = 0; k < TK_N; k++) {
		char l[64];
		metric_add(w->m_writes, TKINDS[k].kind, 0);
		metric_add(w->m_skips, TKINDS[k].kind, 0);
		metric_add(w->m_rejects, TKINDS[k].kind, 0);
		metric_add(w->m_stale, TKINDS[k].kind, 0);
		snprintf(l, sizeof(l), "%s,422", TKINDS[k].kind);
		metric_add(w->m_refused, l, 0);
		snprintf(l, sizeof(l), "%s,500", TKINDS[k].kind);
		metric_add(w->m_refused, l, 0);
	}
	metric_add(w->m_conflicts, NULL, 0);
	if (*w->gate)
		glog_kv(GLOG_WARN, "translator", "test write gate on", "dir", w->gate, NULL);
	return w;
}

void writes_free(struct writes *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->emu);
	w->estop = true;
	pthread_cond_signal(&w->ecv);
	pthread_mutex_unlock(&w->emu);
	if (w->ethr_on)
		pthread_join(w->ethr, NULL);
	/* Not sent: the process stops (a new leader reports each withheld value again). */
	for (struct evq_item *e = w->ehead, *n; e; e = n) {
		n = e->next;
		evq_free(e);
	}
	pthread_cond_destroy(&w->ecv);
	pthread_mutex_destroy(&w->emu);
	gmap_free(w->memo, memo_free);
	json_decref(w->evented);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void writes_skip(struct writes *w, enum tkind k) { metric_add(w->m_skips, TKINDS[k].kind, 1); }

static bool parse_rv(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

/* The memo of key for obj's incarnation (created, or reset when the uid changed). Under mu. */
static struct memo *memo_for(struct writes *w, const char *key, const json_t *obj)
{
	const char *uid = gj_str(obj, "metadata.uid") ?: "";
	struct memo *m = gmap_get(w->memo, key);
	int err = 0;

	if (m && !strcmp(m->uid, uid))
		return m;
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	snprintf(m->uid, sizeof(m->uid), "%s", uid);
	memo_free(gmap_put(w->memo, key, m, &err));
	if (err) {
		memo_free(m);
		return NULL;
	}
	return m;
}

bool writes_already_sent(struct writes *w, enum tkind k, const char *key, const json_t *obj,
			 const char *fp)
{
	uint64_t rv;
	bool r = false;
	struct memo *m;

	if (!fp)
		return false;
	pthread_mutex_lock(&w->mu);
	m = gmap_get(w->memo, key);
	if (m && !strcmp(m->uid, gj_str(obj, "metadata.uid") ?: "")) {
		/* Resource versions are opaque in the API contract; they are etcd
		 * revisions in practice, so they are compared only when both parse. */
		if (fph_eq(m->intent, fp) &&
		    parse_rv(gj_str(obj, "metadata.resourceVersion"), &rv) && rv < m->rv)
			r = true;
		if (fph_eq(m->refused, fp))
			r = true;
	}
	pthread_mutex_unlock(&w->mu);
	if (r)
		writes_skip(w, k);
	return r;
}

static void memo_written(struct writes *w, const char *key, const json_t *out, const char *fp)
{
	struct memo *m;
	uint64_t rv;

	pthread_mutex_lock(&w->mu);
	if ((m = memo_for(w, key, out))) {
		m->intent = (struct fph){ 0, 0 };
		m->rv = 0;
		if (fp && parse_rv(gj_str(out, "metadata.resourceVersion"), &rv)) {
			m->intent = fph_of(fp);
			m->rv = rv;
		}
		m->refused = (struct fph){ 0, 0 };
	}
	pthread_mutex_unlock(&w->mu);
}

void writes_schema_changed(struct writes *w)
{
	struct gmap_iter it;
	const char *k;
	void *v;

	pthread_mutex_lock(&w->mu);
	w->schema_changed_at = mono_now();
	gmap_iter_init(&it, w->memo);
	while (gmap_next(&it, &k, &v)) {
		struct memo *m = v;
		m->refused = (struct fph){ 0, 0 };
	}
	pthread_mutex_unlock(&w->mu);
}

void writes_forget(struct writes *w, const char *key)
{
	bool found;
	pthread_mutex_lock(&w->mu);
	memo_free(gmap_del(w->memo, key, &found));
	pthread_mutex_unlock(&w->mu);
}

void writes_note_takeovers(struct writes *w, const char *key, const json_t *obj,
			   const json_t *intent)
{
	const json_t *want = json_object_get(intent, "status"), *e, *v;
	const char *k;
	size_t i, j;

	json_array_foreach(gj_get(obj, "metadata.managedFields"), i, e) {
		const char *mgr = gj_str(e, "manager"), *op = gj_str(e, "operation");
		const json_t *st = gj_get(e, "fieldsV1.f:status");
		if (!mgr || !st || (!strcmp(mgr, w->manager) && op && !strcmp(op, "Apply")))
			continue;
		json_object_foreach((json_t *)want, k, v) {
			char fk[300];
			if (!strcmp(k, "conditions")) {
				const json_t *c;
				json_array_foreach(v, j, c) {
					const char *t = gj_str(c, "type") ?: "";
					snprintf(fk, sizeof(fk), "k:{\"type\":\"%s\"}", t);
					if (json_object_get(json_object_get(st, "f:conditions"), fk)) {
						glog_kv(GLOG_WARN, "translator",
							"condition owned by another manager; taking it back",
							"object", key, "condition", t, "manager", mgr, NULL);
						metric_add(w->m_takeover, t, 1);
					}
				}
				continue;
			}
			snprintf(fk, sizeof(fk), "f:%s", k);
			if (json_object_get(st, fk)) {
				glog_kv(GLOG_WARN, "translator", "field owned by another manager; taking it back",
					"object", key, "field", k, "manager", mgr, NULL);
				metric_add(w->m_takeover, k, 1);
			}
		}
	}
}

/* A core v1 Event on obj; best effort (a failure is logged; -1). */
static int post_event_now(struct writes *w, enum tkind k, const json_t *obj, const char *msg)
{
	const struct kube_core_event ev = { TKINDS[k].api_version, TKINDS[k].kind, "Warning", "FieldWithheld",
				       msg, w->manager, w->instance };
	struct kube_error err;

	if (kube_core_event_post(w->kc, obj, &ev, &err) < 0) {
		glog_kv(GLOG_WARN, "translator", "cannot record event", "object",
			gj_str(obj, "metadata.name"), "error", err.message, NULL);
		return -1;
	}
	return 0;
}

/* Queues the Event for the sender thread (started at the first one). lab: its evented entry. */
static void post_event(struct writes *w, enum tkind k, const json_t *obj, const char *msg, const char *lab)
{
	struct evq_item *e = calloc(1, sizeof(*e));
	bool queued = false;

	if (e) {
		e->k = k;
		e->obj = json_pack("{s:{s:s?, s:s?, s:s?}}", "metadata", "name", gj_str(obj, "metadata.name"),
				   "namespace", gj_str(obj, "metadata.namespace"), "uid",
				   gj_str(obj, "metadata.uid"));
		e->msg = strdup(msg);
		e->lab = strdup(lab);
	}
	pthread_mutex_lock(&w->emu);
	if (e && e->obj && e->msg && e->lab && !w->estop && w->en < EVQ_MAX &&
	    (w->ethr_on || !pthread_create(&w->ethr, NULL, event_sender, w))) {
		w->ethr_on = true;
		if (w->etail)
			w->etail->next = e;
		else
			w->ehead = e;
		w->etail = e;
		w->en++;
		queued = true;
		pthread_cond_signal(&w->ecv);
	}
	pthread_mutex_unlock(&w->emu);
	if (!queued) {
		glog_kv(GLOG_WARN, "translator", "event not recorded (queue full or out of memory)", "object",
			gj_str(obj, "metadata.name"), NULL);
		if (e)
			evq_free(e);
		pthread_mutex_lock(&w->mu);
		json_object_del(w->evented, lab);
		pthread_mutex_unlock(&w->mu);
	}
}

/*
 * Per object and field (uid): a log line and the metric. The FieldWithheld
 * Event goes on the first object of each resource and field only: the
 * schema that cannot hold the value is the cluster's, not the object's, and
 * an Event per object (every attachment with a runtime's 64-hex id) was one
 * API write per workload start, 1 of the 7.4 requests of a chain
 * (bench_burst, docs/performance.md).
 */
void writes_withheld(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		     const struct withheld *wh, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct memo *m;
		bool first = false, event = false;
		char msg[800], lab[300];

		snprintf(lab, sizeof(lab), "%s,%s", TKINDS[k].res.resource, wh[i].field);
		pthread_mutex_lock(&w->mu);
		if ((m = memo_for(w, key, obj)) && !json_object_get(m->reported, wh[i].field) &&
		    (m->reported || (m->reported = json_object()))) {
			json_object_set_new(m->reported, wh[i].field, json_true());
			first = true;
			if (!json_object_get(w->evented, lab) && !json_object_set_new(w->evented, lab, json_true()))
				event = true;
		}
		pthread_mutex_unlock(&w->mu);
		if (!first)
			continue;
		snprintf(msg, sizeof(msg),
			 "%s withheld: the %s schema cannot hold the value (%s); the rest of the status is written",
			 wh[i].field, TKINDS[k].crd, wh[i].why);
		glog_kv(event ? GLOG_WARN : GLOG_INFO, "translator", "value withheld: the target schema cannot hold it",
			"object", key, "field", wh[i].field, "constraint", wh[i].why, "event",
			event ? "posted" : "posted on the first object only", NULL);
		metric_add(w->m_withheld, lab, 1);
		if (event)
			post_event(w, k, obj, msg, lab);
	}
}

/*
 * Test hook: with GALACTIC_TRANSLATOR_TEST_WRITE_GATE=DIR, a write to an
 * object for which DIR/<Kind>.<ns>.<name> exists waits (after the cache
 * was read, before the request) until that file is removed, after creating
 * DIR/<Kind>.<ns>.<name>.held. Lets a test re-create the object in between.
 */
static void gate(struct writes *w, enum tkind k, const json_t *obj)
{
	char f[900], held[920];
	struct stat sb;
	FILE *h;

	if (!*w->gate)
		return;
	snprintf(f, sizeof(f), "%s/%s.%s.%s", w->gate, TKINDS[k].kind,
		 gj_str(obj, "metadata.namespace") ?: "", gj_str(obj, "metadata.name") ?: "");
	if (stat(f, &sb))
		return;
	snprintf(held, sizeof(held), "%s.held", f);
	if ((h = fopen(held, "w")))
		fclose(h);
	for (int i = 0; i < 3000 && !stat(f, &sb); i++)
		usleep(10 * 1000);
	unlink(held);
}

static bool is_schema_refusal(const struct kube_error *e)
{
	return e->http_status == 422 && strstr(e->message, " is invalid: ");
}

static enum wres failed(struct writes *w, enum tkind k, const char *key, const char *what,
			const struct kube_error *err, const char *fp, bool guarded_patch)
{
	char code[16], lab[64];

	if (err->code == KUBE_ERR_NOT_FOUND) {
		glog_kv(GLOG_DEBUG, "translator", "object gone", "object", key, NULL);
		writes_forget(w, key);
		return WR_GONE;
	}
	if (guarded_patch && (err->http_status == 409 || err->http_status == 422) &&
	    !is_schema_refusal(err)) {
		/* Someone changed the list (or re-created the object) since our cache
		 * saw it: the guards refused. Their event re-queues the key; the
		 * rate-limited retry covers a lost event. */
		metric_add(w->m_rejects, TKINDS[k].kind, 1);
		glog_kv(GLOG_INFO, "translator", "guarded condition patch refused; will retry", "object",
			key, "error", err->message, NULL);
		return WR_STALE;
	}
	if (!guarded_patch && err->code == KUBE_ERR_CONFLICT) {
		/* The resourceVersion precondition: the object changed, or is another incarnation. */
		metric_add(w->m_stale, TKINDS[k].kind, 1);
		glog_kv(GLOG_INFO, "translator", "status apply refused: the object changed since the cache; will retry",
			"object", key, NULL);
		return WR_STALE;
	}
	snprintf(code, sizeof(code), "%ld", err->http_status);
	metric_add(w->m_errors, code, 1);
	if (err->http_status == 409)
		metric_add(w->m_conflicts, NULL, 1);
	if (err->http_status == 422 || err->http_status >= 500) {
		snprintf(lab, sizeof(lab), "%s,%ld", TKINDS[k].kind, err->http_status);
		metric_add(w->m_refused, lab, 1);
	}
	if (err->http_status == 422 && fp) {
		/* Invalid values anyway (a rule we cannot evaluate, e.g. CEL): log once per
		 * intent and do not retry hot; a new intent or a CRD change retries. */
		struct memo *m;
		bool first = false, settling;
		pthread_mutex_lock(&w->mu);
		settling = w->schema_changed_at > 0 && mono_now() - w->schema_changed_at < SCHEMA_SETTLE_S;
		/* The error names no uid; the memo of the key is for the incarnation we last saw. */
		m = gmap_get(w->memo, key);
		if (m && !fph_eq(m->logged, fp)) {
			m->logged = fph_of(fp);
			first = true;
		}
		if (m && !settling && !fph_eq(m->refused, fp)) {
			m->refused = fph_of(fp);
		}
		pthread_mutex_unlock(&w->mu);
		if (first)
			glog_kv(GLOG_WARN, "translator",
				settling ? "status write refused as invalid just after a CRD change; retrying with backoff"
					 : "status write refused as invalid; not retried until it changes",
				"object", key, "write", what, "error", err->message, NULL);
		if (settling)
			return WR_FAILED; /* not set aside while the validator may lag */
		return WR_REFUSED;
	}
	glog_kv(GLOG_WARN, "translator", what, "object", key, "error", err->message, NULL);
	return WR_FAILED;
}

/* Makes sure a memo exists for obj's incarnation (so a 422 can be remembered). */
static void memo_touch(struct writes *w, const char *key, const json_t *obj)
{
	pthread_mutex_lock(&w->mu);
	memo_for(w, key, obj);
	pthread_mutex_unlock(&w->mu);
}

enum wres writes_apply(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		       json_t *intent, const char *fp, json_t **out)
{
	struct kube_error err;
	const char *rv = gj_str(obj, "metadata.resourceVersion");
	json_t *md = json_object_get(intent, "metadata");

	*out = NULL;
	if (!rv || !*rv || !json_is_object(md) ||
	    json_object_set_new(md, "resourceVersion", json_string(rv)))
		return WR_FAILED;
	memo_touch(w, key, obj);
	gate(w, k, obj);
	if (w->o.may_write && !w->o.may_write(w->o.ud))
		return WR_NOOP; /* lost the lease while computing: the new leader writes */
	/* force: the ownership table makes these fields ours alone (client-go
	 * guidance for controllers); writes_note_takeovers logs any takeover. */
	if (kube_apply(w->kc, &TKINDS[k].res, gj_str(obj, "metadata.namespace"),
		       gj_str(obj, "metadata.name"), "status", intent, w->manager, true, out, &err))
		return failed(w, k, key, "status apply failed", &err, fp, false);
	metric_add(w->m_writes, TKINDS[k].kind, 1);
	memo_written(w, key, *out, fp);
	return WR_OK;
}

enum wres writes_patch(struct writes *w, enum tkind k, const char *key, const json_t *obj,
		       json_t *ops, const char *fp, json_t **out)
{
	struct kube_error err;
	/* The same incarnation only: a JSON Patch applies to the stored object, metadata too. */
	json_t *guard = json_pack("{s:s, s:s, s:s}", "op", "test", "path", "/metadata/uid", "value",
				  gj_str(obj, "metadata.uid") ?: "");

	*out = NULL;
	if (!guard || json_array_insert_new(ops, 0, guard))
		return WR_FAILED;
	memo_touch(w, key, obj);
	gate(w, k, obj);
	if (w->o.may_write && !w->o.may_write(w->o.ud))
		return WR_NOOP;
	if (kube_json_patch(w->kc, &TKINDS[k].res, gj_str(obj, "metadata.namespace"),
			    gj_str(obj, "metadata.name"), "status", ops, w->manager, out, &err))
		return failed(w, k, key, "guarded condition patch", &err, fp, true);
	metric_add(w->m_writes, TKINDS[k].kind, 1);
	memo_written(w, key, *out, fp);
	return WR_OK;
}
