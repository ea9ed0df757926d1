/* The agent's /metrics, /healthz, /readyz (health.h). */
#include "agent/health/health.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/dp/backend.h"
#include "agent/health/drift.h"
#include "common/metrics.h"

struct ghealth {
	struct metrics *m;
	struct metrics_http *http;
	struct metric *passes, *objects, *pass_s, *written, *ready, *verified_g, *node_id, *info, *drift;
	double stall_s, started;

	pthread_mutex_t mu;       /* guards the fields below */
	double last_pass;         /* monotonic seconds; 0: none yet */
	bool have_verify;         /* a pass reported at all */
	bool verified;
	char why[256];
	uint16_t id;
	char id_why[256];
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ghealth_parse_addr(const char *s, char *host, size_t n, int *port)
{
	const char *c;
	char *end;
	long p;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= n)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(rb - s - 1));
		host[rb - s - 1] = 0;
		c = rb + 1;
	} else {
		c = strrchr(s, ':');
		if (!c || (size_t)(c - s) >= n || c == s)
			return -EINVAL;
		memcpy(host, s, (size_t)(c - s));
		host[c - s] = 0;
	}
	errno = 0;
	p = strtol(c + 1, &end, 10);
	if (errno || *end || end == c + 1 || p < 0 || p > 65535)
		return -EINVAL;
	*port = (int)p;
	return 0;
}

static bool check_alive(void *ud)
{
	struct ghealth *h = ud;
	bool ok;

	pthread_mutex_lock(&h->mu);
	/* before the first pass: the start-up grace is the stall limit too */
	ok = mono() - (h->last_pass ? h->last_pass : h->started) < h->stall_s;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static bool check_identity(void *ud)
{
	struct ghealth *h = ud;
	bool ok;

	pthread_mutex_lock(&h->mu);
	ok = h->id != 0;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static bool check_datapath(void *ud)
{
	struct ghealth *h = ud;
	bool ok;

	pthread_mutex_lock(&h->mu);
	ok = h->have_verify && h->verified;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

bool ghealth_ready(struct ghealth *h, char *why, size_t n)
{
	bool ok;

	if (!h)
		return false;
	pthread_mutex_lock(&h->mu);
	if (!h->id)
		snprintf(why, n, "no node identity: %s", h->id_why[0] ? h->id_why : "not known yet");
	else if (!h->have_verify)
		snprintf(why, n, "datapath not verified yet (no pass)");
	else if (!h->verified)
		snprintf(why, n, "datapath not verified: %s", h->why);
	else
		snprintf(why, n, "ready");
	ok = h->id && h->have_verify && h->verified;
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static void set_ready_gauge(struct ghealth *h)
{
	char why[8];

	metric_set(h->ready, NULL, ghealth_ready(h, why, sizeof(why)) ? 1 : 0);
}

int ghealth_start(struct ghealth **out, const struct ghealth_opts *o, char *err, size_t errlen)
{
	struct ghealth *h = calloc(1, sizeof(*h));
	char lv[128];

	*out = NULL;
	if (!h || !(h->m = metrics_new())) {
		free(h);
		snprintf(err, errlen, "health: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->stall_s = o->stall_s > 0 ? o->stall_s : 300;
	h->started = mono();
	h->passes = metrics_counter(h->m, "galactic_agent_passes_total",
				    "Datapath passes by kind (apply, verify) and result (verified, failed)", "kind,result");
	h->objects = metrics_gauge(h->m, "galactic_agent_objects",
				   "Model objects of the last pass by state (programmed, failed)", "state");
	h->pass_s = metrics_gauge(h->m, "galactic_agent_last_pass_seconds", "Duration of the last pass", "kind");
	h->written = metrics_counter(h->m, "galactic_agent_datapath_writes_total",
				     "Datapath objects added/replaced or removed by apply passes", "op");
	h->ready = metrics_gauge(h->m, "galactic_agent_ready", "1 when /readyz answers 200", NULL);
	h->verified_g = metrics_gauge(h->m, "galactic_agent_datapath_verified",
				    "1 when the last pass read the datapath back as desired", NULL);
	h->node_id = metrics_gauge(h->m, "galactic_agent_node_id", "The node ID the data plane runs with (0: none)", NULL);
	h->info = metrics_gauge(h->m, "galactic_agent_info", "Always 1; labels say what runs", "datapath,version");
	h->drift = metrics_counter(h->m, "galactic_agent_drift_repaired_total",
				   "Drift repaired (found missing or different after a verified pass, read back repaired) by kind",
				   "kind");
	if (!h->passes || !h->objects || !h->pass_s || !h->written || !h->ready || !h->verified_g || !h->node_id ||
	    !h->info || !h->drift) {
		snprintf(err, errlen, "health: cannot declare metrics");
		ghealth_stop(h);
		return -ENOMEM;
	}
	for (int k = 0; k < GDRIFT_KINDS; k++)
		metric_add(h->drift, gdrift_kind_str((enum gdrift_kind)k), 0); /* every series from the start */
	snprintf(lv, sizeof(lv), "%s,%s", o->datapath ? o->datapath : "", o->version ? o->version : "");
	metric_set(h->info, lv, 1);
	h->http = metrics_http_start(h->m, o->addr ? o->addr : "127.0.0.1", o->port, err, errlen);
	if (!h->http) {
		ghealth_stop(h);
		return -EINVAL;
	}
	if (metrics_http_add_check(h->http, "apply-loop", false, check_alive, h) ||
	    metrics_http_add_check(h->http, "identity", true, check_identity, h) ||
	    metrics_http_add_check(h->http, "datapath-verified", true, check_datapath, h)) {
		snprintf(err, errlen, "health: cannot add checks");
		ghealth_stop(h);
		return -EINVAL;
	}
	*out = h;
	return 0;
}

int ghealth_port(const struct ghealth *h)
{
	return h && h->http ? metrics_http_port(h->http) : 0;
}

struct metrics *ghealth_metrics(struct ghealth *h)
{
	return h ? h->m : NULL;
}

void ghealth_pass(struct ghealth *h, const struct ghealth_pass *p)
{
	const char *kind = p->verify_only ? "verify" : "apply";
	char lv[32];

	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->last_pass = mono();
	h->have_verify = true;
	h->verified = p->verified;
	snprintf(h->why, sizeof(h->why), "%s", p->verified ? "" : p->why && *p->why ? p->why : "a difference was found");
	pthread_mutex_unlock(&h->mu);
	snprintf(lv, sizeof(lv), "%s,%s", kind, p->verified ? "verified" : "failed");
	metric_add(h->passes, lv, 1);
	metric_set(h->objects, "programmed", (double)p->programmed);
	metric_set(h->objects, "failed", (double)p->failed);
	metric_set(h->pass_s, kind, p->seconds);
	if (!p->verify_only) {
		metric_add(h->written, "added", (double)p->added);
		metric_add(h->written, "removed", (double)p->removed);
	}
	metric_set(h->verified_g, NULL, p->verified ? 1 : 0);
	set_ready_gauge(h);
}

void ghealth_drift_repaired(struct ghealth *h, const char *kind, unsigned long n)
{
	if (h && n)
		metric_add(h->drift, kind, (double)n);
}

void ghealth_identity(struct ghealth *h, uint16_t node_id, const char *why)
{
	if (!h)
		return;
	/* the gauge first: whoever sees /readyz answer 200 finds the ID in /metrics */
	metric_set(h->node_id, NULL, node_id);
	pthread_mutex_lock(&h->mu);
	h->id = node_id;
	snprintf(h->id_why, sizeof(h->id_why), "%s", why ? why : "");
	pthread_mutex_unlock(&h->mu);
	set_ready_gauge(h);
}

bool ghealth_verdict(const struct gdp_results *res, size_t *programmed, char *why, size_t n)
{
	bool ok = true;

	*programmed = res->remotes_ok; /* folded: verified programmed */
	why[0] = 0;
	for (size_t i = 0; i < res->n; i++) {
		const struct gdp_result *r = &res->v[i];

		if (r->programmed && !r->err) {
			(*programmed)++;
		} else if (ok) {
			ok = false;
			snprintf(why, n, "%s%s%s%s%s: %s", gdp_obj_kind_str(r->kind), r->vpc[0] ? " " : "", r->vpc,
				 r->key[0] ? "/" : "", r->key, r->msg[0] ? r->msg : "not read back");
		}
	}
	return ok;
}

void ghealth_stop(struct ghealth *h)
{
	if (!h)
		return;
	metrics_http_stop(h->http);
	metrics_free(h->m);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
