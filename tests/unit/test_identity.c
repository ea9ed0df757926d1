/* The pure parts of node identity (agent/identity/ident.h). */
#include "agent/identity/ident.h"
#include "tests/lib/gtest.h"

#include <string.h>

static json_t *ndp(const char *spec_json)
{
	char buf[1024];
	json_t *j;

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"node-a\",\"uid\":\"uid-1\",\"generation\":3},\"spec\":%s}", spec_json);
	j = json_loads(buf, 0, NULL);
	ck_assert_ptr_nonnull(j);
	return j;
}

START_TEST(test_spec_parse_good)
{
	json_t *j = ndp("{\"sidBlock\":\"FCBB:BB00:0001::/48\",\"nodeID\":42,\"uplinks\":[\"eth0\",\"bond0.100\"]}");
	struct gid_spec s;
	char why[256];
	static const uint8_t want[6] = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 };

	ck_assert_int_eq(gid_spec_parse(j, "node-a", &s, why, sizeof(why)), 0);
	ck_assert_mem_eq(s.block, want, 6);
	ck_assert_str_eq(s.block_str, "fcbb:bb00:1::/48"); /* canonical, whatever the operator typed */
	ck_assert_uint_eq(s.pin, 42);
	ck_assert_uint_eq(s.n_uplinks, 2);
	ck_assert_str_eq(s.uplinks[1], "bond0.100");
	ck_assert_str_eq(s.uid, "uid-1");
	ck_assert_int_eq(s.generation, 3);
	json_decref(j);
}
END_TEST

START_TEST(test_spec_parse_bad)
{
	static const struct { const char *spec, *why; } cases[] = {
		{ "{}", "sidBlock missing" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/64\"}", "not an IPv6 /48" },
		{ "{\"sidBlock\":\"10.0.0.0/48\"}", "not an IPv6 /48" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::5/48\"}", "host bits set" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"nodeID\":0}", "outside 1-57343" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"nodeID\":57344}", "outside 1-57343" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"nodeID\":\"7\"}", "not an integer" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"uplinks\":[\"a/b\"]}", "a/b is not an interface name" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"uplinks\":[\"0123456789abcdef\"]}", "not an interface name" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"uplinks\":[1]}", "not a string" },
		{ "{\"sidBlock\":\"fcbb:bb00:1::/48\",\"uplinks\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]}", "more than 8" },
	};
	struct gid_spec s;
	char why[256];
	json_t *j;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = ndp(cases[i].spec);
		ck_assert_int_ne(gid_spec_parse(j, "node-a", &s, why, sizeof(why)), 0);
		ck_assert_msg(strstr(why, cases[i].why), "%s: why=%s", cases[i].spec, why);
		json_decref(j);
	}
	/* another node's object */
	j = ndp("{\"sidBlock\":\"fcbb:bb00:1::/48\"}");
	ck_assert_int_ne(gid_spec_parse(j, "node-b", &s, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "not node node-b"), "%s", why);
	json_decref(j);
}
END_TEST

START_TEST(test_names_and_locator)
{
	static const uint8_t b[6] = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 };
	uint8_t back[6];
	uint16_t id;
	char name[GID_NAME_LEN + 1], loc[64];

	gid_object_name(b, 42, name, sizeof(name));
	ck_assert_str_eq(name, "fcbbbb000001-002a");
	ck_assert_int_eq(gid_name_parse(name, back, &id), 0);
	ck_assert_mem_eq(back, b, 6);
	ck_assert_uint_eq(id, 42);
	ck_assert_int_ne(gid_name_parse("fcbbbb000001-0000", back, &id), 0);  /* ID 0 */
	ck_assert_int_ne(gid_name_parse("fcbbbb000001-e000", back, &id), 0);  /* reserved */
	ck_assert_int_ne(gid_name_parse("FCBBBB000001-002a", back, &id), 0);  /* not lowercase */
	ck_assert_int_ne(gid_name_parse("fcbbbb000001_002a", back, &id), 0);
	ck_assert_int_ne(gid_name_parse("fcbbbb000001-002", back, &id), 0);
	gid_locator(b, 42, loc, sizeof(loc));
	ck_assert_str_eq(loc, "fcbb:bb00:1:2a::/64");
}
END_TEST

START_TEST(test_hash_and_next_free)
{
	struct gid_taken *t = calloc(1, sizeof(*t));
	uint16_t h = gid_hash_start("node-a");

	ck_assert(h >= GID_ID_MIN && h <= GID_ID_MAX);
	ck_assert_uint_eq(gid_hash_start("node-a"), h); /* stable */
	ck_assert_uint_ne(gid_hash_start("node-b"), h);
	ck_assert_uint_eq(gid_next(GID_ID_MAX), GID_ID_MIN);
	ck_assert_uint_eq(gid_next_free(t, 7), 7);
	gid_taken_set(t, 7);
	gid_taken_set(t, 8);
	ck_assert_uint_eq(gid_next_free(t, 7), 9);
	gid_taken_set(t, GID_ID_MAX);
	ck_assert_uint_eq(gid_next_free(t, GID_ID_MAX), 1); /* wraps */
	for (unsigned i = GID_ID_MIN; i <= GID_ID_MAX; i++)
		gid_taken_set(t, (uint16_t)i);
	ck_assert_uint_eq(gid_next_free(t, 100), 0);        /* full */
	free(t);
}
END_TEST

static struct gid_held held(const char *node, const uint8_t b[6], uint16_t id, const char *owner)
{
	struct gid_held h;

	memset(&h, 0, sizeof(h));
	snprintf(h.node, sizeof(h.node), "%s", node);
	memcpy(h.block, b, 6);
	h.id = id;
	gid_object_name(b, id, h.name, sizeof(h.name));
	snprintf(h.owner_uid, sizeof(h.owner_uid), "%s", owner);
	return h;
}

START_TEST(test_choose)
{
	static const uint8_t b1[6] = { 0xfc, 0, 0, 0, 0, 1 }, b2[6] = { 0xfc, 0, 0, 0, 0, 2 };
	struct gid_spec s = { .pin = 0 };
	struct gid_held own[4] = { 0 };
	struct gid_choice c;

	memcpy(s.block, b1, 6);
	snprintf(s.uid, sizeof(s.uid), "u1");
	/* nothing held: allocate, preferring the record's */
	gid_choose(&s, own, 0, 33, &c);
	ck_assert_int_eq(c.keep, -1);
	ck_assert_uint_eq(c.want, 33);
	/* several held in the block: the record's wins, the others go */
	own[0] = held("n", b1, 9, "u1");
	own[1] = held("n", b1, 33, "u1");
	own[2] = held("n", b2, 5, "u1");      /* another block */
	own[3] = held("n", b1, 2, "u-old");   /* an earlier NodeDataplane's */
	gid_choose(&s, own, 4, 33, &c);
	ck_assert_int_eq(c.keep, 1);
	ck_assert(c.release[0] && !c.release[1] && c.release[2] && c.release[3]);
	/* no record: the lowest usable (2 is stale, so 9) */
	gid_choose(&s, own, 4, 0, &c);
	ck_assert_int_eq(c.keep, 0);
	/* a pin not yet held: create it, and release everything once it is */
	s.pin = 77;
	gid_choose(&s, own, 4, 33, &c);
	ck_assert_int_eq(c.keep, -1);
	ck_assert_uint_eq(c.want, 77);
	ck_assert(c.release[0] && c.release[1] && c.release[2] && c.release[3]);
	/* the pin held: kept */
	s.pin = 9;
	gid_choose(&s, own, 4, 33, &c);
	ck_assert_int_eq(c.keep, 0);
	ck_assert(!c.release[0] && c.release[1]);
}
END_TEST

START_TEST(test_nodeid_object_and_parse)
{
	json_t *j = ndp("{\"sidBlock\":\"fcbb:bb00:1::/48\"}"), *o, *bad;
	struct gid_spec s;
	struct gid_held h;
	char why[256];

	ck_assert_int_eq(gid_spec_parse(j, "node-a", &s, why, sizeof(why)), 0);
	o = gid_nodeid_new("node-a", &s, 0x1234);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), "fcbbbb000001-1234");
	ck_assert_int_eq(gid_held_parse(o, &h, why, sizeof(why)), 0);
	ck_assert_str_eq(h.node, "node-a");
	ck_assert_uint_eq(h.id, 0x1234);
	ck_assert_str_eq(h.owner_uid, "uid-1");
	/* a hold whose spec says another ID than its name: not trusted */
	bad = json_deep_copy(o);
	json_object_set_new(json_object_get(bad, "spec"), "nodeID", json_integer(5));
	ck_assert_int_ne(gid_held_parse(bad, &h, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "does not match the name"), "%s", why);
	json_decref(bad);
	bad = json_deep_copy(o);
	json_object_set_new(json_object_get(bad, "spec"), "block", json_string("fcbb:bb00:2::/48"));
	ck_assert_int_ne(gid_held_parse(bad, &h, why, sizeof(why)), 0);
	json_decref(bad);
	json_decref(o);
	json_decref(j);
}
END_TEST

START_TEST(test_status_intent)
{
	static const uint8_t b[6] = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 };
	static const char *const caps[] = { "seg6", "seg6local" };
	struct gid_status_in in = {
		.node = "node-a", .instance = "h/1", .version = "0.1.0", .datapath = "bpf", .caps = caps,
		.n_caps = 2, .generation = 4, .node_id = 42, .block = b,
		.identity = { "True", "Allocated", "node ID 42" },
		.datapath_cond = { "False", "NotVerified", "no pass yet" },
	};
	json_t *a = gid_status_intent(&in, NULL, "2026-01-01T00:00:00Z"), *cur, *b2, *c;
	size_t i;

	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(a, "status"), "nodeID")), 42);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "status"), "locator")),
			 "fcbb:bb00:1:2a::/64");
	json_array_foreach(json_object_get(json_object_get(a, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));

		if (!strcmp(t, "Ready")) {
			ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
			ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "NotVerified");
		}
		ck_assert_int_eq(json_integer_value(json_object_get(c, "observedGeneration")), 4);
	}
	/* the server holds a: the same intent later is equal and keeps the times */
	cur = json_deep_copy(a);
	b2 = gid_status_intent(&in, cur, "2026-01-01T00:05:00Z");
	ck_assert(gid_status_equal(cur, b2));
	json_decref(b2);
	/* the datapath becomes ready: that condition and Ready move, identity keeps its time */
	in.datapath_cond = (struct gid_cond){ "True", "Verified", "ok" };
	b2 = gid_status_intent(&in, cur, "2026-01-01T00:05:00Z");
	ck_assert(!gid_status_equal(cur, b2));
	json_array_foreach(json_object_get(json_object_get(b2, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *ltt = json_string_value(json_object_get(c, "lastTransitionTime"));

		if (!strcmp(t, "IdentityAssigned"))
			ck_assert_str_eq(ltt, "2026-01-01T00:00:00Z");
		else
			ck_assert_str_eq(ltt, "2026-01-01T00:05:00Z");
		if (!strcmp(t, "Ready"))
			ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
	}
	json_decref(b2);
	/* a restarted process (new instance) must write: not equal */
	in.instance = "h/2";
	b2 = gid_status_intent(&in, cur, "2026-01-01T00:05:00Z");
	ck_assert(!gid_status_equal(cur, b2));
	json_decref(b2);
	ck_assert(!gid_status_equal(NULL, a));
	/* no repair yet: no driftRepaired; one repaired filter: written, zero counts left out */
	ck_assert_ptr_null(json_object_get(json_object_get(a, "status"), "driftRepaired"));
	{
		static const char *const kinds[] = { "filter", "map_entry" };
		static const unsigned long counts[] = { 1, 0 };
		json_t *dr;

		in.instance = "h/1";
		in.drift_kinds = kinds, in.drift_counts = counts, in.n_drift = 2;
		b2 = gid_status_intent(&in, cur, "2026-01-01T00:05:00Z");
		ck_assert(!gid_status_equal(cur, b2));
		dr = json_object_get(json_object_get(b2, "status"), "driftRepaired");
		ck_assert_uint_eq(json_array_size(dr), 1);
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(dr, 0), "kind")), "filter");
		ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(dr, 0), "count")), 1);
		json_decref(b2);
	}
	json_decref(cur);
	json_decref(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("identity");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, test_spec_parse_good);
	tcase_add_test(tc, test_spec_parse_bad);
	tcase_add_test(tc, test_names_and_locator);
	tcase_add_test(tc, test_hash_and_next_free);
	tcase_add_test(tc, test_choose);
	tcase_add_test(tc, test_nodeid_object_and_parse);
	tcase_add_test(tc, test_status_intent);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
