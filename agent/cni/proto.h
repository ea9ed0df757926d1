/*
 * The galactic-cni <-> galactic-agent protocol (docs/cni.md is the
 * reference). One request and one response per connection on a unix stream
 * socket; each message is a 4-byte big-endian length followed by that many
 * bytes of JSON. The request may carry the container's network namespace as
 * an SCM_RIGHTS file descriptor, so the agent never resolves a path that
 * only exists in the runtime's mount namespace.
 */
#ifndef GALACTIC_CNI_PROTO_H
#define GALACTIC_CNI_PROTO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cni/config.h"
#include "agent/cni/result.h"

#define CNI_PROTO_VERSION 1
#define CNI_PROTO_MAX_FRAME (2u << 20)
#define CNI_DEFAULT_SOCKET "/run/galactic/cni.sock"
#define CNI_HELLO_AGENT "galactic-agent"

struct cni_req {
	int proto;
	struct cni_env env;   /* cmd, container id, ifname, netns path, pod */
	struct cni_conf conf; /* validated again on the agent side */
	int has_netns_fd;     /* the sender attached an fd */
};

/*
 * The agent's greeting, sent as soon as it accepts: {"proto":1,"agent":
 * "galactic-agent"}. The plugin sends nothing before it has read one, so a
 * configuration naming some other daemon's socket gets nothing from it.
 */
char *cni_hello_encode(void);
/* 0 if buf is a greeting of this protocol version, else -1 with e (code 100). */
int cni_hello_check(const char *buf, size_t len, struct cni_err *e);

/* Encodes a request; returns a malloc'd JSON string or NULL. */
char *cni_req_encode(const struct cni_env *env, const struct cni_conf *conf, int has_fd);
/* Decodes and validates a request. Returns 0, or -1 with e. Free with cni_req_free. */
int cni_req_decode(const char *buf, size_t len, struct cni_req *req, struct cni_err *e);
void cni_req_free(struct cni_req *req);

/* Responses: ok with an optional result object, or an error. */
char *cni_resp_encode_ok(json_t *result /* borrowed, may be NULL */);
char *cni_resp_encode_err(const struct cni_err *e);
/* Returns 0 with *result (new ref, may be NULL) or 0 with e->code set for an
 * agent error; -1 with e (code 100) if the response is malformed. */
int cni_resp_decode(const char *buf, size_t len, json_t **result, struct cni_err *e);

/* Framed I/O with an absolute CLOCK_MONOTONIC deadline in ms. */
int64_t cni_now_ms(void);
/* Sends one frame; fd_to_pass >= 0 rides along with the first byte. */
int cni_frame_send(int sock, const char *buf, size_t len, int fd_to_pass, int64_t deadline,
		   struct cni_err *e);
/* Receives one frame into *buf (malloc'd, NUL-terminated); *fd_out gets a
 * passed fd or -1 (pass NULL to refuse fds: any passed fd is closed). */
int cni_frame_recv(int sock, char **buf, size_t *len, int *fd_out, int64_t deadline,
		   struct cni_err *e);

/*
 * The plugin side: connect to path, read the greeting, send, wait for the
 * response. Returns 0
 * with *result, or -1 with e: code 11 when the agent is not there or times
 * out (retryable), 100 on protocol errors, or the agent's own error.
 */
int cni_call(const char *path, const struct cni_env *env, const struct cni_conf *conf,
	     int netns_fd, int timeout_ms, json_t **result, struct cni_err *e);

#endif
