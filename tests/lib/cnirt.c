/* A container runtime through libcni's tools (cnirt.h). */
#include "tests/lib/cnirt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tools[512];

const char *cnirt_top(void)
{
	const char *t = getenv("GT_TOP");

	return t && *t ? t : ".";
}

double cnirt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cnirt_init(char *why, size_t n)
{
	char out[4096];

	if (topo_out(out, sizeof(out), "%s/tests/controlplane/build-cni.sh 2>&1 | tail -1", cnirt_top()) ||
	    snprintf(tools, sizeof(tools), "%s", out) <= 0 ||
	    topo_sh("test -x %s/cnitool -a -x %s/cnigc -a -x %s/cnirt -a -x %s/tuning", tools, tools, tools, tools)) {
		snprintf(why, n, "building cnitool/cnigc/cnirt/tuning failed: %s", out);
		return -1;
	}
	if (topo_sh("test -x %s/build/san/bin/galactic-veth -a -x %s/build/san/bin/galactic-bgp -a -x %s/build/san/bin/galactic-tap",
		    cnirt_top(), cnirt_top(), cnirt_top())) {
		snprintf(why, n, "build/san/bin/galactic-{veth,bgp,tap} missing (make)");
		return -1;
	}
	return 0;
}

const char *cnirt_tools(void)
{
	return tools;
}

const char *cnirt_sock(const struct topo *t, int node, char *buf, size_t n)
{
	snprintf(buf, n, "/run/galactic/%s-n%d.sock", t->prefix, node);
	return buf;
}

const char *cnirt_netdir(const struct topo *t, int node, char *buf, size_t n)
{
	snprintf(buf, n, "%s/n%d/net.d", t->dir, node);
	return buf;
}

int cnirt_node(const struct topo *t, int node)
{
	char d[600];

	return topo_sh("mkdir -p -m 0700 /run/galactic && mkdir -p %s", cnirt_netdir(t, node, d, sizeof(d)));
}

int cnirt_wait_socket(const struct topo *t, int node, double timeout_s)
{
	double end = cnirt_now() + timeout_s;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	cnirt_sock(t, node, sa.sun_path, sizeof(sa.sun_path));
	while (cnirt_now() < end) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0), ok;

		ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (fd >= 0)
			close(fd);
		if (ok)
			return 0;
		usleep(50000);
	}
	return -1;
}

json_t *cnirt_operator_conflist(const struct cnirt_att *a, const char *ver)
{
	json_t *veth = json_pack("{s:s,s:s,s:s,s:s}", "type", a->type ? a->type : "galactic-veth", "vpc", a->vpc,
				 "vpcattachment", a->att, "namespace", "galactic-system");
	json_t *bgp = json_pack("{s:s,s:s,s:s,s:s}", "type", "galactic-bgp", "vpc", a->vpc, "vpcattachment",
				a->att, "namespace", "galactic-system");

	if (a->mtu)
		json_object_set_new(veth, "mtu", json_integer(a->mtu));
	if (a->n_addrs) {
		json_t *addrs = json_array();

		for (size_t i = 0; i < a->n_addrs && i < 2; i++) {
			json_t *x = json_pack("{s:s}", "address", a->addrs[i].address);

			if (a->addrs[i].gateway)
				json_object_set_new(x, "gateway", json_string(a->addrs[i].gateway));
			json_array_append_new(addrs, x);
		}
		json_object_set_new(veth, "ipam", json_pack("{s:s,s:o}", "type", "galactic-ipam", "addresses", addrs));
	}
	return json_pack("{s:s,s:s,s:[o,o]}", "cniVersion", ver, "name", a->net, "plugins", veth, bgp);
}

int cnirt_write_conflist(const struct topo *t, int node, const char *file, json_t *doc)
{
	char p[700], d[600];
	int rc;

	snprintf(p, sizeof(p), "%s/%s.conflist", cnirt_netdir(t, node, d, sizeof(d)), file);
	rc = json_dump_file(doc, p, JSON_INDENT(2));
	json_decref(doc);
	return rc;
}

int cnirt_tool(const struct topo *t, int node, const char *sock, const char *env, char *out, size_t n,
	       const char *fmt, ...)
{
	char args[2048], d[600], s[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return topo_out(out, n,
			"NETCONFPATH=%s CNI_PATH=%s/build/san/bin:%s GALACTIC_AGENT_SOCKET=%s %s "
			"ASAN_OPTIONS=detect_leaks=1 %s/%s 2>&1; r=$?; echo; echo \"rc=$r\"; exit $r",
			cnirt_netdir(t, node, d, sizeof(d)), cnirt_top(), tools,
			sock ? sock : cnirt_sock(t, node, s, sizeof(s)), env ? env : "", tools, args);
}

json_t *cnirt_json(const char *out)
{
	const char *b = strchr(out, '{');

	return b ? json_loadb(b, strlen(b), JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

const char *cnirt_ns_path(const struct topo *t, const char *pod, char *buf, size_t n)
{
	snprintf(buf, n, "/run/netns/%s-%s", t->prefix, pod);
	return buf;
}

int cnirt_mkns(const struct topo *t, const char *pod)
{
	return topo_sh("ip netns add %s-%s && ip -n %s-%s link set lo up", t->prefix, pod, t->prefix, pod);
}

long cnirt_ping(const struct topo *t, const char *pod, const char *dst, int count)
{
	char out[256];

	topo_out(out, sizeof(out),
		 "ip netns exec %s-%s ping -q -c %d -i 0.05 -W 1 %s | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'",
		 t->prefix, pod, count, dst);
	return out[0] ? atol(out) : -1;
}

long cnirt_ping_isolated(const struct topo *t, const char *pod, const char *dst, int count, const char *bystander,
			 long *seen)
{
	const char *counter = strchr(dst, ':') ? "Icmp6InEchos" : "Icmp:InEchos";
	long before = topo_snmp(t, bystander, counter), got = cnirt_ping(t, pod, dst, count);

	*seen = topo_snmp(t, bystander, counter) - before;
	return got;
}

int cnirt_wait_ping(const struct topo *t, const char *pod, const char *dst, double timeout_s)
{
	double end = cnirt_now() + timeout_s;

	while (cnirt_now() < end) {
		if (cnirt_ping(t, pod, dst, 1) == 1)
			return 0;
		usleep(100000);
	}
	return -1;
}

int cnirt_exec(const struct cnirt_call *c, const char *conf)
{
	char nsenv[600], cidenv[200], cmdenv[32], argsenv[600], pathenv[600];
	int in[2], st;
	pid_t pid;

	snprintf(nsenv, sizeof(nsenv), "CNI_NETNS=%s", c->netns);
	snprintf(cidenv, sizeof(cidenv), "CNI_CONTAINERID=%s", c->cid);
	snprintf(cmdenv, sizeof(cmdenv), "CNI_COMMAND=%s", c->cmd);
	snprintf(argsenv, sizeof(argsenv), "CNI_ARGS=%s", c->args);
	snprintf(pathenv, sizeof(pathenv), "CNI_PATH=%s", c->cni_path);
	if (pipe(in))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (c->hostns >= 0 && setns(c->hostns, CLONE_NEWNET))
			_exit(125);
		dup2(in[0], 0);
		close(in[1]);
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execve(c->bin, (char *[]){ (char *)c->bin, NULL },
		       (char *[]){ cmdenv, cidenv, nsenv, "CNI_IFNAME=eth0", argsenv, pathenv,
				   "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL });
		_exit(127);
	}
	close(in[0]);
	if (pid < 0 || write(in[1], conf, strlen(conf)) < 0) {
		close(in[1]);
		if (pid > 0)
			waitpid(pid, &st, 0);
		return -1;
	}
	close(in[1]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
