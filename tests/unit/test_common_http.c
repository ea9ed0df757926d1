/*
 * kube_client's HTTP layer against a local libmicrohttpd server that returns
 * canned responses the real API server rarely produces on demand: 429 with a
 * Retry-After header, 503 with a text body, 200 with broken JSON, a watch
 * stream that goes silent. (Kubernetes semantics are tested against the real
 * kube-apiserver in tests/e2e/test_common_*.c.)
 */
#include "common/kube_client.h"
#include "common/json.h"
#include "tests/lib/gtest.h"

#include <microhttpd.h>
#include <string.h>
#include <unistd.h>

static const struct kube_resource CM = { "", "v1", "configmaps", true };
static struct MHD_Daemon *srv;
static int port;

static const char *WATCH_EVENT =
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"5\"}}}\n";

/* Sends one event in two pieces, then nothing (a stalled connection). */
static ssize_t stall_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
	size_t n = strlen(WATCH_EVENT), half = n / 2;
	(void)cls;
	if (pos == 0) {
		memcpy(buf, WATCH_EVENT, half < max ? half : max);
		return (ssize_t)(half < max ? half : max);
	}
	if (pos < n) {
		size_t k = n - pos < max ? n - pos : max;
		memcpy(buf, WATCH_EVENT + pos, k);
		return (ssize_t)k;
	}
	usleep(100 * 1000);
	return 0; /* no data yet; MHD calls again */
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *up,
			      size_t *up_size, void **req_cls)
{
	struct MHD_Response *r;
	unsigned code = 200;
	const char *body = "{}";
	enum MHD_Result ret;
	(void)cls; (void)method; (void)version; (void)up; (void)up_size; (void)req_cls;

	if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch")) {
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stall_stream, NULL, NULL);
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (strstr(url, "/throttled")) {
		code = 429;
		body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\",\"message\":\"slow down\",\"code\":429}";
	} else if (strstr(url, "/unavailable")) {
		code = 503;
		body = "upstream down\n";
	} else if (strstr(url, "/broken")) {
		body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":";
	} else if (strstr(url, "/ok")) {
		body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ok\",\"namespace\":\"n\"}}";
	} else {
		code = 404;
		body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":\"nope\",\"code\":404}";
	}
	r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	if (code == 429)
		MHD_add_response_header(r, "Retry-After", "7");
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static void setup(void)
{
	srv = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
			       NULL, answer, NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(srv);
	port = MHD_get_daemon_info(srv, MHD_DAEMON_INFO_BIND_PORT)->port;
}

static void teardown(void) { MHD_stop_daemon(srv); }

static struct kube_client *client(struct kube_config **cfg)
{
	char url[64], err[256];
	struct kube_client *kc;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	*cfg = kube_config_new(url, "t0ken", NULL);
	kc = kube_client_new(*cfg, err, sizeof(err));
	ck_assert_msg(kc != NULL, "%s", err);
	return kc;
}

START_TEST(typed_errors_over_http)
{
	struct kube_config *cfg;
	struct kube_client *kc = client(&cfg);
	struct kube_error e;
	json_t *o = NULL;

	ck_assert_int_eq(kube_get(kc, &CM, "n", "throttled", &o, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_TOO_MANY);
	ck_assert_double_eq(e.retry_after_s, 7);
	ck_assert_str_eq(e.message, "get configmaps/n/throttled: 429 Too Many Requests: slow down");
	ck_assert(kube_error_retryable(&e));

	ck_assert_int_eq(kube_get(kc, &CM, "n", "unavailable", &o, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_SERVER);
	ck_assert_str_eq(e.message, "get configmaps/n/unavailable: 503 Service Unavailable: upstream down ");

	ck_assert_int_eq(kube_get(kc, &CM, "n", "broken", &o, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_DECODE);
	ck_assert_ptr_null(o);
	ck_assert_msg(strstr(e.message, "get configmaps/n/broken: bad JSON from server"), "%s", e.message);

	ck_assert_int_eq(kube_get(kc, &CM, "n", "ok", &o, &e), 0);
	ck_assert_str_eq(gj_str(o, "metadata.name"), "ok");
	json_decref(o);
	ck_assert_int_eq(kube_list_page(kc, &CM, "n", NULL, &o, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_NOT_FOUND);
	kube_client_free(kc);
	kube_config_free(cfg);

	/* Nobody listening: a transport error naming the operation. */
	cfg = kube_config_new("http://127.0.0.1:1", NULL, NULL);
	char err[256];
	kc = kube_client_new(cfg, err, sizeof(err));
	ck_assert_int_eq(kube_get(kc, &CM, "n", "x", &o, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_TRANSPORT);
	ck_assert_msg(!strncmp(e.message, "get configmaps/n/x: ", 20), "%s", e.message);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

struct got {
	size_t bytes;
	int lines;
};

static int on_data(const char *d, size_t n, void *ud)
{
	struct got *g = ud;
	g->bytes += n;
	for (size_t i = 0; i < n; i++)
		g->lines += d[i] == '\n';
	return 0;
}

START_TEST(stream_idle_timeout)
{
	struct kube_config *cfg;
	struct kube_client *kc = client(&cfg);
	struct kube_error e;
	struct got g = { 0 };
	struct kube_stream_opts so = { .idle_timeout_s = 1 };

	ck_assert_int_eq(kube_stream(kc, "/api/v1/namespaces/n/configmaps?watch=1", "watch configmaps",
				     on_data, &g, &so, &e), -1);
	ck_assert_int_eq(e.code, KUBE_ERR_TRANSPORT);
	ck_assert_msg(strstr(e.message, "watch configmaps: no data for 1s (idle timeout)"), "%s", e.message);
	ck_assert_uint_eq(g.bytes, strlen(WATCH_EVENT));
	ck_assert_int_eq(g.lines, 1);

	/* A stop flag ends a stream too. */
	atomic_bool stop = true;
	so = (struct kube_stream_opts){ .stop = &stop };
	ck_assert_int_eq(kube_stream(kc, "/api/v1/namespaces/n/configmaps?watch=1", "watch configmaps",
				     on_data, &g, &so, &e), -1);
	ck_assert_str_eq(e.message, "watch configmaps: stopped");
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_http");
	TCase *tc = tcase_create("http");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, typed_errors_over_http);
	tcase_add_test(tc, stream_idle_timeout);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
