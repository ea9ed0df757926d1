/*
 * The three states of a leader's term (common/leader.h: leader_term_*), on a
 * clock the test sets: the functions the election thread drives and
 * leader_state() reads. Lease 15 s, renew deadline 10 s (the defaults).
 */
#include "common/leader.h"
#include "tests/lib/gtest.h"

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
	return gt_run(s);
}
