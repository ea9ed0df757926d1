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
#include "common/workqueue.h"

#define COMP "egress"
#define KEY_SYNC "~sync"

struct ges_daemon {
	char node[254], ns[64], oif[GDP_IFNAME_MAX + 1], manager[300];
	double resync_s;
	void (*on_shard)(void *ud, const struct gdp_egress *e);
	void *ud;
	struct kube_config *cfg;
	struct kube_client *kc;
	struct informer *inf;
	struct wq *q;
	pthread_t th;
	bool th_on;

	pthread_mutex_t mu;            /* guards the fields below */
	bool handed_once;
	struct gdp_egress handed;      /* last identity handed over */
	struct ges_observed obs;
	struct ges_daemon_stats st;
	char last_logged[400];
};

static void on_any(json_t *o, void *ud)
{
	(void)o;
	wq_add(((struct ges_daemon *)ud)->q, KEY_SYNC);
}
static void on_upd(json_t *old, json_t *o, void *ud)
{
	(void)old;
	on_any(o, ud);
}

static void log_once(struct ges_daemon *d, enum glog_level lvl, const char *line)
{
	bool news;

	pthread_mutex_lock(&d->mu);
	news = strcmp(line, d->last_logged) != 0;
	if (news)
		snprintf(d->last_logged, sizeof(d->last_logged), "%s", line);
	pthread_mutex_unlock(&d->mu);
	if (news)
		glogf(lvl, COMP, "node %s: %s", d->node, line);
}

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

static int sync_once(struct ges_daemon *d)
{
	struct ges_spec s;
	struct gdp_egress e;
	struct ges_observed obs;
	struct kube_error ke;
	json_t *all, *cur, *intent;
	char err[256] = "", now[32], line[400];
	int bad = 0, found, rc = 0;

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
		log_once(d, GLOG_INFO, "no EgressShard targets this node: no egress shard runs here");
		memset(&e, 0, sizeof(e));
		hand(d, &e);
		return 0;
	}
	if (bad) {
		/* nothing that runs changes on a malformed spec; the status says why */
		snprintf(line, sizeof(line), "EgressShard %s/%s: %s (the running shard, if any, is kept)", s.ns, s.name, err);
		log_once(d, GLOG_WARN, line);
	} else {
		ges_spec_egress(&s, d->oif[0] ? d->oif : NULL, &e);
		snprintf(line, sizeof(line), "EgressShard %s/%s: %s", s.ns, s.name,
			 e.have ? "shard identity handed to the datapath" : "SID or IPv6 address not assigned yet");
		log_once(d, GLOG_INFO, line);
		hand(d, &e);
	}
	pthread_mutex_lock(&d->mu);
	obs = d->obs;
	pthread_mutex_unlock(&d->mu);
	cur = kube_store_get_nn(informer_store(d->inf), s.ns, s.name);
	gj_time_now(now, sizeof(now));
	intent = ges_status_intent(&s, bad ? err : NULL, &obs, cur, now);
	if (intent && !ges_status_equal(cur, intent)) {
		if (kube_apply(d->kc, &GES_EGRESSSHARDS, s.ns, s.name, "status", intent, d->manager, false, NULL, &ke)) {
			glogf(GLOG_WARN, COMP, "node %s: EgressShard %s/%s status not written: %s", d->node, s.ns, s.name,
			      ke.message);
			pthread_mutex_lock(&d->mu);
			d->st.api_errors++;
			pthread_mutex_unlock(&d->mu);
			rc = -1;
		} else {
			pthread_mutex_lock(&d->mu);
			d->st.status_writes++;
			pthread_mutex_unlock(&d->mu);
		}
	}
	json_decref(intent);
	json_decref(cur);
	return rc;
}

static void *worker(void *arg)
{
	struct ges_daemon *d = arg;
	char *key;

	while ((key = wq_get(d->q, -1))) {
		if (sync_once(d) == 0) {
			wq_forget(d->q, key);
			wq_add_after(d->q, KEY_SYNC, d->resync_s);
		} else {
			wq_add_rate_limited(d->q, key);
		}
		wq_done(d->q, key);
		free(key);
	}
	return NULL;
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
		wq_add(d->q, KEY_SYNC);
}

void ges_daemon_stats(struct ges_daemon *d, struct ges_daemon_stats *out)
{
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	pthread_mutex_unlock(&d->mu);
}

int ges_daemon_start(struct ges_daemon **out, const struct ges_daemon_opts *o, char *err, size_t errlen)
{
	struct wq_opts qo = { .base_delay_s = 0.5, .max_delay_s = 10, .qps = 10, .burst = 20 };
	struct informer_opts io = { 0 };
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
	d->resync_s = o->resync_s > 0 ? o->resync_s : 60;
	d->on_shard = o->on_shard;
	d->ud = o->ud;
	d->cfg = o->kubeconfig ? kube_config_from_kubeconfig(o->kubeconfig, NULL, err, errlen)
			       : kube_config_load(err, errlen);
	if (!d->cfg || !(d->kc = kube_client_new(d->cfg, err, errlen)))
		goto fail;
	if (o->metrics && kube_client_set_metrics(d->kc, o->metrics))
		goto nomem;
	kube_client_set_timeout(d->kc, 5);
	if (!(d->q = wq_new(&qo)))
		goto nomem;
	io.res = GES_EGRESSSHARDS;
	io.ns = d->ns;
	io.backoff_initial_s = 0.5;
	io.backoff_max_s = 5;
	io.drop_managed_fields = true;
	io.name = "egressshards";
	if (!(d->inf = informer_new(d->kc, &io)) ||
	    informer_add_handlers(d->inf, &(struct informer_handlers){ on_any, on_upd, on_any, d }))
		goto nomem;
	if (pthread_create(&d->th, NULL, worker, d))
		goto nomem;
	d->th_on = true;
	if (informer_start(d->inf)) {
		snprintf(err, errlen, "egress: cannot start the EgressShard informer");
		goto fail;
	}
	wq_add(d->q, KEY_SYNC);
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
	if (d->q)
		wq_shutdown(d->q);
	informer_request_stop(d->inf);
	if (d->inf)
		informer_stop(d->inf);
	if (d->th_on)
		pthread_join(d->th, NULL);
	informer_free(d->inf);
	wq_free(d->q);
	kube_client_free(d->kc);
	kube_config_free(d->cfg);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
