/*
 * common/ REST client against the real kube-apiserver: auth (client cert,
 * token, rotating token file), CRUD with preconditions, paging, server-side
 * apply (conflicts, force, managedFields, /status), JSON Patch with test ops,
 * merge patch, typed errors with context, connection reuse and HTTP/2.
 */
#include "common/json.h"
#include "common/kube_client.h"
#include "common/metrics.h"
#include "tests/lib/common_e2e.h"
#include "tests/lib/gtest.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;

static const struct kube_resource WIDGETS = { "e2e.galactic.io", "v1", "widgets", true };

START_TEST(auth_kinds)
{
	char err[256], path[400];
	struct kube_error e;
	json_t *v = NULL;
	struct kube_config *cfg = kube_config_from_kubeconfig(cp.kubeconfig, NULL, err, sizeof(err));
	ck_assert_msg(cfg != NULL, "%s", err);
	ck_assert_ptr_nonnull(cfg->cert_file); /* the harness kubeconfig uses a client certificate */
	struct kube_client *kc = kube_client_new(cfg, err, sizeof(err));
	ck_assert_int_eq(kube_request(kc, "GET", "/version", NULL, NULL, 0, "version", &v, &e), 0);
	ck_assert_ptr_nonnull(gj_str(v, "gitVersion"));
	printf("server %s, libcurl HTTP/2 %s, negotiated HTTP %d\n", gj_str(v, "gitVersion"),
	       kube_client_http2(kc) ? "yes" : "no", kube_client_last_http_version(kc));
	if (kube_client_http2(kc))
		ck_assert_int_eq(kube_client_last_http_version(kc), 20);
	json_decref(v);
	kube_client_free(kc);
	kube_config_free(cfg);

	/* Token from a file, re-read when stale: a rotated (here: revoked) token takes effect. */
	snprintf(path, sizeof(path), "%s/e2e-token", cp.dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "%s\n", cp.token);
	fclose(f);
	cfg = kube_config_new(cp.apiserver, NULL, cp.ca);
	cfg->token_file = strdup(path);
	cfg->token_reload_s = 1;
	kc = kube_client_new(cfg, err, sizeof(err));
	ck_assert_int_eq(kube_get(kc, &CE_NAMESPACES, NULL, "default", &v, &e), 0);
	json_decref(v);
	f = fopen(path, "w");
	fprintf(f, "not-a-valid-token\n");
	fclose(f);
	usleep(1100 * 1000);
	ck_assert_int_eq(kube_get(kc, &CE_NAMESPACES, NULL, "default", &v, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_UNAUTHORIZED);
	ck_assert_msg(strstr(e.message, "get namespaces/default: 401 Unauthorized"), "%s", e.message);
	f = fopen(path, "w");
	fprintf(f, "%s\n", cp.token);
	fclose(f);
	/* On 401 the client re-reads the file at once and retries. */
	ck_assert_int_eq(kube_get(kc, &CE_NAMESPACES, NULL, "default", &v, &e), 0);
	json_decref(v);
	ck_assert_uint_ge(cfg->token_reads, 3);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

START_TEST(crud_preconditions_errors)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct metrics *reg = metrics_new();
	ck_assert_int_eq(kube_client_set_metrics(kc, reg), 0);
	struct kube_error e;
	json_t *o = ce_cm("e2e-crud", "x", "k", "v1"), *got = NULL, *upd;
	char uid[64], rv[64];

	ce_namespace(kc, "e2e-crud");
	ck_assert_int_eq(kube_create(kc, &CE_CONFIGMAPS, "e2e-crud", o, &got, &e), 0);
	snprintf(uid, sizeof(uid), "%s", gj_str(got, "metadata.uid"));
	snprintf(rv, sizeof(rv), "%s", gj_str(got, "metadata.resourceVersion"));
	json_decref(got);
	ck_assert_int_eq(kube_create(kc, &CE_CONFIGMAPS, "e2e-crud", o, NULL, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_ALREADY_EXISTS);
	json_decref(o);

	ck_assert_int_eq(kube_get(kc, &CE_CONFIGMAPS, "e2e-crud", "missing", &got, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
	ck_assert_msg(!strncmp(e.message, "get configmaps/e2e-crud/missing: 404 Not Found: ", 48), "%s", e.message);

	/* Optimistic lock: an update carrying an old resourceVersion is a 409 Conflict. */
	upd = ce_cm("e2e-crud", "x", "k", "v2");
	gj_set(upd, "metadata.resourceVersion", json_string(rv));
	ck_assert_int_eq(kube_update(kc, &CE_CONFIGMAPS, "e2e-crud", "x", NULL, upd, &got, &e), 0);
	json_decref(got);
	ck_assert_int_eq(kube_update(kc, &CE_CONFIGMAPS, "e2e-crud", "x", NULL, upd, &got, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_CONFLICT);
	ck_assert_msg(strstr(e.message, "update configmaps/e2e-crud/x: 409 Conflict"), "%s", e.message);
	json_decref(upd);

	/* Delete preconditions: wrong UID and stale resourceVersion are refused (409). */
	struct kube_delete_opts d = { .uid = "00000000-0000-0000-0000-000000000000" };
	ck_assert_int_eq(kube_delete(kc, &CE_CONFIGMAPS, "e2e-crud", "x", &d, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_CONFLICT);
	d = (struct kube_delete_opts){ .uid = uid, .resource_version = rv };
	ck_assert_int_eq(kube_delete(kc, &CE_CONFIGMAPS, "e2e-crud", "x", &d, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_CONFLICT);
	d = (struct kube_delete_opts){ .uid = uid };
	ck_assert_msg(kube_delete(kc, &CE_CONFIGMAPS, "e2e-crud", "x", &d, &e) == 0, "%s", e.message);
	ck_assert_int_eq(kube_get(kc, &CE_CONFIGMAPS, "e2e-crud", "x", &got, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
	/* 422: an invalid name. */
	o = ce_cm("e2e-crud", "Not_Valid", "k", "v");
	ck_assert_int_eq(kube_create(kc, &CE_CONFIGMAPS, "e2e-crud", o, NULL, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_INVALID);
	json_decref(o);
	/* Argument errors never reach the server. */
	ck_assert_int_eq(kube_get(kc, &CE_CONFIGMAPS, "e2e-crud", "../../x", &got, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_ARG);
	/* Every response was counted by method and status: the 409s among them. */
	ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "PUT,409"), 1);
	ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "DELETE,409"), 2);
	ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "POST,409"), 1);
	ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "POST,422"), 1);
	ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "GET,404"), 2);
	/* A second client given the same registry (the agent's modules) counts into the same series. */
	{
		struct kube_config *cfg2;
		struct kube_client *kc2 = ce_client_token(&cp, NULL, &cfg2);

		ck_assert_int_eq(kube_client_set_metrics(kc2, reg), 0);
		ck_assert_int_eq(kube_get(kc2, &CE_CONFIGMAPS, "e2e-crud", "missing", &got, &e), -1);
		ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
		ck_assert_double_eq(metric_value(metric_lookup(reg, "galactic_kube_requests_total"), "GET,404"), 3);
		kube_client_free(kc2);
		kube_config_free(cfg2);
	}
	kube_client_free(kc);
	metrics_free(reg);
	kube_config_free(cfg);
}
END_TEST

START_TEST(list_paging_and_reuse)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct kube_error e;
	json_t *page = NULL, *all = NULL;
	unsigned long r0, c0, r1, c1;
	char name[32];

	ce_namespace(kc, "e2e-page");
	for (int i = 0; i < 25; i++) {
		snprintf(name, sizeof(name), "cm-%02d", i);
		json_t *o = ce_cm("e2e-page", name, "i", name);
		gj_set(o, "metadata.labels.set", json_string("paging"));
		ck_assert_msg(kube_create(kc, &CE_CONFIGMAPS, "e2e-page", o, NULL, &e) == 0, "%s", e.message);
		json_decref(o);
	}
	struct kube_list_opts lo = { .label_selector = "set=paging", .limit = 10 };
	ck_assert_int_eq(kube_list_page(kc, &CE_CONFIGMAPS, "e2e-page", &lo, &page, &e), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(page, "items")), 10);
	ck_assert_ptr_nonnull(gj_str(page, "metadata.continue"));
	json_decref(page);

	kube_client_counters(kc, &r0, &c0);
	ck_assert_int_eq(kube_list_all(kc, &CE_CONFIGMAPS, "e2e-page", &lo, &all, &e), 0);
	kube_client_counters(kc, &r1, &c1);
	ck_assert_uint_eq(json_array_size(json_object_get(all, "items")), 25);
	ck_assert_uint_eq(r1 - r0, 3); /* 10 + 10 + 5 */
	ck_assert_ptr_nonnull(gj_str(all, "metadata.resourceVersion"));
	ck_assert_ptr_null(gj_get(all, "metadata.continue"));
	json_decref(all);

	/* Connection reuse: 50 more requests open no new connection. */
	for (int i = 0; i < 50; i++) {
		json_t *g = NULL;
		ck_assert_int_eq(kube_get(kc, &CE_CONFIGMAPS, "e2e-page", "cm-01", &g, &e), 0);
		json_decref(g);
	}
	kube_client_counters(kc, &r0, &c0);
	printf("requests %lu, connections %lu\n", r0, c0);
	ck_assert_uint_eq(c0, c1);
	ck_assert_uint_le(c0, 2);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

static const char *manager_of(json_t *obj, const char *field, const char *sub)
{
	size_t i;
	json_t *mf;
	json_array_foreach(gj_get(obj, "metadata.managedFields"), i, mf) {
		const char *s = gj_str(mf, "subresource");
		if ((sub && (!s || strcmp(s, sub))) || (!sub && s && *s))
			continue;
		char *dump = gj_dumps(json_object_get(mf, "fieldsV1"));
		bool has = dump && strstr(dump, field);
		free(dump);
		if (has)
			return gj_str(mf, "manager");
	}
	return NULL;
}

START_TEST(server_side_apply)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct kube_error e;
	json_t *a, *b, *out = NULL;

	ce_namespace(kc, "e2e-apply");
	a = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
		      "metadata", "name", "shared", "namespace", "e2e-apply", "data", "a", "1", "shared", "from-a");
	ck_assert_msg(kube_apply(kc, &CE_CONFIGMAPS, "e2e-apply", "shared", NULL, a, "mgr-a", false, &out, &e) == 0,
		      "%s", e.message);
	json_decref(out);
	/* mgr-b applies a field mgr-a owns, without force: a field-manager conflict. */
	b = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
		      "metadata", "name", "shared", "namespace", "e2e-apply", "data", "b", "2", "shared", "from-b");
	ck_assert_int_eq(kube_apply(kc, &CE_CONFIGMAPS, "e2e-apply", "shared", NULL, b, "mgr-b", false, &out, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_APPLY_CONFLICT);
	ck_assert_int_eq(e.http_status, 409);
	printf("conflict: %s\n", e.message);
	ck_assert_msg(strstr(e.message, "apply configmaps/e2e-apply/shared: 409 Conflict: Apply failed with 1 conflict"), "%s", e.message);
	ck_assert_msg(strstr(e.message, "mgr-a"), "%s", e.message);
	/* Without force nothing changed. */
	ck_assert_int_eq(kube_get(kc, &CE_CONFIGMAPS, "e2e-apply", "shared", &out, &e), 0);
	ck_assert_str_eq(gj_str(out, "data.shared"), "from-a");
	ck_assert_ptr_null(gj_get(out, "data.b"));
	json_decref(out);
	/* With force mgr-b takes the field. */
	ck_assert_int_eq(kube_apply(kc, &CE_CONFIGMAPS, "e2e-apply", "shared", NULL, b, "mgr-b", true, &out, &e), 0);
	ck_assert_str_eq(gj_str(out, "data.shared"), "from-b");
	ck_assert_str_eq(manager_of(out, "f:a", NULL), "mgr-a");
	ck_assert_str_eq(manager_of(out, "f:b", NULL), "mgr-b");
	ck_assert_str_eq(manager_of(out, "f:shared", NULL), "mgr-b");
	json_decref(out);
	json_decref(a);
	json_decref(b);

	/* Apply to /status of a custom resource: a separate manager entry for the subresource. */
	ce_crd(kc, "widgets", "Widget");
	json_t *w = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "e2e.galactic.io/v1",
			      "kind", "Widget", "metadata", "name", "w1", "namespace", "e2e-apply",
			      "spec", "size", "s");
	ck_assert_msg(kube_apply(kc, &WIDGETS, "e2e-apply", "w1", NULL, w, "spec-writer", false, &out, &e) == 0, "%s", e.message);
	json_decref(out);
	json_t *st = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "e2e.galactic.io/v1",
			       "kind", "Widget", "metadata", "name", "w1", "namespace", "e2e-apply",
			       "status", "phase", "Ready");
	ck_assert_msg(kube_apply(kc, &WIDGETS, "e2e-apply", "w1", "status", st, "status-writer", false, &out, &e) == 0, "%s", e.message);
	ck_assert_str_eq(gj_str(out, "status.phase"), "Ready");
	ck_assert_str_eq(manager_of(out, "f:phase", "status"), "status-writer");
	ck_assert_str_eq(manager_of(out, "f:size", NULL), "spec-writer");
	json_decref(out);
	/* Another manager on /status without force: conflict, typed. */
	json_object_set_new(json_object_get(st, "status"), "phase", json_string("Broken"));
	ck_assert_int_eq(kube_apply(kc, &WIDGETS, "e2e-apply", "w1", "status", st, "intruder", false, &out, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_APPLY_CONFLICT);
	ck_assert_msg(strstr(e.message, "apply widgets/e2e-apply/w1 status: 409 Conflict"), "%s", e.message);
	json_decref(st);
	json_decref(w);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

START_TEST(json_and_merge_patch)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct kube_error e;
	json_t *o = ce_cm("e2e-patch", "p", "state", "old"), *out = NULL, *ops;

	ce_namespace(kc, "e2e-patch");
	ck_assert_int_eq(kube_create(kc, &CE_CONFIGMAPS, "e2e-patch", o, NULL, &e), 0);
	json_decref(o);
	/* The test op guards the replace. */
	ops = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "op", "test", "path", "/data/state", "value", "old",
			"op", "replace", "path", "/data/state", "value", "new");
	ck_assert_msg(kube_json_patch(kc, &CE_CONFIGMAPS, "e2e-patch", "p", NULL, ops, "patcher", &out, &e) == 0, "%s", e.message);
	ck_assert_str_eq(gj_str(out, "data.state"), "new");
	json_decref(out);
	/* Same patch again: the test fails (value is "new"), 422, nothing written. */
	ck_assert_int_eq(kube_json_patch(kc, &CE_CONFIGMAPS, "e2e-patch", "p", NULL, ops, "patcher", &out, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_INVALID);
	ck_assert_msg(strstr(e.message, "json-patch configmaps/e2e-patch/p: 422"), "%s", e.message);
	json_decref(ops);
	/* Merge patch: set one key, delete another with null. */
	json_t *mp = json_pack("{s:{s:s, s:n}}", "data", "added", "yes", "state");
	ck_assert_int_eq(kube_merge_patch(kc, &CE_CONFIGMAPS, "e2e-patch", "p", NULL, mp, "patcher", &out, &e), 0);
	ck_assert_str_eq(gj_str(out, "data.added"), "yes");
	ck_assert_ptr_null(gj_get(out, "data.state"));
	json_decref(out);
	json_decref(mp);
	json_t *none = json_array();
	ck_assert_int_eq(kube_json_patch(kc, &CE_CONFIGMAPS, "e2e-patch", "nope", NULL, none, NULL, &out, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
	json_decref(none);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_client");
	TCase *tc = tcase_create("client");
	int rc;
	ce_setup(&cp);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, auth_kinds);
	tcase_add_test(tc, crud_preconditions_errors);
	tcase_add_test(tc, list_paging_and_reuse);
	tcase_add_test(tc, server_side_apply);
	tcase_add_test(tc, json_and_merge_patch);
	suite_add_tcase(s, tc);
	rc = gt_run(s);
	cp_down(&cp);
	return rc;
}
