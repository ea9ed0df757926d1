/* The agent's health endpoints (agent/health/health.h) over real HTTP. */
#include "agent/health/drift.h"
#include "agent/health/health.h"
#include "agent/dp/backend.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"

#include <curl/curl.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

START_TEST(test_ready_needs_identity_and_a_verified_pass)
{
	struct ghealth *h;
	char err[256], why[256], *body = NULL;
	int port;

	ck_assert_int_eq(ghealth_start(&h, &(struct ghealth_opts){ .addr = "127.0.0.1", .datapath = "bpf",
					   .version = "0.1.0" }, err, sizeof(err)), 0);
	port = ghealth_port(h);
	ck_assert_int_gt(port, 0);
	/* nothing yet: alive, not ready, and /readyz names the failing checks */
	ck_assert_int_eq(gt_http_get(port, "/healthz", NULL), 200);
	ck_assert_int_eq(gt_http_get(port, "/readyz", &body), 503);
	ck_assert_msg(body && strstr(body, "identity"), "%s", body ? body : "");
	free(body);
	ck_assert(!ghealth_ready(h, why, sizeof(why)));
	ck_assert_msg(strstr(why, "no node identity"), "%s", why);
	/* an identity, but no verified pass */
	ghealth_identity(h, 42, NULL);
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 503);
	ghealth_pass(h, &(struct ghealth_pass){ .verified = false, .objects = 3, .programmed = 2, .failed = 1,
						.why = "eth0: decap filter not attached" });
	ck_assert(!ghealth_ready(h, why, sizeof(why)));
	ck_assert_msg(strstr(why, "decap filter not attached"), "%s", why);
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 503);
	/* verified: ready */
	ghealth_pass(h, &(struct ghealth_pass){ .verified = true, .objects = 3, .programmed = 3, .added = 5 });
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 200);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_ready"), 1);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_node_id"), 42);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_passes_total{kind=\"apply\",result=\"failed\"}"), 1);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_datapath_writes_total{op=\"added\"}"), 5);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_info{datapath=\"bpf\",version=\"0.1.0\"}"), 1);
	/* a verify pass that finds drift: not ready again; the identity going: not ready */
	ghealth_pass(h, &(struct ghealth_pass){ .verify_only = true, .verified = false, .why = "drift" });
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 503);
	ck_assert_double_eq(gt_metric(port, "galactic_agent_ready"), 0);
	ghealth_pass(h, &(struct ghealth_pass){ .verify_only = true, .verified = true });
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 200);
	ghealth_identity(h, 0, "NodeDataplane not found");
	ck_assert_int_eq(gt_http_get(port, "/readyz", NULL), 503);
	ck_assert_int_eq(gt_http_get(port, "/healthz", NULL), 200);
	ghealth_stop(h);
}
END_TEST

START_TEST(test_alive_needs_passes)
{
	struct ghealth *h;
	char err[256];
	int port;

	ck_assert_int_eq(ghealth_start(&h, &(struct ghealth_opts){ .addr = "127.0.0.1", .stall_s = 0.5 }, err,
				       sizeof(err)), 0);
	port = ghealth_port(h);
	ck_assert_int_eq(gt_http_get(port, "/healthz", NULL), 200);
	usleep(700 * 1000);
	ck_assert_int_eq(gt_http_get(port, "/healthz", NULL), 503); /* a stuck loop gets restarted */
	ghealth_pass(h, &(struct ghealth_pass){ .verified = true });
	ck_assert_int_eq(gt_http_get(port, "/healthz", NULL), 200);
	ghealth_stop(h);
}
END_TEST

START_TEST(test_parse_addr)
{
	char host[64];
	int port;

	ck_assert_int_eq(ghealth_parse_addr("0.0.0.0:9090", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "0.0.0.0");
	ck_assert_int_eq(port, 9090);
	ck_assert_int_eq(ghealth_parse_addr("[::1]:0", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_ne(ghealth_parse_addr("9090", host, sizeof(host), &port), 0);
	ck_assert_int_ne(ghealth_parse_addr("h:99999", host, sizeof(host), &port), 0);
	ck_assert_int_ne(ghealth_parse_addr("h:", host, sizeof(host), &port), 0);
}
END_TEST

START_TEST(test_verdict)
{
	struct gdp_results r;
	struct gdp_result *x;
	size_t prog;
	char why[256];

	gdp_results_init(&r);
	ck_assert(ghealth_verdict(&r, &prog, why, sizeof(why))); /* nothing desired: nothing wrong */
	x = gdp_results_get(&r, GDP_OBJ_NODE, "", "");
	x->programmed = true;
	x = gdp_results_get(&r, GDP_OBJ_ATTACHMENT, "vpcA", "a1");
	x->programmed = true;
	ck_assert(ghealth_verdict(&r, &prog, why, sizeof(why)));
	ck_assert_uint_eq(prog, 2);
	x = gdp_results_get(&r, GDP_OBJ_ATTACHMENT, "vpcA", "a2");
	gdp_result_fail(x, -19, "host interface gc2 not found");
	ck_assert(!ghealth_verdict(&r, &prog, why, sizeof(why)));
	ck_assert_uint_eq(prog, 2);
	ck_assert_msg(strstr(why, "vpcA/a2: host interface gc2 not found"), "%s", why);
	/* programmed but with an error is not verified */
	gdp_results_get(&r, GDP_OBJ_NODE, "", "")->err = -1;
	ck_assert(!ghealth_verdict(&r, &prog, why, sizeof(why)));
	gdp_results_free(&r);
}
END_TEST

static bool all_were(void *ctx, const struct gdp_result *r)
{
	(void)ctx;
	return r->kind != GDP_OBJ_ATTACHMENT || strcmp(r->key, "never"); /* "never" was never programmed */
}

static void result(struct gdp_results *rs, enum gdp_obj_kind k, const char *vpc, const char *key, bool ok,
		   enum gdp_what what)
{
	struct gdp_result *r = gdp_results_get(rs, k, vpc, key);

	r->programmed = ok;
	if (!ok)
		gdp_result_fail_what(r, what, -ENOENT, "missing");
}

/* Drift: seen after a verified pass, repaired when read back programmed, counted by kind. */
START_TEST(test_drift_counts_repairs_read_back)
{
	unsigned long got[GDRIFT_KINDS] = { 0 };
	struct gdp_results rs;
	struct gdrift d;
	struct ghealth *h;
	char err[256];

	gdrift_init(&d);
	gdp_results_init(&rs);
	/* uplink filter and a routes entry gone; an attachment that never was programmed (no drift) */
	result(&rs, GDP_OBJ_NODE, "", "", false, GDP_WHAT_FILTER);
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::1/128", false, GDP_WHAT_MAP);
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::3/128", false, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "never", false, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_VPC, "vpcA", "", true, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 3);
	/* read again, still missing: nothing repaired, nothing pending twice */
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 3);
	for (int k = 0; k < GDRIFT_KINDS; k++)
		ck_assert_uint_eq(got[k], 0);
	/* after the repair: filter and map entry back; the kernel route still missing */
	gdp_results_reset(&rs);
	result(&rs, GDP_OBJ_NODE, "", "", true, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::1/128", true, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::3/128", false, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "never", true, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 1);
	ck_assert_uint_eq(got[GDRIFT_FILTER], 1);
	ck_assert_uint_eq(got[GDRIFT_MAP_ENTRY], 1);
	ck_assert_uint_eq(got[GDRIFT_ATTACHMENT], 0); /* never programmed: no repair */
	ck_assert_uint_eq(got[GDRIFT_ROUTE], 0);
	/* the route's remote leaves the state: forgotten, not counted */
	gdp_results_reset(&rs);
	result(&rs, GDP_OBJ_NODE, "", "", true, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(d.repaired[GDRIFT_ROUTE], 0);
	ck_assert_uint_eq(d.repaired[GDRIFT_FILTER], 1);
	ck_assert_str_eq(gdrift_kind_str(GDRIFT_MAP_ENTRY), "map_entry");
	gdp_results_free(&rs);
	gdrift_free(&d);
	/* the metric: every kind from the start, counted as reported */
	ck_assert_int_eq(ghealth_start(&h, &(struct ghealth_opts){ .addr = "127.0.0.1" }, err, sizeof(err)), 0);
	ck_assert_double_eq(gt_metric(ghealth_port(h), "galactic_agent_drift_repaired_total{kind=\"filter\"}"), 0);
	ghealth_drift_repaired(h, "filter", 2);
	ck_assert_double_eq(gt_metric(ghealth_port(h), "galactic_agent_drift_repaired_total{kind=\"filter\"}"), 2);
	ck_assert_double_eq(gt_metric(ghealth_port(h), "galactic_agent_drift_repaired_total{kind=\"map_entry\"}"), 0);
	ghealth_stop(h);
}
END_TEST

/*
 * A backend that only counts the remotes it read back programmed
 * (remotes_ok, no result each): a pending remote without a result is
 * repaired when the covered state still has it, forgotten when not.
 */
START_TEST(test_drift_counted_remotes)
{
	unsigned long got[GDRIFT_KINDS] = { 0 };
	struct gdp_remote r1 = { .vpc_ix = gdp_vpc_ix("vpcA") }, r2 = { .vpc_ix = gdp_vpc_ix("vpcA") };
	struct gdp_results rs;
	struct gdp_state st;
	struct gdrift d;

	gdrift_init(&d);
	gdp_results_init(&rs);
	gdp_state_init(&st);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::1/128", &r1.prefix), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::2/128", &r2.prefix), 0);
	ck_assert_int_eq(gdp_state_add_remote(&st, &r1), 0);
	ck_assert_int_eq(gdp_state_add_remote(&st, &r2), 0);
	/* two map entries gone */
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::1/128", false, GDP_WHAT_MAP);
	result(&rs, GDP_OBJ_REMOTE, "vpcA", "fd00:a::2/128", false, GDP_WHAT_MAP);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, &st, got), 2);
	/* repaired: no result any more, both counted; without the state nothing is known */
	gdp_results_reset(&rs);
	rs.remotes_ok = 2;
	st.n_remotes = 1; /* fd00:a::2 left the state meanwhile */
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, &st, got), 0);
	ck_assert_uint_eq(got[GDRIFT_MAP_ENTRY], 1);
	ck_assert_uint_eq(d.repaired[GDRIFT_MAP_ENTRY], 1);
	st.n_remotes = 2;
	gdp_state_free(&st);
	gdp_results_free(&rs);
	gdrift_free(&d);
}
END_TEST

/*
 * Drift a repair pass did not bring back (a host veth that is gone) stays
 * pending, so its return is counted, but asks for no second repair; drift
 * found later does.
 */
START_TEST(test_drift_repair_asked_once)
{
	unsigned long got[GDRIFT_KINDS] = { 0 };
	struct gdp_results rs;
	struct gdrift d;

	gdrift_init(&d);
	gdp_results_init(&rs);
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "a1", false, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 1);
	ck_assert_uint_eq(gdrift_unasked(&d), 1);
	gdrift_repair_asked(&d);
	ck_assert_uint_eq(gdrift_unasked(&d), 0);
	/* after the repair pass, still gone: pending, nothing to ask */
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 1);
	ck_assert_uint_eq(gdrift_unasked(&d), 0);
	/* another object drifts meanwhile: that one asks */
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "a2", false, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 2);
	ck_assert_uint_eq(gdrift_unasked(&d), 1);
	/* a1 back (its veth returned and a pass programmed it): counted; a2 still asks */
	gdp_results_reset(&rs);
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "a1", true, GDP_WHAT_OBJECT);
	result(&rs, GDP_OBJ_ATTACHMENT, "vpcA", "a2", false, GDP_WHAT_OBJECT);
	ck_assert_int_eq(gdrift_read_back(&d, &rs, all_were, NULL, NULL, got), 1);
	ck_assert_uint_eq(got[GDRIFT_ATTACHMENT], 1);
	ck_assert_uint_eq(gdrift_unasked(&d), 1);
	ck_assert_str_eq(d.pending.v[0].key, "a2");
	gdp_results_free(&rs);
	gdrift_free(&d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent-health");
	TCase *tc = tcase_create("http");

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_test(tc, test_ready_needs_identity_and_a_verified_pass);
	tcase_add_test(tc, test_alive_needs_passes);
	tcase_add_test(tc, test_parse_addr);
	tcase_add_test(tc, test_verdict);
	tcase_add_test(tc, test_drift_counts_repairs_read_back);
	tcase_add_test(tc, test_drift_counted_remotes);
	tcase_add_test(tc, test_drift_repair_asked_once);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
