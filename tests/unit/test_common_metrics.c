/* Metrics text format and the /metrics, /healthz, /readyz server. */
#include "common/log.h"
#include "common/metrics.h"
#include "tests/lib/gtest.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <string.h>

START_TEST(render)
{
	struct metrics *m = metrics_new();
	struct metric *c = metrics_counter(m, "galactic_api_requests_total", "API requests.", "verb,code");
	struct metric *g = metrics_gauge(m, "galactic_cache_objects", "Objects in cache.", NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(metrics_counter(m, "galactic_api_requests_total", "dup", NULL));
	ck_assert_ptr_null(metrics_counter(m, "9bad", "x", NULL));
	ck_assert_ptr_null(metrics_counter(m, "ok_name", "x", "bad-label"));
	metric_add(c, "GET,200", 1);
	metric_add(c, "GET,200", 2);
	metric_add(c, "PATCH,\"x\"\\", 1);
	metric_set(g, NULL, 42);
	ck_assert_double_eq(metric_value(c, "GET,200"), 3);
	char *t = metrics_render(m);
	ck_assert_ptr_nonnull(strstr(t, "# TYPE galactic_api_requests_total counter\n"));
	ck_assert_ptr_nonnull(strstr(t, "galactic_api_requests_total{verb=\"GET\",code=\"200\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(t, "galactic_api_requests_total{verb=\"PATCH\",code=\"\\\"x\\\"\\\\\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "# TYPE galactic_cache_objects gauge\ngalactic_cache_objects 42\n"));
	free(t);
	metrics_free(m);
}
END_TEST

struct body {
	char buf[8192];
	size_t n;
};

static size_t sink(char *d, size_t s, size_t n, void *ud)
{
	struct body *b = ud;
	size_t len = s * n, room = sizeof(b->buf) - 1 - b->n;
	memcpy(b->buf + b->n, d, len < room ? len : room);
	b->n += len < room ? len : room;
	b->buf[b->n] = 0;
	return len;
}

static long fetch(int port, const char *path, struct body *b)
{
	char url[128];
	long code = 0;
	CURL *h = curl_easy_init();
	b->n = 0;
	b->buf[0] = 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return code;
}

static atomic_bool synced;
static bool check_synced(void *ud) { (void)ud; return atomic_load(&synced); }
static bool check_alive(void *ud) { (void)ud; return true; }

START_TEST(http_endpoints)
{
	struct metrics *m = metrics_new();
	struct metric *c = metrics_counter(m, "galactic_test_total", "Test.", NULL);
	char err[256];
	struct body b;
	struct metrics_http *h = metrics_http_start(m, "127.0.0.1", 0, err, sizeof(err));

	ck_assert_msg(h != NULL, "%s", err);
	ck_assert_int_gt(metrics_http_port(h), 0);
	metrics_http_add_check(h, "informers-synced", true, check_synced, NULL);
	metrics_http_add_check(h, "loop-alive", false, check_alive, NULL);
	metric_add(c, NULL, 5);
	ck_assert_int_eq(fetch(metrics_http_port(h), "/metrics", &b), 200);
	ck_assert_ptr_nonnull(strstr(b.buf, "galactic_test_total 5\n"));
	ck_assert_int_eq(fetch(metrics_http_port(h), "/healthz", &b), 200);
	ck_assert_int_eq(fetch(metrics_http_port(h), "/readyz", &b), 503);
	ck_assert_ptr_nonnull(strstr(b.buf, "[-] informers-synced"));
	atomic_store(&synced, true);
	ck_assert_int_eq(fetch(metrics_http_port(h), "/readyz", &b), 200);
	ck_assert_ptr_nonnull(strstr(b.buf, "[+] informers-synced\n[+] loop-alive\nok\n"));
	ck_assert_int_eq(fetch(metrics_http_port(h), "/nope", &b), 404);
	/* A second server on the same port fails with a message. */
	ck_assert_ptr_null(metrics_http_start(m, "127.0.0.1", metrics_http_port(h), err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "cannot listen"));
	metrics_http_stop(h);
	metrics_free(m);
}
END_TEST

START_TEST(log_format)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	enum glog_level l;
	glog_set_output(f);
	glog_set_level(GLOG_INFO);
	glog_kv(GLOG_DEBUG, "informer", "hidden", NULL);
	glog_kv(GLOG_WARN, "informer", "watch failed", "error", "get x: 500 \"boom\"", "n", "3", NULL);
	glogf(GLOG_ERROR, "leader", "lost %d", 2);
	glog_set_output(NULL);
	fclose(f);
	ck_assert_ptr_null(strstr(buf, "hidden"));
	ck_assert_ptr_nonnull(strstr(buf, " level=warn comp=informer msg=\"watch failed\" error=\"get x: 500 \\\"boom\\\"\" n=3\n"));
	ck_assert_ptr_nonnull(strstr(buf, " level=error comp=leader msg=\"lost 2\"\n"));
	ck_assert(!strncmp(buf, "ts=", 3));
	free(buf);
	ck_assert_int_eq(glog_parse_level("debug", &l), 0);
	ck_assert_int_eq(l, GLOG_DEBUG);
	ck_assert_int_eq(glog_parse_level("loud", &l), -1);
}
END_TEST

/* An unbuffered stream (what stderr is) that records each write it gets. */
struct wrec {
	int writes;
	char out[16384];
	size_t n;
};

static ssize_t wrec_write(void *c, const char *b, size_t n)
{
	struct wrec *w = c;

	w->writes++;
	if (w->n + n < sizeof(w->out)) {
		memcpy(w->out + w->n, b, n);
		w->n += n;
	}
	return (ssize_t)n;
}

/* One write(2) per line on an unbuffered stream (it was one per character),
 * and a line longer than the line buffer still whole and in order. */
START_TEST(log_one_write_per_line)
{
	static struct wrec w;
	FILE *f = fopencookie(&w, "w", (cookie_io_functions_t){ .write = wrec_write });
	char big[9001];

	ck_assert_ptr_nonnull(f);
	setvbuf(f, NULL, _IONBF, 0);
	glog_set_output(f);
	glog_set_level(GLOG_INFO);
	glogf(GLOG_INFO, "cni", "ADD container c%d: ok (%d ms)", 7, 12);
	ck_assert_int_eq(w.writes, 1);
	ck_assert_ptr_nonnull(strstr(w.out, " level=info comp=cni msg=\"ADD container c7: ok (12 ms)\"\n"));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	w.n = 0;
	w.writes = 0;
	glog_kv(GLOG_WARN, "t", "long", "v", big, "end", "1", NULL);
	glog_set_output(NULL);
	fclose(f);
	w.out[w.n] = 0;
	ck_assert_int_ge(w.writes, 3); /* 9,000 bytes through a 4 KiB line buffer */
	ck_assert_int_le(w.writes, 4);
	ck_assert_ptr_nonnull(strstr(w.out, " msg=long v="));
	ck_assert_uint_eq(strspn(strstr(w.out, " v=") + 3, "x"), sizeof(big) - 1);
	ck_assert_ptr_nonnull(strstr(w.out, "x end=1\n"));
	ck_assert_int_eq(w.out[w.n - 1], '\n');
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_metrics");
	TCase *tc = tcase_create("metrics");
	curl_global_init(CURL_GLOBAL_ALL);
	tcase_add_test(tc, render);
	tcase_add_test(tc, http_endpoints);
	tcase_add_test(tc, log_format);
	tcase_add_test(tc, log_one_write_per_line);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
