/*
 * Rate-limited work queue of string keys, with client-go semantics:
 *  - a key is queued at most once (dirty set); a key being processed and
 *    added again is queued again only after wq_done();
 *  - wq_add_rate_limited() delays a key by max(per-key exponential backoff
 *    base*2^failures capped at max, overall token bucket qps/burst);
 *    wq_forget() resets the key's failure count (call on success);
 *  - wq_add_after() delays a key; the earliest pending time wins.
 * Thread-safe; any number of workers may call wq_get() concurrently.
 */
#ifndef GALACTIC_COMMON_WORKQUEUE_H
#define GALACTIC_COMMON_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>

struct wq_opts {
	double base_delay_s; /* 0: 0.005 */
	double max_delay_s;  /* 0: 1000 */
	double qps;          /* 0: 10 */
	int burst;           /* 0: 100 */
};

struct wq;

struct wq *wq_new(const struct wq_opts *o); /* o may be NULL */
void wq_free(struct wq *q);

void wq_add(struct wq *q, const char *key);
/* Like wq_add, but the key goes to the front (moved there if it is queued
 * already; a key being processed is queued again at the front when done):
 * for work that follows directly from work just done (a dependent object
 * after its dependency's write), so a chain finishes before the backlog. */
void wq_add_front(struct wq *q, const char *key);
void wq_add_after(struct wq *q, const char *key, double delay_s);
/* Returns the delay chosen. */
double wq_add_rate_limited(struct wq *q, const char *key);
void wq_forget(struct wq *q, const char *key);
/*
 * Every key waiting out a rate-limited delay (wq_add_rate_limited) is ready
 * now and its failures are forgotten; keys delayed by wq_add_after keep
 * their time. For when what the keys failed on is back (the API server
 * answers again after an outage): their backoff, grown during it, would
 * otherwise hold them up to max_delay_s longer. Returns how many.
 */
size_t wq_retry_now(struct wq *q);
int wq_num_requeues(struct wq *q, const char *key);
/* The delay the limiter would give now, and counts it (exposed for tests). */
double wq_when(struct wq *q, const char *key);

/*
 * Blocks until a key is ready (returns a malloc'd key the caller frees after
 * wq_done), the timeout passes (timeout_s < 0: forever) or the queue shuts
 * down (both return NULL).
 */
char *wq_get(struct wq *q, double timeout_s);
void wq_done(struct wq *q, const char *key);
size_t wq_len(struct wq *q);
/* Wakes every waiter; later wq_get calls return NULL once the queue drains. */
void wq_shutdown(struct wq *q);
bool wq_shutting_down(struct wq *q);

#endif
