#include "common/metrics.h"

#include "common/gmap.h"
#include "common/grow.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 256
#define MAX_LABELS 8
#define MAX_CHECKS 16

struct metric {
	struct metrics *reg;
	char name[128], help[256];
	bool gauge;
	int nlabels;
	char labels[MAX_LABELS][64];
	struct gmap *series; /* label values -> double* */
};

struct metrics {
	pthread_mutex_t mu;
	struct metric *m[MAX_METRICS];
	int n;
};

struct check {
	char name[64];
	bool readiness_only;
	metrics_check_fn fn;
	void *ud;
};

struct metrics_http {
	struct metrics *reg;
	struct MHD_Daemon *d;
	int port;
	struct check checks[MAX_CHECKS];
	int nchecks;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));
	if (m)
		pthread_mutex_init(&m->mu, NULL);
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n; i++) {
		gmap_free(m->m[i]->series, free);
		free(m->m[i]);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static bool name_ok(const char *s)
{
	if (!s || !*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != ':')
			return false;
	return true;
}

static struct metric *declare(struct metrics *m, const char *name, const char *help,
			      const char *labels, bool gauge)
{
	struct metric *x;

	if (!name_ok(name) || strlen(name) >= 128)
		return NULL;
	if (!(x = calloc(1, sizeof(*x))) || !(x->series = gmap_new())) {
		free(x);
		return NULL;
	}
	x->reg = m;
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->help, sizeof(x->help), "%s", help ? help : "");
	x->gauge = gauge;
	for (const char *p = labels; p && *p && x->nlabels < MAX_LABELS;) {
		size_t n = strcspn(p, ",");
		snprintf(x->labels[x->nlabels], sizeof(x->labels[0]), "%.*s", (int)n, p);
		if (!name_ok(x->labels[x->nlabels++])) {
			gmap_free(x->series, free);
			free(x);
			return NULL;
		}
		p += n + (p[n] ? 1 : 0);
	}
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->m[i]->name, name))
			goto dup;
	if (m->n == MAX_METRICS)
		goto dup;
	m->m[m->n++] = x;
	pthread_mutex_unlock(&m->mu);
	return x;
dup:
	pthread_mutex_unlock(&m->mu);
	gmap_free(x->series, free);
	free(x);
	return NULL;
}

struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *label_names)
{
	return declare(m, name, help, label_names, false);
}

struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *label_names)
{
	return declare(m, name, help, label_names, true);
}

struct metric *metric_lookup(struct metrics *m, const char *name)
{
	struct metric *x = NULL;
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < m->n && !x; i++)
		if (!strcmp(m->m[i]->name, name))
			x = m->m[i];
	pthread_mutex_unlock(&m->mu);
	return x;
}

static void update(struct metric *x, const char *lv, double v, bool set)
{
	double *p;
	if (!x)
		return;
	pthread_mutex_lock(&x->reg->mu);
	p = gmap_get(x->series, lv ? lv : "");
	if (!p && (p = calloc(1, sizeof(*p)))) {
		int e = 0;
		gmap_put(x->series, lv ? lv : "", p, &e);
		if (e) {
			free(p);
			p = NULL;
		}
	}
	if (p)
		*p = set ? v : *p + v;
	pthread_mutex_unlock(&x->reg->mu);
}

void metric_add(struct metric *x, const char *lv, double v) { update(x, lv, v, false); }
void metric_set(struct metric *x, const char *lv, double v) { update(x, lv, v, true); }

double metric_value(struct metric *x, const char *lv)
{
	double v = 0, *p;
	pthread_mutex_lock(&x->reg->mu);
	if ((p = gmap_get(x->series, lv ? lv : "")))
		v = *p;
	pthread_mutex_unlock(&x->reg->mu);
	return v;
}

struct sb {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		if (n < 0 || G_RESERVE(b->p, b->cap, b->len + (size_t)n + 1, 256)) {
			b->oom = true;
			return;
		}
	}
}

/* Label values are comma-separated; escape \ " and newline per the format. */
static void put_labels(struct sb *b, const struct metric *x, const char *lv)
{
	if (!x->nlabels)
		return;
	sb_printf(b, "{");
	for (int i = 0; i < x->nlabels; i++) {
		size_t n = lv ? strcspn(lv, ",") : 0;
		sb_printf(b, "%s%s=\"", i ? "," : "", x->labels[i]);
		for (size_t k = 0; k < n; k++) {
			char c = lv[k];
			if (c == '\\' || c == '"')
				sb_printf(b, "\\%c", c);
			else if (c == '\n')
				sb_printf(b, "\\n");
			else
				sb_printf(b, "%c", c);
		}
		sb_printf(b, "\"");
		if (lv)
			lv += n + (lv[n] ? 1 : 0);
	}
	sb_printf(b, "}");
}

char *metrics_render(struct metrics *m)
{
	struct sb b = { malloc(4096), 0, 4096, false };
	if (!b.p)
		return NULL;
	b.p[0] = 0;
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < m->n; i++) {
		struct metric *x = m->m[i];
		struct gmap_iter it;
		const char *lv;
		void *v;
		sb_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", x->name, x->help, x->name,
			  x->gauge ? "gauge" : "counter");
		gmap_iter_init(&it, x->series);
		while (gmap_next(&it, &lv, &v)) {
			sb_printf(&b, "%s", x->name);
			put_labels(&b, x, lv);
			sb_printf(&b, " %.17g\n", *(double *)v);
		}
	}
	pthread_mutex_unlock(&m->mu);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body,
			     const char *ctype)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct metrics_http *h = cls;
	(void)version; (void)upload; (void)upload_size; (void)req_cls;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, 405, strdup("method not allowed\n"), "text/plain");
	if (!strcmp(url, "/metrics")) {
		char *t = metrics_render(h->reg);
		if (!t)
			return reply(c, 500, strdup("out of memory\n"), "text/plain");
		return reply(c, 200, t, "text/plain; version=0.0.4");
	}
	if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) {
		bool ready = url[1] == 'r', ok = true;
		struct sb b = { malloc(256), 0, 256, false };
		if (!b.p)
			return MHD_NO;
		b.p[0] = 0;
		for (int i = 0; i < h->nchecks; i++) {
			struct check *k = &h->checks[i];
			if (k->readiness_only && !ready)
				continue;
			bool pass = k->fn(k->ud);
			ok &= pass;
			sb_printf(&b, "[%s] %s\n", pass ? "+" : "-", k->name);
		}
		sb_printf(&b, ok ? "ok\n" : "failed\n");
		if (b.oom) {
			free(b.p);
			return MHD_NO;
		}
		return reply(c, ok ? 200 : 503, b.p, "text/plain");
	}
	return reply(c, 404, strdup("not found\n"), "text/plain");
}

struct metrics_http *metrics_http_start(struct metrics *m, const char *addr, int port,
					char *err, size_t errlen)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	const union MHD_DaemonInfo *di;

	if (!h) {
		snprintf(err, errlen, "metrics http: out of memory");
		return NULL;
	}
	if (inet_pton(AF_INET, addr ? addr : "127.0.0.1", &sa.sin_addr) != 1) {
		snprintf(err, errlen, "metrics http: bad IPv4 address %s", addr);
		free(h);
		return NULL;
	}
	h->reg = m;
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, (uint16_t)port,
				NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "metrics http: cannot listen on %s:%d", addr ? addr : "127.0.0.1",
			 port);
		free(h);
		return NULL;
	}
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : port;
	return h;
}

int metrics_http_port(const struct metrics_http *h) { return h->port; }

int metrics_http_add_check(struct metrics_http *h, const char *name, bool readiness_only,
			   metrics_check_fn fn, void *ud)
{
	if (h->nchecks == MAX_CHECKS)
		return -1;
	struct check *k = &h->checks[h->nchecks];
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->readiness_only = readiness_only;
	k->fn = fn;
	k->ud = ud;
	h->nchecks++; /* checks are added before traffic: no lock needed */
	return 0;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
