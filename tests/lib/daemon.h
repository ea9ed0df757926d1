/*
 * Helpers for tests that run the daemons as real processes and read their
 * HTTP endpoints (/metrics, /healthz, /readyz).
 */
#ifndef GALACTIC_TESTS_DAEMON_H
#define GALACTIC_TESTS_DAEMON_H

#include <sys/types.h>

/* Monotonic clock in seconds. */
double gt_now(void);
/* A loopback TCP port that was free a moment ago (bind to port 0, release). */
int gt_free_port(void);
/* fork + exec argv[0] with stdout and stderr appended to log; returns the pid. */
pid_t gt_spawn(const char *log, char *const argv[]);
/* GET http://127.0.0.1:port/path; returns the HTTP status (0 when unreachable)
 * and, when body is set, the body (malloc'd, caller frees). */
long gt_http_get(int port, const char *path, char **body);
/* One sample ("name" or "name{labels}") from port's /metrics; -1 when absent. */
double gt_metric(int port, const char *sample);

#endif
