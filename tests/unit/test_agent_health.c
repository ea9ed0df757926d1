/* The agent's health endpoints (agent/health/health.h) over real HTTP. */
#include "agent/health/health.h"
#include "agent/dp/backend.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"

#include <curl/curl.h>
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

int main(void)
{
	Suite *s = suite_create("agent-health");
	TCase *tc = tcase_create("http");

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_test(tc, test_ready_needs_identity_and_a_verified_pass);
	tcase_add_test(tc, test_alive_needs_passes);
	tcase_add_test(tc, test_parse_addr);
	tcase_add_test(tc, test_verdict);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
