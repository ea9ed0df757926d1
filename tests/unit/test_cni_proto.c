/* CNI results/errors JSON and the plugin <-> agent socket protocol. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/cni/proto.h"
#include "agent/cni/result.h"
#include "tests/lib/gtest.h"

static const char *conf_json(const char *ver)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"cniVersion\":\"%s\",\"name\":\"net\",\"type\":\"galactic-cni\",\"vpc\":\"V1\","
		 "\"vpcattachment\":\"A1\",\"ipFamilies\":[\"IPv4\",\"IPv6\"],"
		 "\"addresses\":[{\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"},"
		 "{\"address\":\"fd00::5/64\"}],\"routes\":[{\"dst\":\"10.9.0.0/16\",\"gw\":\"10.1.0.9\"}],"
		 "\"mtu\":1400}", ver);
	return buf;
}

static void parse(const char *ver, struct cni_conf *c)
{
	struct cni_err e;
	const char *j = conf_json(ver);

	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, c, &e) == 0, "%s", e.details);
}

static struct cni_result sample_result(void)
{
	struct cni_result r = { .host_ifname = "gc0123", .ifname = "eth0",
				.host_mac = { 2, 0, 0, 0, 0, 1 }, .mac = { 2, 0, 0, 0, 0, 2 },
				.sandbox = "/var/run/netns/p", .mtu = 1400 };
	return r;
}

START_TEST(test_result_1_1)
{
	struct cni_result r = sample_result();
	struct cni_conf c;
	json_t *o, *ips, *ifs, *rts;

	parse("1.1.0", &c);
	o = cni_result_json(&r, &c, c.ver);
	ck_assert_str_eq(json_string_value(json_object_get(o, "cniVersion")), "1.1.0");
	ifs = json_object_get(o, "interfaces");
	ck_assert_int_eq(json_array_size(ifs), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ifs, 1), "name")), "eth0");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ifs, 1), "mac")), "02:00:00:00:00:02");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ifs, 1), "sandbox")), "/var/run/netns/p");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ifs, 1), "mtu")), 1400);
	ck_assert_ptr_null(json_object_get(json_array_get(ifs, 0), "sandbox"));
	ips = json_object_get(o, "ips");
	ck_assert_int_eq(json_array_size(ips), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ips, 0), "address")), "10.1.0.5/24");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ips, 0), "gateway")), "10.1.0.1");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ips, 0), "interface")), 1);
	ck_assert_ptr_null(json_object_get(json_array_get(ips, 0), "version"));
	rts = json_object_get(o, "routes");
	/* default via the IPv4 gateway + the configured route; no IPv6 gateway */
	ck_assert_int_eq(json_array_size(rts), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rts, 0), "dst")), "0.0.0.0/0");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rts, 1), "gw")), "10.1.0.9");
	json_decref(o);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_result_old_versions)
{
	struct cni_result r = sample_result();
	struct cni_conf c;
	json_t *o, *ip;

	parse("0.3.1", &c);
	o = cni_result_json(&r, &c, c.ver);
	ip = json_array_get(json_object_get(o, "ips"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(ip, "version")), "6");
	ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(o, "interfaces"), 1), "mtu"));
	json_decref(o);
	cni_conf_free(&c);
	parse("1.0.0", &c);
	o = cni_result_json(&r, &c, c.ver);
	ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(o, "interfaces"), 1), "mtu"));
	ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(o, "ips"), 1), "version"));
	json_decref(o);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_error_and_version_json)
{
	struct cni_err e;
	json_t *o;

	cni_err_set(&e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent is not reachable", "connect %s: %s",
		    "/run/x", "No such file");
	o = cni_err_json(&e, CNI_V_1_0_0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "cniVersion")), "1.0.0");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "code")), 11);
	ck_assert_str_eq(json_string_value(json_object_get(o, "msg")), "galactic-agent is not reachable");
	ck_assert_str_eq(json_string_value(json_object_get(o, "details")), "connect /run/x: No such file");
	json_decref(o);
	o = cni_err_json(&e, CNI_V_UNKNOWN);
	ck_assert_str_eq(json_string_value(json_object_get(o, "cniVersion")), "1.1.0");
	json_decref(o);
	o = cni_version_json(CNI_V_0_4_0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "cniVersion")), "0.4.0");
	ck_assert_int_eq(json_array_size(json_object_get(o, "supportedVersions")), 5);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "supportedVersions"), 4)), "1.1.0");
	json_decref(o);
}
END_TEST

START_TEST(test_request_roundtrip)
{
	struct cni_env env = { .cmd = CNI_CMD_ADD, .container_id = "abc123", .ifname = "net1",
			       .netns = "/var/run/netns/x", .pod_namespace = "ns", .pod_name = "p" };
	struct cni_conf c;
	struct cni_req q;
	struct cni_err e;
	char *s;

	parse("1.1.0", &c);
	s = cni_req_encode(&env, &c, 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(cni_req_decode(s, strlen(s), &q, &e), 0);
	ck_assert_int_eq(q.env.cmd, CNI_CMD_ADD);
	ck_assert_str_eq(q.env.container_id, "abc123");
	ck_assert_str_eq(q.env.ifname, "net1");
	ck_assert_str_eq(q.env.pod_name, "p");
	ck_assert_int_eq(q.has_netns_fd, 1);
	ck_assert_str_eq(q.conf.att_s, "A1");
	ck_assert_int_eq(memcmp(q.conf.addrs, c.addrs, sizeof(c.addrs)), 0);
	cni_req_free(&q);
	free(s);
	cni_conf_free(&c);
}
END_TEST

static const struct {
	const char *json;
	int code;
} bad_reqs[] = {
	{ "", CNI_ERR_DECODE },
	{ "[]", CNI_ERR_DECODE },
	{ "{\"proto\":2,\"op\":\"ADD\"}", CNI_ERR_AGENT_PROTOCOL },
	{ "{\"proto\":\"1\",\"op\":\"ADD\"}", CNI_ERR_DECODE },
	{ "{\"proto\":1,\"op\":\"VERSION\"}", CNI_ERR_DECODE },
	{ "{\"proto\":1,\"op\":\"ADD\",\"ifname\":\"eth0\"}", CNI_ERR_DECODE },
	{ "{\"proto\":1,\"op\":\"ADD\",\"containerID\":\"c\",\"ifname\":\"e/0\",\"config\":{}}", CNI_ERR_INVALID_ENV },
	{ "{\"proto\":1,\"op\":\"DEL\",\"containerID\":\"c\",\"ifname\":\"eth0\"}", CNI_ERR_DECODE },
	{ "{\"proto\":1,\"op\":\"DEL\",\"containerID\":\"c\",\"ifname\":\"eth0\",\"netnsFd\":1,\"config\":{}}", CNI_ERR_DECODE },
	{ "{\"proto\":1,\"op\":\"DEL\",\"containerID\":\"c\",\"ifname\":\"eth0\",\"config\":{\"cniVersion\":\"9\"}}", CNI_ERR_INCOMPATIBLE_VERSION },
};

START_TEST(test_request_bad)
{
	struct cni_req q;
	struct cni_err e;

	ck_assert_int_eq(cni_req_decode(bad_reqs[_i].json, strlen(bad_reqs[_i].json), &q, &e), -1);
	ck_assert_msg(e.code == bad_reqs[_i].code, "%s: code %d (%s)", bad_reqs[_i].json, e.code, e.details);
}
END_TEST

START_TEST(test_response_codec)
{
	struct cni_err e, in;
	json_t *r = json_pack("{s:s}", "cniVersion", "1.1.0"), *out;
	char *s;

	s = cni_resp_encode_ok(r);
	ck_assert_int_eq(cni_resp_decode(s, strlen(s), &out, &e), 0);
	ck_assert_int_eq(e.code, 0);
	ck_assert_str_eq(json_string_value(json_object_get(out, "cniVersion")), "1.1.0");
	json_decref(out);
	json_decref(r);
	free(s);
	cni_err_set(&in, CNI_ERR_PROGRAMMING, "programming the node failed", "add route x: File exists");
	s = cni_resp_encode_err(&in);
	ck_assert_int_eq(cni_resp_decode(s, strlen(s), &out, &e), 0);
	ck_assert_int_eq(e.code, CNI_ERR_PROGRAMMING);
	ck_assert_str_eq(e.msg, "programming the node failed");
	ck_assert_str_eq(e.details, "add route x: File exists");
	free(s);
	ck_assert_int_eq(cni_resp_decode("{\"proto\":1,\"ok\":false}", 22, &out, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_AGENT_PROTOCOL);
	ck_assert_int_eq(cni_resp_decode("{\"proto\":1,\"ok\":false,\"error\":{\"code\":0,\"msg\":\"x\"}}", 50, &out, &e), -1);
	ck_assert_int_eq(cni_resp_decode("{\"proto\":7,\"ok\":true}", 21, &out, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_AGENT_PROTOCOL);
}
END_TEST

START_TEST(test_frames_and_fd)
{
	struct cni_err e;
	int sv[2], fd = -1, devnull;
	char *buf;
	size_t len;
	struct stat a, b;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	devnull = open("/dev/null", O_RDONLY);
	ck_assert_int_eq(cni_frame_send(sv[0], "{\"x\":1}", 7, devnull, cni_now_ms() + 1000, &e), 0);
	ck_assert_int_eq(cni_frame_recv(sv[1], &buf, &len, &fd, cni_now_ms() + 1000, &e), 0);
	ck_assert_uint_eq(len, 7);
	ck_assert_str_eq(buf, "{\"x\":1}");
	ck_assert_int_ge(fd, 0);
	fstat(fd, &a);
	fstat(devnull, &b);
	ck_assert_int_eq(a.st_ino, b.st_ino);
	free(buf);
	close(fd);
	/* An oversized length header is refused before allocating. */
	{
		uint8_t h[4] = { 0x7f, 0xff, 0xff, 0xff };

		ck_assert_int_eq(write(sv[0], h, 4), 4);
		ck_assert_int_eq(cni_frame_recv(sv[1], &buf, &len, NULL, cni_now_ms() + 1000, &e), -1);
		ck_assert_int_eq(e.code, CNI_ERR_DECODE);
	}
	/* A truncated frame: the peer closes after part of it. */
	{
		uint8_t h[6] = { 0, 0, 0, 10, '{', '}' };

		ck_assert_int_eq(write(sv[0], h, 6), 6);
		close(sv[0]);
		ck_assert_int_eq(cni_frame_recv(sv[1], &buf, &len, NULL, cni_now_ms() + 1000, &e), -1);
		ck_assert_int_eq(e.code, CNI_ERR_IO);
		ck_assert_ptr_nonnull(strstr(e.details, "2 of 10"));
	}
	close(sv[1]);
	close(devnull);
}
END_TEST

START_TEST(test_frame_timeout)
{
	struct cni_err e;
	int sv[2];
	char *buf;
	size_t len;
	int64_t t0 = cni_now_ms();

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(cni_frame_recv(sv[1], &buf, &len, NULL, t0 + 200, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_TRY_AGAIN_LATER);
	ck_assert_int_ge(cni_now_ms() - t0, 190);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* cni_call against no agent and against an agent that never answers. */
START_TEST(test_call_agent_down_and_silent)
{
	struct cni_env env = { .cmd = CNI_CMD_DEL, .container_id = "c", .ifname = "eth0" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct cni_conf c;
	struct cni_err e;
	json_t *res;
	char path[108];
	int l;
	int64_t t0;

	parse("1.1.0", &c);
	snprintf(path, sizeof(path), "/tmp/gcni-test-%d.sock", getpid());
	unlink(path);
	ck_assert_int_eq(cni_call(path, &env, &c, -1, 1000, &res, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_TRY_AGAIN_LATER);
	ck_assert_ptr_nonnull(strstr(e.details, path));

	l = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, path);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	t0 = cni_now_ms();
	ck_assert_int_eq(cni_call(path, &env, &c, -1, 300, &res, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_TRY_AGAIN_LATER);
	ck_assert_ptr_nonnull(strstr(e.msg, "in time"));
	ck_assert_int_ge(cni_now_ms() - t0, 290);
	close(l);
	unlink(path);
	cni_conf_free(&c);
}
END_TEST


/* A fake peer on a unix socket: either some other daemon (writes an HTTP
 * error) or an agent (greets, reads one request, answers). It reports how
 * many bytes it received and whether an fd came with them. */
struct fake {
	char path[108];
	int listener, agent;
	size_t got;
	int got_fd;
	char req_op[16];
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct cni_err e;
	int c = accept(f->listener, NULL, NULL);

	if (c < 0)
		return NULL;
	if (!f->agent) {
		char b[4096];
		ssize_t n;
		static const char http[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";

		if (write(c, http, sizeof(http) - 1) < 0)
			return NULL;
		/* Whatever the plugin sends within a second is counted. */
		struct timeval tv = { .tv_sec = 1 };
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while ((n = read(c, b, sizeof(b))) > 0)
			f->got += (size_t)n;
	} else {
		char *hello = cni_hello_encode(), *buf, *resp;
		size_t len;
		int fd = -1;
		json_t *o, *r = json_pack("{s:s}", "cniVersion", "1.1.0");

		cni_frame_send(c, hello, strlen(hello), -1, cni_now_ms() + 1000, &e);
		free(hello);
		if (cni_frame_recv(c, &buf, &len, &fd, cni_now_ms() + 2000, &e) == 0) {
			f->got = len;
			f->got_fd = fd >= 0;
			o = json_loadb(buf, len, 0, NULL);
			snprintf(f->req_op, sizeof(f->req_op), "%s", json_string_value(json_object_get(o, "op")));
			json_decref(o);
			free(buf);
			if (fd >= 0)
				close(fd);
		}
		resp = cni_resp_encode_ok(r);
		cni_frame_send(c, resp, strlen(resp), -1, cni_now_ms() + 1000, &e);
		free(resp);
		json_decref(r);
	}
	close(c);
	return NULL;
}

static void fake_start(struct fake *f, int agent, pthread_t *t)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->agent = agent;
	snprintf(f->path, sizeof(f->path), "/tmp/gcni-fake-%d-%d.sock", getpid(), agent);
	unlink(f->path);
	strcpy(sa.sun_path, f->path);
	f->listener = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(f->listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f->listener, 4), 0);
	ck_assert_int_eq(pthread_create(t, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f, pthread_t t)
{
	pthread_join(t, NULL);
	close(f->listener);
	unlink(f->path);
}

START_TEST(test_call_refuses_other_daemons)
{
	struct cni_env env = { .cmd = CNI_CMD_ADD, .container_id = "c", .ifname = "eth0", .netns = "/x" };
	struct cni_conf c;
	struct cni_err e;
	struct fake f;
	pthread_t t;
	json_t *res;
	int devnull = open("/dev/null", O_RDONLY);

	parse("1.1.0", &c);
	fake_start(&f, 0, &t);
	ck_assert_int_eq(cni_call(f.path, &env, &c, devnull, 3000, &res, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_AGENT_PROTOCOL);
	ck_assert_ptr_nonnull(strstr(e.msg, "not a galactic-agent socket"));
	ck_assert_ptr_nonnull(strstr(e.details, "nothing was sent"));
	fake_stop(&f, t);
	/* Not a byte (and no namespace fd) went to the other daemon. */
	ck_assert_uint_eq(f.got, 0);
	close(devnull);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_call_talks_to_an_agent)
{
	struct cni_env env = { .cmd = CNI_CMD_ADD, .container_id = "c", .ifname = "eth0", .netns = "/x" };
	struct cni_conf c;
	struct cni_err e;
	struct fake f;
	pthread_t t;
	json_t *res = NULL;
	int devnull = open("/dev/null", O_RDONLY);

	parse("1.1.0", &c);
	fake_start(&f, 1, &t);
	ck_assert_msg(cni_call(f.path, &env, &c, devnull, 3000, &res, &e) == 0, "%s: %s", e.msg, e.details);
	fake_stop(&f, t);
	ck_assert_str_eq(json_string_value(json_object_get(res, "cniVersion")), "1.1.0");
	ck_assert_uint_gt(f.got, 0);
	ck_assert_int_eq(f.got_fd, 1);
	ck_assert_str_eq(f.req_op, "ADD");
	json_decref(res);
	close(devnull);
	cni_conf_free(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cni_proto");
	TCase *t = tcase_create("proto");

	tcase_add_test(t, test_result_1_1);
	tcase_add_test(t, test_result_old_versions);
	tcase_add_test(t, test_error_and_version_json);
	tcase_add_test(t, test_request_roundtrip);
	tcase_add_loop_test(t, test_request_bad, 0, (int)(sizeof(bad_reqs) / sizeof(bad_reqs[0])));
	tcase_add_test(t, test_response_codec);
	tcase_add_test(t, test_frames_and_fd);
	tcase_add_test(t, test_frame_timeout);
	tcase_add_test(t, test_call_agent_down_and_silent);
	tcase_add_test(t, test_call_refuses_other_daemons);
	tcase_add_test(t, test_call_talks_to_an_agent);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
