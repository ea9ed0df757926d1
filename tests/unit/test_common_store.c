/* Cache + indexes + relist diff, JSON helpers, typed API errors, paths. */
#include "common/gmap.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/kube_store.h"
#include "common/leader.h"
#include "tests/lib/gtest.h"

#include <stdlib.h>
#include <string.h>

static json_t *obj(const char *ns, const char *name, const char *rv, const char *node)
{
	return json_pack("{s:{s:s, s:s, s:s, s:{s:s}}}", "metadata", "namespace", ns, "name", name,
			 "resourceVersion", rv, "labels", "node", node);
}

struct diffs {
	char log[1024];
};

static void on_diff(char kind, json_t *old, json_t *nw, void *ud)
{
	struct diffs *d = ud;
	char key[128];
	gj_object_key(nw ? nw : old, key, sizeof(key));
	snprintf(d->log + strlen(d->log), sizeof(d->log) - strlen(d->log), "%c:%s ", kind, key);
	if (kind == 'u')
		ck_assert_str_ne(gj_str(old, "metadata.resourceVersion"), gj_str(nw, "metadata.resourceVersion"));
}

static void store_indexes_and_replace_in(bool compact)
{
	struct kube_store *s = kube_store_new();
	json_t *o, *old = NULL, *a;
	struct diffs d = { "" };

	if (compact)
		ck_assert_int_eq(kube_store_set_compact(s), 0);

	ck_assert_int_eq(kube_store_add_index(s, "node", kube_index_by_label, (void *)"node"), 0);
	ck_assert_int_eq(kube_store_add_index(s, "ns", kube_index_by_namespace, NULL), 0);
	o = obj("n1", "a", "1", "node-1");
	ck_assert_int_eq(kube_store_upsert(s, o, &old), 0);
	ck_assert_ptr_null(old);
	json_decref(o);
	o = obj("n1", "b", "2", "node-2");
	kube_store_upsert(s, o, NULL);
	json_decref(o);
	o = obj("n2", "c", "3", "node-1");
	kube_store_upsert(s, o, NULL);
	json_decref(o);
	/* Index added after objects: refused (the index would be incomplete). */
	ck_assert_int_eq(kube_store_add_index(s, "late", kube_index_by_namespace, NULL), -1);

	a = kube_store_by_index(s, "node", "node-1");
	ck_assert_uint_eq(json_array_size(a), 2);
	json_decref(a);
	ck_assert_ptr_null(kube_store_by_index(s, "missing", "x"));

	/* Moving a to node-2 updates the index. */
	o = obj("n1", "a", "4", "node-2");
	kube_store_upsert(s, o, &old);
	ck_assert_str_eq(gj_str(old, "metadata.resourceVersion"), "1");
	json_decref(old);
	json_decref(o);
	a = kube_store_by_index(s, "node", "node-1");
	ck_assert_uint_eq(json_array_size(a), 1);
	ck_assert_str_eq(gj_str(json_array_get(a, 0), "metadata.name"), "c");
	json_decref(a);
	a = kube_store_by_index(s, "node", "node-2");
	ck_assert_uint_eq(json_array_size(a), 2);
	json_decref(a);

	/* Relist: b unchanged, a changed, c gone, d new. */
	json_t *items = json_array();
	json_array_append_new(items, obj("n1", "a", "5", "node-3"));
	json_array_append_new(items, obj("n1", "b", "2", "node-2"));
	json_array_append_new(items, obj("n1", "d", "6", "node-1"));
	ck_assert_int_eq(kube_store_replace(s, items, on_diff, &d), 0);
	json_decref(items);
	ck_assert_str_eq(d.log, "u:n1/a a:n1/d d:n2/c ");
	ck_assert_uint_eq(kube_store_len(s), 3);
	json_t *keys = kube_store_keys(s);
	ck_assert_str_eq(json_string_value(json_array_get(keys, 0)), "n1/a");
	ck_assert_str_eq(json_string_value(json_array_get(keys, 2)), "n1/d");
	json_decref(keys);
	a = kube_store_by_index(s, "ns", "n2");
	ck_assert_uint_eq(json_array_size(a), 0);
	json_decref(a);
	a = kube_store_by_index(s, "node", "node-1");
	ck_assert_uint_eq(json_array_size(a), 1);
	json_decref(a);

	o = kube_store_del(s, "n1/d");
	ck_assert_ptr_nonnull(o);
	json_decref(o);
	ck_assert_ptr_null(kube_store_del(s, "n1/d"));
	o = kube_store_get_nn(s, "n1", "a");
	ck_assert_str_eq(gj_str(o, "metadata.resourceVersion"), "5");
	json_decref(o);
	a = kube_store_list(s);
	ck_assert_uint_eq(json_array_size(a), 2);
	json_decref(a);
	/* Compact mode refused once objects are in. */
	ck_assert_int_eq(kube_store_set_compact(s), -1);
	kube_store_free(s);
}

START_TEST(store_indexes_and_replace) { store_indexes_and_replace_in(false); }
END_TEST

/* The same in compact mode: every read is a fresh decoded copy, equal to what was stored. */
START_TEST(store_compact)
{
	struct kube_store *s = kube_store_new();
	json_t *o = obj("n1", "a", "7", "node-1"), *g1, *g2;

	store_indexes_and_replace_in(true);
	ck_assert_int_eq(kube_store_set_compact(s), 0);
	ck_assert_int_eq(kube_store_upsert(s, o, NULL), 0);
	g1 = kube_store_get(s, "n1/a");
	g2 = kube_store_get(s, "n1/a");
	ck_assert_ptr_nonnull(g1);
	ck_assert_ptr_ne(g1, g2);
	ck_assert(json_equal(g1, o));
	ck_assert(json_equal(g2, o));
	json_decref(g1);
	json_decref(g2);
	json_decref(o);
	kube_store_free(s);
}
END_TEST

/* A relist page by page: each page reported when it is in; deletes at the end;
 * an aborted relist deletes nothing. */
START_TEST(store_replace_paged)
{
	for (int compact = 0; compact < 2; compact++) {
		struct kube_store *s = kube_store_new();
		struct kube_store_replace *r;
		struct diffs d = { "" };
		json_t *p1 = json_array(), *p2 = json_array(), *o;

		if (compact)
			kube_store_set_compact(s);
		ck_assert_int_eq(kube_store_add_index(s, "node", kube_index_by_label, (void *)"node"), 0);
		o = obj("n1", "a", "1", "node-1");
		kube_store_upsert(s, o, NULL);
		json_decref(o);
		o = obj("n1", "b", "2", "node-1");
		kube_store_upsert(s, o, NULL);
		json_decref(o);
		json_array_append_new(p1, obj("n1", "c", "3", "node-2"));
		json_array_append_new(p2, obj("n1", "a", "4", "node-2"));
		r = kube_store_replace_begin(s);
		ck_assert_int_eq(kube_store_replace_page(r, p1, on_diff, &d), 0);
		ck_assert_str_eq(d.log, "a:n1/c ");
		ck_assert_int_eq(kube_store_replace_page(r, p2, on_diff, &d), 0);
		ck_assert_str_eq(d.log, "a:n1/c u:n1/a ");
		ck_assert_uint_eq(kube_store_len(s), 3);
		ck_assert_int_eq(kube_store_replace_end(r, on_diff, &d), 0);
		ck_assert_str_eq(d.log, "a:n1/c u:n1/a d:n1/b ");
		ck_assert_uint_eq(kube_store_len(s), 2);
		o = kube_store_by_index(s, "node", "node-2");
		ck_assert_uint_eq(json_array_size(o), 2);
		json_decref(o);
		/* aborted: the page is in, nothing else goes */
		d.log[0] = 0;
		r = kube_store_replace_begin(s);
		ck_assert_int_eq(kube_store_replace_page(r, p1, on_diff, &d), 0);
		kube_store_replace_abort(r);
		ck_assert_str_eq(d.log, "");
		ck_assert_uint_eq(kube_store_len(s), 2);
		json_decref(p1);
		json_decref(p2);
		kube_store_free(s);
	}
}
END_TEST

START_TEST(gmap_grows)
{
	/* both sizes of start: 16 buckets, and one (a store index's sets) */
	struct gmap *m = _i ? gmap_new_small() : gmap_new();
	char k[32];
	for (long i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key-%ld", i);
		gmap_put(m, k, (void *)(i + 1), NULL);
	}
	ck_assert_uint_eq(gmap_len(m), 5000);
	ck_assert_ptr_eq(gmap_get(m, "key-4321"), (void *)4322);
	bool found;
	ck_assert_ptr_eq(gmap_del(m, "key-7", &found), (void *)8);
	ck_assert(found);
	ck_assert(!gmap_has(m, "key-7"));
	struct gmap_iter it;
	size_t n = 0;
	gmap_iter_init(&it, m);
	while (gmap_next(&it, NULL, NULL))
		n++;
	ck_assert_uint_eq(n, 4999);
	gmap_free(m, NULL);
}
END_TEST

START_TEST(json_helpers)
{
	json_t *o = json_object();
	char key[64];
	ck_assert_int_eq(gj_set(o, "metadata.labels.app", json_string("x")), 0);
	ck_assert_str_eq(gj_str(o, "metadata.labels.app"), "x");
	ck_assert_ptr_null(gj_str(o, "metadata.labels"));
	ck_assert_int_eq(gj_int(o, "metadata.generation", -1), -1);
	ck_assert_int_eq(gj_object_key(o, key, sizeof(key)), -1);
	gj_set(o, "metadata.name", json_string("n"));
	ck_assert_int_eq(gj_object_key(o, key, sizeof(key)), 0);
	ck_assert_str_eq(key, "n");
	gj_set(o, "metadata.namespace", json_string("ns"));
	gj_object_key(o, key, sizeof(key));
	ck_assert_str_eq(key, "ns/n");
	ck_assert_int_eq(gj_set(o, "metadata.name.x", json_true()), -1); /* name is a string */
	json_decref(o);
}
END_TEST

static const char *APPLY_CONFLICT =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Apply failed with 1 conflict: conflict with \\\"a\\\": .data.k\","
	"\"reason\":\"Conflict\",\"details\":{\"causes\":[{\"type\":\"FieldManagerConflict\",\"message\":\"conflict with \\\"a\\\"\",\"field\":\".data.k\"}]},\"code\":409}";
static const char *LOCK_CONFLICT =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on configmaps \\\"x\\\": the object has been modified; please apply your changes to the latest version and try again\","
	"\"reason\":\"Conflict\",\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":409}";

START_TEST(typed_errors)
{
	struct kube_error e;
	kube_error_from_response(&e, "apply configmaps/ns/x", 409, APPLY_CONFLICT, strlen(APPLY_CONFLICT), 0);
	ck_assert_int_eq(e.code, KUBE_ERR_APPLY_CONFLICT);
	ck_assert_str_eq(e.reason, "Conflict");
	ck_assert_str_eq(e.message, "apply configmaps/ns/x: 409 Conflict: Apply failed with 1 conflict: conflict with \"a\": .data.k");
	kube_error_from_response(&e, "update configmaps/ns/x", 409, LOCK_CONFLICT, strlen(LOCK_CONFLICT), 0);
	ck_assert_int_eq(e.code, KUBE_ERR_CONFLICT);
	const char *exists = "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":\"exists\",\"code\":409}";
	kube_error_from_response(&e, "create x", 409, exists, strlen(exists), 0);
	ck_assert_int_eq(e.code, KUBE_ERR_ALREADY_EXISTS);
	const char *throttled = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"message\":\"slow down\",\"details\":{\"retryAfterSeconds\":3},\"code\":429}";
	kube_error_from_response(&e, "list x", 429, throttled, strlen(throttled), 0);
	ck_assert_int_eq(e.code, KUBE_ERR_TOO_MANY);
	ck_assert_double_eq(e.retry_after_s, 3);
	ck_assert(kube_error_retryable(&e));
	kube_error_from_response(&e, "list x", 429, throttled, strlen(throttled), 7); /* header wins */
	ck_assert_double_eq(e.retry_after_s, 7);
	kube_error_from_response(&e, "get x", 404, "not json\n\x01", 10, 0);
	ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
	ck_assert_str_eq(e.message, "get x: 404 Not Found: not json  ");
	ck_assert(!kube_error_retryable(&e));
	kube_error_from_response(&e, "watch x", 410, NULL, 0, 0);
	ck_assert_int_eq(e.code, KUBE_ERR_GONE);
	kube_error_from_response(&e, "patch x", 422, NULL, 0, 0);
	ck_assert_int_eq(e.code, KUBE_ERR_INVALID);
	kube_error_from_response(&e, "get x", 503, NULL, 0, 1);
	ck_assert_int_eq(e.code, KUBE_ERR_SERVER);
	ck_assert(kube_error_retryable(&e));
	ck_assert_str_eq(kube_errc_name(KUBE_ERR_APPLY_CONFLICT), "ApplyConflict");
}
END_TEST

/* List pages merged as kube_list_all does (found by fuzz_informer_list: a
 * first page without metadata leaked the empty object put in its place;
 * LeakSanitizer fails this test if it comes back). */
static void count_item(json_t *item, void *ud)
{
	(void)item;
	++*(int *)ud;
}

START_TEST(list_pages_merge)
{
	struct kube_list_opts o = { 0 };
	struct kube_error err;
	json_t *all = NULL, *p;
	char *cont = NULL;
	int seen = 0;

	o.item_fn = count_item;
	o.item_ud = &seen;
	p = json_loads("{\"kind\":\"L\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", 0, NULL);
	ck_assert_int_eq(kube_list_merge_page(&all, p, &o, &cont, &err), 0);
	json_decref(p);
	ck_assert_ptr_null(cont);
	ck_assert(json_is_object(json_object_get(all, "metadata")));
	ck_assert_str_eq(gj_str(all, "kind"), "L");
	json_decref(all);
	all = NULL;

	p = json_loads("{\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"t1\","
		       "\"remainingItemCount\":1},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", 0, NULL);
	ck_assert_int_eq(kube_list_merge_page(&all, p, &o, &cont, &err), 0);
	json_decref(p);
	ck_assert_str_eq(cont, "t1");
	free(cont);
	p = json_loads("{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[{\"metadata\":{\"name\":\"b\"}}]}",
		       0, NULL);
	ck_assert_int_eq(kube_list_merge_page(&all, p, &o, &cont, &err), 0);
	json_decref(p);
	ck_assert_ptr_null(cont);
	kube_list_finish(all);
	ck_assert_int_eq(seen, 3);
	ck_assert_uint_eq(json_array_size(json_object_get(all, "items")), 2);
	ck_assert_str_eq(gj_str(all, "metadata.resourceVersion"), "7"); /* the first page's snapshot */
	ck_assert_ptr_null(gj_get(all, "metadata.continue"));
	ck_assert_ptr_null(gj_get(all, "metadata.remainingItemCount"));
	/* A page that is not a list is refused and changes nothing. */
	p = json_loads("{\"kind\":\"Status\",\"items\":{}}", 0, NULL);
	ck_assert_int_eq(kube_list_merge_page(&all, p, &o, &cont, &err), -1);
	ck_assert_int_eq(err.code, KUBE_ERR_DECODE);
	ck_assert_ptr_null(cont);
	ck_assert_uint_eq(json_array_size(json_object_get(all, "items")), 2);
	json_decref(p);
	json_decref(all);
}
END_TEST

/* Lease JSON written by other candidates (found while writing fuzz_lease: a
 * leaseTransitions of INT64_MAX overflowed on takeover, a negative duration
 * read as "expired long ago"). */
START_TEST(lease_read_defensive)
{
	struct lease_view v;
	json_t *l, *b;

	l = json_loads("{\"metadata\":{\"resourceVersion\":\"5\"},\"spec\":{\"holderIdentity\":\"a\","
		       "\"leaseDurationSeconds\":20,\"leaseTransitions\":4,\"acquireTime\":\"t0\"}}", 0, NULL);
	leader_lease_read(l, 15, &v);
	ck_assert_str_eq(v.rv, "5");
	ck_assert_str_eq(v.holder, "a");
	ck_assert_str_eq(v.acquire, "t0");
	ck_assert(v.duration_s == 20);
	ck_assert_int_eq(v.transitions, 4);
	ck_assert_int_eq(leader_next_transitions(v.transitions), 5);
	json_decref(l);
	l = json_loads("{\"spec\":{\"holderIdentity\":7,\"leaseDurationSeconds\":-3,"
		       "\"leaseTransitions\":9223372036854775807}}", 0, NULL);
	leader_lease_read(l, 15, &v);
	ck_assert_str_eq(v.rv, "");
	ck_assert_str_eq(v.holder, "");
	ck_assert_ptr_null(v.acquire);
	ck_assert(v.duration_s == 15);
	ck_assert_int_eq(v.transitions, 0);
	json_decref(l);
	ck_assert_int_eq(leader_next_transitions(2147483647L), 0);
	b = leader_lease_body("ns", "n", "", "me", 15, "t1", "t2", 1);
	ck_assert_ptr_null(gj_get(b, "metadata.resourceVersion"));
	ck_assert_str_eq(gj_str(b, "spec.holderIdentity"), "me");
	ck_assert_int_eq(gj_int(b, "spec.leaseTransitions", -1), 1);
	json_decref(b);
}
END_TEST

START_TEST(paths)
{
	char p[256];
	struct kube_resource cm = { "", "v1", "configmaps", true };
	struct kube_resource ni = { "networking.datumapis.com", "v1alpha", "networkinterfaces", true };
	struct kube_resource node = { "", "v1", "nodes", false };
	ck_assert_int_eq(kube_path(&cm, "ns", "x", NULL, p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/api/v1/namespaces/ns/configmaps/x");
	ck_assert_int_eq(kube_path(&ni, "ns", "x", "status", p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/apis/networking.datumapis.com/v1alpha/namespaces/ns/networkinterfaces/x/status");
	ck_assert_int_eq(kube_path(&ni, NULL, NULL, NULL, p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/apis/networking.datumapis.com/v1alpha/networkinterfaces");
	ck_assert_int_eq(kube_path(&node, NULL, "n1", NULL, p, sizeof(p)), 0);
	ck_assert_str_eq(p, "/api/v1/nodes/n1");
	ck_assert_int_eq(kube_path(&cm, "ns", "../x", NULL, p, sizeof(p)), -1);
	ck_assert_int_eq(kube_path(&cm, "ns", "a?b", NULL, p, sizeof(p)), -1);
	ck_assert_int_eq(kube_path(&cm, "ns", NULL, "status", p, sizeof(p)), -1);
	ck_assert_int_eq(kube_path(&cm, "ns", "x", NULL, p, 10), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_store");
	TCase *tc = tcase_create("store");
	tcase_add_test(tc, store_indexes_and_replace);
	tcase_add_test(tc, store_compact);
	tcase_add_test(tc, store_replace_paged);
	tcase_add_loop_test(tc, gmap_grows, 0, 2);
	tcase_add_test(tc, json_helpers);
	tcase_add_test(tc, typed_errors);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, list_pages_merge);
	tcase_add_test(tc, lease_read_defensive);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
