/*
 * The agent's report threads: the publisher (NodeAttachments of this node)
 * and the route learner (other nodes' routes -> the record, in process).
 */
#include "agent/report/report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/gmap.h"
#include "common/informer.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/workqueue.h"

#define COMP "report"
#define KEY_SYNC "~sync"     /* not a DNS name: never a report's */
#define KEY_ROUTES "~routes"

static const struct kube_resource NATT = { "network.datumapis.com", "v1alpha1",
					   "nodeattachments", true };
static const struct kube_resource NODES = { "", "v1", "nodes", false };

/* Publisher threads: each report is two requests one after the other (spec,
 * then status), so one thread publishes a burst of new attachments at two
 * round trips per report (bench_burst: ~0.7 s a report at load 30, 30 s for
 * a node's 33). Several publish at once; the queue never hands one name to
 * two of them. */
#define RPT_PUBLISHERS 4

/* How often a Node that is absent (or was deleted) is looked up again. */
#define NODE_RECHECK_S 30.0
/* The publisher's informer lists once the learner has listed (at most this
 * long after the start): every label-selected list makes the API server walk
 * every cached report, and the learner's comes first (docs/dataplane-reports.md). */
#define OWN_LIST_DEFER_MAX_S 5.0

/* The node's Node object, as the publisher last saw it. */
enum node_seen { NODE_UNKNOWN, NODE_ABSENT, NODE_PRESENT, NODE_GONE };

struct rpt {
	char node[254], manager[280], ns[64], datapath[16], selector[320];
	int (*set_remotes)(void *ctx, const struct gdp_remote *v, size_t n);
	void *ctx;
	struct kube_config *cfg;
	struct kube_client *kc;      /* writes: 5 s per request */
	struct kube_client *rkc;     /* the informers' lists and watches: the client's default 60 s */
	struct informer *own;
	/* Learner thread only (rpt_start sets them before it runs, rpt_stop
	 * after it ended): the reports of the hosted VPCs, the replacement
	 * listing for a changed set, the reports without the VPC label. */
	struct informer *scoped, *pending, *legacy;
	char *scoped_sel, *pending_sel;
	bool unscoped;
	bool own_started;            /* learner thread (then rpt_stop): r->own listing */
	double t_start;              /* monotonic seconds of rpt_start */
	atomic_ulong scope_changes;
	struct wq *pq, *lq;          /* publisher, learner */
	pthread_t pth[RPT_PUBLISHERS], lth;
	int npth;
	bool lth_on;

	pthread_mutex_t mu;          /* guards the fields below */
	struct gdp_state snap;       /* last reconcile's node and VPCs (the learner's) */
	bool have_snap;
	/* The publisher's: the last reconcile's desired state (no remotes),
	 * results and pods (parallel to pub_st.atts), taken whole by the next
	 * sync (pub_fresh: not taken yet), so each pass is copied once. */
	struct gdp_state pub_st;
	struct gdp_results snap_res;
	struct rpt_pod *snap_pods;
	bool pub_fresh;
	char *vpc_set;               /* hosted VPC ids, to wake the learner on a change */
	json_t *desired;             /* name -> {"spec":..., "cond":{...}} */
	json_t *last_intent;         /* same, as last queued (change detection) */
	/* name -> {"h": hash of the desired entry published, "rv": the
	 * resourceVersion our last write of it returned}: while the cache is
	 * older than that write, the same intent is not written again (the
	 * watch echo of our spec write would otherwise look like a missing
	 * status and send it twice). */
	json_t *wrote;

	json_t *bad_seen;            /* learner thread only: name -> resourceVersion logged */
	/* Learner thread only: each report's part of the learned set as last
	 * parsed (store key -> struct lmemo), valid for lmemo_ctx (the node's
	 * SID block, node id and hosted VPCs the parse depended on). */
	struct gmap *lmemo;
	char *lmemo_ctx;
	atomic_ulong learn_parsed;   /* reports parsed (rpt_stats) */
	/* Publisher (KEY_SYNC: one thread at a time): each attachment's desired
	 * report as last built; syncs and reports built (rpt_stats). */
	struct rpt_desired *dmemo;
	atomic_ulong pub_syncs, pub_built;
	json_t *overlap_seen;        /* learner thread only: "vpc prefix" -> the overlap logged */
	atomic_ulong ov_dup, ov_nested; /* overlaps in the last learned set */
	struct metric *m_overlaps;   /* galactic_agent_learned_overlaps{kind}; NULL: no metrics */

	/* the reports' owner (rpt_owner_refs), under omu (publisher threads) */
	pthread_mutex_t omu;
	enum node_seen node_seen;
	char node_uid[64];           /* "" unless NODE_PRESENT */
	double node_checked;         /* monotonic seconds of the last lookup */
	atomic_bool node_recheck;    /* one of our reports was deleted by someone: look again */
	atomic_ulong recoveries;     /* of kc and rkc, as the publishers last saw them */
};

/* ---- snapshot in ------------------------------------------------------- */

static char *vpc_ids(const struct gdp_state *st)
{
	json_t *a = json_array();
	char *s;
	size_t i;

	for (i = 0; i < st->n_vpcs; i++)
		json_array_append_new(a, json_string(st->vpcs[i].id));
	s = gj_dumps(a);
	json_decref(a);
	return s;
}

void rpt_update(struct rpt *r, const struct gdp_state *st, const struct rpt_pod *pods,
		const struct gdp_results *res)
{
	struct gdp_state s, ls;
	struct gdp_results rr;
	struct rpt_pod *pc;
	char *vs;
	bool vpcs_changed;
	struct gdp_state view;

	if (!r)
		return;
	/* Node, VPCs and attachments are all reports need; the learner
	 * needs the node and the VPCs. */
	view = *st;
	view.remotes = NULL;
	view.n_remotes = view.cap_remotes = 0;
	if (gdp_state_copy(&s, &view))
		return;
	view.atts = NULL;
	view.n_atts = view.cap_atts = 0;
	if (gdp_state_copy(&ls, &view)) {
		gdp_state_free(&s);
		return;
	}
	if (rpt_results_copy(&rr, res)) {
		gdp_state_free(&s);
		gdp_state_free(&ls);
		return;
	}
	pc = calloc(st->n_atts + 1, sizeof(*pc));
	if (!pc) {
		gdp_state_free(&s);
		gdp_state_free(&ls);
		gdp_results_free(&rr);
		return;
	}
	if (pods && st->n_atts)
		memcpy(pc, pods, st->n_atts * sizeof(*pc));
	vs = vpc_ids(st);
	pthread_mutex_lock(&r->mu);
	gdp_state_free(&r->snap);
	r->snap = ls;
	r->have_snap = true;
	/* a pass the publisher has not taken yet is replaced whole */
	gdp_state_free(&r->pub_st);
	gdp_results_free(&r->snap_res);
	free(r->snap_pods);
	r->pub_st = s;
	r->snap_res = rr;
	r->snap_pods = pc;
	r->pub_fresh = true;
	vpcs_changed = !r->vpc_set || !vs || strcmp(r->vpc_set, vs);
	free(r->vpc_set);
	r->vpc_set = vs;
	pthread_mutex_unlock(&r->mu);
	wq_add(r->pq, KEY_SYNC);
	if (vpcs_changed)
		wq_add(r->lq, KEY_ROUTES);
}

/* ---- publisher --------------------------------------------------------- */

/* The desired reports from the snapshot (built again only where their
 * inputs changed: rpt_desired_build); queues the names that changed or went. */
static void sync_desired(struct rpt *r)
{
	json_t *desired, *old, *v;
	struct gdp_state st;
	struct gdp_results res;
	struct rpt_pod *pods;
	const char *name;
	size_t built = 0;

	/* The pass's copies are taken, not copied again: nothing else reads
	 * them, and a sync without a new pass has nothing new to build. */
	pthread_mutex_lock(&r->mu);
	if (!r->pub_fresh) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	st = r->pub_st;
	res = r->snap_res;
	pods = r->snap_pods;
	gdp_state_init(&r->pub_st);
	gdp_results_init(&r->snap_res);
	r->snap_pods = NULL;
	r->pub_fresh = false;
	pthread_mutex_unlock(&r->mu);
	/* the memo is this thread's: the queue hands KEY_SYNC to one publisher at a time */
	desired = rpt_desired_build(r->dmemo, r->node, &st, pods, &res, &built);
	atomic_fetch_add(&r->pub_built, built);
	if (!desired) {
		glogf(GLOG_ERROR, COMP, "desired reports not built: out of memory");
		/* given back unless a newer pass came meanwhile */
		pthread_mutex_lock(&r->mu);
		if (!r->pub_fresh) {
			r->pub_st = st;
			r->snap_res = res;
			r->snap_pods = pods;
			r->pub_fresh = true;
			gdp_state_init(&st);
			gdp_results_init(&res);
			pods = NULL;
		}
		pthread_mutex_unlock(&r->mu);
		gdp_state_free(&st);
		gdp_results_free(&res);
		free(pods);
		wq_add_rate_limited(r->pq, KEY_SYNC);
		return;
	}
	gdp_state_free(&st);
	gdp_results_free(&res);
	free(pods);
	atomic_fetch_add(&r->pub_syncs, 1);

	pthread_mutex_lock(&r->mu);
	old = r->last_intent;
	r->last_intent = json_incref(desired);
	json_decref(r->desired);
	r->desired = desired;
	pthread_mutex_unlock(&r->mu);
	/* Only what changed: keys in backoff keep their backoff. An entry
	 * whose inputs did not change is the same object as last time. */
	json_object_foreach(desired, name, v) {
		json_t *was = old ? json_object_get(old, name) : NULL;

		if (v != was && !json_equal(v, was))
			wq_add(r->pq, name);
	}
	json_object_foreach(old, name, v)
		if (!json_object_get(desired, name))
			wq_add(r->pq, name);
	json_decref(old);
}

/* The VPC label the report carries: its spec.vpc, when that is a label value. */
static const char *vpc_label(const json_t *spec)
{
	const char *v = json_string_value(json_object_get(spec, "vpc"));

	return v && rpt_label_value_ok(v) ? v : NULL;
}

static int apply_spec(struct rpt *r, const char *name, json_t *spec, const char *uid, json_t **out,
		      struct kube_error *e)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:O}", "apiVersion",
			      "network.datumapis.com/v1alpha1", "kind", "NodeAttachment", "metadata",
			      "name", name, "namespace", r->ns, "labels", RPT_NODE_LABEL, r->node,
			      "spec", spec);
	const char *vpc = vpc_label(spec);
	int rc;

	if (vpc)
		json_object_set_new(gj_get(o, "metadata.labels"), RPT_VPC_LABEL, json_string(vpc));
	if (uid[0])
		json_object_set_new(json_object_get(o, "metadata"), "ownerReferences",
				    rpt_owner_refs(r->node, uid));
	rc = kube_apply(r->kc, &NATT, r->ns, name, NULL, o, r->manager, true, out, e);
	json_decref(o);
	return rc;
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * The Node the reports belong to (ownerReferences: deleting the Node deletes
 * them, through the garbage collector). Looked up before the first write,
 * again when one of our reports was deleted by someone else (the collector,
 * after the Node went or came back with a new uid), and every
 * NODE_RECHECK_S while it is absent. 0: write (with the owner when the Node
 * exists; without when the cluster has no Node of that name or we may not
 * read it); 1: the Node existed and was deleted: write nothing (the node was
 * removed from the cluster; its reports must not come back); -1: retry.
 */
static int node_owner_locked(struct rpt *r)
{
	struct kube_error e = { 0 };
	json_t *o = NULL;
	const char *uid;
	bool again = atomic_exchange(&r->node_recheck, false);

	if (!again && r->node_seen != NODE_UNKNOWN &&
	    (r->node_seen == NODE_PRESENT || mono_s() - r->node_checked < NODE_RECHECK_S))
		return r->node_seen == NODE_GONE;
	r->node_checked = mono_s();
	if (kube_get(r->kc, &NODES, NULL, r->node, &o, &e) == 0 && (uid = gj_str(o, "metadata.uid")) && *uid) {
		if (strcmp(uid, r->node_uid)) {
			const char *name;
			json_t *v;

			glogf(GLOG_INFO, COMP, "reports of node %s owned by its Node (uid %s)", r->node, uid);
			snprintf(r->node_uid, sizeof(r->node_uid), "%s", uid);
			/* every report takes the new owner */
			pthread_mutex_lock(&r->mu);
			json_object_foreach(r->desired, name, v)
				wq_add(r->pq, name);
			pthread_mutex_unlock(&r->mu);
		}
		r->node_seen = NODE_PRESENT;
	} else if (e.code == KUBE_ERR_NOT_FOUND) {
		if (r->node_seen == NODE_PRESENT || r->node_seen == NODE_GONE) {
			if (r->node_seen == NODE_PRESENT)
				glogf(GLOG_WARN, COMP, "Node %s was deleted: its reports are not written again "
				      "(the garbage collector deletes them); looking again every %.0f s", r->node,
				      NODE_RECHECK_S);
			r->node_seen = NODE_GONE;
		} else {
			if (r->node_seen == NODE_UNKNOWN)
				glogf(GLOG_INFO, COMP, "no Node named %s: reports carry no owner", r->node);
			r->node_seen = NODE_ABSENT;
		}
		r->node_uid[0] = 0;
	} else if (e.code == KUBE_ERR_FORBIDDEN) {
		if (r->node_seen == NODE_UNKNOWN)
			glogf(GLOG_WARN, COMP, "may not read Node %s (%s): reports carry no owner", r->node, e.message);
		r->node_seen = NODE_ABSENT;
		r->node_uid[0] = 0;
	} else {
		glogf(GLOG_WARN, COMP, "get Node %s: %s", r->node, e.message);
		json_decref(o);
		if (r->node_seen == NODE_UNKNOWN)
			return -1;
		return r->node_seen == NODE_GONE;
	}
	json_decref(o);
	return r->node_seen == NODE_GONE;
}

/* node_owner_locked under omu (any publisher thread); uid: the owner's uid as decided ("" for none). */
static int node_owner(struct rpt *r, char *uid, size_t n)
{
	int rc;

	pthread_mutex_lock(&r->omu);
	rc = node_owner_locked(r);
	snprintf(uid, n, "%s", r->node_uid);
	pthread_mutex_unlock(&r->omu);
	return rc;
}

static int apply_status(struct rpt *r, const char *name, json_t *status, json_t **out,
			struct kube_error *e)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion",
			      "network.datumapis.com/v1alpha1", "kind", "NodeAttachment", "metadata",
			      "name", name, "namespace", r->ns, "status", status);
	int rc = kube_apply(r->kc, &NATT, r->ns, name, "status", o, r->manager, true, out, e);

	json_decref(o);
	return rc;
}

/*
 * -1 (retry with backoff) for what time can fix; 0 for a write the server
 * refuses as invalid: retrying the same intent every few seconds would only
 * fill the log (a changed intent queues the key again).
 */
static int retry_or_drop(const char *what, const char *ns, const char *name, const struct kube_error *e)
{
	if (e->code == KUBE_ERR_INVALID || e->code == KUBE_ERR_BAD_REQUEST) {
		glogf(GLOG_ERROR, COMP, "%s nodeattachment %s/%s refused, not retried until it changes: %s",
		      what, ns, name, e->message);
		return 0;
	}
	glogf(GLOG_WARN, COMP, "%s nodeattachment %s/%s: %s", what, ns, name, e->message);
	return -1;
}

static uint64_t rv_of(const json_t *o)
{
	const char *s = gj_str(o, "metadata.resourceVersion");

	return s ? strtoull(s, NULL, 10) : 0;
}

/* FNV-1a 64 of the desired entry (keys sorted), 63 bits (a JSON integer). */
static json_int_t intent_hash(const json_t *d)
{
	char *s = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)s; s && *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	free(s);
	return (json_int_t)(h >> 1);
}

/* How long a memo of our write waits for its watch echo before the cache is trusted again. */
#define WROTE_ECHO_S 30.0

/* True when our last write of name carried intent h and the cache (cur) does not show it yet. */
static bool echo_pending(struct rpt *r, const char *name, json_int_t h, const json_t *cur)
{
	json_t *m;
	bool pending = false;

	pthread_mutex_lock(&r->mu);
	m = json_object_get(r->wrote, name);
	if (m && json_integer_value(json_object_get(m, "h")) == h &&
	    mono_s() - json_real_value(json_object_get(m, "t")) < WROTE_ECHO_S)
		pending = !cur || rv_of(cur) < (uint64_t)json_integer_value(json_object_get(m, "rv"));
	if (m && !pending) /* the cache caught up (or the intent changed): nothing to remember */
		json_object_del(r->wrote, name);
	pthread_mutex_unlock(&r->mu);
	return pending;
}

static void wrote_set(struct rpt *r, const char *name, json_int_t h, uint64_t rv)
{
	pthread_mutex_lock(&r->mu);
	if (rv)
		json_object_set_new(r->wrote, name, json_pack("{s:I, s:I, s:f}", "h", h, "rv", (json_int_t)rv,
							      "t", mono_s()));
	else
		json_object_del(r->wrote, name);
	pthread_mutex_unlock(&r->mu);
}

/* One report: make the API copy equal the intent (or delete it). 0, or -1 to retry. */
static int publish_one(struct rpt *r, const char *name)
{
	json_t *d, *cur, *obj = NULL, *written = NULL, *swritten = NULL, *status;
	char uid[64];
	json_int_t h;
	struct kube_error e = { 0 };
	struct rpt_reporter rep = { r->node, RPT_VERSION, r->datapath };
	struct rpt_cond c = { 0 };
	char now[32];
	const char *lbl, *vlbl, *vwant;
	int rc = 0;

	pthread_mutex_lock(&r->mu);
	/* No reconcile seen yet ("not desired" would delete every report), or
	 * no list of our reports yet (nothing to compare with: every report
	 * would be rewritten at each start). */
	if (!r->desired || !informer_synced(r->own)) {
		pthread_mutex_unlock(&r->mu);
		wq_add_after(r->pq, name, 0.1);
		return 0;
	}
	d = json_incref(json_object_get(r->desired, name));
	pthread_mutex_unlock(&r->mu);
	cur = kube_store_get_nn(informer_store(r->own), r->ns, name);
	if (!d) {
		struct kube_delete_opts dop = { .uid = gj_str(cur, "metadata.uid") };

		if (!cur) {
			/* Unknown until the cache is filled: its add event requeues. */
			return 0;
		}
		wrote_set(r, name, 0, 0);
		if (kube_delete(r->kc, &NATT, r->ns, name, &dop, &e) && e.code != KUBE_ERR_NOT_FOUND &&
		    e.code != KUBE_ERR_CONFLICT) {
			glogf(GLOG_WARN, COMP, "delete nodeattachment %s/%s: %s", r->ns, name, e.message);
			rc = -1;
		} else {
			glogf(GLOG_INFO, COMP, "deleted nodeattachment %s/%s (attachment gone)", r->ns, name);
		}
		json_decref(cur);
		return rc;
	}
	h = intent_hash(d);
	if (echo_pending(r, name, h, cur))
		goto out; /* the event of our write queues the name again */
	switch (node_owner(r, uid, sizeof(uid))) {
	case 1: /* the Node was deleted: nothing is written; looked at again later */
		wq_add_after(r->pq, name, NODE_RECHECK_S);
		goto out;
	case -1:
		rc = -1;
		goto out;
	}
	lbl = json_string_value(json_object_get(gj_get(cur, "metadata.labels"), RPT_NODE_LABEL));
	vlbl = json_string_value(json_object_get(gj_get(cur, "metadata.labels"), RPT_VPC_LABEL));
	vwant = vpc_label(json_object_get(d, "spec"));
	obj = cur;
	/* A report without the VPC label (written before it) gets it here. */
	if (!cur || !json_equal(json_object_get(cur, "spec"), json_object_get(d, "spec")) ||
	    !lbl || strcmp(lbl, r->node) || (vwant && (!vlbl || strcmp(vlbl, vwant))) ||
	    (uid[0] && !rpt_owner_is(cur, r->node, uid))) {
		if (apply_spec(r, name, json_object_get(d, "spec"), uid, &written, &e)) {
			rc = retry_or_drop("apply", r->ns, name, &e);
			goto out;
		}
		obj = written;
	}
	c.programmed = json_is_true(gj_get(d, "cond.programmed"));
	snprintf(c.reason, sizeof(c.reason), "%s", gj_str(d, "cond.reason"));
	snprintf(c.message, sizeof(c.message), "%s", gj_str(d, "cond.message"));
	gj_time_now(now, sizeof(now));
	status = rpt_status(&c, gj_int(obj, "metadata.generation", 0), obj, &rep, now);
	if (!rpt_status_equal(obj, status)) {
		if (apply_status(r, name, status, &swritten, &e)) {
			rc = retry_or_drop("apply status of", r->ns, name, &e);
		} else {
			glogf(GLOG_INFO, COMP, "nodeattachment %s/%s: Programmed=%s (%s)", r->ns, name,
			      c.programmed ? "True" : "False", c.reason);
		}
	}
	json_decref(status);
	if (!rc && (written || swritten))
		wrote_set(r, name, h, rv_of(swritten ? swritten : written));
out:
	json_decref(swritten);
	json_decref(written);
	json_decref(cur);
	json_decref(d);
	return rc;
}

/* How often an idle publisher looks whether the API server answers again (s). */
#define RECOVERY_POLL_S 0.1

/*
 * The API server answers again after failures (kube_client_recoveries of
 * either client): the reports in backoff are written now, not after the
 * per-report backoff they reached during the outage (0.2 s doubling to 5
 * s: the last report 4-5 s after the server was back, test_fault_cluster).
 */
static void retry_on_recovery(struct rpt *r)
{
	unsigned long n = kube_client_recoveries(r->kc) + kube_client_recoveries(r->rkc);

	if (atomic_exchange(&r->recoveries, n) != n)
		wq_retry_now(r->pq);
}

static void *publisher(void *arg)
{
	struct rpt *r = arg;
	char *key;

	for (;;) {
		retry_on_recovery(r);
		if (!(key = wq_get(r->pq, RECOVERY_POLL_S))) {
			if (wq_shutting_down(r->pq))
				break;
			continue;
		}
		if (!strcmp(key, KEY_SYNC))
			sync_desired(r);
		else if (publish_one(r, key))
			wq_add_rate_limited(r->pq, key);
		else
			wq_forget(r->pq, key);
		wq_done(r->pq, key);
		free(key);
	}
	return NULL;
}

static void own_add(json_t *o, void *ud)
{
	struct rpt *r = ud;
	const char *n = gj_str(o, "metadata.name");

	if (n)
		wq_add(r->pq, n);
}
static void own_update(json_t *old, json_t *o, void *ud) { own_add(o, ud); }

/* One of our reports deleted: by us, or by someone else (the garbage
 * collector after the Node went): the Node is looked up again before the
 * report is written back. */
static void own_delete(json_t *o, void *ud)
{
	struct rpt *r = ud;
	const char *n = gj_str(o, "metadata.name");

	atomic_store(&r->node_recheck, true);
	if (n)
		wrote_set(r, n, 0, 0);
	own_add(o, ud);
}

/* ---- route learner ----------------------------------------------------- */

/*
 * One report's part of the learned set as rpt_routes_from_report gave it,
 * for the report's resourceVersion: a pass re-parses only the reports that
 * changed since the last one (in a burst every new report's two writes each
 * woke a pass over every report of the hosted VPCs: a third of the agent's
 * CPU at N=300, bench_burst with perf).
 */
struct lmemo {
	char rv[24];    /* etcd revisions: 20 digits at most */
	int rc;         /* rpt_routes_from_report's */
	char *why;      /* rc < 0: why the report is bad (else NULL) */
	size_t n;
	struct gdp_remote rem[]; /* n */
};

static void lmemo_free(void *v)
{
	struct lmemo *m = v;

	if (m)
		free(m->why);
	free(m);
}

/* What rpt_routes_from_report reads of the local state besides the report, as a string. */
static char *learn_ctx(const struct gdp_state *local)
{
	size_t i, len = 64;
	char *c, *p;

	for (i = 0; i < local->n_vpcs; i++)
		len += strlen(local->vpcs[i].id) + 1;
	if (!(c = malloc(len)))
		return NULL;
	p = c + sprintf(c, "%04x %02x%02x%02x%02x%02x%02x", local->node.node_id, local->node.block[0],
			local->node.block[1], local->node.block[2], local->node.block[3], local->node.block[4],
			local->node.block[5]);
	for (i = 0; i < local->n_vpcs; i++)
		p += sprintf(p, " %s", local->vpcs[i].id);
	return c;
}

/* Parses o into a new memo (NULL: out of memory). scratch: reused between calls. */
static struct lmemo *lmemo_parse(struct rpt *r, const json_t *o, const char *rv, const struct gdp_state *local,
				 struct gdp_state *scratch)
{
	struct lmemo *m;
	char why[300] = "";
	int rc;

	atomic_fetch_add(&r->learn_parsed, 1);
	scratch->n_remotes = 0;
	rc = rpt_routes_from_report(o, r->node, local, scratch, why, sizeof(why));
	if (rc < 0)
		scratch->n_remotes = 0;
	if (!(m = malloc(sizeof(*m) + scratch->n_remotes * sizeof(m->rem[0]))))
		return NULL;
	snprintf(m->rv, sizeof(m->rv), "%s", rv ? rv : "");
	m->rc = rc;
	m->why = NULL;
	if (rc < 0 && !(m->why = strdup(why))) {
		free(m);
		return NULL;
	}
	m->n = scratch->n_remotes;
	if (m->n)
		memcpy(m->rem, scratch->remotes, m->n * sizeof(m->rem[0]));
	return m;
}

/* One store's reports into out (see learn); next: the memo of this pass. */
static void learn_store(struct rpt *r, struct kube_store *s, const struct gdp_state *local,
			struct gdp_state *out, json_t *nbad, size_t *used, size_t *bad, struct gmap *next,
			struct gdp_state *scratch)
{
	json_t *keys, *k;
	size_t i, j;
	int err;

	keys = kube_store_keys(s);
	json_array_foreach(keys, i, k) {
		const char *key = json_string_value(k);
		json_t *o = kube_store_get(s, key);
		const char *name = gj_str(o, "metadata.name"), *rv = gj_str(o, "metadata.resourceVersion");
		struct lmemo *m = NULL;
		bool found, oom;
		size_t base = out->n_remotes;

		if (!o)
			continue;
		if (r->lmemo)
			m = gmap_del(r->lmemo, key, &found);
		/* resourceVersions too long to keep are never taken as the same */
		if (m && (!rv || strlen(rv) >= sizeof(m->rv) || strcmp(m->rv, rv))) {
			lmemo_free(m);
			m = NULL;
		}
		if (!m && !(m = lmemo_parse(r, o, rv, local, scratch))) {
			glogf(GLOG_ERROR, COMP, "nodeattachment %s/%s not learned this pass: out of memory", r->ns,
			      name ? name : key);
			(*bad)++;
			json_decref(o);
			continue;
		}
		oom = false;
		for (j = 0; j < m->n; j++)
			if (gdp_state_add_remote(out, &m->rem[j])) {
				out->n_remotes = base;
				oom = true;
				break;
			}
		if (oom) {
			(*bad)++;
			glogf(GLOG_ERROR, COMP, "nodeattachment %s/%s not learned this pass: out of memory", r->ns,
			      name ? name : key);
		} else if (m->rc < 0) {
			const char *seen = json_string_value(json_object_get(r->bad_seen, key));

			(*bad)++;
			/* Once per version, not once per pass. */
			if (!seen || !rv || strcmp(seen, rv)) {
				glogf(GLOG_WARN, COMP, "ignoring nodeattachment %s/%s: %s", r->ns,
				      name ? name : key, m->why ? m->why : "");
			}
			json_object_set_new(nbad, key, json_string(rv ? rv : ""));
		} else if (m->rc == 0) {
			(*used)++;
		}
		if (!rv || strlen(rv) >= sizeof(m->rv) || oom || (m->rc < 0 && !strcmp(m->why, "out of memory"))) {
			lmemo_free(m);
		} else {
			lmemo_free(gmap_put(next, key, m, &err)); /* a key in both stores: the last one's */
			if (err)
				lmemo_free(m);
		}
		json_decref(o);
	}
	json_decref(keys);
}

struct overlap_ctx {
	struct rpt *r;
	json_t *seen; /* the next overlap_seen */
};

/* One overlap of the learned set: logged when it is new or changed. */
static void on_overlap(const struct gdp_remote *kept, const struct gdp_remote *other, bool nested,
		       void *ud)
{
	struct overlap_ctx *oc = ud;
	char key[GDP_ID_MAX + 160], what[300], pk[64], po[64], sk[INET6_ADDRSTRLEN], so[INET6_ADDRSTRLEN];
	const char *was;

	gdp_prefix_str(&kept->prefix, pk, sizeof(pk));
	gdp_prefix_str(&other->prefix, po, sizeof(po));
	inet_ntop(AF_INET6, &kept->sid, sk, sizeof(sk));
	inet_ntop(AF_INET6, &other->sid, so, sizeof(so));
	snprintf(key, sizeof(key), "%s %s", gdp_remote_vpc(kept), po);
	if (nested)
		snprintf(what, sizeof(what), "inside %s via %s", pk, sk);
	else
		snprintf(what, sizeof(what), "%s kept, %s dropped", sk, so);
	was = json_string_value(json_object_get(oc->r->overlap_seen, key));
	if (!was || strcmp(was, what)) {
		if (nested)
			glogf(GLOG_WARN, COMP,
			      "vpc %s: prefix %s via %s lies inside %s via %s offered by another report; both programmed, the longest match wins",
			      gdp_remote_vpc(kept), po, so, pk, sk);
		else
			glogf(GLOG_WARN, COMP,
			      "vpc %s: prefix %s offered by more than one report; keeping the lowest SID %s, dropping %s",
			      gdp_remote_vpc(kept), po, sk, so);
	}
	json_object_set_new(oc->seen, key, json_string(what));
}

static void learn(struct rpt *r)
{
	struct gdp_state local, out, scratch;
	struct gmap *next;
	char *ctx;
	struct overlap_ctx oc;
	struct rpt_overlaps ov;
	size_t used = 0, bad = 0;
	json_t *nbad;
	int rc;

	pthread_mutex_lock(&r->mu);
	if (!r->have_snap || gdp_state_copy(&local, &r->snap)) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	pthread_mutex_unlock(&r->mu);
	gdp_state_init(&out);
	gdp_state_init(&scratch);
	nbad = json_object();
	/* The memo holds for the local state it was parsed against. */
	ctx = learn_ctx(&local);
	if (!ctx || !r->lmemo_ctx || strcmp(ctx, r->lmemo_ctx)) {
		gmap_free(r->lmemo, lmemo_free);
		r->lmemo = NULL;
	}
	free(r->lmemo_ctx);
	r->lmemo_ctx = ctx;
	next = gmap_new();
	/* The two stores never hold the same report: one has the label, the
	 * other selects its absence. A VPC no longer hosted whose reports are
	 * still cached (its replacement listing) is skipped by the parser. */
	if (next) {
		if (r->scoped)
			learn_store(r, informer_store(r->scoped), &local, &out, nbad, &used, &bad, next, &scratch);
		if (r->legacy)
			learn_store(r, informer_store(r->legacy), &local, &out, nbad, &used, &bad, next, &scratch);
	}
	/* What is left is gone from the stores (or changed: re-parsed into next). */
	gmap_free(r->lmemo, lmemo_free);
	r->lmemo = next;
	gdp_state_free(&scratch);
	json_decref(r->bad_seen);
	r->bad_seen = nbad;
	if (!next) {
		glogf(GLOG_ERROR, COMP, "learned routes not recorded: out of memory");
		wq_add_rate_limited(r->lq, KEY_ROUTES);
		gdp_state_free(&out);
		gdp_state_free(&local);
		return;
	}
	/* Overlapping prefixes of one VPC: one winner per prefix, nested ones
	 * by longest match (rpt_remotes_resolve), each logged once. */
	oc.r = r;
	oc.seen = json_object();
	out.n_remotes = rpt_remotes_resolve(out.remotes, out.n_remotes, &ov, on_overlap, &oc);
	json_decref(r->overlap_seen);
	r->overlap_seen = oc.seen;
	atomic_store(&r->ov_dup, ov.duplicates);
	atomic_store(&r->ov_nested, ov.nested);
	if (r->m_overlaps) {
		metric_set(r->m_overlaps, "duplicate", (double)ov.duplicates);
		metric_set(r->m_overlaps, "nested", (double)ov.nested);
	}
	/* The sink compares with what it holds (no second copy of 100k here). */
	rc = r->set_remotes(r->ctx, out.remotes, out.n_remotes);
	if (rc < 0) {
		glogf(GLOG_ERROR, COMP, "learned routes not recorded: %s", strerror(-rc));
		wq_add_rate_limited(r->lq, KEY_ROUTES);
	} else if (rc == 0) {
		glogf(GLOG_INFO, COMP, "learned %zu routes from %zu reports (%zu ignored as bad)", out.n_remotes,
		      used, bad);
	}
	gdp_state_free(&out);
	gdp_state_free(&local);
}

static void all_add(json_t *o, void *ud);
static void all_update(json_t *old, json_t *o, void *ud);

static struct informer *learner_informer(struct rpt *r, const char *sel, const char *name)
{
	struct informer_opts io = { 0 };
	struct informer *inf;

	io.res = NATT;
	io.ns = r->ns;
	io.drop_managed_fields = true;
	io.backoff_initial_s = 0.5;
	io.backoff_max_s = 5;
	io.label_selector = sel;
	io.name = name;
	/* A selective selector over every node's reports: from the watch cache
	 * (the unscoped reference lists as before: consistent, paged). */
	io.list_from_cache = sel != NULL;
	inf = informer_new(r->rkc, &io);
	if (!inf || informer_add_handlers(inf, &(struct informer_handlers){ all_add, all_update, all_add, r })) {
		informer_free(inf);
		return NULL;
	}
	return inf;
}

/*
 * Keeps the scoped informer's selector equal to the hosted VPC set
 * (learner thread). A changed set starts a replacement informer with the
 * new selector; the current one keeps serving until the replacement has
 * listed (make before break: a VPC that stays never loses its routes),
 * then is retired (*retired: stopped by the caller after the next learn,
 * its watch takes up to a second to notice). *dirty: learn again.
 */
static void scope_update(struct rpt *r, bool *dirty, struct informer **retired)
{
	char *want;
	const char *cur;

	if (r->unscoped)
		return;
	pthread_mutex_lock(&r->mu);
	want = r->have_snap ? rpt_scope_selector(&r->snap) : NULL;
	pthread_mutex_unlock(&r->mu);
	cur = r->pending_sel ? r->pending_sel : r->scoped_sel;
	if (want && (!cur || strcmp(cur, want))) {
		/* A newer set replaces a replacement still listing. */
		informer_free(r->pending);
		r->pending = NULL;
		free(r->pending_sel);
		r->pending_sel = NULL;
		if (r->scoped_sel && !strcmp(r->scoped_sel, want)) {
			free(want);
		} else if (!*want) {
			/* No VPC hosted: nothing to watch, nothing to learn. */
			*retired = r->scoped;
			r->scoped = NULL;
			free(r->scoped_sel);
			r->scoped_sel = want;
			*dirty = true;
		} else if ((r->pending = learner_informer(r, want, "nodeattachments-of-vpcs")) &&
			   !informer_start(r->pending)) {
			r->pending_sel = want;
			atomic_fetch_add(&r->scope_changes, 1);
			glogf(GLOG_INFO, COMP, "learning from the reports with %s", want);
		} else {
			informer_free(r->pending);
			r->pending = NULL;
			free(want);
			glogf(GLOG_ERROR, COMP, "cannot start the reports' informer; trying again");
		}
		want = NULL;
	}
	free(want);
	if (r->pending && informer_synced(r->pending)) {
		*retired = r->scoped;
		r->scoped = r->pending;
		free(r->scoped_sel);
		r->scoped_sel = r->pending_sel;
		r->pending = NULL;
		r->pending_sel = NULL;
		*dirty = true;
	}
}

/* Every store the learner reads has listed once. */
static bool learner_ready(struct rpt *r)
{
	if (r->unscoped)
		return informer_synced(r->scoped);
	return (!r->legacy || informer_synced(r->legacy)) && r->scoped_sel &&
	       (!r->scoped || informer_synced(r->scoped));
}

static void *learner(void *arg)
{
	struct rpt *r = arg;
	bool done_once = false, dirty = false;

	while (!wq_shutting_down(r->lq)) {
		struct informer *retired = NULL;
		/* Short waits while a list is under way: its last events come
		 * before it counts as listed, and nothing would wake us then. */
		char *key = wq_get(r->lq, learner_ready(r) && !r->pending ? 1.0 : 0.05);

		if (key)
			dirty = true;
		scope_update(r, &dirty, &retired);
		if (retired)
			informer_request_stop(retired);
		/* Never before the first full list: the durable file stays as is
		 * until the API can say what replaced it. */
		if (learner_ready(r) && (dirty || !done_once)) {
			learn(r);
			done_once = true;
			dirty = false;
		}
		informer_free(retired);
		/* The publisher's own reports list after ours (or after
		 * OWN_LIST_DEFER_MAX_S when ours cannot list): it writes nothing
		 * before that list, and at a start the API server answers one
		 * list at a time sooner than two at once. */
		if (!r->own_started && (done_once || mono_s() - r->t_start >= OWN_LIST_DEFER_MAX_S)) {
			if (!informer_start(r->own))
				r->own_started = true;
			else
				glogf(GLOG_ERROR, COMP, "cannot start the informer of this node's reports; trying again");
		}
		if (key) {
			wq_done(r->lq, key);
			free(key);
		}
	}
	return NULL;
}

static void all_add(json_t *o, void *ud)
{
	struct rpt *r = ud;

	(void)o;
	wq_add(r->lq, KEY_ROUTES);
}
static void all_update(json_t *old, json_t *o, void *ud) { all_add(o, ud); }

/* ---- lifecycle --------------------------------------------------------- */

void rpt_get_stats(struct rpt *r, struct rpt_stats *out)
{
	unsigned long b, w;

	memset(out, 0, sizeof(*out));
	kube_client_rx_bytes(r->kc, &out->rx_body, &out->rx_wire);
	kube_client_rx_bytes(r->rkc, &b, &w);
	out->rx_body += b;
	out->rx_wire += w;
	out->scope_changes = atomic_load(&r->scope_changes);
	out->overlap_duplicates = atomic_load(&r->ov_dup);
	out->overlap_nested = atomic_load(&r->ov_nested);
	out->learn_parsed = atomic_load(&r->learn_parsed);
	out->pub_syncs = atomic_load(&r->pub_syncs);
	out->pub_built = atomic_load(&r->pub_built);
}

int rpt_start(struct rpt **out, const struct rpt_opts *o, char *err, size_t errlen)
{
	struct wq_opts qo = { .base_delay_s = 0.2, .max_delay_s = o->max_backoff_s > 0 ? o->max_backoff_s : 5,
			      .qps = 50, .burst = 100 };
	struct informer_opts io = { 0 };
	struct rpt *r;
	char why[256];

	*out = NULL;
	if (!o->node || !o->ns || !o->set_remotes) {
		snprintf(err, errlen, "reports need --node, --report-namespace and a route sink");
		return -EINVAL;
	}
	if (rpt_name(o->node, "1", "1", why, sizeof(why), why, sizeof(why)) || !rpt_label_value_ok(o->node)) {
		snprintf(err, errlen, "--node '%s': must be a lowercase DNS name of at most 63 characters",
			 o->node);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "reports: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->omu, NULL);
	snprintf(r->node, sizeof(r->node), "%s", o->node);
	snprintf(r->manager, sizeof(r->manager), RPT_FIELD_MANAGER_PREFIX "%s", o->node);
	snprintf(r->ns, sizeof(r->ns), "%s", o->ns);
	r->set_remotes = o->set_remotes;
	r->ctx = o->ctx;
	snprintf(r->datapath, sizeof(r->datapath), "%s", o->datapath ? o->datapath : "kernel");
	snprintf(r->selector, sizeof(r->selector), RPT_NODE_LABEL "=%s", o->node);
	r->bad_seen = json_object();
	r->overlap_seen = json_object();
	r->wrote = json_object();
	if (!(r->dmemo = rpt_desired_new())) {
		snprintf(err, errlen, "reports: out of memory");
		goto fail;
	}
	r->cfg = o->kubeconfig ? kube_config_from_kubeconfig(o->kubeconfig, NULL, err, errlen)
			       : kube_config_load(err, errlen);
	if (!r->cfg)
		goto fail;
	r->kc = kube_client_new(r->cfg, err, errlen);
	if (r->kc)
		r->rkc = kube_client_new(r->cfg, err, errlen);
	if (!r->kc || !r->rkc)
		goto fail;
	if (o->metrics && (kube_client_set_metrics(r->kc, o->metrics) ||
			   kube_client_set_metrics(r->rkc, o->metrics)))
		goto nomem;
	if (o->metrics)
		r->m_overlaps = metrics_gauge(o->metrics, "galactic_agent_learned_overlaps",
					      "Overlapping prefixes of one VPC in the learned routes (duplicate: offered by more than one report, one kept; nested: inside another prefix, both kept)",
					      "kind");
	/* A black-holed server must not hold a write for a minute. Lists keep
	 * the default: a page of a busy API server (the first list of the
	 * reports at 2,000 nodes, bench_learner) can take more than 5 s, and a
	 * list that always times out never syncs. */
	kube_client_set_timeout(r->kc, 5);
	r->pq = wq_new(&qo);
	r->lq = wq_new(&qo);
	io.res = NATT;
	io.ns = r->ns;
	io.drop_managed_fields = true;
	io.backoff_initial_s = 0.5;
	io.backoff_max_s = 5;
	io.label_selector = r->selector;
	io.name = "own-nodeattachments";
	/* A selective selector over every node's reports: from the watch cache. */
	io.list_from_cache = true;
	if (!r->pq || !r->lq || !(r->own = informer_new(r->rkc, &io)) ||
	    informer_add_handlers(r->own, &(struct informer_handlers){ own_add, own_update, own_delete, r }))
		goto nomem;
	r->unscoped = o->learn_unscoped;
	r->t_start = mono_s();
	if (r->unscoped && !(r->scoped = learner_informer(r, NULL, "nodeattachments")))
		goto nomem;
	/* Reports of agents that predate the VPC label, while a cluster
	 * upgrades from them (docs/dataplane-reports.md, "Upgrade"). */
	if (!r->unscoped && o->learn_unlabelled &&
	    !(r->legacy = learner_informer(r, "!" RPT_VPC_LABEL, "nodeattachments-unlabelled")))
		goto nomem;
	for (int i = 0; i < RPT_PUBLISHERS; i++) {
		if (pthread_create(&r->pth[i], NULL, publisher, r))
			goto nomem;
		r->npth++;
	}
	if (pthread_create(&r->lth, NULL, learner, r))
		goto nomem;
	r->lth_on = true;
	/* The unscoped reference lists its own reports at once, as before. */
	if (r->unscoped && !informer_start(r->own))
		r->own_started = true;
	if ((r->unscoped && !r->own_started) || (r->scoped && informer_start(r->scoped)) ||
	    (r->legacy && informer_start(r->legacy))) {
		snprintf(err, errlen, "reports: cannot start informers");
		goto fail;
	}
	glogf(GLOG_INFO, COMP, "reporting node %s into namespace %s (%s)", r->node, r->ns, r->cfg->server);
	*out = r;
	return 0;
nomem:
	snprintf(err, errlen, "reports: out of memory");
fail:
	rpt_stop(r);
	return -EINVAL;
}

void rpt_stop(struct rpt *r)
{
	if (!r)
		return;
	if (r->pq)
		wq_shutdown(r->pq);
	if (r->lq)
		wq_shutdown(r->lq);
	/* The learner's informers (and starting the publisher's) are its own
	 * until it has ended. */
	if (r->lth_on)
		pthread_join(r->lth, NULL);
	informer_request_stop(r->own);
	informer_request_stop(r->scoped);
	informer_request_stop(r->pending);
	informer_request_stop(r->legacy);
	for (int i = 0; i < r->npth; i++)
		pthread_join(r->pth[i], NULL);
	informer_free(r->own);
	informer_free(r->scoped);
	informer_free(r->pending);
	informer_free(r->legacy);
	free(r->scoped_sel);
	free(r->pending_sel);
	wq_free(r->pq);
	wq_free(r->lq);
	kube_client_free(r->kc);
	kube_client_free(r->rkc);
	kube_config_free(r->cfg);
	gdp_state_free(&r->snap);
	gdp_state_free(&r->pub_st);
	gdp_results_free(&r->snap_res);
	free(r->snap_pods);
	free(r->vpc_set);
	json_decref(r->desired);
	json_decref(r->last_intent);
	json_decref(r->bad_seen);
	gmap_free(r->lmemo, lmemo_free);
	free(r->lmemo_ctx);
	json_decref(r->overlap_seen);
	json_decref(r->wrote);
	rpt_desired_free(r->dmemo);
	pthread_mutex_destroy(&r->omu);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
