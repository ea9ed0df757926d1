/* Test helpers shared by every check suite. */
#ifndef GALACTIC_TESTS_GTEST_H
#define GALACTIC_TESTS_GTEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * GT_SKIP: the test cannot run here (kernel feature missing, not root...).
 * It prints the reason and records it in $GT_SKIP_FILE, so the suite runner
 * counts the test as skipped, never as passed. Ends the test function.
 */
#define GT_SKIP(...)                                                        \
	do {                                                                \
		char gt_reason_[512];                                       \
		snprintf(gt_reason_, sizeof(gt_reason_), __VA_ARGS__);      \
		gt_record_skip(__func__, gt_reason_);                       \
		return;                                                     \
	} while (0)

/* Records a skip in $GT_SKIP_FILE (a skip that cannot be recorded fails the test). */
void gt_record_skip(const char *test, const char *reason);

/* Tests registered so far (every tcase_add_*test counts; loop tests per iteration). */
unsigned gt_registered_tests(void);

/*
 * Runs one suite with the runner's usual settings; returns the exit status.
 * Prints "gt: N tests registered" for the runner, and refuses to run a
 * subset (CK_RUN_CASE and friends) unless GT_ALLOW_FILTER is set.
 */
int gt_run(Suite *s);

#endif
