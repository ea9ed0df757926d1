/* The agent's apply loop (agent/pipeline.h). */
#include "agent/pipeline.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fileio.h"
#include "common/log.h"

#define COMP "apply"

struct pipeline {
	struct pipeline_opts o;
	pthread_mutex_t pass_mu;      /* one pass at a time */
	pthread_mutex_t mu;           /* guards the fields below */
	pthread_cond_t cv;
	pthread_t th;
	bool th_on, stop, kicked;
	unsigned long applied_gen, passes;
	struct gdp_results last;      /* results of the last pass (indexed) */
	char why_not[512];            /* last reason a pass did not apply (logged once) */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void write_status(struct pipeline *p, const struct gdp_results *res, int rc, double ms)
{
	json_t *j = json_object(), *errs = json_array();
	char err[512], *s;
	size_t prog = 0;

	if (!p->o.status_path) {
		json_decref(j);
		json_decref(errs);
		return;
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct gdp_result *r = &res->v[i];

		if (r->programmed) {
			prog++;
			continue;
		}
		json_array_append_new(errs, json_pack("{s:s, s:s, s:s, s:i, s:s}", "kind",
						      gdp_obj_kind_str(r->kind), "vpc", r->vpc, "key",
						      r->key, "errno", -r->err, "message", r->msg));
	}
	json_object_set_new(j, "reconciles", json_integer((json_int_t)p->passes));
	json_object_set_new(j, "rc", json_integer(rc));
	json_object_set_new(j, "objects", json_integer((json_int_t)res->n));
	json_object_set_new(j, "programmed", json_integer((json_int_t)prog));
	json_object_set_new(j, "added", json_integer((json_int_t)res->added));
	json_object_set_new(j, "removed", json_integer((json_int_t)res->removed));
	json_object_set_new(j, "unchanged", json_integer((json_int_t)res->unchanged));
	json_object_set_new(j, "retries", json_integer((json_int_t)res->retries));
	json_object_set_new(j, "ms", json_real(ms));
	json_object_set_new(j, "errors", errs);
	s = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	if (s && gfile_write_atomic(p->o.status_path, s, strlen(s), err, sizeof(err)))
		glogf(GLOG_WARN, COMP, "status file not written: %s", err);
	free(s);
}

/* A pass that cannot apply: every object it would have had fails with why. */
static void not_applied(struct pipeline *p, struct gdp_results *res, int err, const char *why)
{
	struct gdp_result *n = gdp_results_get(res, GDP_OBJ_NODE, "", "");

	if (n)
		gdp_result_fail(n, err, "%s", why);
	if (strcmp(p->why_not, why))
		glogf(GLOG_ERROR, COMP, "nothing applied: %s (the kernel is left as it is)", why);
	snprintf(p->why_not, sizeof(p->why_not), "%s", why);
}

static int run_pass(struct pipeline *p)
{
	struct gdp_results res;
	struct rec_snap snap;
	char err[512], held[512];
	double t0 = now_ms();
	int rc;

	gdp_results_init(&res);
	pthread_mutex_lock(&p->pass_mu);
	rc = record_snapshot(p->o.rec, &snap);
	if (rc) {
		pthread_mutex_unlock(&p->pass_mu);
		glogf(GLOG_ERROR, COMP, "snapshot of the record: out of memory");
		return rc;
	}
	if (record_held(p->o.rec, held, sizeof(held))) {
		snprintf(err, sizeof(err), "the node's record is damaged: %s", held);
		not_applied(p, &res, -EBUSY, err);
		rc = -EBUSY;
	} else if (!snap.have_node) {
		not_applied(p, &res, -ENODATA,
			    "no node identity yet (SID block and node ID: NodeDataplane, or state.json)");
		rc = -ENODATA;
	} else if ((rc = record_commit(p->o.rec, &snap, err, sizeof(err)))) {
		char why[600];

		/* Never program what a restart would not know. */
		snprintf(why, sizeof(why), "durable record: %s", err);
		not_applied(p, &res, rc, why);
	} else {
		p->why_not[0] = 0;
		rc = p->o.be->ops->apply(p->o.be, &snap.st, &res);
	}
	pthread_mutex_lock(&p->mu);
	p->passes++;
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < res.n; i++)
		if (res.v[i].err && res.v[i].kind != GDP_OBJ_NODE)
			glogf(GLOG_ERROR, COMP, "%s %s%s%s: %s", gdp_obj_kind_str(res.v[i].kind), res.v[i].vpc,
			      res.v[i].key[0] ? "/" : "", res.v[i].key, res.v[i].msg);
		else if (res.v[i].err && !p->why_not[0])
			glogf(GLOG_ERROR, COMP, "node: %s", res.v[i].msg);
	glogf(GLOG_INFO, COMP,
	      "reconcile #%lu: %zu objects, added/replaced %lu, removed %lu, unchanged %lu, ENOMEM retries %lu, failed %lu (%.1f ms)",
	      p->passes, res.n, res.added, res.removed, res.unchanged, res.retries, res.failed,
	      now_ms() - t0);
	write_status(p, &res, rc, now_ms() - t0);
	if (p->o.on_pass)
		p->o.on_pass(p->o.ctx, &snap, &res);
	pthread_mutex_lock(&p->mu);
	gdp_results_free(&p->last);
	p->last = res;
	if (snap.gen > p->applied_gen)
		p->applied_gen = snap.gen;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->pass_mu);
	record_snap_free(&snap);
	return rc;
}

int pipeline_pass(struct pipeline *p)
{
	return run_pass(p);
}

int pipeline_verify(struct pipeline *p, struct gdp_results *res)
{
	struct rec_snap snap;
	char held[64];
	int rc;

	pthread_mutex_lock(&p->pass_mu);
	if ((rc = record_snapshot(p->o.rec, &snap))) {
		pthread_mutex_unlock(&p->pass_mu);
		return rc;
	}
	if (record_held(p->o.rec, held, sizeof(held)))
		rc = -EBUSY;
	else if (!snap.have_node)
		rc = -ENODATA;
	else
		rc = p->o.be->ops->observe(p->o.be, &snap.st, res);
	pthread_mutex_unlock(&p->pass_mu);
	record_snap_free(&snap);
	return rc;
}

static void *loop(void *arg)
{
	struct pipeline *p = arg;
	double interval = (p->o.interval_s > 0 ? p->o.interval_s : 30) * 1000, last = now_ms();

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		bool due = now_ms() - last >= interval;

		if (!p->kicked && !due && record_gen(p->o.rec) <= p->applied_gen) {
			struct timespec ts;
			double wake = last + interval - now_ms();

			if (wake > 200)
				wake = 200; /* record writers that do not kick are seen within 200 ms */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(wake * 1e6);
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			continue;
		}
		p->kicked = false;
		pthread_mutex_unlock(&p->mu);
		run_pass(p);
		last = now_ms();
		pthread_mutex_lock(&p->mu);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pipeline_new(struct pipeline **out, const struct pipeline_opts *o, char *err, size_t errlen)
{
	struct pipeline *p;

	*out = NULL;
	if (!o->rec || !o->be) {
		snprintf(err, errlen, "pipeline: needs a record and a backend");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "pipeline: out of memory");
		return -ENOMEM;
	}
	p->o = *o;
	pthread_mutex_init(&p->pass_mu, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	gdp_results_init(&p->last);
	*out = p;
	return 0;
}

int pipeline_start(struct pipeline *p, char *err, size_t errlen)
{
	if (pthread_create(&p->th, NULL, loop, p)) {
		snprintf(err, errlen, "pipeline: cannot start its thread");
		return -EAGAIN;
	}
	p->th_on = true;
	return 0;
}

void pipeline_kick(struct pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	p->kicked = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

int pipeline_wait(struct pipeline *p, unsigned long gen)
{
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	p->kicked = true;
	pthread_cond_broadcast(&p->cv);
	while (p->applied_gen < gen && !p->stop)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->applied_gen < gen)
		rc = -ESHUTDOWN;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int pipeline_result(struct pipeline *p, enum gdp_obj_kind kind, const char *vpc, const char *key,
		    struct gdp_result *out)
{
	struct gdp_result *x;
	int rc = -ENOENT;

	pthread_mutex_lock(&p->mu);
	x = gdp_results_find(&p->last, kind, vpc, key);
	if (x) {
		*out = *x;
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

unsigned long pipeline_passes(struct pipeline *p)
{
	unsigned long n;

	pthread_mutex_lock(&p->mu);
	n = p->passes;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->th_on)
		pthread_join(p->th, NULL);
	gdp_results_free(&p->last);
	pthread_mutex_destroy(&p->pass_mu);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}
