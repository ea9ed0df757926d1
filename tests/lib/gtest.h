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

static inline void gt_record_skip(const char *test, const char *reason)
{
	const char *f = getenv("GT_SKIP_FILE");
	printf("SKIP: %s: %s\n", test, reason);
	fflush(stdout);
	if (f && *f) {
		FILE *fp = fopen(f, "a");
		if (fp) {
			fprintf(fp, "%s: %s\n", test, reason);
			fclose(fp);
		}
	}
}

/* Runs one suite with the runner's usual settings; returns the exit status. */
static inline int gt_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
