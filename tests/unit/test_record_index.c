/*
 * The record's hash index (agent/record_index.h): after thousands of random
 * inserts and removals, with hashes chosen to collide (long probe runs that
 * wrap around the table's end) and one pointer under several tags, every
 * hash still finds exactly the entries it holds, removals take only the
 * entry named, and the table never holds more than it was given.
 */
#include "tests/lib/gtest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record_index.h"

#define NOBJ 600

struct ent {
	uint64_t h;
	int obj;
	uint32_t tag;
	bool in;
};

static int objs[NOBJ];

/* Entries of hash h the index holds, as a count per (obj, tag) seen; fails on one it should not hold. */
static size_t count_found(const struct rec_index *x, const struct ent *e, size_t ne, uint64_t h)
{
	size_t n = 0;

	for (size_t s = rec_index_first(x, h); s != REC_INDEX_END; s = rec_index_next(x, h, s)) {
		bool known = false;

		ck_assert_uint_eq(x->s[s].h, h);
		for (size_t i = 0; i < ne && !known; i++)
			known = e[i].in && e[i].h == h && &objs[e[i].obj] == x->s[s].p && e[i].tag == x->s[s].tag;
		ck_assert_msg(known, "hash %llx: an entry that was removed or never put", (unsigned long long)h);
		n++;
	}
	return n;
}

static void check_all(const struct rec_index *x, const struct ent *e, size_t ne)
{
	size_t in = 0;

	for (size_t i = 0; i < ne; i++) {
		size_t want = 0;
		bool seen = false;

		in += e[i].in;
		for (size_t j = 0; j < i && !seen; j++)
			seen = e[j].h == e[i].h;
		if (seen)
			continue; /* each hash once */
		for (size_t j = 0; j < ne; j++)
			want += e[j].in && e[j].h == e[i].h;
		ck_assert_uint_eq(count_found(x, e, ne, e[i].h), want);
	}
	ck_assert_uint_eq(x->n, in);
	ck_assert(x->cap == 0 || x->n * 2 <= x->cap);
}

START_TEST(t_random_puts_and_dels)
{
	struct rec_index x = { 0 };
	struct ent *e = calloc(3 * NOBJ, sizeof(*e));
	size_t ne = 0;
	unsigned seed = 12345;

	ck_assert_ptr_nonnull(e);
	/* low bits of few values (a few home slots, long probe runs; half of
	 * them at the table's end, so runs wrap around) and high bits that
	 * differ (many hashes per home slot) */
	for (int i = 0; i < NOBJ; i++)
		for (uint32_t t = 0; t < (i % 3 == 0 ? 3u : 1u); t++) {
			uint64_t low = (uint64_t)(i % 13) + 16u * t;

			e[ne++] = (struct ent){ .h = ((uint64_t)(i % 97 + 1) << 40) | (i & 1 ? 0xffffffu - low : low),
						.obj = i, .tag = t };
		}
	for (int round = 0; round < 6000; round++) {
		struct ent *x1 = &e[(size_t)rand_r(&seed) % ne];

		if (x1->in) {
			ck_assert(rec_index_del(&x, x1->h, &objs[x1->obj], x1->tag));
			x1->in = false;
			/* removed once: not again */
			ck_assert(!rec_index_del(&x, x1->h, &objs[x1->obj], x1->tag));
		} else {
			ck_assert_int_eq(rec_index_put(&x, x1->h, &objs[x1->obj], x1->tag), 0);
			x1->in = true;
		}
		if (round % 500 == 499)
			check_all(&x, e, ne);
	}
	/* everything in, then everything out in another order */
	for (size_t i = 0; i < ne; i++)
		if (!e[i].in) {
			ck_assert_int_eq(rec_index_put(&x, e[i].h, &objs[e[i].obj], e[i].tag), 0);
			e[i].in = true;
		}
	check_all(&x, e, ne);
	for (size_t i = ne; i-- > 0;) {
		ck_assert(rec_index_del(&x, e[i].h, &objs[e[i].obj], e[i].tag));
		e[i].in = false;
		if (i % 97 == 0)
			check_all(&x, e, ne);
	}
	ck_assert_uint_eq(x.n, 0);
	ck_assert_uint_eq(rec_index_first(&x, e[0].h), REC_INDEX_END);
	/* clear keeps the memory, and the index works again after it */
	ck_assert_int_eq(rec_index_put(&x, 7, &objs[0], 0), 0);
	rec_index_clear(&x);
	ck_assert_uint_eq(x.n, 0);
	ck_assert_uint_eq(rec_index_first(&x, 7), REC_INDEX_END);
	ck_assert_int_eq(rec_index_put(&x, 7, &objs[1], 2), 0);
	ck_assert_uint_eq(rec_index_first(&x, 7) != REC_INDEX_END, 1);
	ck_assert_ptr_eq(x.s[rec_index_first(&x, 7)].p, &objs[1]);
	rec_index_free(&x);
	free(e);
}
END_TEST

START_TEST(t_edges)
{
	struct rec_index x = { 0 };
	const char *a[] = { "vpc", "att" }, *b[] = { "vpca", "tt" };

	/* an empty index finds nothing and removes nothing */
	ck_assert_uint_eq(rec_index_first(&x, 1), REC_INDEX_END);
	ck_assert(!rec_index_del(&x, 1, &objs[0], 0));
	/* a NULL pointer would read as an empty slot: refused */
	ck_assert_int_eq(rec_index_put(&x, 1, NULL, 0), -EINVAL);
	ck_assert_uint_eq(x.n, 0);
	/* the parts are separated: ("vpc","att") and ("vpca","tt") differ */
	ck_assert(rec_index_hash(1, a, 2) != rec_index_hash(1, b, 2));
	/* the seed (the kind of key) separates the same strings */
	ck_assert(rec_index_hash(1, a, 2) != rec_index_hash(2, a, 2));
	rec_index_free(&x);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("record_index");
	TCase *tc = tcase_create("record_index");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_random_puts_and_dels);
	tcase_add_test(tc, t_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
