#include "common/informer.h"

#include "common/backoff.h"
#include "common/json.h"
#include "common/kube_watch.h"
#include "common/log.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_HANDLERS 8

struct informer {
	struct kube_client *kc;
	struct informer_opts o;
	char *ns, *lsel, *fsel, *name;
	char group[128], version[64], resource[128];
	struct kube_store *store;
	struct informer_handlers h[MAX_HANDLERS];
	int nh;

	pthread_t thr;
	bool started, joined;
	atomic_bool stop, watch_abort;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool synced;
	struct informer_stats st;

	/* informer thread only */
	char rv[64];
	struct kube_watch_decoder *dec;
	long stream_error_code;   /* code of an in-stream ERROR event */
	char stream_error[512];
	bool stream_decode_failed;
	bool got_data;
	unsigned long applied; /* events and bookmarks since the last list */
	double listed_at;      /* CLOCK_MONOTONIC seconds of the last list */
	unsigned long fails;   /* failed lists and watches since the last good one */
	unsigned seed;
};

static void copy_opt(char **dst, const char *s) { *dst = s ? strdup(s) : NULL; }

struct informer *informer_new(struct kube_client *kc, const struct informer_opts *opts)
{
	struct informer *inf = calloc(1, sizeof(*inf));
	pthread_condattr_t ca;

	if (!inf)
		return NULL;
	inf->kc = kc;
	inf->o = *opts;
	snprintf(inf->group, sizeof(inf->group), "%s", opts->res.group ? opts->res.group : "");
	snprintf(inf->version, sizeof(inf->version), "%s", opts->res.version ? opts->res.version : "");
	snprintf(inf->resource, sizeof(inf->resource), "%s", opts->res.resource ? opts->res.resource : "");
	inf->o.res.group = inf->group;
	inf->o.res.version = inf->version;
	inf->o.res.resource = inf->resource;
	copy_opt(&inf->ns, opts->ns);
	copy_opt(&inf->lsel, opts->label_selector);
	copy_opt(&inf->fsel, opts->field_selector);
	copy_opt(&inf->name, opts->name ? opts->name : opts->res.resource);
	inf->o.ns = inf->ns;
	inf->o.label_selector = inf->lsel;
	inf->o.field_selector = inf->fsel;
	inf->o.name = inf->name;
	if (!inf->o.page_size)
		inf->o.page_size = 500;
	if (!inf->o.min_timeout_s)
		inf->o.min_timeout_s = 300;
	if (!inf->o.max_timeout_s)
		inf->o.max_timeout_s = 600;
	if (inf->o.max_timeout_s < inf->o.min_timeout_s)
		inf->o.max_timeout_s = inf->o.min_timeout_s;
	if (!inf->o.idle_timeout_s)
		inf->o.idle_timeout_s = 150;
	if (inf->o.backoff_initial_s <= 0)
		inf->o.backoff_initial_s = 0.8;
	if (inf->o.backoff_max_s <= 0)
		inf->o.backoff_max_s = 30;
	inf->store = kube_store_new();
	if (inf->store && opts->compact && kube_store_set_compact(inf->store)) {
		kube_store_free(inf->store);
		inf->store = NULL;
	}
	inf->dec = kube_watch_decoder_new(0);
	pthread_mutex_init(&inf->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->cond, &ca);
	pthread_condattr_destroy(&ca);
	inf->seed = (unsigned)time(NULL) ^ (unsigned)(size_t)inf;
	if (!inf->store || !inf->dec || (opts->ns && !inf->ns) || !inf->name ||
	    (opts->label_selector && !inf->lsel) || (opts->field_selector && !inf->fsel)) {
		informer_free(inf);
		return NULL;
	}
	return inf;
}

int informer_add_index(struct informer *inf, const char *name, kube_index_fn fn, void *ud)
{
	if (inf->started)
		return -1;
	return kube_store_add_index(inf->store, name, fn, ud);
}

int informer_add_handlers(struct informer *inf, const struct informer_handlers *h)
{
	if (inf->started || inf->nh >= MAX_HANDLERS)
		return -1;
	inf->h[inf->nh++] = *h;
	return 0;
}

struct kube_store *informer_store(struct informer *inf) { return inf->store; }

void informer_get_stats(struct informer *inf, struct informer_stats *out)
{
	pthread_mutex_lock(&inf->mu);
	*out = inf->st;
	pthread_mutex_unlock(&inf->mu);
}

bool informer_synced(struct informer *inf)
{
	bool s;
	pthread_mutex_lock(&inf->mu);
	s = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

static struct timespec deadline(double s)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += (time_t)s;
	t.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

bool informer_wait_synced(struct informer *inf, double timeout_s)
{
	struct timespec dl = deadline(timeout_s);
	bool s;
	pthread_mutex_lock(&inf->mu);
	while (!inf->synced && !atomic_load(&inf->stop))
		if (pthread_cond_timedwait(&inf->cond, &inf->mu, &dl))
			break;
	s = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return s;
}

/* Sleeps up to s seconds; returns true if asked to stop. */
static bool sleep_or_stop(struct informer *inf, double s)
{
	struct timespec dl = deadline(s);
	pthread_mutex_lock(&inf->mu);
	while (!atomic_load(&inf->stop))
		if (pthread_cond_timedwait(&inf->cond, &inf->mu, &dl))
			break;
	pthread_mutex_unlock(&inf->mu);
	return atomic_load(&inf->stop);
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A list younger than this whose watch expires with nothing applied: relisted after a backoff (seconds). */
#define FRESH_LIST_S 5.0

/* How often a backoff looks whether the API server answers again (seconds). */
#define RECOVERY_POLL_S 0.1

/*
 * A reconnect backoff of s seconds, cut short once the client has seen the
 * API server answer again since `since` (kube_client_recoveries: another
 * request through it got a 2xx after a failure), but never shorter than
 * the backoff's first step: after an outage the informer tries again within
 * RECOVERY_POLL_S of the server's first answer, not up to backoff_max_s
 * later (the statuses trailed the agents by 5 s and more after an API
 * server outage, test_fault_cluster). Returns true if asked to stop.
 */
static bool backoff_sleep(struct informer *inf, struct backoff *bo, double s, unsigned long since)
{
	double left = s, min = inf->o.backoff_initial_s;

	while (left > 0) {
		double step = left < RECOVERY_POLL_S ? left : RECOVERY_POLL_S;

		if (sleep_or_stop(inf, step))
			return true;
		left -= step;
		if (s - left >= min && kube_client_recoveries(inf->kc) != since) {
			/* The outage's backoff is over: a refusal right after the
			 * restart (403 while its authorizer warms up) waits the
			 * first step again, not the outage's longest. */
			backoff_reset(bo);
			break;
		}
	}
	return atomic_load(&inf->stop);
}

static void stat_add(struct informer *inf, unsigned long *field)
{
	pthread_mutex_lock(&inf->mu);
	(*field)++;
	pthread_mutex_unlock(&inf->mu);
}

static void set_rv(struct informer *inf, const char *rv)
{
	snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
	pthread_mutex_lock(&inf->mu);
	snprintf(inf->st.resource_version, sizeof(inf->st.resource_version), "%s", rv);
	pthread_mutex_unlock(&inf->mu);
}

static void emit(struct informer *inf, char kind, json_t *old, json_t *nw)
{
	for (int i = 0; i < inf->nh; i++) {
		const struct informer_handlers *h = &inf->h[i];
		if (kind == 'a' && h->on_add)
			h->on_add(nw, h->ud);
		else if (kind == 'u' && h->on_update)
			h->on_update(old, nw, h->ud);
		else if (kind == 'd' && h->on_delete)
			h->on_delete(old, h->ud);
	}
}

static void diff_cb(char kind, json_t *old, json_t *nw, void *ud) { emit(ud, kind, old, nw); }

static void transform(struct informer *inf, json_t *obj)
{
	if (inf->o.drop_managed_fields)
		json_object_del(json_object_get(obj, "metadata"), "managedFields");
	if (inf->o.transform)
		inf->o.transform(obj, inf->o.transform_ud);
}

static int do_list(struct informer *inf, struct kube_error *err)
{
	struct kube_list_opts lo = {
		.label_selector = inf->lsel, .field_selector = inf->fsel, .limit = inf->o.page_size,
	};
	struct kube_store_replace *r = NULL;
	json_t *page = NULL, *it;
	char rv[64] = "", *cont = NULL, last[64];
	bool restarted = false;
	size_t n = 0, i;

	/* From the API server's watch cache, as client-go's reflector lists:
	 * the first list at any version it has ("0"), later ones not older
	 * than what we saw. Only the first page names a version (the continue
	 * token carries it). */
	if (inf->o.list_from_cache) {
		snprintf(last, sizeof(last), "%s", inf->rv);
		lo.resource_version = last[0] ? last : "0";
		lo.resource_version_match = last[0] ? "NotOlderThan" : NULL;
	}

	stat_add(inf, &inf->st.lists);
	if (!(r = kube_store_replace_begin(inf->store)))
		goto nomem;
	for (;;) {
		if (kube_list_page(inf->kc, &inf->o.res, inf->ns, &lo, &page, err)) {
			if (err->code == KUBE_ERR_GONE && lo.continue_token && !restarted) {
				/* Continue token expired (compaction): once more, unpaged. What
				 * the pages so far brought stays; the new snapshot overwrites it. */
				restarted = true;
				kube_store_replace_abort(r);
				free(cont);
				cont = NULL;
				lo.continue_token = NULL;
				lo.resource_version = lo.resource_version_match = NULL;
				lo.limit = 0;
				rv[0] = 0;
				n = 0;
				if (!(r = kube_store_replace_begin(inf->store)))
					goto nomem;
				continue;
			}
			goto fail;
		}
		if (!rv[0]) { /* the snapshot every page comes from */
			const char *v = gj_str(page, "metadata.resourceVersion");
			if (!v || !*v || strlen(v) >= sizeof(rv)) {
				snprintf(err->message, sizeof(err->message), "list %s: no resourceVersion",
					 inf->name);
				err->code = KUBE_ERR_DECODE;
				goto fail;
			}
			snprintf(rv, sizeof(rv), "%s", v);
		}
		json_array_foreach(json_object_get(page, "items"), i, it)
			transform(inf, it);
		n += json_array_size(json_object_get(page, "items"));
		if (kube_store_replace_page(r, json_object_get(page, "items"), diff_cb, inf) < 0) {
			snprintf(err->message, sizeof(err->message), "list %s: cache update failed", inf->name);
			err->code = KUBE_ERR_DECODE;
			goto fail;
		}
		free(cont);
		cont = gj_str(page, "metadata.continue") && *gj_str(page, "metadata.continue")
			       ? strdup(gj_str(page, "metadata.continue")) : NULL;
		json_decref(page);
		page = NULL;
		if (!cont)
			break;
		lo.continue_token = cont;
		lo.resource_version = lo.resource_version_match = NULL;
	}
	if (kube_store_replace_end(r, diff_cb, inf) < 0) {
		r = NULL;
		snprintf(err->message, sizeof(err->message), "list %s: cache update failed", inf->name);
		err->code = KUBE_ERR_DECODE;
		goto fail;
	}
	set_rv(inf, rv);
	{
		char ns[32], nf[32];
		snprintf(ns, sizeof(ns), "%zu", n);
		snprintf(nf, sizeof(nf), "%lu", inf->fails);
		/* Back after failures (an outage, a cut): worth an operator's line. */
		if (inf->fails)
			glog_kv(GLOG_INFO, "informer", "listed again after failures", "informer", inf->name,
				"items", ns, "failures", nf, "rv", inf->rv, NULL);
		else
			glog_kv(GLOG_DEBUG, "informer", "listed", "informer", inf->name, "items", ns,
				"rv", inf->rv, NULL);
		inf->fails = 0;
	}
	pthread_mutex_lock(&inf->mu);
	inf->synced = true;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
	return 0;
nomem:
	snprintf(err->message, sizeof(err->message), "list %s: out of memory", inf->name);
	err->code = KUBE_ERR_DECODE;
fail:
	kube_store_replace_abort(r);
	json_decref(page);
	free(cont);
	return -1;
}

static int on_event(const struct kube_event *ev, void *ud)
{
	struct informer *inf = ud;
	char key[600];
	json_t *old = NULL;

	if (ev->type == KUBE_EVENT_ERROR) {
		inf->stream_error_code = ev->error_code ? ev->error_code : -1;
		snprintf(inf->stream_error, sizeof(inf->stream_error), "%ld %s: %s", ev->error_code,
			 ev->error_reason ? ev->error_reason : "", ev->error_message ? ev->error_message : "");
		return 1;
	}
	inf->applied++;
	if (ev->type == KUBE_EVENT_BOOKMARK) {
		stat_add(inf, &inf->st.bookmarks);
		set_rv(inf, ev->resource_version);
		return 0;
	}
	stat_add(inf, &inf->st.events);
	if (ev->type == KUBE_EVENT_DELETED) {
		if (gj_object_key(ev->object, key, sizeof(key)) == 0 &&
		    (old = kube_store_del(inf->store, key))) {
			emit(inf, 'd', ev->object, NULL);
			json_decref(old);
		}
	} else {
		transform(inf, ev->object);
		if (kube_store_upsert(inf->store, ev->object, &old) < 0) {
			snprintf(inf->stream_error, sizeof(inf->stream_error), "cache update failed");
			inf->stream_decode_failed = true;
			json_decref(old);
			return 1;
		}
		emit(inf, old ? 'u' : 'a', old, ev->object);
		json_decref(old);
	}
	set_rv(inf, ev->resource_version);
	return 0;
}

static int on_bytes(const char *data, size_t len, void *ud)
{
	struct informer *inf = ud;
	char err[512];
	int r;

	inf->got_data = true;
	r = kube_watch_decoder_feed(inf->dec, data, len, on_event, inf, err, sizeof(err));
	if (r < 0) {
		inf->stream_decode_failed = true;
		snprintf(inf->stream_error, sizeof(inf->stream_error), "%s", err);
	}
	return r != 0;
}

enum watch_result { W_REWATCH, W_BACKOFF, W_RELIST, W_RELIST_BACKOFF, W_STOP };

static enum watch_result do_watch(struct informer *inf, double *retry_after)
{
	char path[4096], what[600], tmp[64];
	struct kube_error err;
	struct kube_stream_opts so = { .idle_timeout_s = inf->o.idle_timeout_s, .stop = &inf->watch_abort };
	int span = inf->o.max_timeout_s - inf->o.min_timeout_s;
	int timeout = inf->o.min_timeout_s + (span > 0 ? (int)(rand_r(&inf->seed) % (unsigned)(span + 1)) : 0);
	size_t off;
	int rc;

	if (kube_path(&inf->o.res, inf->ns, NULL, NULL, path, sizeof(path)) < 0)
		return W_STOP;
	off = strlen(path);
	snprintf(path + off, sizeof(path) - off,
		 "?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d", inf->rv,
		 timeout);
	for (int i = 0; i < 2; i++) {
		const char *sel = i ? inf->fsel : inf->lsel;
		char *e;
		if (!sel)
			continue;
		e = curl_easy_escape(NULL, sel, 0);
		off = strlen(path);
		snprintf(path + off, sizeof(path) - off, "&%s=%s", i ? "fieldSelector" : "labelSelector",
			 e ? e : "");
		curl_free(e);
	}
	snprintf(what, sizeof(what), "watch %s from %s", inf->name, inf->rv);
	kube_watch_decoder_reset(inf->dec);
	inf->stream_error_code = 0;
	inf->stream_error[0] = 0;
	inf->stream_decode_failed = false;
	inf->got_data = false;
	atomic_store(&inf->watch_abort, atomic_load(&inf->stop));
	stat_add(inf, &inf->st.watches);
	rc = kube_stream(inf->kc, path, what, on_bytes, inf, &so, &err);
	*retry_after = 0;
	if (atomic_load(&inf->stop))
		return W_STOP;
	if (inf->stream_error_code) {
		stat_add(inf, &inf->st.errors);
		if (inf->stream_error_code == 410) {
			stat_add(inf, &inf->st.relists_gone);
			glog_kv(GLOG_INFO, "informer", "watch expired, relisting", "informer", inf->name,
				"rv", inf->rv, "error", inf->stream_error, NULL);
			return W_RELIST;
		}
		glog_kv(GLOG_WARN, "informer", "error event in watch, relisting", "informer",
			inf->name, "error", inf->stream_error, NULL);
		return W_RELIST_BACKOFF;
	}
	if (inf->stream_decode_failed) {
		stat_add(inf, &inf->st.errors);
		glog_kv(GLOG_WARN, "informer", "undecodable watch stream, relisting", "informer",
			inf->name, "error", inf->stream_error, NULL);
		return W_RELIST_BACKOFF;
	}
	if (rc == 0) {
		snprintf(tmp, sizeof(tmp), "%d", timeout);
		glog_kv(GLOG_DEBUG, "informer", "watch ended", "informer", inf->name, "timeout", tmp, NULL);
		return W_REWATCH;
	}
	if (err.code == KUBE_ERR_ARG) /* informer_rewatch() */
		return W_REWATCH;
	stat_add(inf, &inf->st.errors);
	if (err.code == KUBE_ERR_GONE) {
		stat_add(inf, &inf->st.relists_gone);
		glog_kv(GLOG_INFO, "informer", "watch expired, relisting", "informer", inf->name,
			"error", err.message, NULL);
		return W_RELIST;
	}
	glog_kv(GLOG_WARN, "informer", "watch failed", "informer", inf->name, "error", err.message, NULL);
	*retry_after = err.retry_after_s;
	/* A stream that delivered data was healthy: the failure is fresh. */
	return inf->got_data ? W_REWATCH : W_BACKOFF;
}

static void *run(void *arg)
{
	struct informer *inf = arg;
	struct backoff bo;
	bool need_list = true;

	backoff_init(&bo, inf->o.backoff_initial_s, inf->o.backoff_max_s);
	while (!atomic_load(&inf->stop)) {
		double ra = 0, d;
		enum watch_result wr;

		/* Read before the request: a recovery seen while it fails still counts. */
		unsigned long rec = kube_client_recoveries(inf->kc);

		if (need_list) {
			struct kube_error err;
			if (do_list(inf, &err) < 0) {
				stat_add(inf, &inf->st.errors);
				inf->fails++;
				d = backoff_next(&bo);
				glog_kv(GLOG_WARN, "informer", "list failed", "informer", inf->name,
					"error", err.message, NULL);
				/* A Retry-After is the server's own wait: kept whole. */
				if (err.retry_after_s > d ? sleep_or_stop(inf, err.retry_after_s)
							  : backoff_sleep(inf, &bo, d, rec))
					break;
				continue;
			}
			need_list = false;
			inf->applied = 0;
			inf->listed_at = mono_s();
		}
		wr = do_watch(inf, &ra);
		switch (wr) {
		case W_STOP:
			goto out;
		case W_REWATCH:
			if (inf->applied) {
				backoff_reset(&bo);
				inf->fails = 0;
			}
			break;
		case W_RELIST:
			need_list = true;
			/* A fresh list that expires again before anything arrived is a
			 * server in trouble: slow down instead of relisting in a loop.
			 * An old list of a quiet kind (nothing to apply since) is not:
			 * it relists at once (after an API server outage such a kind's
			 * relist waited a whole backoff, test_fault_cluster). */
			if (!inf->applied && mono_s() - inf->listed_at < FRESH_LIST_S &&
			    backoff_sleep(inf, &bo, backoff_next(&bo), rec))
				goto out;
			break;
		case W_RELIST_BACKOFF:
			need_list = true;
			/* fall through */
		case W_BACKOFF:
			inf->fails++;
			d = backoff_next(&bo);
			if (ra > d ? sleep_or_stop(inf, ra) : backoff_sleep(inf, &bo, d, rec))
				goto out;
			break;
		}
	}
out:
	return NULL;
}

int informer_start(struct informer *inf)
{
	if (inf->started)
		return -1;
	inf->started = true;
	if (pthread_create(&inf->thr, NULL, run, inf)) {
		inf->started = false;
		return -1;
	}
	return 0;
}

void informer_rewatch(struct informer *inf) { atomic_store(&inf->watch_abort, true); }

void informer_request_stop(struct informer *inf)
{
	if (!inf || !inf->started || inf->joined)
		return;
	atomic_store(&inf->stop, true);
	atomic_store(&inf->watch_abort, true);
	pthread_mutex_lock(&inf->mu);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->mu);
}

void informer_stop(struct informer *inf)
{
	if (!inf->started || inf->joined)
		return;
	informer_request_stop(inf);
	pthread_join(inf->thr, NULL);
	inf->joined = true;
}

void informer_free(struct informer *inf)
{
	if (!inf)
		return;
	informer_stop(inf);
	kube_store_free(inf->store);
	kube_watch_decoder_free(inf->dec);
	pthread_cond_destroy(&inf->cond);
	pthread_mutex_destroy(&inf->mu);
	free(inf->ns);
	free(inf->lsel);
	free(inf->fsel);
	free(inf->name);
	free(inf);
}
