#include "agent/cni/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t cni_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_io(int sock, short ev, int64_t deadline, struct cni_err *e, const char *what)
{
	for (;;) {
		int64_t left = deadline - cni_now_ms();
		struct pollfd p = { .fd = sock, .events = ev };
		int r;

		if (left <= 0) {
			cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent did not answer in time",
				    "timed out while %s", what);
			return -1;
		}
		r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR) {
			cni_err_set(e, CNI_ERR_IO, "I/O error on the agent socket", "poll while %s: %s",
				    what, strerror(errno));
			return -1;
		}
	}
}

int cni_frame_send(int sock, const char *buf, size_t len, int fd_to_pass, int64_t deadline,
		   struct cni_err *e)
{
	uint8_t hdr[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			   (uint8_t)len };
	size_t off = 0, total = len + 4;

	if (len > CNI_PROTO_MAX_FRAME) {
		cni_err_set(e, CNI_ERR_IO, "message too large", "%zu bytes, at most %u", len,
			    CNI_PROTO_MAX_FRAME);
		return -1;
	}
	while (off < total) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cb;
		ssize_t n;

		if (off < 4) {
			iov[0] = (struct iovec){ hdr + off, 4 - off };
			iov[1] = (struct iovec){ (void *)buf, len };
			mh.msg_iovlen = 2;
		} else {
			iov[0] = (struct iovec){ (void *)(buf + off - 4), total - off };
			mh.msg_iovlen = 1;
		}
		if (off == 0 && fd_to_pass >= 0) {
			struct cmsghdr *cm;

			memset(&cb, 0, sizeof(cb));
			mh.msg_control = cb.b;
			mh.msg_controllen = sizeof(cb.b);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd_to_pass, sizeof(int));
		}
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_io(sock, POLLOUT, deadline, e, "sending"))
				return -1;
			continue;
		}
		cni_err_set(e, CNI_ERR_IO, "I/O error on the agent socket", "send: %s",
			    n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/* Reads exactly len bytes; collects a passed fd if fd_out. */
static int recv_all(int sock, uint8_t *p, size_t len, int *fd_out, int64_t deadline,
		    struct cni_err *e)
{
	size_t off = 0;

	while (off < len) {
		struct iovec iov = { p + off, len - off };
		union {
			char b[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} cb;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b,
				     .msg_controllen = sizeof(cb.b) };
		ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n > 0) {
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
				if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
					continue;
				size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < nfd; i++) {
					int fd;

					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
					if (fd_out && *fd_out < 0)
						*fd_out = fd;
					else
						close(fd);
				}
			}
			off += (size_t)n;
			continue;
		}
		if (n == 0) {
			cni_err_set(e, CNI_ERR_IO, "the agent socket closed early",
				    "peer closed after %zu of %zu bytes", off, len);
			return -1;
		}
		if (errno == EAGAIN || errno == EINTR) {
			if (wait_io(sock, POLLIN, deadline, e, "receiving"))
				return -1;
			continue;
		}
		cni_err_set(e, CNI_ERR_IO, "I/O error on the agent socket", "recv: %s",
			    strerror(errno));
		return -1;
	}
	return 0;
}

int cni_frame_recv(int sock, char **buf, size_t *len, int *fd_out, int64_t deadline,
		   struct cni_err *e)
{
	uint8_t hdr[4];
	size_t n;
	char *b;

	*buf = NULL;
	if (fd_out)
		*fd_out = -1;
	if (recv_all(sock, hdr, 4, fd_out, deadline, e))
		goto fail;
	n = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if (n > CNI_PROTO_MAX_FRAME) {
		cni_err_set(e, CNI_ERR_DECODE, "message too large", "frame of %zu bytes, at most %u",
			    n, CNI_PROTO_MAX_FRAME);
		goto fail;
	}
	b = malloc(n + 1);
	if (!b) {
		cni_err_set(e, CNI_ERR_IO, "out of memory", "frame of %zu bytes", n);
		goto fail;
	}
	if (recv_all(sock, (uint8_t *)b, n, fd_out, deadline, e)) {
		free(b);
		goto fail;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
fail:
	if (fd_out && *fd_out >= 0) {
		close(*fd_out);
		*fd_out = -1;
	}
	return -1;
}

char *cni_hello_encode(void)
{
	json_t *o = json_pack("{s:i,s:s}", "proto", CNI_PROTO_VERSION, "agent", CNI_HELLO_AGENT);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

int cni_hello_check(const char *buf, size_t len, struct cni_err *e)
{
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	const char *agent = json_string_value(json_object_get(o, "agent"));
	json_t *proto = json_object_get(o, "proto");
	int rc = 0;

	if (!agent || strcmp(agent, CNI_HELLO_AGENT) || !json_is_integer(proto)) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "not a galactic-agent socket",
			    "the first message is not the agent's greeting; nothing was sent");
		rc = -1;
	} else if (json_integer_value(proto) != CNI_PROTO_VERSION) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "galactic-cni and galactic-agent versions differ",
			    "agent speaks protocol %lld, this plugin %d", (long long)json_integer_value(proto),
			    CNI_PROTO_VERSION);
		rc = -1;
	}
	json_decref(o);
	return rc;
}

char *cni_req_encode(const struct cni_env *env, const struct cni_conf *conf, int has_fd)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "proto", json_integer(CNI_PROTO_VERSION));
	json_object_set_new(o, "op", json_string(cni_cmd_str(env->cmd)));
	if (env->container_id[0])
		json_object_set_new(o, "containerID", json_string(env->container_id));
	if (env->ifname[0])
		json_object_set_new(o, "ifname", json_string(env->ifname));
	if (env->netns[0])
		json_object_set_new(o, "netns", json_string(env->netns));
	json_object_set_new(o, "netnsFd", json_boolean(has_fd));
	if (env->pod_namespace[0])
		json_object_set_new(o, "podNamespace", json_string(env->pod_namespace));
	if (env->pod_name[0])
		json_object_set_new(o, "podName", json_string(env->pod_name));
	if (env->pod_uid[0])
		json_object_set_new(o, "podUID", json_string(env->pod_uid));
	json_object_set_new(o, "config", cni_conf_to_json(conf));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static int req_str(json_t *o, const char *k, char *dst, size_t cap, int required,
		   struct cni_err *e)
{
	json_t *v = json_object_get(o, k);

	dst[0] = 0;
	if (!v) {
		if (!required)
			return 0;
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request", "'%s' is missing", k);
		return -1;
	}
	if (!json_is_string(v) || json_string_length(v) >= cap ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request",
			    "'%s' must be a string shorter than %zu bytes", k, cap);
		return -1;
	}
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

int cni_req_decode(const char *buf, size_t len, struct cni_req *req, struct cni_err *e)
{
	json_error_t je;
	json_t *o, *v;
	const char *why;
	int need_id;

	memset(req, 0, sizeof(*req));
	req->conf.ver = CNI_V_UNKNOWN;
	memset(e, 0, sizeof(*e));
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request",
			    "JSON error at line %d column %d: %s", je.line, je.column, je.text);
		return -1;
	}
	if (!json_is_object(o)) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request", "not a JSON object");
		goto fail;
	}
	v = json_object_get(o, "proto");
	if (!json_is_integer(v)) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request", "'proto' must be an integer");
		goto fail;
	}
	req->proto = (int)json_integer_value(v);
	if (req->proto != CNI_PROTO_VERSION) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "galactic-cni and galactic-agent versions differ",
			    "request protocol %lld, this agent speaks %d",
			    (long long)json_integer_value(v), CNI_PROTO_VERSION);
		goto fail;
	}
	v = json_object_get(o, "op");
	req->env.cmd = json_is_string(v) ? cni_cmd_parse(json_string_value(v)) : CNI_CMD_UNKNOWN;
	if (req->env.cmd == CNI_CMD_UNKNOWN || req->env.cmd == CNI_CMD_VERSION) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request",
			    "'op' must be ADD, DEL, CHECK, GC or STATUS");
		goto fail;
	}
	need_id = req->env.cmd == CNI_CMD_ADD || req->env.cmd == CNI_CMD_DEL ||
		  req->env.cmd == CNI_CMD_CHECK;
	if (req_str(o, "containerID", req->env.container_id, sizeof(req->env.container_id), need_id, e) ||
	    req_str(o, "ifname", req->env.ifname, sizeof(req->env.ifname), need_id, e) ||
	    req_str(o, "netns", req->env.netns, sizeof(req->env.netns), 0, e) ||
	    req_str(o, "podNamespace", req->env.pod_namespace, sizeof(req->env.pod_namespace), 0, e) ||
	    req_str(o, "podName", req->env.pod_name, sizeof(req->env.pod_name), 0, e) ||
	    req_str(o, "podUID", req->env.pod_uid, sizeof(req->env.pod_uid), 0, e))
		goto fail;
	if (need_id && cni_container_id_valid(req->env.container_id, &why)) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment", "containerID %s", why);
		goto fail;
	}
	if (need_id && cni_ifname_valid(req->env.ifname, &why)) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment", "ifname %s", why);
		goto fail;
	}
	v = json_object_get(o, "netnsFd");
	if (v && !json_is_boolean(v)) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request", "'netnsFd' must be a boolean");
		goto fail;
	}
	req->has_netns_fd = json_is_true(v);
	v = json_object_get(o, "config");
	if (!v) {
		cni_err_set(e, CNI_ERR_DECODE, "malformed agent request", "'config' is missing");
		goto fail;
	}
	if (cni_conf_parse_json(v, req->env.cmd, &req->conf, e))
		goto fail;
	json_decref(o);
	return 0;
fail:
	json_decref(o);
	cni_req_free(req);
	return -1;
}

void cni_req_free(struct cni_req *req)
{
	cni_conf_free(&req->conf);
}

char *cni_resp_encode_ok(json_t *result)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "proto", json_integer(CNI_PROTO_VERSION));
	json_object_set_new(o, "ok", json_true());
	if (result)
		json_object_set(o, "result", result);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

char *cni_resp_encode_err(const struct cni_err *e)
{
	json_t *o = json_object(), *x = json_object();
	char *s;

	json_object_set_new(o, "proto", json_integer(CNI_PROTO_VERSION));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(x, "code", json_integer(e->code));
	json_object_set_new(x, "msg", json_string(e->msg));
	json_object_set_new(x, "details", json_string(e->details));
	json_object_set_new(o, "error", x);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

int cni_resp_decode(const char *buf, size_t len, json_t **result, struct cni_err *e)
{
	json_error_t je;
	json_t *o, *v, *x;

	*result = NULL;
	memset(e, 0, sizeof(*e));
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "malformed response from galactic-agent",
			    "%s", o ? "not a JSON object" : je.text);
		json_decref(o);
		return -1;
	}
	v = json_object_get(o, "proto");
	if (!json_is_integer(v) || json_integer_value(v) != CNI_PROTO_VERSION) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "galactic-cni and galactic-agent versions differ",
			    "response protocol is not %d", CNI_PROTO_VERSION);
		json_decref(o);
		return -1;
	}
	v = json_object_get(o, "ok");
	if (json_is_true(v)) {
		x = json_object_get(o, "result");
		if (x && !json_is_object(x)) {
			cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "malformed response from galactic-agent",
				    "'result' is not an object");
			json_decref(o);
			return -1;
		}
		*result = x ? json_incref(x) : NULL;
		json_decref(o);
		return 0;
	}
	x = json_object_get(o, "error");
	if (!json_is_false(v) || !json_is_object(x) || !json_is_integer(json_object_get(x, "code")) ||
	    !json_is_string(json_object_get(x, "msg")) ||
	    json_integer_value(json_object_get(x, "code")) <= 0 ||
	    json_integer_value(json_object_get(x, "code")) > 999) {
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "malformed response from galactic-agent",
			    "needs ok=true with result, or ok=false with error{code 1..999, msg}");
		json_decref(o);
		return -1;
	}
	cni_err_set(e, (int)json_integer_value(json_object_get(x, "code")), "", "%s",
		    json_string_value(json_object_get(x, "details")) ?
			    json_string_value(json_object_get(x, "details")) : "");
	snprintf(e->msg, sizeof(e->msg), "%s", json_string_value(json_object_get(x, "msg")));
	json_decref(o);
	return 0;
}

int cni_call(const char *path, const struct cni_env *env, const struct cni_conf *conf,
	     int netns_fd, int timeout_ms, json_t **result, struct cni_err *e)
{
	int64_t deadline = cni_now_ms() + timeout_ms;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *req = NULL, *resp = NULL;
	size_t rlen;
	int s, rc = -1;

	*result = NULL;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid agent socket path", "\"%.64s...\" is too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		cni_err_set(e, CNI_ERR_IO, "cannot create a unix socket", "%s", strerror(errno));
		return -1;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EAGAIN) {
			/* A full listen backlog: the agent is alive but busy. */
			cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent is busy",
				    "connect %s: listen backlog full; retry", path);
		} else {
			cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent is not reachable",
				    "connect %s: %s (is galactic-agent running on this node?)", path,
				    strerror(errno));
		}
		goto out;
	}
	/* The agent speaks first: nothing (least of all the pod's namespace)
	 * is sent to a socket that is not galactic-agent's. */
	if (cni_frame_recv(s, &resp, &rlen, NULL, deadline, e))
		goto hello_failed;
	if (cni_hello_check(resp, rlen, e))
		goto out;
	free(resp);
	resp = NULL;
	req = cni_req_encode(env, conf, netns_fd >= 0);
	if (!req) {
		cni_err_set(e, CNI_ERR_IO, "cannot encode the agent request", "out of memory");
		goto out;
	}
	if (cni_frame_send(s, req, strlen(req), netns_fd, deadline, e))
		goto agent_gone;
	if (cni_frame_recv(s, &resp, &rlen, NULL, deadline, e))
		goto agent_gone;
	if (cni_resp_decode(resp, rlen, result, e))
		goto out;
	rc = e->code ? -1 : 0;
	goto out;
hello_failed:
	if (e->code == CNI_ERR_DECODE) {
		char d[sizeof(e->details)];

		snprintf(d, sizeof(d), "%s", e->details);
		cni_err_set(e, CNI_ERR_AGENT_PROTOCOL, "not a galactic-agent socket",
			    "%s: the first message is not the agent's greeting (%s); nothing was sent", path, d);
		goto out;
	}
agent_gone:
	/* The request may or may not have been applied; ADD and DEL are
	 * idempotent, so the runtime may simply retry. */
	if (e->code == CNI_ERR_IO) {
		char d[sizeof(e->details)];

		snprintf(d, sizeof(d), "%s", e->details);
		cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent went away during the request",
			    "%s on %s", d, path);
	}
out:
	free(req);
	free(resp);
	close(s);
	return rc;
}
