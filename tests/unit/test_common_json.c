/* gj_subset (common/json.h): objects, conditions by type, and both array rules. */
#include "common/json.h"
#include "tests/lib/gtest.h"

static bool sub(const char *want, const char *have, enum gj_array_rule rule)
{
	json_t *w = json_loads(want, JSON_DECODE_ANY, NULL),
	       *h = have ? json_loads(have, JSON_DECODE_ANY, NULL) : NULL;
	bool r;

	ck_assert_ptr_nonnull(w);
	ck_assert(!have || h);
	r = gj_subset(w, h, rule);
	json_decref(w);
	json_decref(h);
	return r;
}

static const enum gj_array_rule BOTH[] = { GJ_ARRAYS_CONTAIN, GJ_ARRAYS_SAME_LENGTH };

START_TEST(objects_and_scalars)
{
	for (size_t i = 0; i < 2; i++) {
		enum gj_array_rule r = BOTH[i];

		ck_assert(sub("{}", "{\"a\":1}", r));
		ck_assert(sub("{\"a\":1}", "{\"a\":1,\"b\":2}", r));
		ck_assert(sub("{\"a\":{\"x\":\"s\"}}", "{\"a\":{\"x\":\"s\",\"y\":0}}", r));
		ck_assert(!sub("{\"a\":1}", "{\"a\":2}", r));
		ck_assert(!sub("{\"a\":1}", "{\"b\":1}", r));
		ck_assert(!sub("{\"a\":{\"x\":1}}", "{\"a\":[1]}", r));
		ck_assert(!sub("{\"a\":1}", "[1]", r));
		ck_assert(!sub("{\"a\":1}", NULL, r));
		ck_assert(sub("\"s\"", "\"s\"", r));
		ck_assert(!sub("1", "1.0", r)); /* json_equal: an integer is not a real */
		ck_assert(!sub("null", NULL, r));
	}
}
END_TEST

START_TEST(conditions_by_type)
{
	static const char *have = "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"t\":\"x\"},"
				  "{\"type\":\"Programmed\",\"status\":\"False\"}]}";

	for (size_t i = 0; i < 2; i++) {
		enum gj_array_rule r = BOTH[i];

		/* order free, each matched by type, members compared as a subset */
		ck_assert(sub("{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"False\"},"
			      "{\"type\":\"Ready\",\"status\":\"True\"}]}", have, r));
		ck_assert(!sub("{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\"},"
			       "{\"type\":\"Ready\",\"status\":\"True\"}]}", have, r));
		ck_assert(!sub("{\"conditions\":[{\"type\":\"Gone\",\"status\":\"True\"},"
			       "{\"type\":\"Ready\",\"status\":\"True\"}]}", have, r));
		ck_assert(!sub("{\"conditions\":[{\"type\":\"Ready\"}]}", "{\"conditions\":{}}", r));
	}
	/* the first element of a type is the one compared */
	ck_assert(!sub("[{\"type\":\"A\",\"v\":2}]", "[{\"type\":\"A\",\"v\":1},{\"type\":\"A\",\"v\":2}]",
		       GJ_ARRAYS_CONTAIN));
}
END_TEST

START_TEST(arrays_contain)
{
	enum gj_array_rule r = GJ_ARRAYS_CONTAIN;

	/* have may hold more conditions than want */
	ck_assert(sub("[{\"type\":\"Ready\"}]", "[{\"type\":\"Other\"},{\"type\":\"Ready\",\"x\":1}]", r));
	ck_assert(!sub("[{\"type\":\"A\"},{\"type\":\"B\"}]", "[{\"type\":\"A\"}]", r));
	/* an untyped element: the arrays must be equal as a whole */
	ck_assert(sub("[1,2]", "[1,2]", r));
	ck_assert(!sub("[1,2]", "[1,2,3]", r));
	ck_assert(!sub("[2,1]", "[1,2]", r));
	ck_assert(!sub("[{\"a\":1}]", "[{\"a\":1,\"b\":2}]", r));
	ck_assert(sub("[{\"type\":\"A\"},3]", "[{\"type\":\"A\"},3]", r));
	ck_assert(!sub("[{\"type\":\"A\"},3]", "[{\"type\":\"A\",\"x\":1},3]", r)); /* whole, not subset */
	ck_assert(sub("[]", "[1]", r));
}
END_TEST

START_TEST(arrays_same_length)
{
	enum gj_array_rule r = GJ_ARRAYS_SAME_LENGTH;

	/* have must hold exactly as many elements */
	ck_assert(!sub("[{\"type\":\"Ready\"}]", "[{\"type\":\"Other\"},{\"type\":\"Ready\",\"x\":1}]", r));
	ck_assert(sub("[{\"type\":\"Ready\"},{\"type\":\"Other\"}]",
		      "[{\"type\":\"Other\"},{\"type\":\"Ready\",\"x\":1}]", r));
	ck_assert(!sub("[]", "[1]", r));
	ck_assert(sub("[]", "[]", r));
	/* untyped elements: equal position by position */
	ck_assert(sub("[1,2]", "[1,2]", r));
	ck_assert(!sub("[2,1]", "[1,2]", r));
	ck_assert(!sub("[{\"a\":1}]", "[{\"a\":1,\"b\":2}]", r));
	/* typed ones stay subsets beside them */
	ck_assert(sub("[{\"type\":\"A\"},3]", "[{\"type\":\"A\",\"x\":1},3]", r));
	ck_assert(!sub("[{\"type\":\"A\"},3]", "[{\"type\":\"A\",\"x\":1},4]", r));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_json");
	TCase *tc = tcase_create("subset");

	tcase_add_test(tc, objects_and_scalars);
	tcase_add_test(tc, conditions_by_type);
	tcase_add_test(tc, arrays_contain);
	tcase_add_test(tc, arrays_same_length);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
