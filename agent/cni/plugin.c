/*
 * galactic-cni: the CNI plugin. It validates the invocation (CNI_* and the
 * network configuration on stdin), hands it to the node's galactic-agent over
 * a unix socket and prints the agent's answer as the CNI result or error.
 * It never touches the kernel itself: the agent owns every change.
 *
 * One binary, installed under the upstream plugin names too, so attachment
 * definitions the VPC operator renders today reach it unchanged. The name it
 * runs as (argv[0], which is the conflist's `type` when a runtime execs it)
 * picks the role; under any other name the configuration's `type` does:
 *   galactic-cni, galactic-veth  attach (Netns mode): ADD/DEL/CHECK/GC/STATUS
 *   galactic-bgp                 chained after it: passes prevResult through
 *                                (routes are distributed by the agent's
 *                                reports, not by the plugin chain)
 *   galactic-tap                 Hypervisor mode, not built: refused by name
 * docs/cni.md, "Attachment definitions the VPC operator renders".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agent/cni/config.h"
#include "agent/cni/proto.h"
#include "agent/cni/result.h"
#include "common/grow.h"

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2));

	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	fflush(stdout);
	json_decref(o);
}

static int fail(const struct cni_err *e, enum cni_ver v)
{
	print_json(cni_err_json(e, v));
	fprintf(stderr, "galactic-cni: error %d: %s: %s\n", e->code, e->msg, e->details);
	return 1;
}

static const char *env_get(const char *k, void *arg)
{
	(void)arg;
	return getenv(k);
}

/* Reads all of stdin, refusing more than the configuration limit. */
static char *read_stdin(size_t *len, struct cni_err *e)
{
	enum { CHUNK = 65536 };
	size_t cap = 0, n = 0;
	char *b = NULL;

	for (;;) {
		ssize_t r;

		/* room for one more chunk and the NUL; the capacity doubles (common/grow.h) */
		if (G_RESERVE(b, cap, n + CHUNK + 1, CHUNK + 1)) {
			free(b);
			cni_err_set(e, CNI_ERR_IO, "out of memory", "reading stdin");
			return NULL;
		}
		r = read(0, b + n, cap - n - 1);
		if (r == 0) {
			b[n] = 0;
			*len = n;
			return b;
		}
		if (r < 0 && errno != EINTR) {
			cni_err_set(e, CNI_ERR_IO, "cannot read the network configuration",
				    "read stdin: %s", strerror(errno));
			free(b);
			return NULL;
		}
		if (r > 0)
			n += (size_t)r;
		if (n > CNI_CONF_MAX_BYTES) {
			cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
				    "stdin holds more than %u bytes", CNI_CONF_MAX_BYTES);
			free(b);
			return NULL;
		}
	}
}

/* Opens CNI_NETNS and checks it is a network namespace. */
static int open_netns(const struct cni_env *env, struct cni_err *e)
{
	int fd = open(env->netns, O_RDONLY | O_CLOEXEC);
	int t;

	if (fd < 0) {
		if (errno == ENOENT && env->cmd == CNI_CMD_DEL)
			return -2; /* already gone: DEL cleans up the host side only */
		cni_err_set(e, errno == ENOENT ? CNI_ERR_UNKNOWN_CONTAINER : CNI_ERR_INVALID_ENV,
			    errno == ENOENT ? "container network namespace does not exist"
					    : "cannot open the container network namespace",
			    "CNI_NETNS %s: %s", env->netns, strerror(errno));
		return -1;
	}
	t = ioctl(fd, NS_GET_NSTYPE);
	if (t != CLONE_NEWNET) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "CNI_NETNS is not a network namespace",
			    "CNI_NETNS %s: %s", env->netns,
			    t < 0 ? strerror(errno) : "a namespace of another type");
		close(fd);
		return -1;
	}
	return fd;
}

enum role { ROLE_ATTACH, ROLE_PASS, ROLE_TAP };

static int role_of(const char *name, enum role *r)
{
	if (!name)
		return -1;
	if (!strcmp(name, "galactic-cni") || !strcmp(name, "galactic-veth"))
		*r = ROLE_ATTACH;
	else if (!strcmp(name, "galactic-bgp"))
		*r = ROLE_PASS;
	else if (!strcmp(name, "galactic-tap"))
		*r = ROLE_TAP;
	else
		return -1;
	return 0;
}

/* galactic-bgp chained after the attach: see cni_pass_through. */
static int run_pass(const struct cni_env *env, const char *in, size_t len, enum cni_ver ver)
{
	struct cni_err e = { 0 };
	json_t *r = NULL;

	if (cni_pass_through(in, len, env->cmd, &ver, &r, &e))
		return fail(&e, ver);
	if (r)
		print_json(r);
	return 0;
}

/* galactic-tap: Hypervisor mode is not built. Nothing is ever made, so DEL
 * and GC succeed (a runtime must be able to clean up a refused pod). */
static int run_tap(const struct cni_env *env, enum cni_ver ver)
{
	struct cni_err e = { 0 };

	if (env->cmd == CNI_CMD_DEL || env->cmd == CNI_CMD_GC)
		return 0;
	cni_err_set(&e, env->cmd == CNI_CMD_STATUS ? CNI_ERR_PLUGIN_NOT_AVAILABLE : CNI_ERR_UNSUPPORTED_FIELD,
		    "galactic-tap is not supported",
		    "plugin type galactic-tap (Hypervisor mode: a host-side tap in the VPC) is not built in "
		    "galactic-cni yet; only galactic-veth (Netns mode) attaches");
	return fail(&e, ver);
}

int main(int argc, char **argv)
{
	struct cni_err e = { 0 };
	enum role role = ROLE_ATTACH;
	struct cni_env env;
	struct cni_conf conf;
	enum cni_ver ver = CNI_V_UNKNOWN;
	const char *sock;
	json_t *result = NULL;
	size_t len = 0;
	char *in;
	int nsfd = -1, rc;

	in = read_stdin(&len, &e);
	if (!in)
		return fail(&e, ver);
	{
		/* The version to answer in, taken early so even env errors use it;
		 * and the role: the name we run as, else the configuration's type. */
		json_t *o = json_loadb(in, len, 0, NULL);
		const char *v = json_string_value(json_object_get(o, "cniVersion"));
		const char *self = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;

		self = self ? self + 1 : argc > 0 ? argv[0] : NULL;
		if (v)
			ver = cni_ver_parse(v);
		if (role_of(self, &role) || (role == ROLE_ATTACH && !strcmp(self, "galactic-cni")))
			if (role_of(json_string_value(json_object_get(o, "type")), &role))
				role = ROLE_ATTACH;
		json_decref(o);
	}
	if (cni_env_parse(env_get, NULL, &env, &e)) {
		free(in);
		return fail(&e, ver);
	}
	if (env.cmd == CNI_CMD_VERSION) {
		free(in);
		print_json(cni_version_json(ver));
		return 0;
	}
	if (role != ROLE_ATTACH) {
		rc = role == ROLE_PASS ? run_pass(&env, in, len, ver) : run_tap(&env, ver);
		free(in);
		return rc;
	}
	rc = cni_conf_parse(in, len, env.cmd, &conf, &e);
	free(in);
	if (rc)
		return fail(&e, ver);
	ver = conf.ver;
	if (env.netns[0] && (env.cmd == CNI_CMD_ADD || env.cmd == CNI_CMD_CHECK || env.cmd == CNI_CMD_DEL)) {
		nsfd = open_netns(&env, &e);
		if (nsfd == -1) {
			cni_conf_free(&conf);
			return fail(&e, ver);
		}
	}
	sock = getenv("GALACTIC_AGENT_SOCKET");
	if (!sock || !*sock)
		sock = conf.agent_socket[0] ? conf.agent_socket : CNI_DEFAULT_SOCKET;
	rc = cni_call(sock, &env, &conf, nsfd >= 0 ? nsfd : -1, conf.timeout_s * 1000, &result, &e);
	if (nsfd >= 0)
		close(nsfd);
	if (rc && env.cmd == CNI_CMD_STATUS && e.code == CNI_ERR_TRY_AGAIN_LATER) {
		char d[sizeof(e.details)];

		/* STATUS has its own code for "cannot take ADDs now". */
		snprintf(d, sizeof(d), "%s", e.details);
		cni_err_set(&e, CNI_ERR_PLUGIN_NOT_AVAILABLE, "galactic-agent is not available", "%s", d);
	}
	cni_conf_free(&conf);
	if (rc) {
		json_decref(result);
		return fail(&e, ver);
	}
	if (env.cmd == CNI_CMD_ADD) {
		if (!result) {
			cni_err_set(&e, CNI_ERR_AGENT_PROTOCOL, "malformed response from galactic-agent",
				    "ADD succeeded without a result");
			return fail(&e, ver);
		}
		print_json(result);
	} else {
		json_decref(result);
	}
	return 0;
}
