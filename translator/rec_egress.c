/* EgressShardClaim binding and InternetEgressReady (rec_egress.h; decisions in egress.c). */
#include "translator/rec_egress.h"

#include "common/json.h"
#include "common/kube_core_event.h"
#include "common/log.h"
#include "translator/egress.h"
#include "translator/intent.h"
#include "translator/reconcile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct egress_ctx {
	struct kube_client *kc;
	struct egress_opts o;
	char shard_ns[254], watch_ns[254], instance[128];
	struct kube_store *nc, *esc, *es;
	pthread_mutex_t bind_mu; /* binding (finalizer, label, status) vs release */
	struct metric *m_bind, *m_refuse, *m_created, *m_deleted, *m_release, *m_errors;
};

struct egress_ctx *egress_ctx_new(struct kube_client *kc, struct metrics *m,
				  const struct egress_opts *o)
{
	struct egress_ctx *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->kc = kc;
	e->o = *o;
	snprintf(e->shard_ns, sizeof(e->shard_ns), "%s",
		 o->shard_ns && *o->shard_ns ? o->shard_ns : EGRESS_DEFAULT_SHARD_NS);
	snprintf(e->watch_ns, sizeof(e->watch_ns), "%s", o->watch_ns ? o->watch_ns : "");
	snprintf(e->instance, sizeof(e->instance), "%s", o->instance ? o->instance : "");
	pthread_mutex_init(&e->bind_mu, NULL);
	e->m_bind = metrics_counter(m, "galactic_translator_egress_bindings_total",
				    "EgressShardClaims bound to their node's EgressShard", NULL);
	e->m_refuse = metrics_counter(m, "galactic_translator_egress_refusals_total",
				      "EgressShardClaims (or declarations) refused, by reason (on each transition)",
				      "reason");
	e->m_created = metrics_counter(m, "galactic_translator_egress_claims_created_total",
				       "EgressShardClaims created", NULL);
	e->m_deleted = metrics_counter(m, "galactic_translator_egress_claims_deleted_total",
				       "EgressShardClaims deleted (attachment gone, egress withdrawn, node moved)",
				       "why");
	e->m_release = metrics_counter(m, "galactic_translator_egress_finalizer_releases_total",
				       "Shard finalizers released after the last bound claim went", NULL);
	e->m_errors = metrics_counter(m, "galactic_translator_egress_write_errors_total",
				      "Failed claim/shard writes other than status (create, delete, label, finalizer)",
				      "op");
	if (!e->m_bind || !e->m_refuse || !e->m_created || !e->m_deleted || !e->m_release ||
	    !e->m_errors) {
		egress_ctx_free(e);
		return NULL;
	}
	metric_add(e->m_bind, NULL, 0);
	metric_add(e->m_created, NULL, 0);
	metric_add(e->m_release, NULL, 0);
	return e;
}

void egress_ctx_set_stores(struct egress_ctx *e, struct kube_store *nc, struct kube_store *esc,
			   struct kube_store *es)
{
	e->nc = nc;
	e->esc = esc;
	e->es = es;
}

const char *egress_ctx_shard_ns(const struct egress_ctx *e) { return e->shard_ns; }

void egress_ctx_free(struct egress_ctx *e)
{
	if (!e)
		return;
	pthread_mutex_destroy(&e->bind_mu);
	free(e);
}

/* ---- indexes ---- */

void egress_claim_shard_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	const struct egress_ctx *e = ud;
	const char *ref = egress_claim_shard(obj, e->shard_ns), *lab;
	char k[520];

	if (ref) {
		snprintf(k, sizeof(k), "%s/%s", e->shard_ns, ref);
		kube_index_values_add(out, k);
	}
	lab = json_string_value(json_object_get(gj_get(obj, "metadata.labels"), EGRESS_SHARD_LABEL));
	if (lab && *lab && (!ref || strcmp(lab, ref))) {
		snprintf(k, sizeof(k), "%s/%s", e->shard_ns, lab);
		kube_index_values_add(out, k);
	}
}

void egress_claim_node_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	(void)ud;
	kube_index_values_add(out, gj_str(obj, "spec.nodeName"));
}

/* ---- writes other than status ---- */

static bool may_write(const struct egress_ctx *e) { return !e->o.may_write || e->o.may_write(e->o.ud); }

/* A core v1 Event on a claim (best effort). */
static void event(struct egress_ctx *e, const json_t *obj, const char *type, const char *reason,
		  const char *msg)
{
	const struct kube_core_event ev = { "network.datumapis.com/v1alpha1", "EgressShardClaim", type, reason,
				       msg, TRANSLATOR_MANAGER, e->instance };
	struct kube_error err;

	if (kube_core_event_post(e->kc, obj, &ev, &err) < 0)
		glog_kv(GLOG_WARN, "translator", "cannot record event", "object",
			gj_str(obj, "metadata.name"), "error", err.message, NULL);
}

/* 0 done, 1 retry. */
static int write_failed(struct egress_ctx *e, const char *op, const char *key,
			const struct kube_error *err)
{
	if (err->code == KUBE_ERR_NOT_FOUND)
		return 0; /* gone: its delete event re-queues what depends on it */
	if (err->code == KUBE_ERR_CONFLICT || err->code == KUBE_ERR_INVALID ||
	    err->code == KUBE_ERR_ALREADY_EXISTS) {
		/* A guard refused (the object changed since our cache) or the cache lags a create. */
		glog_kv(GLOG_INFO, "translator", "egress write refused by its guard; will retry", "object",
			key, "op", op, "error", err->message, NULL);
		return 1;
	}
	metric_add(e->m_errors, op, 1);
	glog_kv(GLOG_WARN, "translator", "egress write failed", "object", key, "op", op, "error",
		err->message, NULL);
	return 1;
}

static int claim_delete(struct egress_ctx *e, const json_t *claim, const char *key, const char *why)
{
	struct kube_error err;
	struct kube_delete_opts d = { .uid = gj_str(claim, "metadata.uid"), .propagation = "Background" };

	if (!may_write(e))
		return 0;
	if (kube_delete(e->kc, &TKINDS[TK_ESC].res, gj_str(claim, "metadata.namespace"),
			gj_str(claim, "metadata.name"), &d, &err))
		return write_failed(e, "delete", key, &err);
	metric_add(e->m_deleted, why, 1);
	glog_kv(GLOG_INFO, "translator", "deleted egress claim", "object", key, "because", why, NULL);
	return 0;
}

static int claim_create(struct egress_ctx *e, const json_t *att, const struct egress_want *w,
			const char *key)
{
	struct kube_error err;
	json_t *body = egress_claim_new(att, w), *out = NULL;
	int rc = 0;

	if (!body || !may_write(e)) {
		json_decref(body);
		return 0;
	}
	char path[1200], *txt = gj_dumps(body);
	/* kube_create names no field manager; ours must own the spec it writes. */
	if (!txt || kube_path(&TKINDS[TK_ESC].res, gj_str(att, "metadata.namespace"), NULL, NULL, path,
			      sizeof(path) - 40)) {
		free(txt);
		json_decref(body);
		return 1;
	}
	strcat(path, "?fieldManager=" TRANSLATOR_MANAGER);
	if (kube_request(e->kc, "POST", path, "application/json", txt, strlen(txt), "create egress claim",
			 &out, &err))
		rc = write_failed(e, "create", key, &err);
	else {
		metric_add(e->m_created, NULL, 1);
		glog_kv(GLOG_INFO, "translator", "created egress claim", "object", key, "node", w->node,
			NULL);
	}
	free(txt);
	json_decref(out);
	json_decref(body);
	return rc;
}

static json_t *op(const char *o, const char *path, json_t *value)
{
	json_t *r = json_pack("{s:s, s:s}", "op", o, "path", path);
	if (r && value)
		json_object_set_new(r, "value", value);
	else
		json_decref(value);
	return r;
}

/* JSON Patch of the main resource (not status); *out: the server's answer. 0 ok, 1 retry. */
static int patch(struct egress_ctx *e, enum tkind k, const json_t *obj, json_t *ops, const char *what,
		 const char *key, json_t **out)
{
	struct kube_error err;
	int rc = 0;

	*out = NULL;
	json_array_insert_new(ops, 0, op("test", "/metadata/uid", json_string(gj_str(obj, "metadata.uid") ?: "")));
	if (!may_write(e)) {
		json_decref(ops);
		return 1;
	}
	if (kube_json_patch(e->kc, &TKINDS[k].res, gj_str(obj, "metadata.namespace"),
			    gj_str(obj, "metadata.name"), NULL, ops, TRANSLATOR_MANAGER, out, &err))
	{
		write_failed(e, what, key, &err);
		rc = 1; /* the caller cannot go on either way; the retry reads the cache again */
	}
	json_decref(ops);
	return rc;
}

/* Adds our finalizer to shard unless present; *fresh: the shard after (new ref). 0 ok, 1 retry. */
static int shard_hold(struct egress_ctx *e, const json_t *shard, const char *key, json_t **fresh)
{
	json_t *ops = json_array(), *fins = gj_get(shard, "metadata.finalizers");

	*fresh = NULL;
	if (egress_shard_held(shard)) {
		json_decref(ops);
		*fresh = json_incref((json_t *)shard);
		return 0;
	}
	if (json_is_array(fins) && json_array_size(fins)) {
		/* Exactly the list we saw, then append: nobody else's entry is touched. */
		json_array_append_new(ops, op("test", "/metadata/finalizers", json_deep_copy(fins)));
		json_array_append_new(ops, op("add", "/metadata/finalizers/-", json_string(EGRESS_FINALIZER)));
	} else {
		/* No list yet: "add" would replace one made meanwhile, so lock on the version. */
		json_array_append_new(ops, op("test", "/metadata/resourceVersion",
					      json_string(gj_str(shard, "metadata.resourceVersion") ?: "")));
		json_array_append_new(ops, op("add", "/metadata/finalizers", json_pack("[s]", EGRESS_FINALIZER)));
	}
	if (patch(e, TK_ES, shard, ops, "finalizer", key, fresh))
		return 1;
	glog_kv(GLOG_INFO, "translator", "holding egress shard", "shard", gj_str(shard, "metadata.name"),
		"for", key, NULL);
	return 0;
}

/* Sets the egress-shard label on claim; *fresh: the claim after (new ref). 0 ok, 1 retry. */
static int claim_label(struct egress_ctx *e, const json_t *claim, const char *shard, const char *key,
		       json_t **fresh)
{
	const json_t *labels = gj_get(claim, "metadata.labels");
	json_t *ops = json_array();

	*fresh = NULL;
	if (!strcmp(json_string_value(json_object_get(labels, EGRESS_SHARD_LABEL)) ?: "", shard)) {
		json_decref(ops);
		*fresh = json_incref((json_t *)claim);
		return 0;
	}
	if (json_is_object(labels)) {
		json_array_append_new(ops, op("add", "/metadata/labels/network.datumapis.com~1egress-shard",
					      json_string(shard)));
	} else {
		json_array_append_new(ops, op("test", "/metadata/resourceVersion",
					      json_string(gj_str(claim, "metadata.resourceVersion") ?: "")));
		json_array_append_new(ops, op("add", "/metadata/labels",
					      json_pack("{s:s}", EGRESS_SHARD_LABEL, shard)));
	}
	return patch(e, TK_ESC, claim, ops, "label", key, fresh);
}

/* ---- the claim ---- */

static const json_t *find_ready(const json_t *claim)
{
	const json_t *c;
	size_t i;
	json_array_foreach(gj_get(claim, "status.conditions"), i, c)
		if (!strcmp(gj_str(c, "type") ?: "", "Ready"))
			return c;
	return NULL;
}

/* Writes claim's status; counts and reports a transition. */
static int claim_status(const struct rec_ctx *c, const json_t *claim, const char *key,
			const char *shard, const char *status, const char *reason, const char *msg)
{
	struct egress_ctx *e = c->eg;
	const json_t *cur = find_ready(claim);
	bool transition = !cur || strcmp(gj_str(cur, "status") ?: "", status) ||
			  strcmp(gj_str(cur, "reason") ?: "", reason);
	char now[32];
	json_t *full;
	int rc;

	gj_time_now(now, sizeof(now));
	if (!(full = egress_claim_status(claim, e->shard_ns, shard, status, reason, msg, now)))
		return 0;
	rc = rec_write(c, TK_ESC, key, claim, full);
	json_decref(full);
	if (rc || !transition)
		return rc;
	if (!strcmp(reason, ER_BOUND)) {
		metric_add(e->m_bind, NULL, 1);
		event(e, claim, "Normal", reason, msg);
	} else {
		metric_add(e->m_refuse, reason, 1);
		event(e, claim, "Warning", reason, msg);
	}
	return 0;
}

/* Finalizer, label, status, in that order. */
static int bind(const struct rec_ctx *c, const json_t *claim, const json_t *shard, const char *key)
{
	struct egress_ctx *e = c->eg;
	const char *sname = gj_str(shard, "metadata.name");
	json_t *s2 = NULL, *c2 = NULL;
	char msg[600];
	int rc;

	pthread_mutex_lock(&e->bind_mu);
	rc = shard_hold(e, shard, key, &s2);
	if (!rc)
		rc = claim_label(e, claim, sname, key, &c2);
	if (!rc) {
		snprintf(msg, sizeof(msg), "bound to EgressShard %s/%s on node %s", e->shard_ns, sname,
			 gj_str(shard, "spec.targetRef.name") ?: "?");
		rc = claim_status(c, c2, key, sname, "True", ER_BOUND, msg);
	}
	pthread_mutex_unlock(&e->bind_mu);
	json_decref(s2);
	json_decref(c2);
	return rc;
}

static json_t *get_nn(struct kube_store *s, const char *ns, const char *name)
{
	return ns && name ? kube_store_get_nn(s, ns, name) : NULL;
}

int rec_egress(const struct rec_ctx *c, const struct qkey *k)
{
	struct egress_ctx *e = c->eg;
	struct egress_want w;
	char key[600], nskey[520], why[300], msg[600];
	json_t *att = NULL, *claim = NULL, *nc = NULL, *shard = NULL, *shards = NULL;
	const char *bound, *reason;
	int rc = 0;

	if (!e)
		return 0;
	qkey_format(k->kind, k->ns, k->name, key, sizeof(key));
	qkey_nskey(k, nskey, sizeof(nskey));
	att = kube_store_get(c->att, nskey);
	claim = kube_store_get(e->esc, nskey);
	if (!claim)
		writes_forget(c->w, key);
	if (claim && gj_get(claim, "metadata.deletionTimestamp"))
		goto out; /* going; its delete event brings us back */
	if (!att || gj_get(att, "metadata.deletionTimestamp")) {
		if (claim)
			rc = claim_delete(e, claim, key, "attachment gone");
		goto out;
	}
	nc = get_nn(e->nc, k->ns, gj_str(att, "spec.vpc.name"));
	egress_want(att, nc, &w);
	if (w.decl != ED_OK) {
		if (claim)
			rc = claim_delete(e, claim, key,
					  w.decl == ED_NONE ? "egress withdrawn"
					  : w.decl == ED_BAD ? "families refused"
							     : "attachment not on a node");
		goto out;
	}
	if (!claim) {
		rc = claim_create(e, att, &w, key);
		goto out;
	}
	if (!egress_claim_matches(claim, att, &w, why, sizeof(why))) {
		/* The spec is immutable: replace (the delete event re-creates it). */
		glog_kv(GLOG_INFO, "translator", "egress claim no longer fits its attachment", "object", key,
			"why", why, NULL);
		rc = claim_delete(e, claim, key, "node moved");
		goto out;
	}
	shards = kube_store_list(e->es);
	if ((bound = egress_claim_shard(claim, e->shard_ns))) {
		shard = get_nn(e->es, e->shard_ns, bound);
		if (!shard) {
			const json_t *other = egress_pick_shard(shards, w.node);
			if (other && !egress_refusal(other, w.node, w.families, w.nfam, msg, sizeof(msg))) {
				/* Never rebound in place: a new claim binds the node's usable shard. */
				rc = claim_delete(e, claim, key, "bound shard missing");
				goto out;
			}
			snprintf(msg, sizeof(msg), "EgressShard %s/%s (node %s) no longer exists", e->shard_ns,
				 bound, w.node);
			rc = claim_status(c, claim, key, bound, "False", ER_MISSING, msg);
			goto out;
		}
		if (strcmp(gj_str(shard, "spec.targetRef.name") ?: "", w.node)) {
			/* Upstream has no immutability rule on targetRef: the shard moved away. */
			const json_t *other = egress_pick_shard(shards, w.node);
			if (other && !egress_refusal(other, w.node, w.families, w.nfam, msg, sizeof(msg))) {
				rc = claim_delete(e, claim, key, "bound shard moved");
				goto out;
			}
			snprintf(msg, sizeof(msg), "EgressShard %s/%s now targets node %s, not %s", e->shard_ns,
				 bound, gj_str(shard, "spec.targetRef.name") ?: "none", w.node);
			rc = claim_status(c, claim, key, bound, "False", ER_MISMATCH, msg);
			goto out;
		}
		/* Held and labelled again (re-asserted), then the status. */
		rc = bind(c, claim, shard, key);
		goto out;
	}
	{
		const json_t *pick = egress_pick_shard(shards, w.node);
		reason = egress_refusal(pick, w.node, w.families, w.nfam, msg, sizeof(msg));
		if (reason)
			rc = claim_status(c, claim, key, NULL, "False", reason, msg);
		else
			rc = bind(c, claim, pick, key);
	}
out:
	json_decref(shards);
	json_decref(shard);
	json_decref(nc);
	json_decref(claim);
	json_decref(att);
	return rc;
}

/* ---- the shard: release ---- */

/* Does a live claim hold shard (label or shardRef naming it)? From the server, not the cache. */
static int held_live(struct egress_ctx *e, const char *shard, bool *held)
{
	struct kube_error err;
	char sel[400];
	json_t *l = NULL, *it;
	size_t i;

	*held = false;
	snprintf(sel, sizeof(sel), "%s=%s", EGRESS_SHARD_LABEL, shard);
	if (kube_list_all(e->kc, &TKINDS[TK_ESC].res, *e->watch_ns ? e->watch_ns : NULL,
			  &(struct kube_list_opts){ .label_selector = sel }, &l, &err))
	{
		write_failed(e, "list", shard, &err);
		return -1;
	}
	json_array_foreach(json_object_get(l, "items"), i, it)
		if (!gj_get(it, "metadata.deletionTimestamp"))
			*held = true;
	json_decref(l);
	return 0;
}

int rec_shard(const struct rec_ctx *c, const struct qkey *k)
{
	struct egress_ctx *e = c->eg;
	char key[600], nskey[520], path[64];
	json_t *shard, *claims, *cl, *out = NULL, *ops;
	const json_t *f;
	size_t i;
	bool held = false;
	int rc = 0;

	if (!e)
		return 0;
	qkey_format(k->kind, k->ns, k->name, key, sizeof(key));
	qkey_nskey(k, nskey, sizeof(nskey));
	shard = kube_store_get(e->es, nskey);
	if (!shard || !egress_shard_held(shard)) {
		json_decref(shard);
		return 0;
	}
	claims = kube_store_by_index(e->esc, "shard", nskey);
	json_array_foreach(claims, i, cl)
		held = held || !gj_get(cl, "metadata.deletionTimestamp");
	json_decref(claims);
	if (held) {
		json_decref(shard);
		return 0;
	}
	pthread_mutex_lock(&e->bind_mu);
	if (held_live(e, k->name, &held)) {
		rc = 1;
		goto unlock;
	}
	if (held)
		goto unlock; /* the cache lags a binding */
	ops = json_array();
	json_array_foreach(gj_get(shard, "metadata.finalizers"), i, f)
		if (!strcmp(json_string_value(f) ?: "", EGRESS_FINALIZER)) {
			snprintf(path, sizeof(path), "/metadata/finalizers/%zu", i);
			json_array_append_new(ops, op("test", path, json_string(EGRESS_FINALIZER)));
			json_array_append_new(ops, op("remove", path, NULL));
			break;
		}
	if (!(rc = patch(e, TK_ES, shard, ops, "release", key, &out))) {
		metric_add(e->m_release, NULL, 1);
		glog_kv(GLOG_INFO, "translator", "released egress shard: no bound claim left", "shard", key,
			NULL);
	}
unlock:
	pthread_mutex_unlock(&e->bind_mu);
	json_decref(out);
	json_decref(shard);
	return rc;
}

/* ---- the attachment's condition ---- */

void rec_egress_att_condition(const struct rec_ctx *c, const json_t *att, json_t *intent,
			      const char *now)
{
	struct egress_ctx *e = c->eg;
	const char *ns = gj_str(att, "metadata.namespace"), *name = gj_str(att, "metadata.name");
	struct egress_want w;
	json_t *nc, *claim, *shard = NULL, *cond, *list;
	const char *bound;

	if (!e)
		return;
	nc = get_nn(e->nc, ns, gj_str(att, "spec.vpc.name"));
	egress_want(att, nc, &w);
	claim = get_nn(e->esc, ns, name);
	if ((bound = egress_claim_shard(claim, e->shard_ns)))
		shard = get_nn(e->es, e->shard_ns, bound);
	cond = egress_att_condition(att, &w, claim, shard, now);
	if (cond) {
		list = gj_get(intent, "status.conditions");
		if (!json_is_array(list)) {
			gj_set(intent, "status.conditions", json_array());
			list = gj_get(intent, "status.conditions");
		}
		json_array_append_new(list, cond);
	}
	json_decref(shard);
	json_decref(claim);
	json_decref(nc);
}
