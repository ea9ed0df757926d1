/*
 * Linked into every check suite (mk/rules.mk wraps _tcase_add_test with
 * -Wl,--wrap): counts and names the tests a binary registers, so the runner
 * can prove that every registered test ran (an inherited CK_RUN_CASE or a
 * suite that stops early cannot pass as a short green run) and can name the
 * test that hung when the outer timeout fires.
 */
#include "tests/lib/gtest.h"

#include <errno.h>
#include <string.h>

void __real__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int exit_value, int start,
			    int end);
void __wrap__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int exit_value, int start,
			    int end);

static unsigned gt_registered;

void __wrap__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int exit_value, int start,
			    int end)
{
	const char *f = getenv("GT_REGISTERED_FILE");

	if (end > start)
		gt_registered += (unsigned)(end - start);
	if (f && *f && ttest) {
		FILE *fp = fopen(f, "a");

		if (fp) {
			for (int i = start; i < end; i++)
				fprintf(fp, "%s\n", ttest->name);
			fclose(fp);
		}
	}
	__real__tcase_add_test(tc, ttest, sig, exit_value, start, end);
}

unsigned gt_registered_tests(void)
{
	return gt_registered;
}

void gt_record_skip(const char *test, const char *reason)
{
	const char *f = getenv("GT_SKIP_FILE");

	printf("SKIP: %s: %s\n", test, reason);
	fflush(stdout);
	if (f && *f) {
		FILE *fp = fopen(f, "a");

		/* A skip that cannot be recorded would read as a pass: fail instead. */
		if (!fp)
			ck_abort_msg("cannot record skip of %s in %s: %s", test, f, strerror(errno));
		fprintf(fp, "%s: %s\n", test, reason);
		fclose(fp);
	}
}

static const char *const gt_filters[] = {
	"CK_RUN_CASE", "CK_RUN_SUITE", "CK_INCLUDE_TAGS", "CK_EXCLUDE_TAGS",
};

int gt_run(Suite *s)
{
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(gt_filters) / sizeof(gt_filters[0]); i++) {
		const char *v = getenv(gt_filters[i]);

		if (v && *v && !getenv("GT_ALLOW_FILTER")) {
			fprintf(stderr,
				"gt: %s=%s is set: refusing to run a subset of the suite "
				"(set GT_ALLOW_FILTER=1 to do that by hand)\n",
				gt_filters[i], v);
			return EXIT_FAILURE;
		}
	}
	/* stdout is a pipe to the runner: line-buffered, what a test printed
	 * before the outer timeout killed its binary reaches the log. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sr = srunner_create(s);
	printf("gt: %u tests registered\n", gt_registered);
	fflush(stdout);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
