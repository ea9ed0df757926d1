/*
 * Prometheus metrics (counters and gauges with labels) and a small HTTP
 * server on libmicrohttpd serving /metrics (text format 0.0.4), /healthz and
 * /readyz. libmicrohttpd runs its own polling thread; handlers only read the
 * registry under its mutex and call the registered checks, which must be
 * quick and thread-safe.
 */
#ifndef GALACTIC_COMMON_METRICS_H
#define GALACTIC_COMMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>

struct metrics;
struct metric;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/*
 * label_names: comma-separated ("verb,code") or NULL. Returns the metric
 * (owned by the registry); NULL on a bad name or a duplicate.
 */
struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *label_names);
struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *label_names);
/* A declared metric by name, or NULL. */
struct metric *metric_lookup(struct metrics *m, const char *name);
/* label_values: comma-separated in label_names order (NULL when no labels). */
void metric_add(struct metric *x, const char *label_values, double v);
void metric_set(struct metric *x, const char *label_values, double v);
double metric_value(struct metric *x, const char *label_values);

/* Text exposition (malloc'd). */
char *metrics_render(struct metrics *m);

struct metrics_http;

/* Returns true when healthy/ready; name is reported on failure. */
typedef bool (*metrics_check_fn)(void *ud);

/* addr "127.0.0.1" or "0.0.0.0"; port 0 picks a free one (metrics_http_port). */
struct metrics_http *metrics_http_start(struct metrics *m, const char *addr, int port,
					char *err, size_t errlen);
int metrics_http_port(const struct metrics_http *h);
/* readiness: only /readyz; otherwise both /healthz and /readyz. Before traffic. */
int metrics_http_add_check(struct metrics_http *h, const char *name, bool readiness_only,
			   metrics_check_fn fn, void *ud);
void metrics_http_stop(struct metrics_http *h);

#endif
