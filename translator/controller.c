#include "translator/controller.h"

#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "common/workqueue.h"
#include "translator/crds.h"
#include "translator/intent.h"
#include "translator/kinds.h"
#include "translator/project.h"
#include "translator/reconcile.h"
#include "translator/rec_egress.h"
#include "translator/writes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORKERS 16
#define CRD_SETTLE_S 1.0
/* Small list pages: a page is held decoded whole while it is cached. */
#define LIST_PAGE 100

/* What each cache keeps (translator/project.h): status owners where we write
 * status (the skip check reads them), labels where an index or reconciler reads them. */
static const struct project_opts PROJ[TK_N] = {
	[TK_VPCATT] = { .keep_status_owners = true },
	[TK_NI] = { .keep_status_owners = true },
	[TK_NIC] = { .keep_status_owners = true },
	[TK_ESC] = { .keep_labels = true, .keep_status_owners = true },
	[TK_ES] = { .keep_labels = true },
	[TK_NC] = { 0 },
};
/* Reports: a mapping may read any path but managedFields and annotations. */
static const struct project_opts PROJ_REPORT = { .keep_labels = true };

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
	struct informer *inf[TK_N]; /* one per kind (the egress kinds NULL without egress) */
	struct egress_ctx *eg;      /* NULL without egress */
	struct informer **rep;      /* one per mapping entry */
	struct rep_ud *rud;         /* handler data of each report informer */
	struct crds *crds;
	struct writes *w;
	struct rec_ctx rc;
	struct att_fresh *fresh; /* attachments our writes returned, newer than the cache */
	struct wq *q;
	pthread_t thr[MAX_WORKERS];
	int nthr;
	atomic_bool running;
	atomic_bool stopping;       /* SIGTERM: queued keys are dropped, not reconciled */

	struct metric *m_invalid, *m_leader, *m_reconciles, *m_deferred;
};

/* ---- queue keys ---- */

static void enqueue(struct controller *c, enum tkind k, const char *ns, const char *name)
{
	char key[600];
	if (!qkey_format(k, ns, name, key, sizeof(key)))
		wq_add(c->q, key);
	/* else: not a name; nothing to queue (bad objects never crash us) */
}

/*
 * A dependent of an object that just changed (an interface or claim after
 * its attachment's update, a claim after its interface's): at the front of
 * the queue, so a chain (attachment -> interface, claim) is finished before
 * the backlog of other keys moves on and each claim is ready as soon as its
 * own chain is (docs/translator.md "Order of work").
 */
static void enqueue_dep(struct controller *c, enum tkind k, const char *ns, const char *name,
			bool front)
{
	char key[600];
	if (qkey_format(k, ns, name, key, sizeof(key)))
		return;
	if (front)
		wq_add_front(c->q, key);
	else
		wq_add(c->q, key);
}

static void enqueue_obj(struct controller *c, enum tkind k, const json_t *obj)
{
	enqueue(c, k, gj_str(obj, "metadata.namespace"), gj_str(obj, "metadata.name"));
}

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

/* An interface changed (or its attachment did): queue the claims that name it or that it names. */
static void enqueue_claims_of_iface(struct controller *c, const char *ns, const char *ifname,
				    const char *claimref, bool front)
{
	char k[600];
	json_t *cl, *o;
	size_t i;

	enqueue_dep(c, TK_NIC, ns, claimref, front);
	if (!ns || !ifname)
		return;
	snprintf(k, sizeof(k), "%s/%s", ns, ifname);
	cl = kube_store_by_index(informer_store(c->inf[TK_NIC]), "ifref", k);
	json_array_foreach(cl, i, o)
		if (strcmp(gj_str(o, "metadata.name") ?: "", claimref ?: ""))
			enqueue_dep(c, TK_NIC, ns, gj_str(o, "metadata.name"), front);
	json_decref(cl);
}

/* An attachment changed: queue it, the interface of its name (upstream names an
 * attachment after its interface) and that interface's claims; on an update
 * (our write's own event, or the VPC operator's / a report's change) the
 * dependents go to the front. */
static void att_changed(struct controller *c, const json_t *att, bool self, bool front)
{
	const char *ns = gj_str(att, "metadata.namespace"), *ifn = gj_str(att, "metadata.name");
	json_t *iface;

	if (!att || !ns || !ifn)
		return;
	if (self) {
		enqueue_obj(c, TK_VPCATT, att);
		if (c->eg)
			enqueue_obj(c, TK_ESC, att);
	}
	iface = kube_store_get_nn(informer_store(c->inf[TK_NI]), ns, ifn);
	/* The interface first, then the claims at the front before it: a claim's
	 * Programmed is what its Ready (NSO's, the end of the chain) waits for;
	 * the interface's is not. Both read the attachment, not each other. */
	enqueue_dep(c, TK_NI, ns, ifn, front);
	enqueue_claims_of_iface(c, ns, ifn, gj_str(iface, "spec.claimRef.name"), front);
	json_decref(iface);
}
/* The cache now holds obj (NULL: the object went): a remembered write response it caught up with goes. */
static void att_cache_saw(struct controller *c, const json_t *key_of, const json_t *obj)
{
	char k[600];
	snprintf(k, sizeof(k), "%s/%s", gj_str(key_of, "metadata.namespace") ?: "",
		 gj_str(key_of, "metadata.name") ?: "");
	att_fresh_seen(c->fresh, k, obj);
}
static void att_add(json_t *obj, void *ud)
{
	att_cache_saw(ud, obj, obj);
	att_changed(ud, obj, true, false);
}
static void att_update(json_t *old, json_t *nw, void *ud)
{
	att_cache_saw(ud, nw, nw);
	att_changed(ud, nw, true, true);
	att_changed(ud, old, false, true);
}
static void att_delete(json_t *obj, void *ud)
{
	att_cache_saw(ud, obj, NULL);
	att_changed(ud, obj, true, true);
}

/*
 * Our write of an attachment succeeded: its interface and claims are
 * reconciled now, from the response (pruned as the cache keeps it), at the
 * front of the queue, rather than once the watch event of the write arrives
 * (0.3-1 s a chain under load, bench_burst). The watch event queues them
 * again; by then they are written and skip.
 */
static void att_written(void *ud, const json_t *att)
{
	struct controller *c = ud;
	json_t *p = json_deep_copy(att);

	if (!p)
		return;
	project_object(p, (void *)&PROJ[TK_VPCATT]);
	att_fresh_put(c->fresh, json_incref(p));
	att_changed(c, p, false, true);
	json_decref(p);
}

static void ni_changed(struct controller *c, const json_t *o, bool front)
{
	const char *ns = gj_str(o, "metadata.namespace"), *n = gj_str(o, "metadata.name");
	if (!o)
		return;
	enqueue(c, TK_NI, ns, n);
	enqueue_claims_of_iface(c, ns, n, gj_str(o, "spec.claimRef.name"), front);
}
static void ni_add(json_t *obj, void *ud) { ni_changed(ud, obj, false); }
static void ni_update(json_t *old, json_t *nw, void *ud)
{
	ni_changed(ud, old, true);
	ni_changed(ud, nw, true);
}
static void ni_delete(json_t *obj, void *ud) { ni_changed(ud, obj, true); }

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
static void nic_add(json_t *obj, void *ud) { enqueue_obj(ud, TK_NIC, obj); }
static void nic_update(json_t *old, json_t *nw, void *ud)
{
	(void)old;
	enqueue_obj(ud, TK_NIC, nw);
}
static void nic_delete(json_t *obj, void *ud) { enqueue_obj(ud, TK_NIC, obj); }

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
		atts = kube_store_by_index(informer_store(c->inf[TK_VPCATT]), "ids", k);
		json_array_foreach(atts, i, a)
			enqueue_obj(c, TK_VPCATT, a);
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

/* ---- egress kinds ---- */

static void att_vpc_index(const json_t *obj, struct kube_index_values *out, void *ud)
{
	char k[520];
	(void)ud;
	if (gj_str(obj, "metadata.namespace") && gj_str(obj, "spec.vpc.name")) {
		snprintf(k, sizeof(k), "%s/%s", gj_str(obj, "metadata.namespace"),
			 gj_str(obj, "spec.vpc.name"));
		kube_index_values_add(out, k);
	}
}

/* The claim key (= the attachment's) and the attachment's condition. */
static void enqueue_egress(struct controller *c, const char *ns, const char *name)
{
	enqueue(c, TK_ESC, ns, name);
	enqueue(c, TK_VPCATT, ns, name);
}

/* enqueue_egress for every object of kind k whose index has value v. */
static void enqueue_egress_by(struct controller *c, enum tkind k, const char *index, const char *v)
{
	json_t *l = v ? kube_store_by_index(informer_store(c->inf[k]), index, v) : NULL, *o;
	size_t i;
	json_array_foreach(l, i, o)
		enqueue_egress(c, gj_str(o, "metadata.namespace"), gj_str(o, "metadata.name"));
	json_decref(l);
}

static void nsname(const json_t *o, char *k, size_t n)
{
	snprintf(k, n, "%s/%s", gj_str(o, "metadata.namespace") ?: "", gj_str(o, "metadata.name") ?: "");
}

static void nc_changed(struct controller *c, const json_t *o)
{
	char k[520];
	if (!o)
		return;
	nsname(o, k, sizeof(k));
	enqueue_egress_by(c, TK_VPCATT, "vpcname", k);
}
static void nc_add(json_t *obj, void *ud) { nc_changed(ud, obj); }
static void nc_update(json_t *old, json_t *nw, void *ud)
{
	(void)old;
	nc_changed(ud, nw);
}
static void nc_delete(json_t *obj, void *ud) { nc_changed(ud, obj); }

static void esc_changed(struct controller *c, const json_t *o)
{
	struct kube_index_values iv = { 0 };
	if (!o)
		return;
	enqueue_egress(c, gj_str(o, "metadata.namespace"), gj_str(o, "metadata.name"));
	/* The shards it names (label, shardRef) may be released now. */
	egress_claim_shard_index(o, &iv, c->eg);
	for (int i = 0; i < iv.n; i++)
		enqueue(c, TK_ES, egress_ctx_shard_ns(c->eg), strchr(iv.v[i], '/') + 1);
}
static void esc_add(json_t *obj, void *ud) { esc_changed(ud, obj); }
static void esc_update(json_t *old, json_t *nw, void *ud)
{
	esc_changed(ud, old);
	esc_changed(ud, nw);
}
static void esc_delete(json_t *obj, void *ud) { esc_changed(ud, obj); }

static void es_changed(struct controller *c, const json_t *o)
{
	char k[520];
	if (!o)
		return;
	enqueue_obj(c, TK_ES, o);
	nsname(o, k, sizeof(k));
	/* Claims bound to it or on its node; attachments without a claim do not depend on shards. */
	enqueue_egress_by(c, TK_ESC, "shard", k);
	enqueue_egress_by(c, TK_ESC, "node", gj_str(o, "spec.targetRef.name"));
}
static void es_add(json_t *obj, void *ud) { es_changed(ud, obj); }
static void es_update(json_t *old, json_t *nw, void *ud)
{
	es_changed(ud, old);
	es_changed(ud, nw);
}
static void es_delete(json_t *obj, void *ud) { es_changed(ud, obj); }

/* Every cached object of kind `from`, queued as kind k (after delay_s seconds when > 0). */
static void enqueue_all_as(struct controller *c, enum tkind from, enum tkind k, double delay_s)
{
	json_t *keys, *e;
	size_t i;

	if (!c->inf[from])
		return;
	keys = kube_store_keys(informer_store(c->inf[from]));

	json_array_foreach(keys, i, e) {
		const char *s = json_string_value(e), *sl = s ? strchr(s, '/') : NULL;
		char ns[256], key[600];
		if (!sl || (size_t)(sl - s) >= sizeof(ns))
			continue;
		memcpy(ns, s, (size_t)(sl - s));
		ns[sl - s] = 0;
		if (qkey_format(k, ns, sl + 1, key, sizeof(key)))
			continue;
		if (delay_s > 0)
			wq_add_after(c->q, key, delay_s);
		else
			wq_add(c->q, key);
	}
	json_decref(keys);
}

static void enqueue_all_after(struct controller *c, enum tkind k, double delay_s)
{
	enqueue_all_as(c, k, k, delay_s);
	if (k == TK_VPCATT && c->eg) /* a claim exists only once its attachment's key ran */
		enqueue_all_as(c, TK_VPCATT, TK_ESC, delay_s);
}

static void enqueue_all(struct controller *c, enum tkind k) { enqueue_all_after(c, k, 0); }

/* A target CRD changed: what its schema can hold may have, too. */
static void crd_changed(enum tkind k, bool first, void *ud)
{
	struct controller *c = ud;
	if (first) {
		if (c->inf[k])
			enqueue_all(c, k);
		return;
	}
	if (c->w)
		writes_schema_changed(c->w);
	/* The API server's own validator follows a CRD update a moment after its
	 * watch event: look again once it has (a 422 meanwhile is retried, see writes.c). */
	if (c->inf[k])
		enqueue_all_after(c, k, CRD_SETTLE_S);
}

/* ---- workers ---- */

/* How soon a key refused while the lease's renewal is late is looked at again (seconds). */
#define LEADER_RECHECK_S 0.5

static bool is_leader(struct controller *c) { return !c->leader || leader_is_leader(c->leader); }
static bool may_write(void *ud) { return is_leader(ud); }

/* 0 done (forget), 1 retry with backoff; *after > 0: look again after that delay. */
static int reconcile_key(struct controller *c, const char *key, double *after)
{
	struct qkey k;

	switch (c->leader ? leader_state(c->leader) : LEADER_LEADING) {
	case LEADER_LEADING:
		break;
	case LEADER_RENEWING_LATE:
		/* Looked at again shortly: when the late renewal succeeds no
		 * on_started re-queues what was dropped (an attachment stayed
		 * ReportMissing for minutes after an API server outage,
		 * test_fault_cluster). */
		*after = LEADER_RECHECK_S;
		return 0;
	case LEADER_NOT_LEADING:
		return 0; /* dropped: becoming leader re-queues every key */
	}
	if (qkey_parse(key, &k))
		return 0;
	metric_add(c->m_reconciles, NULL, 1);
	switch (k.kind) {
	case TK_VPCATT: return rec_attachment(&c->rc, &k, after);
	case TK_NI: return rec_interface(&c->rc, &k);
	case TK_NIC: return rec_claim(&c->rc, &k);
	case TK_ESC: return rec_egress(&c->rc, &k);
	case TK_ES: return rec_shard(&c->rc, &k);
	default: return 0;
	}
}

static void *worker(void *arg)
{
	struct controller *c = arg;
	char *key;

	while ((key = wq_get(c->q, -1))) {
		double after = 0;
		/* Stopping: the rest of the queue is dropped (the next leader looks
		 * at every key anyway). Reconciling it first held a SIGTERM of a
		 * translator with 10,000 sets for 250 s (bench_translator). */
		if (atomic_load(&c->stopping)) {
			wq_done(c->q, key);
			free(key);
			continue;
		}
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

static struct informer *kind_informer(struct controller *c, enum tkind k,
				      const struct informer_handlers *h)
{
	struct informer_opts io = { 0 };
	struct informer *inf;

	io.res = TKINDS[k].res;
	io.ns = k == TK_ES ? egress_ctx_shard_ns(c->eg) : c->o.watch_ns;
	io.name = TKINDS[k].res.resource;
	/* Pruned as decoded; managedFields reduced to the status owners the skip
	 * checks read; kept compact (every read decodes a copy). */
	io.transform = project_object;
	io.transform_ud = (void *)&PROJ[k];
	io.compact = true;
	io.page_size = LIST_PAGE;
	io.backoff_initial_s = TK_INFORMER_BACKOFF_INITIAL_S;
	io.backoff_max_s = TK_INFORMER_BACKOFF_MAX_S;
	if (!(inf = informer_new(c->kc, &io)))
		return NULL;
	if ((k == TK_VPCATT && informer_add_index(inf, "ids", att_ids_index, NULL)) ||
	    (k == TK_VPCATT && informer_add_index(inf, "vpcname", att_vpc_index, NULL)) ||
	    (k == TK_ESC && informer_add_index(inf, "shard", egress_claim_shard_index, c->eg)) ||
	    (k == TK_ESC && informer_add_index(inf, "node", egress_claim_node_index, NULL)) ||
	    (k == TK_NIC && informer_add_index(inf, "ifref", nic_ifref_index, NULL)) ||
	    informer_add_handlers(inf, h)) {
		informer_free(inf);
		return NULL;
	}
	return inf;
}

struct controller *controller_new(struct kube_client *kc, const struct mapping_set *maps,
				  struct metrics *m, const struct controller_opts *o)
{
	struct controller *c = calloc(1, sizeof(*c));
	struct wq_opts qo = { .base_delay_s = 0.05, .max_delay_s = 60, .qps = 50, .burst = 200 };

	if (!c)
		return NULL;
	c->kc = kc;
	c->maps = maps;
	c->o = *o;
	if (c->o.workers <= 0)
		c->o.workers = 8;
	if (c->o.workers > MAX_WORKERS)
		c->o.workers = MAX_WORKERS;
	c->q = wq_new(&qo);
	c->rep = calloc(maps->n, sizeof(*c->rep));
	c->rud = calloc(maps->n, sizeof(*c->rud));
	if (!c->q || !c->rep || !c->rud)
		goto fail;
	c->w = writes_new(kc, m,
			  &(struct writes_opts){ .manager = TRANSLATOR_MANAGER, .instance = o->identity,
						 .may_write = may_write, .ud = c });
	c->m_invalid = metrics_counter(m, "galactic_translator_invalid_reports_total",
				       "Report events that could not be read through their mapping", "mapping");
	c->m_reconciles = metrics_counter(m, "galactic_translator_reconciles_total",
					  "Keys (all kinds) reconciled while leading", NULL);
	c->m_deferred = metrics_counter(m, "galactic_translator_new_report_deferrals_total",
					"Reconciles put off briefly because a new report has no Programmed yet", NULL);
	c->m_leader = metrics_gauge(m, "galactic_translator_leader",
				    "1 while this replica holds the lease", NULL);
	if (!c->w || !c->m_invalid || !c->m_reconciles || !c->m_leader || !c->m_deferred)
		goto fail;
	metric_add(c->m_reconciles, NULL, 0);
	metric_set(c->m_leader, NULL, 0);

	if (!o->no_egress) {
		c->eg = egress_ctx_new(kc, m,
				       &(struct egress_opts){ .shard_ns = o->egress_shard_ns,
							      .watch_ns = o->watch_ns,
							      .instance = o->identity,
							      .may_write = may_write, .ud = c });
		if (!c->eg ||
		    !(c->inf[TK_NC] = kind_informer(c, TK_NC,
						    &(struct informer_handlers){ nc_add, nc_update,
										 nc_delete, c })) ||
		    !(c->inf[TK_ESC] = kind_informer(c, TK_ESC,
						     &(struct informer_handlers){ esc_add, esc_update,
										  esc_delete, c })) ||
		    !(c->inf[TK_ES] = kind_informer(c, TK_ES,
						    &(struct informer_handlers){ es_add, es_update,
										 es_delete, c })))
			goto fail;
		egress_ctx_set_stores(c->eg, informer_store(c->inf[TK_NC]),
				      informer_store(c->inf[TK_ESC]), informer_store(c->inf[TK_ES]));
	}
	if (!(c->inf[TK_VPCATT] = kind_informer(c, TK_VPCATT,
						 &(struct informer_handlers){ att_add, att_update,
									      att_delete, c })) ||
	    !(c->inf[TK_NI] = kind_informer(c, TK_NI,
					    &(struct informer_handlers){ ni_add, ni_update, ni_delete,
									 c })) ||
	    !(c->inf[TK_NIC] = kind_informer(c, TK_NIC,
					     &(struct informer_handlers){ nic_add, nic_update,
									  nic_delete, c })))
		goto fail;
	for (size_t i = 0; i < maps->n; i++) {
		const struct report_mapping *rm = &maps->e[i];
		struct informer_opts io = { 0 };
		io.res = (struct kube_resource){ rm->group, rm->version, rm->resource, rm->namespaced };
		io.ns = rm->namespaced ? o->report_ns : NULL;
		io.name = rm->name;
		io.transform = project_object;
		io.transform_ud = (void *)&PROJ_REPORT;
		io.compact = true;
		io.page_size = LIST_PAGE;
		io.backoff_initial_s = TK_INFORMER_BACKOFF_INITIAL_S;
		io.backoff_max_s = TK_INFORMER_BACKOFF_MAX_S;
		c->rud[i] = (struct rep_ud){ c, rm };
		if (!(c->rep[i] = informer_new(kc, &io)) ||
		    informer_add_index(c->rep[i], "ids", report_ids_index, (void *)rm) ||
		    informer_add_handlers(c->rep[i], &(struct informer_handlers){ rep_add, rep_update,
										  rep_delete, &c->rud[i] }))
			goto fail;
	}
	if (!(c->crds = crds_new(kc, crd_changed, c)))
		goto fail;
	if (!(c->fresh = att_fresh_new()))
		goto fail;
	c->rc = (struct rec_ctx){ .att = informer_store(c->inf[TK_VPCATT]),
				  .ni = informer_store(c->inf[TK_NI]),
				  .nic = informer_store(c->inf[TK_NIC]),
				  .maps = maps,
				  .crds = c->crds,
				  .w = c->w,
				  .own = o->ownership,
				  .eg = c->eg,
				  .m_deferred = c->m_deferred,
				  .fresh = c->fresh,
				  .att_written = att_written,
				  .ud = c };
	c->rc.rep = calloc(maps->n ? maps->n : 1, sizeof(*c->rc.rep));
	if (!c->rc.rep)
		goto fail;
	for (size_t i = 0; i < maps->n; i++)
		c->rc.rep[i] = informer_store(c->rep[i]);
	if (!c->rc.own) {
		static struct ownership all_ours;
		ownership_init(&all_ours);
		c->rc.own = &all_ours;
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

	metric_set(c->m_leader, NULL, 1);
	/* Everything may have changed while another replica led: look at every key. */
	for (int k = 0; k < TK_N; k++)
		enqueue_all(c, (enum tkind)k);
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
	for (int k = 0; k < TK_N; k++)
		if (c->inf[k] && informer_start(c->inf[k]))
			return -1;
	if (crds_start(c->crds))
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
	for (int k = 0; k < TK_N; k++)
		if (c->inf[k] && !informer_synced(c->inf[k]))
			return false;
	return crds_synced(c->crds);
}

bool controller_alive(void *ud)
{
	struct controller *c = ud;
	return atomic_load(&c->running) && !wq_shutting_down(c->q);
}

void controller_stop(struct controller *c)
{
	/* Every informer asked first, then joined: a watch notices its stop
	 * within a second (curl's progress callback), so one by one the
	 * thirteen of them took 5-8 s; together they take the slowest one's. */
	for (size_t i = 0; c->rep && i < c->maps->n; i++)
		informer_request_stop(c->rep[i]);
	for (int k = 0; k < TK_N; k++)
		informer_request_stop(c->inf[k]);
	crds_request_stop(c->crds);
	atomic_store(&c->stopping, true);
	if (c->q)
		wq_shutdown(c->q);
	for (int i = 0; i < c->nthr; i++)
		pthread_join(c->thr[i], NULL);
	c->nthr = 0;
	atomic_store(&c->running, false);
	for (size_t i = 0; c->rep && i < c->maps->n; i++)
		if (c->rep[i])
			informer_stop(c->rep[i]);
	for (int k = 0; k < TK_N; k++)
		if (c->inf[k])
			informer_stop(c->inf[k]);
	crds_stop(c->crds);
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	controller_stop(c);
	crds_free(c->crds);
	for (size_t i = 0; c->rep && i < c->maps->n; i++)
		informer_free(c->rep[i]);
	free(c->rep);
	free(c->rud);
	free(c->rc.rep);
	for (int k = 0; k < TK_N; k++)
		informer_free(c->inf[k]);
	att_fresh_free(c->fresh);
	writes_free(c->w);
	egress_ctx_free(c->eg);
	wq_free(c->q);
	free(c);
}
