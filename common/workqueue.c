#include "common/workqueue.h"

#include "common/gmap.h"
#include "common/grow.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct delayed {
	double at;
	char *key;
	bool limited; /* its time came from the rate limiter (wq_retry_now) */
};

struct wq {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct wq_opts o;
	/* FIFO ring of keys (a deque: wq_add_front pushes at the head) */
	char **fifo;
	size_t head, len, cap;
	/* dirty: key -> its live entry in the ring, or (void *)1 while it is
	 * processed. An entry that is not its key's live one is stale (the key
	 * was moved to the front): skipped when it comes up, counted in nstale. */
	struct gmap *dirty, *processing;
	struct gmap *front; /* processed keys that wq_done re-queues at the front */
	size_t nstale;
	/* delayed adds: min-heap on at, and key -> index for the earliest-wins rule */
	struct delayed *heap;
	size_t nheap, capheap;
	struct gmap *waiting; /* key -> (uintptr_t)(index+1) */
	/* limiter */
	struct gmap *failures; /* key -> (uintptr_t)count */
	double tokens, last_refill;
	bool shutdown;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct wq *wq_new(const struct wq_opts *o)
{
	struct wq *q = calloc(1, sizeof(*q));
	pthread_condattr_t ca;

	if (!q)
		return NULL;
	if (o)
		q->o = *o;
	if (q->o.base_delay_s <= 0)
		q->o.base_delay_s = 0.005;
	if (q->o.max_delay_s <= 0)
		q->o.max_delay_s = 1000;
	if (q->o.qps <= 0)
		q->o.qps = 10;
	if (q->o.burst <= 0)
		q->o.burst = 100;
	q->tokens = q->o.burst;
	q->last_refill = now_s();
	q->dirty = gmap_new();
	q->processing = gmap_new();
	q->front = gmap_new();
	q->waiting = gmap_new();
	q->failures = gmap_new();
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!q->dirty || !q->processing || !q->front || !q->waiting || !q->failures) {
		wq_free(q);
		return NULL;
	}
	return q;
}

void wq_free(struct wq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->len; i++)
		free(q->fifo[(q->head + i) % q->cap]);
	free(q->fifo);
	for (size_t i = 0; i < q->nheap; i++)
		free(q->heap[i].key);
	free(q->heap);
	gmap_free(q->dirty, NULL);
	gmap_free(q->processing, NULL);
	gmap_free(q->front, NULL);
	gmap_free(q->waiting, NULL);
	gmap_free(q->failures, NULL);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static bool fifo_grow(struct wq *q)
{
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		char **n = malloc(cap * sizeof(*n));
		if (!n)
			return false;
		for (size_t i = 0; i < q->len; i++)
			n[i] = q->fifo[(q->head + i) % q->cap];
		free(q->fifo);
		q->fifo = n;
		q->cap = cap;
		q->head = 0;
	}
	return true;
}

/* Queues key at the back (or the front) as its live entry; -1 on ENOMEM. */
static int fifo_push_at(struct wq *q, const char *key, bool at_front)
{
	char *k;
	int e = 0;

	if (!fifo_grow(q) || !(k = strdup(key)))
		return -1;
	if (at_front) {
		q->head = (q->head + q->cap - 1) % q->cap;
		q->fifo[q->head] = k;
	} else {
		q->fifo[(q->head + q->len) % q->cap] = k;
	}
	q->len++;
	gmap_put(q->dirty, key, k, &e);
	return e ? -1 : 0;
}

static int fifo_push(struct wq *q, const char *key) { return fifo_push_at(q, key, false); }

static void add_locked(struct wq *q, const char *key)
{
	int e = 0;
	if (q->shutdown || gmap_has(q->dirty, key))
		return;
	gmap_put(q->dirty, key, (void *)1, &e);
	if (e)
		return;
	if (gmap_has(q->processing, key))
		return; /* requeued by wq_done */
	if (fifo_push(q, key) < 0) {
		gmap_del(q->dirty, key, NULL);
		return;
	}
	pthread_cond_signal(&q->cond);
}

void wq_add_front(struct wq *q, const char *key)
{
	void *live;
	int e = 0;

	pthread_mutex_lock(&q->mu);
	if (q->shutdown)
		goto out;
	if (gmap_has(q->processing, key)) {
		/* Runs now: queued again (at the front) when done. */
		if (!gmap_has(q->dirty, key))
			gmap_put(q->dirty, key, (void *)1, &e);
		if (!e)
			gmap_put(q->front, key, (void *)1, &e);
		goto out;
	}
	live = gmap_get(q->dirty, key);
	if (fifo_push_at(q, key, true) < 0) {
		if (!live)
			gmap_del(q->dirty, key, NULL);
		else
			gmap_put(q->dirty, key, live, NULL);
		goto out;
	}
	if (live && live != (void *)1)
		q->nstale++; /* its old place in the ring is skipped */
	pthread_cond_signal(&q->cond);
out:
	pthread_mutex_unlock(&q->mu);
}

void wq_add(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	add_locked(q, key);
	pthread_mutex_unlock(&q->mu);
}

/* ---- delayed heap ---- */

static void heap_set(struct wq *q, size_t i, struct delayed d)
{
	q->heap[i] = d;
	gmap_put(q->waiting, d.key, (void *)(uintptr_t)(i + 1), NULL);
}

static void sift_up(struct wq *q, size_t i)
{
	struct delayed d = q->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (q->heap[p].at <= d.at)
			break;
		heap_set(q, i, q->heap[p]);
		i = p;
	}
	heap_set(q, i, d);
}

static void sift_down(struct wq *q, size_t i)
{
	struct delayed d = q->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->nheap)
			break;
		if (c + 1 < q->nheap && q->heap[c + 1].at < q->heap[c].at)
			c++;
		if (q->heap[c].at >= d.at)
			break;
		heap_set(q, i, q->heap[c]);
		i = c;
	}
	heap_set(q, i, d);
}

static struct delayed heap_pop(struct wq *q)
{
	struct delayed top = q->heap[0];
	gmap_del(q->waiting, top.key, NULL);
	if (--q->nheap) {
		q->heap[0] = q->heap[q->nheap];
		sift_down(q, 0);
	}
	return top;
}

static void add_after(struct wq *q, const char *key, double delay_s, bool limited)
{
	pthread_mutex_lock(&q->mu);
	if (q->shutdown)
		goto out;
	if (delay_s <= 0) {
		add_locked(q, key);
		goto out;
	}
	double at = now_s() + delay_s;
	uintptr_t idx = (uintptr_t)gmap_get(q->waiting, key);
	if (idx) {
		/* Already waiting: the earlier time wins. */
		if (at < q->heap[idx - 1].at) {
			q->heap[idx - 1].at = at;
			q->heap[idx - 1].limited = limited;
			sift_up(q, idx - 1);
			pthread_cond_broadcast(&q->cond);
		}
		goto out;
	}
	if (G_GROW(q->heap, q->capheap, q->nheap, 64))
		goto out;
	char *k = strdup(key);
	if (!k)
		goto out;
	q->heap[q->nheap++] = (struct delayed){ at, k, limited };
	sift_up(q, q->nheap - 1);
	pthread_cond_broadcast(&q->cond); /* a waiter may need an earlier wake-up */
out:
	pthread_mutex_unlock(&q->mu);
}

void wq_add_after(struct wq *q, const char *key, double delay_s) { add_after(q, key, delay_s, false); }

size_t wq_retry_now(struct wq *q)
{
	size_t n = 0;

	pthread_mutex_lock(&q->mu);
	/* A decrease-key per entry: each sift_up only moves entries already
	 * visited (parents, at lower indexes) down into visited places. */
	for (size_t i = 0; i < q->nheap; i++) {
		if (!q->heap[i].limited)
			continue;
		gmap_del(q->failures, q->heap[i].key, NULL);
		q->heap[i].at = 0;
		q->heap[i].limited = false;
		sift_up(q, i);
		n++;
	}
	if (n)
		pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* ---- rate limiting ---- */

static double when_locked(struct wq *q, const char *key)
{
	uintptr_t n = (uintptr_t)gmap_get(q->failures, key);
	double item = q->o.base_delay_s * pow(2.0, (double)n), t = now_s(), bucket;

	if (item > q->o.max_delay_s || !isfinite(item))
		item = q->o.max_delay_s;
	gmap_put(q->failures, key, (void *)(n + 1), NULL);
	/* Token bucket: refill, then reserve one token (possibly in the future). */
	q->tokens += (t - q->last_refill) * q->o.qps;
	if (q->tokens > q->o.burst)
		q->tokens = q->o.burst;
	q->last_refill = t;
	q->tokens -= 1;
	bucket = q->tokens >= 0 ? 0 : -q->tokens / q->o.qps;
	return item > bucket ? item : bucket;
}

double wq_when(struct wq *q, const char *key)
{
	double d;
	pthread_mutex_lock(&q->mu);
	d = when_locked(q, key);
	pthread_mutex_unlock(&q->mu);
	return d;
}

double wq_add_rate_limited(struct wq *q, const char *key)
{
	double d = wq_when(q, key);
	add_after(q, key, d, true);
	return d;
}

void wq_forget(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	gmap_del(q->failures, key, NULL);
	pthread_mutex_unlock(&q->mu);
}

int wq_num_requeues(struct wq *q, const char *key)
{
	int n;
	pthread_mutex_lock(&q->mu);
	n = (int)(uintptr_t)gmap_get(q->failures, key);
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* ---- consumers ---- */

static void promote_ready(struct wq *q)
{
	double t = now_s();
	while (q->nheap && q->heap[0].at <= t) {
		struct delayed d = heap_pop(q);
		add_locked(q, d.key);
		free(d.key);
	}
}

static struct timespec abs_mono(double at)
{
	struct timespec ts;
	ts.tv_sec = (time_t)at;
	ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

char *wq_get(struct wq *q, double timeout_s)
{
	double end = timeout_s < 0 ? INFINITY : now_s() + timeout_s;
	char *key = NULL;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		promote_ready(q);
		if (q->len > q->nstale)
			break;
		if (q->shutdown || now_s() >= end)
			goto out;
		double wake = end;
		if (q->nheap && q->heap[0].at < wake)
			wake = q->heap[0].at;
		if (isinf(wake)) {
			pthread_cond_wait(&q->cond, &q->mu);
		} else {
			struct timespec ts = abs_mono(wake);
			pthread_cond_timedwait(&q->cond, &q->mu, &ts);
		}
	}
	for (;;) {
		key = q->fifo[q->head];
		q->head = (q->head + 1) % q->cap;
		q->len--;
		if (gmap_get(q->dirty, key) == key)
			break;
		free(key); /* stale: the key moved to the front */
		q->nstale--;
	}
	gmap_del(q->dirty, key, NULL);
	gmap_put(q->processing, key, (void *)1, NULL);
out:
	pthread_mutex_unlock(&q->mu);
	return key;
}

void wq_done(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	gmap_del(q->processing, key, NULL);
	/* Added while being processed: now it may run again. */
	bool front = gmap_has(q->front, key);
	gmap_del(q->front, key, NULL);
	if (gmap_has(q->dirty, key) && fifo_push_at(q, key, front) == 0)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->mu);
}

size_t wq_len(struct wq *q)
{
	size_t n;
	pthread_mutex_lock(&q->mu);
	n = q->len - q->nstale;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void wq_shutdown(struct wq *q)
{
	pthread_mutex_lock(&q->mu);
	q->shutdown = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
}

bool wq_shutting_down(struct wq *q)
{
	bool s;
	pthread_mutex_lock(&q->mu);
	s = q->shutdown;
	pthread_mutex_unlock(&q->mu);
	return s;
}
