/* The agent's egress-shard thread (egress.h). */
#include "agent/egress/egress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/egress/shard.h"
#include "common/informer.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/kube_store.h"
#include "common/log.h"
#include "common/status_writer.h"

#define COMP "egress"
#define KEY_SYNC "~sync"

struct ges_daemon {
	char node[254], ns[64], oif[GDP_IFNAME_MAX + 1], manager[300];
	void (*on_shard)(void *ud, const struct gdp_egress *e);
	void *ud;
	struct sw w;                   /* config, client, queue, worker, log_once */
	struct informer *inf;

	pthread_mutex_t mu;            /* guards the fields below */
	bool handed_once;
	struct gdp_egress handed;      /* last identity handed over */
	struct ges_observed obs;
	struct ges_daemon_stats st;
};

static void hand(struct ges_daemon *d, const struct gdp_egress *e)
{
	bool changed;

	pthread_mutex_lock(&d->mu);
	changed = !d->handed_once || memcmp(&d->handed, e, sizeof(*e));
	d->handed = *e;
	d->handed_once = true;
	if (changed)
		d->st.handed++;
	pthread_mutex_unlock(&d->mu);
	if (changed && d->on_shard)
		d->on_shard(d->ud, e);
}

static int sync_once(const char *key, void *ud)
{
	struct ges_daemon *d = ud;
	struct ges_spec s;
	struct gdp_egress e;
	struct ges_observed obs;
	struct kube_error ke;
	json_t *all, *cur, *intent;
	char err[256] = "", now[32], line[400];
	int bad = 0, found, rc = 0, wrote;

	(void)key; /* one key: the whole pass */
	if (!informer_synced(d->inf))
		return -1;
	all = kube_store_list(informer_store(d->inf));
	found = ges_pick(all, d->node, &s, &bad, err, sizeof(err));
	json_decref(all);
	pthread_mutex_lock(&d->mu);
	d->st.have_shard = found;
	snprintf(d->st.shard, sizeof(d->st.shard), "%s", found ? s.name : "");
	pthread_mutex_unlock(&d->mu);
	if (!found) {
		sw_log_once(&d->w, GLOG_INFO, "no EgressShard targets this node: no egress shard runs here");
		memset(&e, 0, sizeof(e));
		hand(d, &e);
		return 0;
	}
	if (bad) {
		/* nothing that runs changes on a malformed spec; the status says why */
		snprintf(line, sizeof(line), "EgressShard %s/%s: %s (the running shard, if any, is kept)", s.ns, s.name, err);
		sw_log_once(&d->w, GLOG_WARN, line);
	} else {
		ges_spec_egress(&s, d->oif[0] ? d->oif : NULL, &e);
		snprintf(line, sizeof(line), "EgressShard %s/%s: %s", s.ns, s.name,
			 e.have ? "shard identity handed to the datapath" : "SID or IPv6 address not assigned yet");
		sw_log_once(&d->w, GLOG_INFO, line);
		hand(d, &e);
	}
	pthread_mutex_lock(&d->mu);
	obs = d->obs;
	pthread_mutex_unlock(&d->mu);
	cur = kube_store_get_nn(informer_store(d->inf), s.ns, s.name);
	gj_time_now(now, sizeof(now));
	intent = ges_status_intent(&s, bad ? err : NULL, &obs, cur, now);
	wrote = sw_apply_status(&d->w, &GES_EGRESSSHARDS, s.ns, s.name, cur, intent, ges_status_equal, d->manager, &ke);
	if (wrote < 0) {
		glogf(GLOG_WARN, COMP, "node %s: EgressShard %s/%s status not written: %s", d->node, s.ns, s.name,
		      ke.message);
		pthread_mutex_lock(&d->mu);
		d->st.api_errors++;
		pthread_mutex_unlock(&d->mu);
		rc = -1;
	} else if (wrote) {
		pthread_mutex_lock(&d->mu);
		d->st.status_writes++;
		pthread_mutex_unlock(&d->mu);
	}
	json_decref(intent);
	json_decref(cur);
	return rc;
}

void ges_daemon_datapath(struct ges_daemon *d, const struct gdp_egress *running, bool programmed,
			 const char *message)
{
	struct ges_observed o = { .passed = true, .programmed = programmed };
	bool changed;

	if (!d)
		return;
	if (running)
		o.running = *running;
	snprintf(o.message, sizeof(o.message), "%s", message ? message : "");
	pthread_mutex_lock(&d->mu);
	changed = memcmp(&d->obs, &o, sizeof(o)) != 0;
	d->obs = o;
	pthread_mutex_unlock(&d->mu);
	if (changed)
		wq_add(d->w.q, KEY_SYNC);
}

void ges_daemon_stats(struct ges_daemon *d, struct ges_daemon_stats *out)
{
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	pthread_mutex_unlock(&d->mu);
}

int ges_daemon_start(struct ges_daemon **out, const struct ges_daemon_opts *o, char *err, size_t errlen)
{
	struct informer_opts io = { 0 };
	struct sw_opts so = { .comp = COMP, .node = o->node, .kubeconfig = o->kubeconfig, .metrics = o->metrics,
			      .timeout_s = 5,
			      .q = { .base_delay_s = 0.5, .max_delay_s = 10, .qps = 10, .burst = 20 },
			      .sync = sync_once, .resync_key = KEY_SYNC };
	struct ges_daemon *d;

	*out = NULL;
	if (!o->node || !*o->node || strlen(o->node) > 253) {
		snprintf(err, errlen, "egress: --node is required (a node name)");
		return -EINVAL;
	}
	if (o->ns && (!*o->ns || strlen(o->ns) > 63)) {
		snprintf(err, errlen, "egress: namespace '%s' is not a namespace name", o->ns);
		return -EINVAL;
	}
	if (o->oif && (!*o->oif || strlen(o->oif) > GDP_IFNAME_MAX)) {
		snprintf(err, errlen, "egress: interface '%s' is not a device name", o->oif);
		return -EINVAL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		snprintf(err, errlen, "egress: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&d->mu, NULL);
	snprintf(d->node, sizeof(d->node), "%s", o->node);
	snprintf(d->ns, sizeof(d->ns), "%s", o->ns ? o->ns : GES_NS_DEFAULT);
	snprintf(d->oif, sizeof(d->oif), "%s", o->oif ? o->oif : "");
	snprintf(d->manager, sizeof(d->manager), "galactic-agent/%s", o->node);
	so.resync_s = o->resync_s > 0 ? o->resync_s : 60;
	so.ud = d;
	d->on_shard = o->on_shard;
	d->ud = o->ud;
	if (sw_init(&d->w, &so, err, errlen))
		goto fail;
	io.res = GES_EGRESSSHARDS;
	io.ns = d->ns;
	io.backoff_initial_s = 0.5;
	io.backoff_max_s = 5;
	io.drop_managed_fields = true;
	io.name = "egressshards";
	if (!(d->inf = informer_new(d->w.kc, &io)) ||
	    informer_add_handlers(d->inf, &(struct informer_handlers){ sw_on_any, sw_on_update, sw_on_any, &d->w }))
		goto nomem;
	if (sw_start(&d->w, err, errlen))
		goto fail;
	if (informer_start(d->inf)) {
		snprintf(err, errlen, "egress: cannot start the EgressShard informer");
		goto fail;
	}
	wq_add(d->w.q, KEY_SYNC);
	glogf(GLOG_INFO, COMP, "node %s: egress shard from the EgressShards of namespace %s", d->node, d->ns);
	*out = d;
	return 0;
nomem:
	snprintf(err, errlen, "egress: out of memory");
fail:
	ges_daemon_stop(d);
	return -EINVAL;
}

void ges_daemon_stop(struct ges_daemon *d)
{
	if (!d)
		return;
	sw_shutdown(&d->w);
	informer_request_stop(d->inf);
	if (d->inf)
		informer_stop(d->inf);
	sw_join(&d->w);
	informer_free(d->inf);
	sw_free(&d->w);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
