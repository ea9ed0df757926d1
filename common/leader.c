#include "common/leader.h"

#include "common/json.h"
#include "common/log.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct kube_resource LEASES = { "coordination.k8s.io", "v1", "leases", true };

struct leader {
	struct kube_client *kc;
	struct leader_opts o;
	char *ns, *name, *id;
	pthread_t thr;
	bool started, joined;
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	/* shared under mu */
	struct leader_term term;
	char holder[256];
	/* election thread only */
	char *observed;     /* spec as last seen, to detect changes */
	double observed_at; /* monotonic time it was first seen */
	double expires_at;  /* when another holder's lease runs out (0: none known) */
	char rv[64];        /* resourceVersion of our last write or read */
	unsigned seed;
};

static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void leader_format_microtime(double epoch_s, char *buf, size_t n)
{
	time_t s = (time_t)epoch_s;
	long us = (long)((epoch_s - (double)s) * 1e6);
	struct tm tm;
	char tmp[32];
	gmtime_r(&s, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%06ldZ", tmp, us);
}

struct leader *leader_new(struct kube_client *kc, const struct leader_opts *o)
{
	struct leader *l;
	pthread_condattr_t ca;

	if (!o->ns || !o->name || !o->identity || !*o->identity)
		return NULL;
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	l->kc = kc;
	l->o = *o;
	l->ns = strdup(o->ns);
	l->name = strdup(o->name);
	l->id = strdup(o->identity);
	if (l->o.lease_duration_s <= 0)
		l->o.lease_duration_s = 15;
	if (l->o.renew_deadline_s <= 0)
		l->o.renew_deadline_s = 10;
	if (l->o.retry_period_s <= 0)
		l->o.retry_period_s = 2;
	l->seed = (unsigned)getpid() ^ (unsigned)(size_t)l ^ (unsigned)time(NULL);
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	l->term.renew_deadline_s = l->o.renew_deadline_s;
	l->term.lease_duration_s = l->o.lease_duration_s;
	if (!l->ns || !l->name || !l->id || l->o.renew_deadline_s >= l->o.lease_duration_s) {
		leader_free(l);
		return NULL;
	}
	return l;
}

void leader_term_begin(struct leader_term *t, double at)
{
	t->held = true;
	t->renewed_at = at;
}

enum leader_state leader_term_state(const struct leader_term *t, double now)
{
	double since = now - t->renewed_at;

	if (!t->held || since >= t->lease_duration_s)
		return LEADER_NOT_LEADING;
	return since < t->renew_deadline_s ? LEADER_LEADING : LEADER_RENEWING_LATE;
}

enum leader_state leader_term_renewed(struct leader_term *t, double started, double now, bool ok)
{
	if (!t->held)
		return LEADER_NOT_LEADING;
	if (now - t->renewed_at >= t->lease_duration_s) {
		t->held = false;
		return LEADER_NOT_LEADING;
	}
	if (ok && started > t->renewed_at)
		t->renewed_at = started;
	return leader_term_state(t, now);
}

enum leader_state leader_state(struct leader *l)
{
	enum leader_state s;
	pthread_mutex_lock(&l->mu);
	s = leader_term_state(&l->term, mono());
	pthread_mutex_unlock(&l->mu);
	return s;
}

bool leader_is_leader(struct leader *l) { return leader_state(l) == LEADER_LEADING; }

void leader_holder(struct leader *l, char *buf, size_t n)
{
	pthread_mutex_lock(&l->mu);
	snprintf(buf, n, "%s", l->holder);
	pthread_mutex_unlock(&l->mu);
}

static void set_holder(struct leader *l, const char *h)
{
	bool changed;
	pthread_mutex_lock(&l->mu);
	changed = strcmp(l->holder, h ? h : "") != 0;
	snprintf(l->holder, sizeof(l->holder), "%s", h ? h : "");
	pthread_mutex_unlock(&l->mu);
	if (changed && h && *h && l->o.on_new_leader)
		l->o.on_new_leader(h, l->o.ud);
}

json_t *leader_lease_body(const char *ns, const char *name, const char *rv, const char *holder,
			  int duration_s, const char *acquire, const char *renew, long transitions)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:I}}",
			      "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
			      "metadata", "name", name, "namespace", ns,
			      "spec", "holderIdentity", holder, "leaseDurationSeconds", duration_s,
			      "acquireTime", acquire, "renewTime", renew,
			      "leaseTransitions", (json_int_t)transitions);
	if (o && rv && rv[0])
		gj_set(o, "metadata.resourceVersion", json_string(rv));
	return o;
}

static json_t *lease_obj(struct leader *l, const char *holder, int duration, const char *acquire,
			 const char *renew, long transitions)
{
	return leader_lease_body(l->ns, l->name, l->rv, holder, duration, acquire, renew, transitions);
}

void leader_lease_read(const json_t *lease, double def_duration_s, struct lease_view *v)
{
	json_int_t d = gj_int(lease, "spec.leaseDurationSeconds", 0);
	json_int_t t = gj_int(lease, "spec.leaseTransitions", 0);
	const char *h = gj_str(lease, "spec.holderIdentity"), *a = gj_str(lease, "spec.acquireTime");

	v->rv = gj_str(lease, "metadata.resourceVersion") ?: "";
	v->holder = h ? h : "";
	v->acquire = a && *a ? a : NULL;
	/* int32 in the API, > 0; anything else (a candidate's bug, a hand
	 * edit) counts as our own duration rather than as forever or never. */
	v->duration_s = d > 0 && d <= INT32_MAX ? (double)d : def_duration_s;
	v->transitions = t >= 0 && t <= INT32_MAX ? (long)t : 0;
}

long leader_next_transitions(long transitions)
{
	/* leaseTransitions is an int32 the API server keeps >= 0. */
	return transitions >= 0 && transitions < INT32_MAX ? transitions + 1 : 0;
}

/*
 * client-go's fast path: the holder of a lease still valid as last observed
 * renews with one PUT carrying the resourceVersion of its last write (or
 * read), assuming nobody wrote since, instead of a GET then a PUT every
 * retry period. 1: renewed (out: the server's answer); 0: not tried or
 * refused (the caller reads the Lease and decides as before).
 */
static int renew_optimistically(struct leader *l, const char *now, double t, json_t **out)
{
	struct kube_error err;
	struct lease_view lv;
	json_t *spec, *lease, *o;
	int ok;

	if (!l->observed || !l->rv[0] || l->observed_at + l->o.lease_duration_s <= t)
		return 0;
	if (!(spec = json_loads(l->observed, 0, NULL)))
		return 0;
	lease = json_pack("{s:o}", "spec", spec);
	leader_lease_read(lease, l->o.lease_duration_s, &lv);
	if (strcmp(lv.holder, l->id)) {
		json_decref(lease);
		return 0;
	}
	o = lease_obj(l, l->id, (int)l->o.lease_duration_s, lv.acquire ? lv.acquire : now, now, lv.transitions);
	json_decref(lease);
	ok = kube_update(l->kc, &LEASES, l->ns, l->name, NULL, o, out, &err) == 0;
	json_decref(o);
	if (!ok)
		glog_kv(GLOG_INFO, "leader", "optimistic renewal refused, reading the lease", "error", err.message,
			NULL);
	return ok;
}

/* One attempt, as client-go's tryAcquireOrRenew. Returns true if we hold the lease (the caller moves the term). */
static bool try_acquire_or_renew(struct leader *l)
{
	struct kube_error err;
	json_t *cur = NULL, *out = NULL, *o;
	char now[64], *spec_s;
	const char *holder, *acq;
	struct lease_view lv;
	double t = mono();
	long transitions;
	bool ok;

	/* Known again only from this read: a failed read leaves no stale expiry
	 * (a standby then retried every 50 ms while the API server was down). */
	l->expires_at = 0;
	leader_format_microtime(wall(), now, sizeof(now));
	if (renew_optimistically(l, now, t, &out))
		goto won;
	if (kube_get(l->kc, &LEASES, l->ns, l->name, &cur, &err)) {
		if (err.code != KUBE_ERR_NOT_FOUND) {
			glog_kv(GLOG_WARN, "leader", "get lease failed", "error", err.message, NULL);
			return false;
		}
		l->rv[0] = 0;
		o = lease_obj(l, l->id, (int)l->o.lease_duration_s, now, now, 0);
		json_object_del(json_object_get(o, "metadata"), "resourceVersion");
		ok = kube_create(l->kc, &LEASES, l->ns, o, &out, &err) == 0;
		json_decref(o);
		if (!ok) {
			glog_kv(GLOG_INFO, "leader", "create lease failed", "error", err.message, NULL);
			return false;
		}
		goto won;
	}
	leader_lease_read(cur, l->o.lease_duration_s, &lv);
	snprintf(l->rv, sizeof(l->rv), "%s", lv.rv);
	holder = lv.holder;
	spec_s = gj_dumps(json_object_get(cur, "spec"));
	if (!l->observed || !spec_s || strcmp(l->observed, spec_s)) {
		free(l->observed);
		l->observed = spec_s;
		l->observed_at = t;
	} else {
		free(spec_s);
	}
	set_holder(l, holder);
	double dur = lv.duration_s;
	l->expires_at = 0;
	if (*holder && strcmp(holder, l->id) && l->observed_at + dur > t) {
		l->expires_at = l->observed_at + dur;
		json_decref(cur);
		return false; /* held by someone else and not expired */
	}
	transitions = lv.transitions;
	acq = lv.acquire;
	if (strcmp(holder, l->id)) {
		transitions = leader_next_transitions(transitions);
		acq = now;
	}
	o = lease_obj(l, l->id, (int)l->o.lease_duration_s, acq ? acq : now, now, transitions);
	ok = kube_update(l->kc, &LEASES, l->ns, l->name, NULL, o, &out, &err) == 0;
	json_decref(o);
	json_decref(cur);
	if (!ok) {
		/* 409: someone else wrote first; we lost this round. */
		glog_kv(GLOG_INFO, "leader", "update lease failed", "error", err.message, NULL);
		return false;
	}
won:
	snprintf(l->rv, sizeof(l->rv), "%s", gj_str(out, "metadata.resourceVersion") ?: "");
	free(l->observed);
	l->observed = gj_dumps(json_object_get(out, "spec"));
	l->observed_at = t;
	json_decref(out);
	set_holder(l, l->id);
	return true;
}

static bool sleep_or_stop(struct leader *l, double s)
{
	double end = mono() + s;
	struct timespec ts = { (time_t)end, (long)((end - (double)(time_t)end) * 1e9) };
	pthread_mutex_lock(&l->mu);
	while (!atomic_load(&l->stop))
		if (pthread_cond_timedwait(&l->cond, &l->mu, &ts))
			break;
	pthread_mutex_unlock(&l->mu);
	return atomic_load(&l->stop);
}

static double jittered(struct leader *l)
{
	return l->o.retry_period_s * (1.0 + 0.2 * (double)rand_r(&l->seed) / (double)RAND_MAX);
}

/* The term after a renewal attempt that started at `started` (the state other threads read, under mu). */
static enum leader_state term_renewed(struct leader *l, double started, bool ok)
{
	enum leader_state s;
	pthread_mutex_lock(&l->mu);
	s = leader_term_renewed(&l->term, started, mono(), ok);
	pthread_mutex_unlock(&l->mu);
	return s;
}

/* A retry period, or less when the term would end before: it ends on time. */
static double until_next_renewal(struct leader *l)
{
	double d = l->o.retry_period_s, left;
	pthread_mutex_lock(&l->mu);
	left = l->term.renewed_at + l->term.lease_duration_s - mono();
	pthread_mutex_unlock(&l->mu);
	return left < d ? (left > 0 ? left : 0) : d;
}

static void term_begin(struct leader *l, double at)
{
	pthread_mutex_lock(&l->mu);
	leader_term_begin(&l->term, at);
	pthread_mutex_unlock(&l->mu);
}

static void term_end(struct leader *l)
{
	pthread_mutex_lock(&l->mu);
	l->term.held = false;
	pthread_mutex_unlock(&l->mu);
}

static void release(struct leader *l)
{
	struct kube_error err;
	char now[64];
	json_t *o, *out = NULL;

	leader_format_microtime(wall(), now, sizeof(now));
	/* client-go's release: empty holder, 1 s duration, same transition count. */
	o = lease_obj(l, "", 1, now, now, 0);
	if (l->observed) {
		json_t *spec = json_loads(l->observed, 0, NULL), *lease = json_pack("{s:o*}", "spec", spec);
		struct lease_view lv;

		leader_lease_read(lease, 1, &lv);
		gj_set(o, "spec.leaseTransitions", json_integer(lv.transitions));
		json_decref(lease);
	}
	if (kube_update(l->kc, &LEASES, l->ns, l->name, NULL, o, &out, &err))
		glog_kv(GLOG_WARN, "leader", "release failed", "error", err.message, NULL);
	else
		glog_kv(GLOG_INFO, "leader", "released lease", "identity", l->id, NULL);
	json_decref(o);
	json_decref(out);
}

static bool lock_try(struct leader *l)
{
	return l->o.lock ? l->o.lock->try_acquire_or_renew(l->o.lock->ud) : try_acquire_or_renew(l);
}

static void lock_release(struct leader *l)
{
	if (l->o.lock)
		l->o.lock->release(l->o.lock->ud);
	else
		release(l);
}

static void *run(void *arg)
{
	struct leader *l = arg;

	while (!atomic_load(&l->stop)) {
		double started = mono();

		/* Acquire. */
		if (!lock_try(l)) {
			/* Wake when the holder's lease runs out if that is before the
			 * next retry: takeover then follows the expiry closely. */
			double d = jittered(l), left = l->expires_at - mono();
			if (l->expires_at > 0 && left < d)
				d = left > 0.05 ? left + 0.01 : 0.05;
			if (sleep_or_stop(l, d))
				break;
			continue;
		}
		term_begin(l, started);
		glog_kv(GLOG_INFO, "leader", "became leader", "identity", l->id, "lease", l->name, NULL);
		if (l->o.on_started)
			l->o.on_started(l->o.ud);
		/* Renew every retry period: past renew_deadline the term is
		 * RENEWING_LATE (no writes) and renewals are still tried; one that
		 * succeeds makes it LEADING again; none by lease_duration ends it. */
		for (enum leader_state was = LEADER_LEADING, s;; was = s) {
			if (sleep_or_stop(l, until_next_renewal(l)))
				break;
			started = mono();
			if (term_renewed(l, started, false) == LEADER_NOT_LEADING)
				break; /* past lease_duration while sleeping: not tried */
			if ((s = term_renewed(l, started, lock_try(l))) == LEADER_NOT_LEADING)
				break;
			if (s != was)
				glog_kv(s == LEADER_LEADING ? GLOG_INFO : GLOG_WARN, "leader",
					s == LEADER_LEADING ? "late renewal succeeded" : "renewal late: not writing",
					"identity", l->id, NULL);
		}
		term_end(l);
		if (atomic_load(&l->stop)) {
			lock_release(l);
		} else {
			glog_kv(GLOG_WARN, "leader", "lost leadership", "identity", l->id, NULL);
		}
		if (l->o.on_stopped)
			l->o.on_stopped(l->o.ud);
	}
	return NULL;
}

int leader_start(struct leader *l)
{
	if (l->started)
		return -1;
	l->started = true;
	if (pthread_create(&l->thr, NULL, run, l)) {
		l->started = false;
		return -1;
	}
	return 0;
}

void leader_stop(struct leader *l)
{
	if (!l->started || l->joined)
		return;
	atomic_store(&l->stop, true);
	pthread_mutex_lock(&l->mu);
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thr, NULL);
	l->joined = true;
}

void leader_free(struct leader *l)
{
	if (!l)
		return;
	leader_stop(l);
	free(l->observed);
	free(l->ns);
	free(l->name);
	free(l->id);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
