/*
 * The loop of a thread that writes the status of its own API objects:
 * informers queue a key, one worker thread syncs it (reads its caches,
 * builds the status it wants, server-side applies it when the server's
 * differs), forgets it or backs off through the queue, and queues the
 * periodic key again after each successful pass. The agent's EgressShard
 * and NodeDataplane writers (agent/egress/egress.c,
 * agent/identity/identity.c) each keep only their own decide/build
 * functions and use this for the rest (docs/common.md).
 */
#ifndef GALACTIC_COMMON_STATUS_WRITER_H
#define GALACTIC_COMMON_STATUS_WRITER_H

#include "common/informer.h"
#include "common/kube_client.h"
#include "common/kube_config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/workqueue.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct sw_opts {
	const char *comp;       /* log component and error prefix: "egress" */
	const char *node;       /* named in every log line: "node <node>: ..." */
	const char *kubeconfig; /* NULL: in-cluster or $KUBECONFIG (kube_config_load) */
	struct metrics *metrics; /* the client's galactic_kube_* counters; NULL: none */
	long timeout_s;         /* per request */
	struct wq_opts q;       /* the queue's backoff and rate */
	/* One pass for key: 0 done (forgotten), otherwise retried with the
	 * queue's backoff. Runs on the writer's thread only. */
	int (*sync)(const char *key, void *ud);
	void *ud;
	const char *resync_key; /* queued again resync_s after each successful pass of it */
	double resync_s;
};

struct sw {
	struct sw_opts o;
	char comp[32], node[254], resync_key[64];
	struct kube_config *cfg;
	struct kube_client *kc;
	struct wq *q;
	pthread_t th;
	bool th_on;
	pthread_mutex_t mu; /* guards last_logged */
	char last_logged[600];
};

/* Config, client and queue; 0, or -EINVAL/-ENOMEM with err. sw_free undoes it (also on failure). */
int sw_init(struct sw *w, const struct sw_opts *o, char *err, size_t errlen);
/* Starts the worker thread; 0, or -ENOMEM with err. */
int sw_start(struct sw *w, char *err, size_t errlen);
/* Informer handlers that queue the resync key (ud: the struct sw). */
void sw_on_any(json_t *obj, void *w);
void sw_on_update(json_t *old, json_t *obj, void *w);
/* Logs "node <node>: <line>" at lvl unless it is the line logged last (the
 * same answer every resync is not news). */
void sw_log_once(struct sw *w, enum glog_level lvl, const char *line);
/*
 * Server-side applies intent to the status of res ns/name as manager,
 * unless holds(cur, intent) says the server's object (cur, NULL: none in
 * the cache) already holds it. Returns 0 nothing to write, 1 written, -1
 * the apply failed (err).
 */
int sw_apply_status(struct sw *w, const struct kube_resource *res, const char *ns, const char *name,
		    const json_t *cur, const json_t *intent,
		    bool (*holds)(const json_t *cur, const json_t *intent), const char *manager,
		    struct kube_error *err);
/*
 * Stopping: sw_shutdown (the queue; the worker ends after its pass), then
 * the caller's informers are stopped, sw_join, the informers freed, and
 * sw_free (queue, client, config). Each is safe on a half-made writer.
 */
void sw_shutdown(struct sw *w);
void sw_join(struct sw *w);
void sw_free(struct sw *w);

#endif
