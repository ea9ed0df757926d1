/* Work queue: de-duplication, processing rules, backoff, token bucket, delays. */
#include "common/backoff.h"
#include "common/workqueue.h"
#include "tests/lib/gtest.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

START_TEST(dedup_and_processing)
{
	struct wq *q = wq_new(NULL);
	char *k;

	wq_add(q, "ns/a");
	wq_add(q, "ns/b");
	wq_add(q, "ns/a");
	ck_assert_uint_eq(wq_len(q), 2);
	k = wq_get(q, 0);
	ck_assert_str_eq(k, "ns/a");
	/* Added while processing: not handed to a second worker until done. */
	wq_add(q, "ns/a");
	ck_assert_uint_eq(wq_len(q), 1);
	char *k2 = wq_get(q, 0);
	ck_assert_str_eq(k2, "ns/b");
	ck_assert_ptr_null(wq_get(q, 0.01));
	wq_done(q, k);
	ck_assert_uint_eq(wq_len(q), 1);
	char *k3 = wq_get(q, 0);
	ck_assert_str_eq(k3, "ns/a");
	wq_done(q, k2);
	wq_done(q, k3);
	free(k);
	free(k2);
	free(k3);
	ck_assert_uint_eq(wq_len(q), 0);
	wq_free(q);
}
END_TEST

START_TEST(per_key_backoff)
{
	/* Large bucket so only the per-key part shows. */
	struct wq_opts o = { .qps = 1e6, .burst = 1000000 };
	struct wq *q = wq_new(&o);
	double expect = 0.005;
	for (int i = 0; i < 20; i++) {
		double d = wq_when(q, "k");
		ck_assert_msg(fabs(d - fmin(expect, 1000)) < 1e-9, "step %d: %g != %g", i, d, expect);
		expect *= 2;
	}
	ck_assert_int_eq(wq_num_requeues(q, "k"), 20);
	ck_assert_double_eq(wq_when(q, "k"), 1000); /* capped */
	ck_assert_double_eq_tol(wq_when(q, "other"), 0.005, 1e-12); /* per key */
	wq_forget(q, "k");
	ck_assert_int_eq(wq_num_requeues(q, "k"), 0);
	ck_assert_double_eq_tol(wq_when(q, "k"), 0.005, 1e-12);
	wq_free(q);
}
END_TEST

START_TEST(token_bucket)
{
	/* Defaults: 10 qps, burst 100: the 101st distinct key waits ~0.1 s, the 110th ~1 s. */
	struct wq *q = wq_new(NULL);
	char key[32];
	double d = 0;
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		d = wq_when(q, key);
		ck_assert_double_le(d, 0.006);
	}
	d = wq_when(q, "k100");
	ck_assert_double_ge(d, 0.09);
	ck_assert_double_le(d, 0.11);
	for (int i = 101; i < 110; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		d = wq_when(q, key);
	}
	ck_assert_double_ge(d, 0.95);
	ck_assert_double_le(d, 1.01);
	wq_free(q);
}
END_TEST

START_TEST(delayed_adds)
{
	struct wq *q = wq_new(NULL);
	double t0 = now_s();
	char *k;

	wq_add_after(q, "late", 0.3);
	wq_add_after(q, "early", 0.1);
	wq_add_after(q, "late", 0.05); /* earlier time wins */
	wq_add_after(q, "early", 5);   /* later time ignored */
	ck_assert_uint_eq(wq_len(q), 0);
	k = wq_get(q, 2);
	ck_assert_str_eq(k, "late");
	ck_assert_double_ge(now_s() - t0, 0.045);
	wq_done(q, k);
	free(k);
	k = wq_get(q, 2);
	ck_assert_str_eq(k, "early");
	ck_assert_double_ge(now_s() - t0, 0.095);
	ck_assert_double_le(now_s() - t0, 1.0);
	wq_done(q, k);
	free(k);
	/* Rate-limited add lands after its delay. */
	double d = wq_add_rate_limited(q, "r");
	ck_assert_double_eq_tol(d, 0.005, 1e-9);
	k = wq_get(q, 1);
	ck_assert_str_eq(k, "r");
	wq_done(q, k);
	free(k);
	wq_free(q);
}
END_TEST

START_TEST(retry_now)
{
	struct wq_opts o = { .base_delay_s = 10, .max_delay_s = 60, .qps = 1e6, .burst = 1000000 };
	struct wq *q = wq_new(&o);
	double t0 = now_s();
	char *k;

	/* three failures each: a, b at 40 s; c only delayed (not rate-limited) */
	for (int i = 0; i < 2; i++) {
		wq_when(q, "a");
		wq_when(q, "b");
	}
	ck_assert_double_eq_tol(wq_add_rate_limited(q, "a"), 40, 1e-9);
	ck_assert_double_eq_tol(wq_add_rate_limited(q, "b"), 40, 1e-9);
	wq_add_after(q, "c", 30);
	wq_add_after(q, "d", 0.2);
	ck_assert_ptr_null(wq_get(q, 0.05));
	ck_assert_uint_eq(wq_retry_now(q), 2);
	ck_assert_int_eq(wq_num_requeues(q, "a"), 0); /* forgotten */
	ck_assert_int_eq(wq_num_requeues(q, "b"), 0);
	for (int i = 0; i < 2; i++) {
		k = wq_get(q, 1);
		ck_assert_ptr_nonnull(k);
		ck_assert_msg(!strcmp(k, "a") || !strcmp(k, "b"), "got %s", k);
		wq_done(q, k);
		free(k);
	}
	ck_assert_double_le(now_s() - t0, 1.0);
	/* the plain delays keep their time: d after its 0.2 s, c not within 1 s */
	k = wq_get(q, 1);
	ck_assert_str_eq(k, "d");
	ck_assert_double_ge(now_s() - t0, 0.19);
	wq_done(q, k);
	free(k);
	ck_assert_ptr_null(wq_get(q, 0.3));
	ck_assert_uint_eq(wq_retry_now(q), 0); /* nothing rate-limited waits */
	/* the next failure starts from the first step again */
	ck_assert_double_eq_tol(wq_add_rate_limited(q, "a"), 10, 1e-9);
	wq_free(q);
}
END_TEST

struct worker {
	struct wq *q;
	int handled;
	pthread_mutex_t *mu;
	int *inflight, *max_same;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char *k;
	while ((k = wq_get(w->q, -1))) {
		w->handled++;
		wq_done(w->q, k);
		free(k);
	}
	return NULL;
}

START_TEST(shutdown_wakes_workers)
{
	struct wq *q = wq_new(NULL);
	pthread_t t[3];
	struct worker w[3];
	char key[16];
	int total = 0;

	for (int i = 0; i < 3; i++) {
		w[i] = (struct worker){ .q = q };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "k%d", i % 50);
		wq_add(q, key);
	}
	while (wq_len(q))
		usleep(1000);
	wq_shutdown(q);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		total += w[i].handled;
	}
	/* 50 distinct keys; duplicates may be merged but each key is seen. */
	ck_assert_int_ge(total, 50);
	ck_assert_int_le(total, 200);
	ck_assert(wq_shutting_down(q));
	wq_add(q, "after");
	ck_assert_uint_eq(wq_len(q), 0);
	wq_free(q);
}
END_TEST

/* Reconnect backoff of informers: 0.8 s doubling to 30 s, jitter x[1, 1.5), capped. */
START_TEST(reconnect_backoff)
{
	struct backoff b;
	double step = 0.8, prev_max = 0;
	backoff_init(&b, 0.8, 30);
	for (int i = 0; i < 12; i++) {
		double d = backoff_next(&b);
		double lo = step < 30 ? step : 30, hi = step * 1.5 < 30 ? step * 1.5 : 30;
		ck_assert_msg(d >= lo - 1e-9 && d <= hi + 1e-9, "step %d: %g not in [%g, %g]", i, d, lo, hi);
		prev_max = d > prev_max ? d : prev_max;
		step *= 2;
	}
	ck_assert_double_eq(prev_max, 30);
	backoff_reset(&b);
	double d = backoff_next(&b);
	ck_assert(d >= 0.8 && d < 1.2);
	/* Two clients do not move in lockstep. */
	struct backoff c;
	int differ = 0;
	backoff_init(&b, 0.8, 30);
	backoff_init(&c, 0.8, 30);
	for (int i = 0; i < 5; i++)
		differ += backoff_next(&b) != backoff_next(&c);
	ck_assert_int_gt(differ, 0);
}
END_TEST

/* wq_add_front: a queued key moves to the front (its old place is skipped),
 * a new one goes first, one being processed comes back first after done. */
START_TEST(test_add_front)
{
	struct wq *q = wq_new(NULL);
	char *k, *k2;

	wq_add(q, "a");
	wq_add(q, "b");
	wq_add(q, "c");
	wq_add_front(q, "c");
	ck_assert_uint_eq(wq_len(q), 3);
	wq_add_front(q, "d");
	ck_assert_uint_eq(wq_len(q), 4);
	const char *want[] = { "d", "c", "a" };
	for (int i = 0; i < 3; i++) {
		k = wq_get(q, 0);
		ck_assert_str_eq(k, want[i]);
		wq_done(q, k);
		free(k);
	}
	ck_assert_uint_eq(wq_len(q), 1);
	/* b runs; meanwhile e is queued and b is asked for at the front: after done, b before e */
	k = wq_get(q, 0);
	ck_assert_str_eq(k, "b");
	wq_add(q, "e");
	wq_add_front(q, "b");
	ck_assert_uint_eq(wq_len(q), 1);
	wq_done(q, k);
	free(k);
	ck_assert_uint_eq(wq_len(q), 2);
	k = wq_get(q, 0);
	ck_assert_str_eq(k, "b");
	k2 = wq_get(q, 0);
	ck_assert_str_eq(k2, "e");
	wq_done(q, k);
	wq_done(q, k2);
	free(k);
	free(k2);
	ck_assert_uint_eq(wq_len(q), 0);
	ck_assert_ptr_null(wq_get(q, 0.01));
	/* the stale copy left behind never comes up: a moved key runs once */
	wq_add(q, "x");
	wq_add(q, "y");
	wq_add_front(q, "y");
	k = wq_get(q, 0);
	ck_assert_str_eq(k, "y");
	wq_done(q, k);
	free(k);
	k = wq_get(q, 0);
	ck_assert_str_eq(k, "x");
	wq_done(q, k);
	free(k);
	ck_assert_ptr_null(wq_get(q, 0.01));
	ck_assert_uint_eq(wq_len(q), 0);
	wq_free(q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_workqueue");
	TCase *tc = tcase_create("workqueue");
	tcase_add_test(tc, dedup_and_processing);
	tcase_add_test(tc, test_add_front);
	tcase_add_test(tc, per_key_backoff);
	tcase_add_test(tc, token_bucket);
	tcase_add_test(tc, delayed_adds);
	tcase_add_test(tc, retry_now);
	tcase_add_test(tc, shutdown_wakes_workers);
	tcase_add_test(tc, reconnect_backoff);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
