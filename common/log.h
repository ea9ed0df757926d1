/*
 * Structured, leveled logging: one logfmt line per call on stderr (or the
 * stream set with glog_set_output), e.g.
 *   ts=2026-01-01T00:00:00.123Z level=info comp=informer msg="synced" items=42
 * Thread-safe: each line is written under the stream lock, so lines from
 * different threads never interleave. Libraries return errors; only daemons
 * and the background loops of this library (informer, leader) log.
 */
#ifndef GALACTIC_COMMON_LOG_H
#define GALACTIC_COMMON_LOG_H

#include <stdio.h>

enum glog_level { GLOG_DEBUG = 0, GLOG_INFO, GLOG_WARN, GLOG_ERROR };

void glog_set_level(enum glog_level lvl);
enum glog_level glog_get_level(void);
/* "debug" | "info" | "warn" | "error"; returns -1 if unknown. */
int glog_parse_level(const char *s, enum glog_level *out);
/* Borrowed; NULL restores stderr. */
void glog_set_output(FILE *f);

/*
 * Logs msg (printf format) with optional key/value string pairs after it:
 *   glog_kv(GLOG_INFO, "leader", "became leader", "lease", "ns/x", NULL);
 */
void glog_kv(enum glog_level lvl, const char *comp, const char *msg, ...)
	__attribute__((sentinel));
void glogf(enum glog_level lvl, const char *comp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
