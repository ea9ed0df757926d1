/* Watch stream framing and event decoding (common/kube_watch). */
#include "common/kube_watch.h"
#include "tests/lib/gtest.h"

#include <string.h>

struct seen {
	int n;
	enum kube_event_type type[64];
	char name[64][64];
	char rv[64][32];
	long code[64];
	int stop_after;
};

static int collect(const struct kube_event *ev, void *ud)
{
	struct seen *s = ud;
	const char *name = json_string_value(json_object_get(json_object_get(ev->object, "metadata"), "name"));
	if (s->n < 64) {
		s->type[s->n] = ev->type;
		snprintf(s->name[s->n], 64, "%s", name ? name : "");
		snprintf(s->rv[s->n], 32, "%s", ev->resource_version ? ev->resource_version : "");
		s->code[s->n] = ev->error_code;
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

static const char *STREAM =
	"{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"10\"},\"data\":{\"k\":\"caf\xc3\xa9 {}\\\"\\n\"}}}\n"
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"11\"}}}\n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"resourceVersion\":\"15\"}}}\n"
	"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"16\"}}}"
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version: 5 (16)\",\"reason\":\"Expired\",\"code\":410}}\n";

static void check_all(const struct seen *s)
{
	ck_assert_int_eq(s->n, 5);
	ck_assert_int_eq(s->type[0], KUBE_EVENT_ADDED);
	ck_assert_str_eq(s->name[0], "a");
	ck_assert_str_eq(s->rv[0], "10");
	ck_assert_int_eq(s->type[1], KUBE_EVENT_MODIFIED);
	ck_assert_str_eq(s->rv[1], "11");
	ck_assert_int_eq(s->type[2], KUBE_EVENT_BOOKMARK);
	ck_assert_str_eq(s->rv[2], "15");
	ck_assert_int_eq(s->type[3], KUBE_EVENT_DELETED);
	ck_assert_int_eq(s->type[4], KUBE_EVENT_ERROR);
	ck_assert_int_eq(s->code[4], 410);
}

START_TEST(whole_stream)
{
	struct kube_watch_decoder *d = kube_watch_decoder_new(0);
	struct seen s = { 0 };
	char err[256];
	ck_assert_int_eq(kube_watch_decoder_feed(d, STREAM, strlen(STREAM), collect, &s, err, sizeof(err)), 0);
	check_all(&s);
	ck_assert_uint_eq(kube_watch_decoder_pending(d), 0);
	kube_watch_decoder_free(d);
}
END_TEST

/* Every split point, and byte-at-a-time: values across chunks (even inside UTF-8). */
START_TEST(split_everywhere)
{
	size_t n = strlen(STREAM);
	char err[256];
	for (size_t cut = 0; cut <= n; cut++) {
		struct kube_watch_decoder *d = kube_watch_decoder_new(0);
		struct seen s = { 0 };
		ck_assert_msg(kube_watch_decoder_feed(d, STREAM, cut, collect, &s, err, sizeof(err)) == 0,
			      "cut %zu: %s", cut, err);
		ck_assert_msg(kube_watch_decoder_feed(d, STREAM + cut, n - cut, collect, &s, err, sizeof(err)) == 0,
			      "cut %zu second half: %s", cut, err);
		check_all(&s);
		kube_watch_decoder_free(d);
	}
	struct kube_watch_decoder *d = kube_watch_decoder_new(0);
	struct seen s = { 0 };
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(kube_watch_decoder_feed(d, STREAM + i, 1, collect, &s, err, sizeof(err)), 0);
	check_all(&s);
	kube_watch_decoder_free(d);
}
END_TEST

START_TEST(callback_stop_keeps_rest)
{
	struct kube_watch_decoder *d = kube_watch_decoder_new(0);
	struct seen s = { .stop_after = 2 };
	char err[256];
	ck_assert_int_eq(kube_watch_decoder_feed(d, STREAM, strlen(STREAM), collect, &s, err, sizeof(err)), 7);
	ck_assert_int_eq(s.n, 2);
	ck_assert_uint_gt(kube_watch_decoder_pending(d), 0);
	s.stop_after = 0;
	ck_assert_int_eq(kube_watch_decoder_feed(d, NULL, 0, collect, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 5);
	kube_watch_decoder_free(d);
}
END_TEST

static int feed_str(const char *in, char *err, size_t n, int *events)
{
	struct kube_watch_decoder *d = kube_watch_decoder_new(256);
	struct seen s = { 0 };
	int r = kube_watch_decoder_feed(d, in, strlen(in), collect, &s, err, n);
	*events = s.n;
	kube_watch_decoder_free(d);
	return r;
}

START_TEST(malformed)
{
	static const struct { const char *in; const char *msg; int events; } cases[] = {
		{ "[1,2]\n", "expected '{'" , 0 },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}} x\n", "expected '{'", 1 },
		{ "{\"type\":\"ADDED\",\"object\":[]}\n", "not an object" , 0 },
		{ "{\"type\":\"SURPRISE\",\"object\":{}}\n", "unknown type" , 0 },
		{ "{\"type\":7,\"object\":{}}\n", "string type" , 0 },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n", "resourceVersion" , 0 },
		{ "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}\n", "metadata.name" , 0 },
		{ "{\"type\":\"ADDED\",\"type\":\"ADDED\",\"object\":{}}\n", "bad JSON" , 0 },
		{ "{\"type\":\"ADDED\" \"object\":{}}\n", "bad JSON" , 0 },
		{ "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\",\"x\":\"\xff\xfe\"}}}\n", "bad JSON" , 0 },
		{ "{\"type\":\"ADDED\",\"object\":{\"data\":\"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}", "larger than", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		int ev;
		ck_assert_msg(feed_str(cases[i].in, err, sizeof(err), &ev) == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err, cases[i].msg);
		ck_assert_int_eq(ev, cases[i].events);
	}
}
END_TEST

START_TEST(incomplete_waits)
{
	struct kube_watch_decoder *d = kube_watch_decoder_new(0);
	struct seen s = { 0 };
	char err[256];
	const char *part = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}";
	ck_assert_int_eq(kube_watch_decoder_feed(d, part, strlen(part), collect, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_uint_eq(kube_watch_decoder_pending(d), strlen(part));
	ck_assert_int_eq(kube_watch_decoder_feed(d, "}\r\n\n", 4, collect, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(s.n, 1);
	kube_watch_decoder_reset(d);
	ck_assert_uint_eq(kube_watch_decoder_pending(d), 0);
	kube_watch_decoder_free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_watch");
	TCase *tc = tcase_create("decoder");
	tcase_add_test(tc, whole_stream);
	tcase_add_test(tc, split_everywhere);
	tcase_add_test(tc, callback_stop_keeps_rest);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, incomplete_waits);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
