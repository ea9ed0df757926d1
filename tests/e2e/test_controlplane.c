/*
 * The test control plane itself: a real etcd + kube-apiserver from
 * tests/controlplane, driven with plain libcurl (the client library has its
 * own suites). Proves what every later integration test relies on:
 *   - RBAC is on and service-account tokens are signed (TokenRequest works,
 *     an unbound service account is refused with 403);
 *   - a CRD with a status subresource and map-list conditions becomes
 *     Established;
 *   - server-side apply to /status under a named field manager owns exactly
 *     the condition it applied, per metadata.managedFields, while a second
 *     manager owns exactly its own.
 */
#include "tests/lib/cp.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;

#define req(...) kreq(&cp, __VA_ARGS__)

static const char *CRD =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"widgets.test.galactic.dev\"},"
	"\"spec\":{\"group\":\"test.galactic.dev\",\"scope\":\"Namespaced\","
	"\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},"
	"\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true,"
	"\"subresources\":{\"status\":{}},"
	"\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\"}}},"
	"\"status\":{\"type\":\"object\",\"properties\":{\"conditions\":{"
	"\"type\":\"array\",\"maxItems\":16,"
	"\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"type\"],"
	"\"items\":{\"type\":\"object\",\"required\":[\"type\",\"status\"],\"properties\":{"
	"\"type\":{\"type\":\"string\",\"maxLength\":316},"
	"\"status\":{\"type\":\"string\",\"enum\":[\"True\",\"False\",\"Unknown\"]},"
	"\"reason\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"},"
	"\"observedGeneration\":{\"type\":\"integer\"},"
	"\"lastTransitionTime\":{\"type\":\"string\",\"format\":\"date-time\"}}}}}}}}}}]}}";

static const char *WPATH = "/apis/test.galactic.dev/v1alpha1/namespaces/default/widgets";

static void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
}

static void teardown(void)
{
	cp_down(&cp);
	curl_global_cleanup();
}

START_TEST(test_readyz_and_version)
{
	json_t *v = NULL;

	ck_assert_int_eq(req("GET", "/readyz", NULL, NULL, NULL, NULL), 200);
	ck_assert_int_eq(req("GET", "/version", NULL, NULL, NULL, &v), 200);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(json_object_get(v, "major")), "1");
	ck_assert_str_eq(json_string_value(json_object_get(v, "minor")), "36");
	json_decref(v);
	/* No credentials at all: anonymous auth is off. */
	ck_assert_int_eq(req("GET", "/api/v1/namespaces", NULL, NULL, "not-a-token", NULL), 401);
}
END_TEST

START_TEST(test_rbac_denies_unbound_service_account)
{
	json_t *tr = NULL;
	const char *tok;
	char token[4096];

	ck_assert_int_eq(req("POST", "/api/v1/namespaces/default/serviceaccounts",
			     "application/json",
			     "{\"metadata\":{\"name\":\"nobody\"}}", NULL, NULL), 201);
	/* TokenRequest: only works when the SA signing key is configured. */
	ck_assert_int_eq(req("POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token",
			     "application/json",
			     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			     "\"spec\":{\"expirationSeconds\":600}}", NULL, &tr), 201);
	tok = json_string_value(json_object_get(json_object_get(tr, "status"), "token"));
	ck_assert_ptr_nonnull(tok);
	snprintf(token, sizeof(token), "%s", tok);
	json_decref(tr);
	/* Authenticated, but RBAC grants it nothing. */
	ck_assert_int_eq(req("GET", "/api/v1/namespaces/default/pods", NULL, NULL, token, NULL), 403);
	ck_assert_int_eq(req("GET", "/api/v1/namespaces/default/pods", NULL, NULL, NULL, NULL), 200);
}
END_TEST

static int crd_established(void)
{
	json_t *o = NULL, *conds;
	size_t i;
	json_t *c;
	int ok = 0;

	if (req("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.galactic.dev",
		NULL, NULL, NULL, &o) != 200)
		return 0;
	conds = json_object_get(json_object_get(o, "status"), "conditions");
	json_array_foreach(conds, i, c) {
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Established") &&
		    !strcmp(json_string_value(json_object_get(c, "status")) ?: "", "True"))
			ok = 1;
	}
	json_decref(o);
	return ok;
}

/* Keys under fieldsV1 f:status.f:conditions for one manager, comma-joined. */
static void owned_conditions(json_t *obj, const char *manager, char *out, size_t n)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields"), *e;
	size_t i;

	out[0] = 0;
	json_array_foreach(mf, i, e) {
		json_t *conds;
		const char *k;
		json_t *v;

		if (strcmp(json_string_value(json_object_get(e, "manager")) ?: "", manager))
			continue;
		ck_assert_str_eq(json_string_value(json_object_get(e, "operation")), "Apply");
		ck_assert_str_eq(json_string_value(json_object_get(e, "subresource")), "status");
		conds = json_object_get(json_object_get(json_object_get(e, "fieldsV1"), "f:status"),
					"f:conditions");
		json_object_foreach(conds, k, v) {
			size_t l = strlen(out);
			snprintf(out + l, n - l, "%s%s", l ? "," : "", k);
		}
	}
}

static char *apply_body(const char *type, const char *reason)
{
	json_t *b = json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:s,s:s,s:s}]}}",
			      "apiVersion", "test.galactic.dev/v1alpha1", "kind", "Widget",
			      "metadata", "name", "w1",
			      "status", "conditions", "type", type, "status", "True",
			      "reason", reason, "message", "verified in the kernel",
			      "lastTransitionTime", "2026-01-01T00:00:00Z");
	char *s = json_dumps(b, JSON_COMPACT);

	json_decref(b);
	return s;
}

START_TEST(test_crd_status_apply_owns_exactly_its_condition)
{
	char path[256], owned[512];
	char *body;
	json_t *o = NULL, *conds;
	int i;

	ck_assert_int_eq(req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
			     "application/json", CRD, NULL, NULL), 201);
	for (i = 0; i < 300 && !crd_established(); i++)
		usleep(100 * 1000);
	ck_assert_msg(crd_established(), "CRD not Established after 30s");
	/* The new resource is served a moment after Established. */
	for (i = 0; i < 100 && req("GET", WPATH, NULL, NULL, NULL, NULL) != 200; i++)
		usleep(100 * 1000);

	ck_assert_int_eq(req("POST", WPATH, "application/json",
			     "{\"apiVersion\":\"test.galactic.dev/v1alpha1\",\"kind\":\"Widget\","
			     "\"metadata\":{\"name\":\"w1\"},\"spec\":{\"size\":3}}", NULL, NULL), 201);

	snprintf(path, sizeof(path), "%s/w1/status?fieldManager=galactic-agent&force=true", WPATH);
	body = apply_body("Programmed", "Verified");
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml", body, NULL, NULL), 200);
	free(body);
	snprintf(path, sizeof(path), "%s/w1/status?fieldManager=galactic-translator&force=true", WPATH);
	body = apply_body("Prepared", "AttachmentReady");
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml", body, NULL, NULL), 200);
	free(body);

	snprintf(path, sizeof(path), "%s/w1", WPATH);
	ck_assert_int_eq(req("GET", path, NULL, NULL, NULL, &o), 200);
	conds = json_object_get(json_object_get(o, "status"), "conditions");
	ck_assert_int_eq((int)json_array_size(conds), 2);

	owned_conditions(o, "galactic-agent", owned, sizeof(owned));
	ck_assert_str_eq(owned, "k:{\"type\":\"Programmed\"}");
	owned_conditions(o, "galactic-translator", owned, sizeof(owned));
	ck_assert_str_eq(owned, "k:{\"type\":\"Prepared\"}");
	json_decref(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("controlplane");
	TCase *tc = tcase_create("apiserver");

	/* One control plane for the suite: fixtures run in the parent process. */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_readyz_and_version);
	tcase_add_test(tc, test_rbac_denies_unbound_service_account);
	tcase_add_test(tc, test_crd_status_apply_owns_exactly_its_condition);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
