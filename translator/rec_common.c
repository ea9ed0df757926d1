#include "translator/reconcile.h"

#include "common/gmap.h"
#include "common/json.h"
#include "common/log.h"
#include "translator/intent.h"
#include "translator/nic.h"
#include "translator/ssa.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WITHHELD 16

/* ---- attachments newer than the cache (our own writes' responses) ---- */

/* Remembered at most: past it a write's dependents wait for its watch event, as before. */
#define FRESH_MAX 4096

struct att_fresh {
	pthread_mutex_t mu;
	struct gmap *m; /* namespace/name -> json_t * */
};

struct att_fresh *att_fresh_new(void)
{
	struct att_fresh *f = calloc(1, sizeof(*f));
	if (!f || !(f->m = gmap_new())) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	return f;
}

static void fresh_val_free(void *v) { json_decref(v); }

void att_fresh_free(struct att_fresh *f)
{
	if (!f)
		return;
	gmap_free(f->m, fresh_val_free);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* resourceVersions are etcd revisions; compared only when both parse (the API calls them opaque). */
static bool rv_of(const json_t *o, uint64_t *out)
{
	const char *s = gj_str(o, "metadata.resourceVersion");
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

static void fresh_key(const json_t *o, char *k, size_t n)
{
	snprintf(k, n, "%s/%s", gj_str(o, "metadata.namespace") ?: "", gj_str(o, "metadata.name") ?: "");
}

void att_fresh_put(struct att_fresh *f, json_t *obj)
{
	char k[600];
	uint64_t rv;
	int err = 0;
	json_t *old;

	if (!f || !obj || !rv_of(obj, &rv)) {
		json_decref(obj);
		return;
	}
	fresh_key(obj, k, sizeof(k));
	pthread_mutex_lock(&f->mu);
	if (gmap_len(f->m) >= FRESH_MAX && !gmap_has(f->m, k)) {
		pthread_mutex_unlock(&f->mu);
		json_decref(obj);
		return;
	}
	old = gmap_put(f->m, k, obj, &err);
	pthread_mutex_unlock(&f->mu);
	if (err)
		json_decref(obj);
	json_decref(old);
}

/* Under mu: true when the remembered r is newer than the cached c (same incarnation). */
static bool fresh_newer(const json_t *r, const json_t *c)
{
	uint64_t rr, cr;
	return c && rv_of(r, &rr) && rv_of(c, &cr) && rr > cr &&
	       !strcmp(gj_str(r, "metadata.uid") ?: "", gj_str(c, "metadata.uid") ?: "-");
}

json_t *att_fresh_pick(struct att_fresh *f, const char *nskey, json_t *cached)
{
	json_t *r, *out = cached;
	bool found;

	if (!f || !cached)
		return cached;
	pthread_mutex_lock(&f->mu);
	if ((r = gmap_get(f->m, nskey))) {
		if (fresh_newer(r, cached)) {
			out = json_deep_copy(r);
			if (out)
				json_decref(cached);
			else
				out = cached;
		} else {
			json_decref(gmap_del(f->m, nskey, &found));
		}
	}
	pthread_mutex_unlock(&f->mu);
	return out;
}

void att_fresh_seen(struct att_fresh *f, const char *nskey, const json_t *seen)
{
	json_t *r;
	bool found;

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	if ((r = gmap_get(f->m, nskey)) && !fresh_newer(r, seen))
		json_decref(gmap_del(f->m, nskey, &found));
	pthread_mutex_unlock(&f->mu);
}

json_t *rec_iface_attachment(const struct rec_ctx *c, const json_t *iface)
{
	char k[600];
	json_t *a;

	snprintf(k, sizeof(k), "%s/%s", gj_str(iface, "metadata.namespace") ?: "",
		 gj_str(iface, "metadata.name") ?: "");
	a = att_fresh_pick(c->fresh, k, kube_store_get(c->att, k));
	if (nic_attachment_links(iface, a))
		return a;
	json_decref(a);
	return NULL;
}

json_t *rec_body(enum tkind k, const json_t *obj)
{
	const char *name = gj_str(obj, "metadata.name"), *ns = gj_str(obj, "metadata.namespace");
	const char *uid = gj_str(obj, "metadata.uid"), *api = gj_str(obj, "apiVersion");

	if (!name || !*name || !ns || !*ns || !uid || !*uid)
		return NULL;
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{}}", "apiVersion",
			 api && *api ? api : TKINDS[k].api_version, "kind", TKINDS[k].kind,
			 "metadata", "name", name, "namespace", ns, "uid", uid, "status");
}

/* Fingerprint of what is written, without lastTransitionTimes (cache-lag and refusal memo). */
static char *fingerprint(const json_t *fields, const json_t *patched_conds)
{
	json_t *st = json_object_get(fields, "status");
	json_t *cp = json_pack("{s:o*, s:o*}", "status", st ? json_deep_copy(st) : NULL,
			       "patched", patched_conds ? json_deep_copy(patched_conds) : NULL);
	json_t *e;
	size_t i;
	char *s;

	if (!cp)
		return NULL;
	json_array_foreach(gj_get(cp, "status.conditions"), i, e)
		json_object_del(e, "lastTransitionTime");
	json_array_foreach(json_object_get(cp, "patched"), i, e)
		json_object_del(e, "lastTransitionTime");
	s = gj_dumps(cp);
	json_decref(cp);
	return s;
}

/* 1: retry with backoff. WR_NOOP too (the lease's renewal was late right before the write):
 * a replica that no longer leads drops the retry (reconcile_key), one whose renewal
 * succeeds writes it; dropped, nothing would re-queue the key. */
static int result(enum wres r) { return r == WR_STALE || r == WR_FAILED || r == WR_NOOP; }

static void log_written(const char *what, const char *key, const json_t *conds, const char *why)
{
	char cs[200] = "";
	const json_t *c;
	size_t i, u = 0;

	json_array_foreach(conds, i, c)
		u += (size_t)snprintf(cs + u, u < sizeof(cs) ? sizeof(cs) - u : 0, "%s%s=%s",
				      u ? " " : "", gj_str(c, "type") ?: "?", gj_str(c, "status") ?: "?");
	glog_kv(GLOG_INFO, "translator", what, "object", key, "conditions", cs, "because", why, NULL);
}

int rec_write(const struct rec_ctx *c, enum tkind k, const char *key, const json_t *obj,
	      json_t *full)
{
	struct withheld wh[MAX_WITHHELD];
	json_t *st = json_object_get(full, "status"), *conds, *ops = NULL, *out = NULL, *out2 = NULL;
	char why[512] = "", ebuf[256];
	size_t n;
	bool map, fields_ok;
	char *fp = NULL;
	enum wres r;
	int ret = 0;
	bool wrote = false;

	ownership_strip(c->own, k, full);
	n = crds_withhold(c->crds, k, full, wh, MAX_WITHHELD);
	writes_withheld(c->w, k, key, obj, wh, n < MAX_WITHHELD ? n : MAX_WITHHELD);
	map = crds_conditions_map(c->crds, k);
	conds = json_incref(json_object_get(st, "conditions"));
	if (!json_array_size(conds) || !map)
		json_object_del(st, "conditions"); /* atomic: the conditions go by guarded patch */
	fields_ok = ssa_status_satisfied(obj, full, TRANSLATOR_MANAGER, why, sizeof(why));
	if (!map && json_array_size(conds)) {
		ops = cond_patch_build(obj, conds, ebuf, sizeof(ebuf));
		if (!ops) /* someone else's bad status (wrong types): nothing we can patch safely */
			glog_kv(GLOG_WARN, "translator", "cannot patch conditions", "object", key,
				"error", ebuf, NULL);
	}
	if (fields_ok && !json_array_size(ops)) {
		writes_skip(c->w, k);
		goto out;
	}
	fp = fingerprint(full, map ? NULL : conds);
	if (writes_already_sent(c->w, k, key, obj, fp))
		goto out;
	if (!fields_ok && !json_object_size(st) && !json_array_size(ops) &&
	    ssa_withdraw_empties_status(obj, TRANSLATOR_MANAGER)) {
		/* Withdrawing all we own would leave status null, which a schema
		 * declaring it an object refuses: remove our fields by guarded patch. */
		json_t *wops = ssa_withdraw_ops(obj, TRANSLATOR_MANAGER);
		if (wops) {
			r = writes_patch(c->w, k, key, obj, wops, fp, &out);
			json_decref(wops);
			wrote = r == WR_OK;
			if (r == WR_OK)
				log_written("withdrew status fields", key, NULL, why);
			ret = result(r);
			goto out;
		}
	}
	if (!fields_ok) {
		/* One write per transition: on an atomic list the conditions ride in
		 * the same apply, the whole list (ours merged into the cached one; the
		 * resourceVersion precondition guards everyone else's entries). An
		 * apply also carries it, unchanged, while our apply owns the list, so
		 * it never drops a list it owns; otherwise an unchanged list stays out
		 * (it would make the list co-owned with its last writer). */
		if (!map && ops &&
		    (json_array_size(ops) ||
		     json_object_get(ssa_owned_status(obj, TRANSLATOR_MANAGER), "f:conditions"))) {
			json_t *merged = cond_list_merged(obj, conds, ebuf, sizeof(ebuf));
			if (merged && json_array_size(merged))
				json_object_set_new(st, "conditions", merged);
			else
				json_decref(merged);
		}
		writes_note_takeovers(c->w, key, obj, full);
		r = writes_apply(c->w, k, key, obj, full, fp, &out);
		wrote = r == WR_OK;
		if (r == WR_OK)
			log_written("applied status", key, json_object_get(st, "conditions"), why);
		ret = result(r);
		goto out;
	}
	if (json_array_size(ops)) {
		r = writes_patch(c->w, k, key, obj, ops, fp, &out2);
		wrote = r == WR_OK;
		if (r == WR_OK)
			log_written("patched conditions", key, conds, "conditions differ");
		ret = result(r);
	}
out:
	/* The chain goes on from the response, not from the watch event of it. */
	if (wrote && k == TK_VPCATT && c->att_written && (out2 ? out2 : out))
		c->att_written(c->ud, out2 ? out2 : out);
	free(fp);
	json_decref(ops);
	json_decref(out);
	json_decref(out2);
	json_decref(conds);
	return ret;
}
