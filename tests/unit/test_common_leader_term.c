/*
 * The three states of a leader's term (common/leader.h): leader_term_* on a
 * clock the test sets (lease 15 s, renew deadline 10 s, the defaults), then
 * the election thread itself over a lock the test scripts (struct
 * leader_lock: each attempt succeeds, fails, or answers late), on short
 * periods: a late renewal inside the lease keeps the term (no on_stopped, no
 * second on_started), none by the lease's end stops it (on_stopped; the
 * state is NOT_LEADING from the lease's end even while an attempt hangs).
 */
#include "common/leader.h"
#include "tests/lib/gtest.h"

#include <pthread.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static struct leader_term term_at(double t0)
{
	struct leader_term t = { .renew_deadline_s = 10, .lease_duration_s = 15 };

	leader_term_begin(&t, t0);
	return t;
}

START_TEST(no_term_is_not_leading)
{
	struct leader_term t = { .renew_deadline_s = 10, .lease_duration_s = 15 };

	ck_assert_int_eq(leader_term_state(&t, 0), LEADER_NOT_LEADING);
	/* a renewal result without a term does not start one */
	ck_assert_int_eq(leader_term_renewed(&t, 1, 2, true), LEADER_NOT_LEADING);
	ck_assert(!t.held);
}
END_TEST

START_TEST(on_time_renewals_lead)
{
	struct leader_term t = term_at(100);

	ck_assert_int_eq(leader_term_state(&t, 100), LEADER_LEADING);
	ck_assert_int_eq(leader_term_state(&t, 109.9), LEADER_LEADING);
	/* every 2 s, each renewal moves the term from when it started */
	for (double s = 102; s < 200; s += 2)
		ck_assert_int_eq(leader_term_renewed(&t, s, s + 0.05, true), LEADER_LEADING);
	ck_assert(t.held);
	ck_assert_double_eq(t.renewed_at, 198);
}
END_TEST

/* The regression: a renewal late past the renew deadline but inside the lease
 * keeps the term; no new term (and so no on_started) follows. */
START_TEST(late_renewal_inside_the_lease_keeps_leadership)
{
	struct leader_term t = term_at(100);

	/* renewals fail from 102 on: at the deadline the term is late, not over */
	ck_assert_int_eq(leader_term_renewed(&t, 102, 102.1, false), LEADER_LEADING);
	ck_assert_int_eq(leader_term_renewed(&t, 108, 108.1, false), LEADER_LEADING);
	ck_assert_int_eq(leader_term_state(&t, 110), LEADER_RENEWING_LATE);
	ck_assert_int_eq(leader_term_renewed(&t, 110, 110.2, false), LEADER_RENEWING_LATE);
	ck_assert_int_eq(leader_term_state(&t, 114.9), LEADER_RENEWING_LATE);
	ck_assert(t.held);
	/* the late renewal succeeds: leading again, the same term */
	ck_assert_int_eq(leader_term_renewed(&t, 112, 114.5, true), LEADER_LEADING);
	ck_assert(t.held);
	ck_assert_double_eq(t.renewed_at, 112);
	ck_assert_int_eq(leader_term_state(&t, 121.9), LEADER_LEADING);
	/* a renewal that took longer than the deadline is late at once */
	ck_assert_int_eq(leader_term_renewed(&t, 113, 123.5, true), LEADER_RENEWING_LATE);
	ck_assert_double_eq(t.renewed_at, 113);
}
END_TEST

/* No renewal by the lease duration ends the term: the elector stops (on_stopped)
 * and the work with it, even if a renewal answers after that. */
START_TEST(renewal_past_the_lease_loses_it)
{
	struct leader_term t = term_at(100);

	ck_assert_int_eq(leader_term_renewed(&t, 112, 112.1, false), LEADER_RENEWING_LATE);
	ck_assert_int_eq(leader_term_state(&t, 115), LEADER_NOT_LEADING);
	/* the attempt in flight since 114 answers ok at 115.5: too late */
	ck_assert_int_eq(leader_term_renewed(&t, 114, 115.5, true), LEADER_NOT_LEADING);
	ck_assert(!t.held);
	/* over for good: later answers do not bring it back */
	ck_assert_int_eq(leader_term_renewed(&t, 116, 116.1, true), LEADER_NOT_LEADING);
	ck_assert_int_eq(leader_term_state(&t, 116.2), LEADER_NOT_LEADING);
	/* a new term is a new acquire */
	leader_term_begin(&t, 120);
	ck_assert_int_eq(leader_term_state(&t, 120.1), LEADER_LEADING);
}
END_TEST

START_TEST(edges)
{
	struct leader_term t = term_at(0);

	/* the deadline and the lease end belong to the later state */
	ck_assert_int_eq(leader_term_state(&t, 10), LEADER_RENEWING_LATE);
	ck_assert_int_eq(leader_term_state(&t, 15), LEADER_NOT_LEADING);
	/* an attempt that started before the last success does not move it back */
	ck_assert_int_eq(leader_term_renewed(&t, 5, 5.1, true), LEADER_LEADING);
	ck_assert_int_eq(leader_term_renewed(&t, 4, 5.2, true), LEADER_LEADING);
	ck_assert_double_eq(t.renewed_at, 5);
	/* the lease ends while failing: exactly at renewed_at + lease */
	ck_assert_int_eq(leader_term_renewed(&t, 19.9, 19.95, false), LEADER_RENEWING_LATE);
	ck_assert_int_eq(leader_term_renewed(&t, 20, 20, false), LEADER_NOT_LEADING);
}
END_TEST

/* ---- the election thread over a scripted lock ---- */

enum lock_mode { LOCK_OK, LOCK_FAIL, LOCK_SLOW_OK };

static struct {
	atomic_int mode;
	atomic_int started, stopped, released, tries;
	double slow_s; /* LOCK_SLOW_OK: how long an attempt takes */
} fl;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool fl_try(void *ud)
{
	(void)ud;
	atomic_fetch_add(&fl.tries, 1);
	switch (atomic_load(&fl.mode)) {
	case LOCK_OK:
		return true;
	case LOCK_SLOW_OK:
		usleep((useconds_t)(fl.slow_s * 1e6));
		return true;
	default:
		return false;
	}
}

static void fl_release(void *ud) { (void)ud; atomic_fetch_add(&fl.released, 1); }
static void fl_started(void *ud) { (void)ud; atomic_fetch_add(&fl.started, 1); }
static void fl_stopped(void *ud) { (void)ud; atomic_fetch_add(&fl.stopped, 1); }

static const struct leader_lock FAKE_LOCK = { fl_try, fl_release, NULL };

/* Retry 0.05 s, renew deadline 0.6 s, lease 2 s: a late window of 1.4 s, wide for a loaded machine. */
static struct leader *fl_leader(void)
{
	struct leader *l;

	memset(&fl, 0, sizeof(fl));
	l = leader_new(NULL, &(struct leader_opts){ .ns = "t", .name = "t", .identity = "me", .lock = &FAKE_LOCK,
						  .lease_duration_s = 2, .renew_deadline_s = 0.6,
						  .retry_period_s = 0.05, .on_started = fl_started,
						  .on_stopped = fl_stopped });
	ck_assert_ptr_nonnull(l);
	return l;
}

/* Polls until leader_state is s (or timeout_s passes); the seconds it took, or -1. */
static double wait_state(struct leader *l, enum leader_state s, double timeout_s)
{
	double t0 = now_s();

	while (now_s() - t0 < timeout_s) {
		if (leader_state(l) == s)
			return now_s() - t0;
		usleep(5000);
	}
	return -1;
}

START_TEST(elector_late_renewal_keeps_the_term)
{
	struct leader *l = fl_leader();
	double t;

	ck_assert_int_eq(leader_start(l), 0);
	ck_assert_double_ge(wait_state(l, LEADER_LEADING, 5), 0);
	/* the term begins (LEADING) just before on_started runs */
	for (int i = 0; i < 200 && !atomic_load(&fl.started); i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&fl.started), 1);
	ck_assert(leader_is_leader(l));
	/* renewals fail: past the renew deadline the term is late, not over */
	atomic_store(&fl.mode, LOCK_FAIL);
	t = wait_state(l, LEADER_RENEWING_LATE, 5);
	ck_assert_double_ge(t, 0.4);
	ck_assert(!leader_is_leader(l));
	ck_assert_int_eq(atomic_load(&fl.stopped), 0);
	/* the late renewal succeeds: leading again, the same term */
	atomic_store(&fl.mode, LOCK_OK);
	ck_assert_double_ge(wait_state(l, LEADER_LEADING, 1.2), 0);
	ck_assert(leader_is_leader(l));
	usleep(300 * 1000);
	ck_assert_int_eq(leader_state(l), LEADER_LEADING);
	ck_assert_int_eq(atomic_load(&fl.stopped), 0);
	ck_assert_int_eq(atomic_load(&fl.started), 1);
	leader_stop(l);
	ck_assert_int_eq(atomic_load(&fl.released), 1);
	ck_assert_int_eq(atomic_load(&fl.stopped), 1);
	ck_assert_int_eq(leader_state(l), LEADER_NOT_LEADING);
	leader_free(l);
}
END_TEST

START_TEST(elector_no_renewal_by_the_lease_stops)
{
	struct leader *l = fl_leader();
	double t0, t;

	ck_assert_int_eq(leader_start(l), 0);
	ck_assert_double_ge(wait_state(l, LEADER_LEADING, 5), 0);
	atomic_store(&fl.mode, LOCK_FAIL);
	t0 = now_s();
	ck_assert_double_ge(wait_state(l, LEADER_RENEWING_LATE, 5), 0);
	ck_assert_double_ge(wait_state(l, LEADER_NOT_LEADING, 5), 0);
	t = now_s() - t0;
	/* the lease ends 2 s after the last success (up to one retry before the failures began) */
	ck_assert_double_ge(t, 2 - 0.05 - 0.05);
	for (int i = 0; i < 200 && !atomic_load(&fl.stopped); i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&fl.stopped), 1);
	ck_assert(!leader_is_leader(l));
	/* a new term is a new acquire: on_started again */
	atomic_store(&fl.mode, LOCK_OK);
	ck_assert_double_ge(wait_state(l, LEADER_LEADING, 2), 0);
	for (int i = 0; i < 200 && atomic_load(&fl.started) < 2; i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&fl.started), 2);
	leader_free(l);
}
END_TEST

START_TEST(elector_renewal_answering_past_the_lease_loses_it)
{
	struct leader *l = fl_leader();
	int tries;

	ck_assert_int_eq(leader_start(l), 0);
	ck_assert_double_ge(wait_state(l, LEADER_LEADING, 5), 0);
	/* the next attempt hangs 3 s, past the lease, and then says ok */
	fl.slow_s = 3;
	tries = atomic_load(&fl.tries);
	atomic_store(&fl.mode, LOCK_SLOW_OK);
	for (int i = 0; i < 200 && atomic_load(&fl.tries) == tries; i++)
		usleep(5000);
	atomic_store(&fl.mode, LOCK_FAIL); /* (any later attempt fails) */
	ck_assert_double_ge(wait_state(l, LEADER_RENEWING_LATE, 2), 0);
	/* the work stops at the lease's end while the attempt still hangs */
	ck_assert_double_ge(wait_state(l, LEADER_NOT_LEADING, 2.5), 0);
	ck_assert_int_eq(atomic_load(&fl.stopped), 0);
	/* its late "ok" does not bring the term back: it ends */
	for (int i = 0; i < 600 && !atomic_load(&fl.stopped); i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&fl.stopped), 1);
	ck_assert_int_eq(leader_state(l), LEADER_NOT_LEADING);
	ck_assert_int_eq(atomic_load(&fl.started), 1);
	leader_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_leader_term");
	TCase *tc = tcase_create("term");

	tcase_add_test(tc, no_term_is_not_leading);
	tcase_add_test(tc, on_time_renewals_lead);
	tcase_add_test(tc, late_renewal_inside_the_lease_keeps_leadership);
	tcase_add_test(tc, renewal_past_the_lease_loses_it);
	tcase_add_test(tc, edges);
	suite_add_tcase(s, tc);
	tc = tcase_create("elector");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, elector_late_renewal_keeps_the_term);
	tcase_add_test(tc, elector_no_renewal_by_the_lease_stops);
	tcase_add_test(tc, elector_renewal_answering_past_the_lease_loses_it);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
