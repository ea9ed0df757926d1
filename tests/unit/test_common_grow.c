/* G_GROW / G_RESERVE (common/grow.h): growth by doubling, overflow, and a failed realloc. */
#include <stddef.h>
#include <stdlib.h>

/* Every realloc of the helper goes through here: a test can make the next one fail. */
static int fail_next_realloc;
static size_t reallocs;
static void *test_realloc(void *p, size_t n)
{
	reallocs++;
	if (fail_next_realloc) {
		fail_next_realloc = 0;
		return NULL;
	}
	return realloc(p, n);
}
#define realloc test_realloc
#include "common/grow.h"
#undef realloc

#include "tests/lib/gtest.h"

#include <stdint.h>

struct pair {
	uint64_t a, b;
};

START_TEST(grows_by_doubling)
{
	struct pair *v = NULL;
	size_t n = 0, cap = 0, grew = 0, before;

	reallocs = 0;
	for (size_t i = 0; i < 1000; i++) {
		before = cap;
		ck_assert_int_eq(G_GROW(v, cap, n, 16), 0);
		ck_assert_uint_ge(cap, n + 1);
		if (cap != before) {
			grew++;
			/* first 16, then each growth doubles */
			ck_assert_uint_eq(cap, before ? before * 2 : 16);
		}
		v[n++] = (struct pair){ i, ~(uint64_t)i };
	}
	/* 16, 32, ..., 1024: 7 growths for 1000 pushes, one realloc each */
	ck_assert_uint_eq(grew, 7);
	ck_assert_uint_eq(reallocs, 7);
	ck_assert_uint_eq(cap, 1024);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(v[i].a, i);
		ck_assert_uint_eq(v[i].b, ~(uint64_t)i);
	}
	/* room already there: nothing moves */
	before = cap;
	ck_assert_int_eq(G_GROW(v, cap, 10, 16), 0);
	ck_assert_uint_eq(cap, before);
	ck_assert_uint_eq(reallocs, 7);
	free(v);
}
END_TEST

START_TEST(reserve_jumps_to_need)
{
	char *b = NULL;
	size_t cap = 0;

	/* min 0 starts at 1 */
	ck_assert_int_eq(G_RESERVE(b, cap, 1, 0), 0);
	ck_assert_uint_eq(cap, 1);
	/* a large need doubles until it fits: 1 -> 2 -> ... -> 8192 for 5000 */
	ck_assert_int_eq(G_RESERVE(b, cap, 5000, 0), 0);
	ck_assert_uint_eq(cap, 8192);
	b[4999] = 'x';
	/* from a min larger than the need */
	free(b);
	b = NULL, cap = 0;
	ck_assert_int_eq(G_RESERVE(b, cap, 3, 4096), 0);
	ck_assert_uint_eq(cap, 4096);
	/* a need of 0 allocates nothing */
	free(b);
	b = NULL, cap = 0;
	ck_assert_int_eq(G_RESERVE(b, cap, 0, 64), 0);
	ck_assert_ptr_null(b);
	ck_assert_uint_eq(cap, 0);
}
END_TEST

START_TEST(overflow_leaves_the_array)
{
	struct pair *v = NULL;
	size_t n = 3, cap = 0;

	ck_assert_int_eq(G_GROW(v, cap, n, 4), 0);
	v[0].a = 42;
	reallocs = 0;
	/* need * sizeof(struct pair) does not fit a size_t */
	ck_assert_int_eq(G_RESERVE(v, cap, SIZE_MAX / sizeof(*v) + 1, 4), -EOVERFLOW);
	/* n + 1 wraps */
	ck_assert_int_eq(G_GROW(v, cap, SIZE_MAX, 4), -EOVERFLOW);
	ck_assert_uint_eq(reallocs, 0);
	ck_assert_uint_eq(cap, 4);
	ck_assert_uint_eq(v[0].a, 42);
	/* the largest need that fits: doubling would overflow, the need itself is asked */
	ck_assert_uint_eq(g_grow_cap(4, SIZE_MAX / 16, 16, 4), SIZE_MAX / 16);
	ck_assert_uint_eq(g_grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX, 1, 0), SIZE_MAX);
	ck_assert_uint_eq(g_grow_cap(4, 5, 0, 0), 0);
	free(v);
}
END_TEST

START_TEST(failed_realloc_leaves_the_array)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	for (; n < 8; n++) {
		ck_assert_int_eq(G_GROW(v, cap, n, 8), 0);
		v[n] = (int)n * 3;
	}
	ck_assert_uint_eq(cap, 8);
	fail_next_realloc = 1;
	ck_assert_int_eq(G_GROW(v, cap, n, 8), -ENOMEM);
	/* still the caller's: same capacity, same contents, still freeable */
	ck_assert_uint_eq(cap, 8);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(v[i], (int)i * 3);
	/* the next try succeeds */
	ck_assert_int_eq(G_GROW(v, cap, n, 8), 0);
	ck_assert_uint_eq(cap, 16);
	v[n] = 7;
	ck_assert_int_eq(v[7], 21);
	free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_grow");
	TCase *tc = tcase_create("grow");

	tcase_add_test(tc, grows_by_doubling);
	tcase_add_test(tc, reserve_jumps_to_need);
	tcase_add_test(tc, overflow_leaves_the_array);
	tcase_add_test(tc, failed_realloc_leaves_the_array);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
