/* The status writer's loop (status_writer.h). */
#include "common/status_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sw_init(struct sw *w, const struct sw_opts *o, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	w->o = *o;
	snprintf(w->comp, sizeof(w->comp), "%s", o->comp ? o->comp : "");
	snprintf(w->node, sizeof(w->node), "%s", o->node ? o->node : "");
	snprintf(w->resync_key, sizeof(w->resync_key), "%s", o->resync_key ? o->resync_key : "");
	w->o.comp = w->comp;
	w->o.node = w->node;
	w->o.resync_key = w->resync_key;
	w->o.kubeconfig = NULL; /* not kept: only read here */
	w->o.metrics = NULL;
	w->cfg = o->kubeconfig ? kube_config_from_kubeconfig(o->kubeconfig, NULL, err, errlen)
			       : kube_config_load(err, errlen);
	if (!w->cfg || !(w->kc = kube_client_new(w->cfg, err, errlen)))
		return -EINVAL;
	if (o->metrics && kube_client_set_metrics(w->kc, o->metrics)) {
		snprintf(err, errlen, "%s: out of memory", w->comp);
		return -ENOMEM;
	}
	if (o->timeout_s > 0)
		kube_client_set_timeout(w->kc, o->timeout_s);
	if (!(w->q = wq_new(&o->q))) {
		snprintf(err, errlen, "%s: out of memory", w->comp);
		return -ENOMEM;
	}
	return 0;
}

static void *worker(void *arg)
{
	struct sw *w = arg;
	char *key;

	while ((key = wq_get(w->q, -1))) {
		bool periodic = !strcmp(key, w->resync_key);

		if (w->o.sync(key, w->o.ud) == 0) {
			wq_forget(w->q, key);
			if (periodic)
				wq_add_after(w->q, w->resync_key, w->o.resync_s);
		} else {
			wq_add_rate_limited(w->q, key);
		}
		wq_done(w->q, key);
		free(key);
	}
	return NULL;
}

int sw_start(struct sw *w, char *err, size_t errlen)
{
	if (pthread_create(&w->th, NULL, worker, w)) {
		snprintf(err, errlen, "%s: out of memory", w->comp);
		return -ENOMEM;
	}
	w->th_on = true;
	return 0;
}

void sw_on_any(json_t *obj, void *w)
{
	(void)obj;
	wq_add(((struct sw *)w)->q, ((struct sw *)w)->resync_key);
}

void sw_on_update(json_t *old, json_t *obj, void *w)
{
	(void)old;
	sw_on_any(obj, w);
}

void sw_log_once(struct sw *w, enum glog_level lvl, const char *line)
{
	bool news;

	pthread_mutex_lock(&w->mu);
	news = strcmp(line, w->last_logged) != 0;
	if (news)
		snprintf(w->last_logged, sizeof(w->last_logged), "%s", line);
	pthread_mutex_unlock(&w->mu);
	if (news)
		glogf(lvl, w->comp, "node %s: %s", w->node, line);
}

int sw_apply_status(struct sw *w, const struct kube_resource *res, const char *ns, const char *name,
		    const json_t *cur, const json_t *intent,
		    bool (*holds)(const json_t *cur, const json_t *intent), const char *manager,
		    struct kube_error *err)
{
	if (!intent || holds(cur, intent))
		return 0;
	return kube_apply(w->kc, res, ns, name, "status", intent, manager, false, NULL, err) ? -1 : 1;
}

void sw_shutdown(struct sw *w)
{
	if (w->q)
		wq_shutdown(w->q);
}

void sw_join(struct sw *w)
{
	if (w->th_on)
		pthread_join(w->th, NULL);
	w->th_on = false;
}

void sw_free(struct sw *w)
{
	sw_join(w);
	wq_free(w->q);
	kube_client_free(w->kc);
	kube_config_free(w->cfg);
	w->q = NULL;
	w->kc = NULL;
	w->cfg = NULL;
	pthread_mutex_destroy(&w->mu);
}
