/* The agent's identity thread (identity.h). */
#include "agent/identity/identity.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/informer.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/log.h"
#include "common/status_writer.h"

#define COMP "identity"
#define KEY_SYNC "~sync"       /* acquire + status */
#define KEY_STATUS "~status"   /* status only */
#define CAPS_MAX 64

struct gid_daemon {
	char node[GID_NODE_MAX + 1], manager[300], instance[300], datapath[16], version[64];
	char caps[CAPS_MAX][65];
	const char *capp[CAPS_MAX];
	size_t n_caps;
	void (*on_identity)(void *ud, const struct gid_result *r);
	void *ud;

	struct sw w;                   /* config, client, queue, worker, log_once */
	struct informer *ndp, *ids;

	pthread_mutex_t mu;            /* guards the fields below */
	struct gid_result last;        /* last decided answer of the API */
	bool decided;
	uint16_t handed_id;            /* last identity handed over (or the record's) */
	uint8_t handed_block[6];
	uint16_t use_id;               /* what the data plane runs with */
	uint8_t use_block[6];
	bool dp_known, dp_ok;
	char drift_kind[GID_DRIFT_KINDS][24];
	const char *drift_kp[GID_DRIFT_KINDS];
	unsigned long drift_count[GID_DRIFT_KINDS];
	size_t n_drift;
	char dp_reason[64], dp_msg[256];
	struct gid_daemon_stats st;
};

/* The operator removed this node's NodeDataplane: its hold goes with it (GC). */
static void on_ndp_delete(json_t *o, void *ud)
{
	/* ud: the daemon's writer (its other handlers are the writer's own) */
	struct gid_daemon *d = (struct gid_daemon *)((char *)ud - offsetof(struct gid_daemon, w));
	uint16_t id;

	(void)o;
	pthread_mutex_lock(&d->mu);
	id = d->use_id;
	pthread_mutex_unlock(&d->mu);
	glogf(GLOG_WARN, COMP, "node %s: NodeDataplane deleted: its NodeID is released; the data plane keeps node ID %u "
	      "from the record, which the API may now give another node: recreate the NodeDataplane or drain this node",
	      d->node, id);
	wq_add(d->w.q, KEY_SYNC);
}

/* Logs a decision once (the same answer every resync is not news). */
static void log_once(struct gid_daemon *d, enum glog_level lvl, const char *reason, const char *msg)
{
	char line[600];

	snprintf(line, sizeof(line), "%s: %s", reason, msg);
	sw_log_once(&d->w, lvl, line);
}

/* Status intent from what we know; applied when the server's differs. */
static int write_status(struct gid_daemon *d, const json_t *ndp)
{
	struct gid_status_in in = { .node = d->node, .instance = d->instance, .version = d->version,
				    .datapath = d->datapath, .caps = d->capp, .n_caps = d->n_caps };
	char now[32];
	json_t *intent;
	struct kube_error e;
	uint8_t blk[6];
	int rc = 0, wrote;

	pthread_mutex_lock(&d->mu);
	in.generation = gj_int(ndp, "metadata.generation", 0);
	in.node_id = d->use_id;
	memcpy(blk, d->use_block, 6);
	in.block = blk;
	if (!d->decided)
		in.identity = (struct gid_cond){ "Unknown", "Pending", "the node ID has not been decided yet" };
	else if (d->last.assigned)
		in.identity = (struct gid_cond){ "True", d->last.reason, d->last.message };
	else
		in.identity = (struct gid_cond){ strcmp(d->last.reason, "APIError") ? "False" : "Unknown",
						 d->last.reason, d->last.message };
	if (!d->dp_known)
		in.datapath_cond = (struct gid_cond){ "Unknown", "NotVerified", "no datapath pass yet" };
	else
		in.datapath_cond = (struct gid_cond){ d->dp_ok ? "True" : "False", d->dp_reason, d->dp_msg };
	for (size_t i = 0; i < d->n_drift; i++)
		d->drift_kp[i] = d->drift_kind[i];
	in.drift_kinds = d->drift_kp;
	in.drift_counts = d->drift_count;
	in.n_drift = d->n_drift;
	gj_time_now(now, sizeof(now));
	intent = gid_status_intent(&in, ndp, now);
	pthread_mutex_unlock(&d->mu);
	if (!intent)
		return -1;
	wrote = sw_apply_status(&d->w, &GID_NODEDATAPLANES, NULL, d->node, ndp, intent, gid_status_equal, d->manager,
				&e);
	if (wrote < 0) {
		glogf(GLOG_WARN, COMP, "node %s: status not written: %s", d->node, e.message);
		rc = -1;
	} else if (wrote) {
		pthread_mutex_lock(&d->mu);
		d->st.status_writes++;
		pthread_mutex_unlock(&d->mu);
	}
	json_decref(intent);
	return rc;
}

static int sync_once(const char *key, void *ud)
{
	struct gid_daemon *d = ud;
	bool acquire = !strcmp(key, KEY_SYNC); /* KEY_STATUS: the status only */
	json_t *ndp;
	struct gid_result r;
	uint16_t prefer;
	uint8_t pb[6];
	int rc;

	if (!informer_synced(d->ndp) || !informer_synced(d->ids))
		return -1;
	ndp = kube_store_get(informer_store(d->ndp), d->node);
	if (!ndp) {
		log_once(d, GLOG_WARN, "NodeDataplaneMissing",
			 "no NodeDataplane of this node: no node ID from the API (the record's, if any, is kept)");
		pthread_mutex_lock(&d->mu);
		d->st.decided = d->decided = false;
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	if (acquire) {
		pthread_mutex_lock(&d->mu);
		prefer = d->use_id ? d->use_id : d->handed_id;
		memcpy(pb, d->use_id ? d->use_block : d->handed_block, 6);
		d->st.acquires++;
		pthread_mutex_unlock(&d->mu);
		rc = gid_acquire(d->w.kc, d->node, ndp, prefer, prefer ? pb : NULL, &r);
		if (rc) {
			pthread_mutex_lock(&d->mu);
			d->st.api_errors++;
			pthread_mutex_unlock(&d->mu);
			log_once(d, GLOG_WARN, "APIError", r.message);
			json_decref(ndp);
			return -1;
		}
		pthread_mutex_lock(&d->mu);
		/* the same hold found again is not news: keep how it was first got */
		if (r.assigned && d->decided && d->last.assigned && d->last.id == r.id &&
		    !memcmp(d->last.spec.block, r.spec.block, 6) && !strcmp(r.reason, "Reused")) {
			snprintf(r.reason, sizeof(r.reason), "%s", d->last.reason);
			snprintf(r.message, sizeof(r.message), "%s", d->last.message);
		}
		d->last = r;
		d->decided = d->st.decided = true;
		d->st.assigned = r.assigned;
		snprintf(d->st.reason, sizeof(d->st.reason), "%s", r.reason);
		snprintf(d->st.message, sizeof(d->st.message), "%s", r.message);
		if (r.assigned && (r.id != d->handed_id || memcmp(r.spec.block, d->handed_block, 6))) {
			d->handed_id = r.id;
			memcpy(d->handed_block, r.spec.block, 6);
			d->st.identities++;
		}
		pthread_mutex_unlock(&d->mu);
		log_once(d, r.assigned ? GLOG_INFO : GLOG_WARN, r.reason, r.message);
		/* uplinks may change with the same ID: hand every assigned answer over */
		if (r.assigned && d->on_identity)
			d->on_identity(d->ud, &r);
	}
	rc = write_status(d, ndp);
	json_decref(ndp);
	return rc;
}

void gid_daemon_datapath(struct gid_daemon *d, uint16_t node_id, const uint8_t block[6], bool verified,
			 const char *reason, const char *message)
{
	bool changed;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	changed = !d->dp_known || d->dp_ok != verified || d->use_id != node_id ||
		  (block && memcmp(d->use_block, block, 6)) || strcmp(d->dp_reason, reason ? reason : "");
	d->dp_known = true;
	d->dp_ok = verified;
	d->use_id = node_id;
	if (block)
		memcpy(d->use_block, block, 6);
	snprintf(d->dp_reason, sizeof(d->dp_reason), "%s", reason && *reason ? reason : verified ? "Verified" : "NotVerified");
	snprintf(d->dp_msg, sizeof(d->dp_msg), "%s", message ? message : "");
	pthread_mutex_unlock(&d->mu);
	if (changed)
		wq_add(d->w.q, KEY_STATUS);
}

void gid_daemon_drift(struct gid_daemon *d, const char *const *kinds, const unsigned long *counts, size_t n)
{
	bool changed;

	if (!d)
		return;
	if (n > GID_DRIFT_KINDS)
		n = GID_DRIFT_KINDS;
	pthread_mutex_lock(&d->mu);
	changed = n != d->n_drift;
	for (size_t i = 0; i < n; i++) {
		changed = changed || d->drift_count[i] != counts[i] || strcmp(d->drift_kind[i], kinds[i]);
		snprintf(d->drift_kind[i], sizeof(d->drift_kind[i]), "%s", kinds[i]);
		d->drift_count[i] = counts[i];
	}
	d->n_drift = n;
	pthread_mutex_unlock(&d->mu);
	if (changed)
		wq_add(d->w.q, KEY_STATUS);
}

void gid_daemon_stats(struct gid_daemon *d, struct gid_daemon_stats *out)
{
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	pthread_mutex_unlock(&d->mu);
}

int gid_daemon_start(struct gid_daemon **out, const struct gid_daemon_opts *o, char *err, size_t errlen)
{
	struct informer_opts io = { 0 };
	struct sw_opts so = { .comp = COMP, .node = o->node, .kubeconfig = o->kubeconfig, .metrics = o->metrics,
			      .timeout_s = 5,
			      .q = { .base_delay_s = 0.5, .max_delay_s = o->max_backoff_s > 0 ? o->max_backoff_s : 10,
				     .qps = 10, .burst = 20 },
			      .sync = sync_once, .resync_key = KEY_SYNC };
	struct gid_daemon *d;
	char host[200] = "", fs[GID_NODE_MAX + 64];
	size_t i;

	*out = NULL;
	if (!o->node || !*o->node || strlen(o->node) > GID_NODE_MAX) {
		snprintf(err, errlen, "identity: --node is required (a node name)");
		return -EINVAL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		snprintf(err, errlen, "identity: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&d->mu, NULL);
	snprintf(d->node, sizeof(d->node), "%s", o->node);
	snprintf(d->manager, sizeof(d->manager), "galactic-agent/%s", o->node);
	gethostname(host, sizeof(host) - 1);
	snprintf(d->instance, sizeof(d->instance), "%s/%d", host, (int)getpid());
	snprintf(d->datapath, sizeof(d->datapath), "%s", o->datapath ? o->datapath : "kernel");
	snprintf(d->version, sizeof(d->version), "%s", o->version ? o->version : "");
	for (i = 0; i < o->n_caps && i < CAPS_MAX; i++) {
		snprintf(d->caps[i], sizeof(d->caps[i]), "%s", o->caps[i]);
		d->capp[i] = d->caps[i];
	}
	d->n_caps = i;
	so.resync_s = o->resync_s > 0 ? o->resync_s : 60;
	so.ud = d;
	d->on_identity = o->on_identity;
	d->ud = o->ud;
	d->handed_id = d->use_id = o->record_id;
	memcpy(d->handed_block, o->record_block, 6);
	memcpy(d->use_block, o->record_block, 6);
	if (sw_init(&d->w, &so, err, errlen))
		goto fail;
	io.res = GID_NODEDATAPLANES;
	io.backoff_initial_s = 0.5;
	io.backoff_max_s = 5;
	io.drop_managed_fields = true;
	snprintf(fs, sizeof(fs), "metadata.name=%s", d->node);
	io.field_selector = fs;
	io.name = "own-nodedataplane";
	if (!(d->ndp = informer_new(d->w.kc, &io)) ||
	    informer_add_handlers(d->ndp, &(struct informer_handlers){ sw_on_any, sw_on_update, on_ndp_delete, &d->w }))
		goto nomem;
	snprintf(fs, sizeof(fs), "spec.node=%s", d->node);
	io.res = GID_NODEIDS;
	io.name = "own-nodeids";
	if (!(d->ids = informer_new(d->w.kc, &io)) ||
	    informer_add_handlers(d->ids, &(struct informer_handlers){ sw_on_any, sw_on_update, sw_on_any, &d->w }))
		goto nomem;
	if (sw_start(&d->w, err, errlen))
		goto fail;
	if (informer_start(d->ndp) || informer_start(d->ids)) {
		snprintf(err, errlen, "identity: cannot start informers");
		goto fail;
	}
	wq_add(d->w.q, KEY_SYNC);
	glogf(GLOG_INFO, COMP, "node %s: identity from NodeDataplane %s (%s), record has node ID %u", d->node,
	      d->node, d->w.cfg->server, o->record_id);
	*out = d;
	return 0;
nomem:
	snprintf(err, errlen, "identity: out of memory");
fail:
	gid_daemon_stop(d);
	return -EINVAL;
}

void gid_daemon_quiesce(struct gid_daemon *d)
{
	if (!d)
		return;
	sw_shutdown(&d->w);
	informer_request_stop(d->ndp);
	informer_request_stop(d->ids);
	if (d->ndp)
		informer_stop(d->ndp);
	if (d->ids)
		informer_stop(d->ids);
	sw_join(&d->w);
}

void gid_daemon_stop(struct gid_daemon *d)
{
	if (!d)
		return;
	gid_daemon_quiesce(d);
	informer_free(d->ndp);
	informer_free(d->ids);
	sw_free(&d->w);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
