/*
 * Purpose-built check binaries for tests/runner-selftest.sh: each one is a
 * way a suite can look green while proving nothing, and the runner
 * (tests/run-suites.sh) must fail it. runner_<case>.c defines CASE_<CASE>
 * and includes this file:
 *   runner_ok     one passing test (the control: the runner passes it)
 *   runner_skip   a test that skips for a reason tests/expected-skips does
 *                 not declare
 *   runner_none   two tests registered, none run (a filter the binary
 *                 itself sets, as an inherited CK_RUN_CASE would)
 *   runner_empty  a suite that registers no test at all
 *   runner_hang   a test that never returns
 * Not part of any suite: only the self-test runs them.
 */
#include <unistd.h>

#include "tests/lib/gtest.h"

#if !defined(CASE_EMPTY)
START_TEST(t_ok)
{
	ck_assert_int_eq(1 + 1, 2);
}
END_TEST
#endif

#if defined(CASE_SKIP)
START_TEST(t_skip)
{
	GT_SKIP("purpose-built: a skip no kernel fact explains");
}
END_TEST
#endif

#if defined(CASE_HANG)
START_TEST(t_hang)
{
	for (;;)
		pause();
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("runner_selftest");
	TCase *tc = tcase_create("case");

#if defined(CASE_OK)
	tcase_add_test(tc, t_ok);
#elif defined(CASE_SKIP)
	tcase_add_test(tc, t_ok);
	tcase_add_test(tc, t_skip);
#elif defined(CASE_NONE)
	tcase_add_test(tc, t_ok);
	tcase_add_test(tc, t_ok);
	setenv("GT_ALLOW_FILTER", "1", 1);
	setenv("CK_RUN_CASE", "no-such-case", 1);
#elif defined(CASE_EMPTY)
#elif defined(CASE_HANG)
	tcase_add_test(tc, t_ok);
	tcase_add_test(tc, t_hang);
	tcase_set_timeout(tc, 3600);
#else
#error "define one of CASE_OK, CASE_SKIP, CASE_NONE, CASE_EMPTY, CASE_HANG"
#endif
	suite_add_tcase(s, tc);
	return gt_run(s);
}
