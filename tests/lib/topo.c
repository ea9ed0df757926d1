/* C side of the netns topology; the namespaces themselves are built by topo.sh. */
#include "tests/lib/topo.h"

#include <jansson.h>
#include <time.h>

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/dp/model.h"

static struct topo *live; /* for the exit handler */

static const char *top(void)
{
	const char *t = getenv("GT_TOP");

	return t && *t ? t : ".";
}

int topo_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc))
		return -1;
	return WEXITSTATUS(rc);
}

int topo_out(char *out, size_t n, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *f;
	size_t got;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out[0] = 0;
	f = popen(cmd, "r");
	if (!f)
		return -1;
	got = fread(out, 1, n - 1, f);
	out[got] = 0;
	while (got && (out[got - 1] == '\n' || out[got - 1] == ' '))
		out[--got] = 0;
	rc = pclose(f);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void at_exit(void)
{
	/* Forked test children inherit this handler: only the creator cleans up. */
	if (live && live->owner == getpid())
		topo_down(live);
}

static void on_fatal(int sig)
{
	at_exit();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * A sanitizer's report ends the process (UBSan built with
 * -fno-sanitize-recover, an ASan error) by _exit: no atexit handler, no
 * signal, and the namespaces, agents and pins stayed behind. These are the
 * runtimes' own hooks for default options (an environment's
 * UBSAN_OPTIONS / ASAN_OPTIONS still override them): abort instead, so
 * on_fatal's SIGABRT handler removes the topology. Unused in the benches,
 * which are built without sanitizers.
 */
const char *__ubsan_default_options(void);
const char *__asan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "abort_on_error=1";
}
const char *__asan_default_options(void)
{
	return "abort_on_error=1";
}

int topo_up(struct topo *t, int nodes)
{
	static bool hooked;
	char d[] = "/tmp/galactic-topo.XXXXXX";
	int i;

	memset(t, 0, sizeof(*t));
	if (nodes < 1 || nodes > TOPO_MAX_NODES || !mkdtemp(d))
		return -1;
	snprintf(t->dir, sizeof(t->dir), "%s", d);
	snprintf(t->prefix, sizeof(t->prefix), "gt%d", (int)getpid());
	t->nodes = nodes;
	t->owner = getpid();
	live = t;
	if (!hooked) {
		atexit(at_exit);
		signal(SIGINT, on_fatal);
		signal(SIGTERM, on_fatal);
		signal(SIGHUP, on_fatal);
		/* best effort: a crashing test process still removes its namespaces */
		signal(SIGABRT, on_fatal);
		signal(SIGSEGV, on_fatal);
		hooked = true;
	}
	for (i = 1; i <= nodes; i++)
		topo_sh("mkdir -p %s/n%d", t->dir, i);
	return topo_sh("%s/tests/lib/topo.sh up %s %d", top(), t->prefix, nodes) ? -1 : 0;
}

void topo_down(struct topo *t)
{
	int i;

	if (!t->prefix[0])
		return;
	for (i = 1; i <= t->nodes; i++)
		topo_agent_stop(t, i, SIGKILL);
	topo_sh("%s/tests/lib/topo.sh down %s", top(), t->prefix);
	if (t->dir[0] && getenv("GT_KEEP_STATE") == NULL)
		topo_sh("rm -rf %s", t->dir);
	t->prefix[0] = 0;
	if (live == t)
		live = NULL;
}

int topo_add_pod(struct topo *t, int node, const char *name, const char *vpc, const char *a6,
		 const char *a4)
{
	struct topo_pod *p;
	int i, n = 0;

	if (t->npods == TOPO_MAX_PODS)
		return -1;
	p = &t->pods[t->npods];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->vpc, sizeof(p->vpc), "%s", vpc);
	snprintf(p->a6, sizeof(p->a6), "%s", a6);
	snprintf(p->a4, sizeof(p->a4), "%s", a4);
	snprintf(p->hostif, sizeof(p->hostif), "h%s", name);
	p->node = node;
	for (i = 0; i < t->npods; i++)
		n += t->pods[i].node == node;
	p->arg = (uint16_t)(n + 1);
	if (topo_out(p->mac, sizeof(p->mac), "%s/tests/lib/topo.sh pod %s %d %s %s %s %s", top(),
		     t->prefix, node, name, p->hostif, a6, a4) || strlen(p->mac) != 17)
		return -1;
	return t->npods++;
}

int topo_add_internet(struct topo *t)
{
	return topo_sh("%s/tests/lib/topo.sh internet %s %d", top(), t->prefix, t->nodes) ? -1 : 0;
}

const struct topo_pod *topo_pod(const struct topo *t, const char *name)
{
	int i;

	for (i = 0; i < t->npods; i++)
		if (!strcmp(t->pods[i].name, name))
			return &t->pods[i];
	return NULL;
}

const char *topo_state_dir(const struct topo *t, int node, char *buf, size_t n)
{
	snprintf(buf, n, "%s/n%d", t->dir, node);
	return buf;
}

const char *topo_node_ns(const struct topo *t, int node, char *buf, size_t n)
{
	snprintf(buf, n, "%s-n%d", t->prefix, node);
	return buf;
}

static uint16_t vpc_arg(const char *vpc)
{
	return !strcmp(vpc, TOPO_VPC_A) ? 1 : 2;
}

static void sid_str(int node, unsigned fn, uint16_t arg, char *buf, size_t n)
{
	struct gdp_node nd = { .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = (uint16_t)node };
	struct in6_addr s;

	gdp_sid(&nd, fn, arg, &s);
	inet_ntop(AF_INET6, &s, buf, (socklen_t)n);
}

int topo_write_state(const struct topo *t, int node, unsigned extra_remotes)
{
	char path[512], sid[64];
	FILE *f;
	int i, first = 1;
	unsigned k;

	snprintf(path, sizeof(path), "%s/n%d/state.json.tmp", t->dir, node);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,\"uplink\":\"up0\"},\n"
		   " \"vpcs\":[{\"id\":\"%s\",\"arg\":1,\"table\":%d,\"prefixes\":[\"fd00:a::/64\",\"10.1.0.0/16\"]},\n"
		   "          {\"id\":\"%s\",\"arg\":2,\"table\":%d,\"prefixes\":[\"fd00:a::/64\",\"10.1.0.0/16\"]}],\n"
		   " \"attachments\":[", node, TOPO_VPC_A, TOPO_TABLE_A, TOPO_VPC_B, TOPO_TABLE_B);
	for (i = 0; i < t->npods; i++) {
		const struct topo_pod *p = &t->pods[i];
		struct in_addr nh = gdp_default_nh4(p->arg);
		char nhs[20];

		if (p->node != node)
			continue;
		inet_ntop(AF_INET, &nh, nhs, sizeof(nhs));
		fprintf(f, "%s\n  {\"vpc\":\"%s\",\"id\":\"%s\",\"container_id\":\"c-%s\",\"host_ifname\":\"%s\",\"arg\":%u,"
			   "\"addrs\":[\"%s\",\"%s\"],\"nh4\":\"%s\",\"pod_mac\":\"%s\",\"mtu\":1400}",
			first ? "" : ",", p->vpc, p->name, p->name, p->hostif, p->arg, p->a6, p->a4, nhs, p->mac);
		first = 0;
	}
	fprintf(f, "]}\n");
	fclose(f);
	if (topo_sh("mv %s %s/n%d/state.json", path, t->dir, node))
		return -1;

	snprintf(path, sizeof(path), "%s/n%d/remotes.json.tmp", t->dir, node);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"remotes\":[");
	first = 1;
	for (i = 0; i < t->npods; i++) {
		const struct topo_pod *p = &t->pods[i];

		if (p->node == node)
			continue;
		sid_str(p->node, GDP_FN_DECAP, vpc_arg(p->vpc), sid, sizeof(sid));
		fprintf(f, "%s\n {\"vpc\":\"%s\",\"prefix\":\"%s/128\",\"sid\":\"%s\"}", first ? "" : ",",
			p->vpc, p->a6, sid);
		sid_str(p->node, GDP_FN_DX4, p->arg, sid, sizeof(sid));
		fprintf(f, ",\n {\"vpc\":\"%s\",\"prefix\":\"%s/32\",\"sid\":\"%s\"}", p->vpc, p->a4, sid);
		first = 0;
	}
	sid_str(2, GDP_FN_DECAP, 1, sid, sizeof(sid));
	for (k = 0; k < extra_remotes; k++) {
		fprintf(f, "%s\n {\"vpc\":\"%s\",\"prefix\":\"fd00:a::1:%x:%x/128\",\"sid\":\"%s\"}",
			first ? "" : ",", TOPO_VPC_A, (k >> 16) + 1, k & 0xffff, sid);
		first = 0;
	}
	fprintf(f, "]}\n");
	fclose(f);
	return topo_sh("mv %s %s/n%d/remotes.json", path, t->dir, node) ? -1 : 0;
}

static void pid_path(const struct topo *t, int node, char *buf, size_t n)
{
	snprintf(buf, n, "%s/n%d/agent.pid", t->dir, node);
}

pid_t topo_agent_start(struct topo *t, int node, const char *extra_args)
{
	char cmd[2048], pp[600];
	pid_t pid;
	FILE *f;

	char bin[600];

	if (t->agent_bin[0])
		snprintf(bin, sizeof(bin), "%s", t->agent_bin);
	else
		snprintf(bin, sizeof(bin), "%s/build/rel/bin/galactic-agent", top());
	snprintf(cmd, sizeof(cmd), "exec %s --state-dir %s/n%d --netns %s-n%d --interval 1 %s >>%s/n%d/agent.log 2>&1",
		 bin, t->dir, node, t->prefix, node, extra_args ? extra_args : "", t->dir, node);
	pid = fork();
	if (pid == 0) {
		/* Own session: outlives the (forked, process-group-killed) test that started it. */
		setsid();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		t->agent[node] = pid;
		pid_path(t, node, pp, sizeof(pp));
		f = fopen(pp, "w");
		if (f) {
			fprintf(f, "%d\n", (int)pid);
			fclose(f);
		}
	}
	return pid;
}

static bool gone(pid_t pid)
{
	char p[64], st[512];
	FILE *f;
	bool z = true;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return true;
	if (fgets(st, sizeof(st), f)) {
		char *rp = strrchr(st, ')');

		z = rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
	}
	fclose(f);
	return z;
}

pid_t topo_agent_pid(const struct topo *t, int node)
{
	char pp[600];
	int v = 0;
	FILE *f;

	pid_path(t, node, pp, sizeof(pp));
	f = fopen(pp, "r");
	if (!f)
		return t->agent[node];
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

int topo_agent_stop(struct topo *t, int node, int sig)
{
	char pp[600];
	pid_t pid = t->agent[node];
	int st = -1, i, v;
	FILE *f;

	/* The pid file is the truth: the agent may have been restarted by another process. */
	pid_path(t, node, pp, sizeof(pp));
	f = fopen(pp, "r");
	if (f) {
		if (fscanf(f, "%d", &v) == 1)
			pid = v;
		fclose(f);
	}
	if (pid <= 0)
		return -1;
	kill(pid, sig);
	for (i = 0; i < 500; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid || (w < 0 && gone(pid)))
			break;
		if (w == 0 && gone(pid) && i > 50)
			break;
		usleep(10000);
	}
	unlink(pp);
	t->agent[node] = 0;
	return st;
}

long topo_snmp(const struct topo *t, const char *pod, const char *counter)
{
	char out[64];
	const char *colon = strchr(counter, ':');

	if (!colon) /* snmp6: "Name value" lines */
		topo_out(out, sizeof(out), "ip netns exec %s-%s awk '$1==\"%s\"{print $2}' /proc/net/snmp6",
			 t->prefix, pod, counter);
	else /* snmp: a header line of names, then a line of values */
		topo_out(out, sizeof(out),
			 "ip netns exec %s-%s awk -v g='%.*s:' -v k='%s' '$1==g{ if (!h) { for (i=2;i<=NF;i++) if ($i==k) c=i; h=1 } else print $c }' /proc/net/snmp",
			 t->prefix, pod, (int)(colon - counter), counter, colon + 1);
	return out[0] ? atol(out) : -1;
}

long topo_rx_packets(const struct topo *t, const char *pod)
{
	char out[64];

	topo_out(out, sizeof(out), "ip netns exec %s-%s cat /sys/class/net/eth0/statistics/rx_packets",
		 t->prefix, pod);
	return out[0] ? atol(out) : -1;
}

long topo_status_int(const struct topo *t, int node, const char *key)
{
	char d[512], p[600];
	json_t *j;
	long v;

	snprintf(p, sizeof(p), "%s/status.json", topo_state_dir(t, node, d, sizeof(d)));
	j = json_load_file(p, 0, NULL);
	v = j && json_is_integer(json_object_get(j, key)) ? (long)json_integer_value(json_object_get(j, key)) : -1;
	json_decref(j);
	return v;
}

int topo_wait_reconciled(const struct topo *t, int node, long n, double timeout_s)
{
	struct timespec ts;
	double end, now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + timeout_s;
	do {
		if (topo_status_int(t, node, "reconciles") >= n && topo_status_int(t, node, "rc") == 0)
			return 0;
		usleep(50 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	} while (now < end);
	return -1;
}

pid_t topo_echo_server(const struct topo *t, int conns, int port)
{
	char path[128];
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
		int fd, one = 1, zero = 0;

		close(p[0]);
		alarm(20);
		snprintf(path, sizeof(path), "/run/netns/%s-inet", t->prefix);
		fd = open(path, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16))
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		for (int i = 0; i < conns; i++) {
			struct sockaddr_in6 peer;
			socklen_t pl = sizeof(peer);
			char buf[32] = "", host[INET6_ADDRSTRLEN], line[128];
			int c = accept(fd, (struct sockaddr *)&peer, &pl);
			ssize_t k;

			if (c < 0)
				_exit(5);
			k = read(c, buf, sizeof(buf) - 1);
			buf[k > 0 ? k : 0] = 0;
			inet_ntop(AF_INET6, &peer.sin6_addr, host, sizeof(host));
			snprintf(line, sizeof(line), "%s %s %u\n", buf, host, ntohs(peer.sin6_port));
			if (write(c, line, strlen(line)) < 0)
				_exit(6);
			close(c);
		}
		_exit(0);
	}
	close(p[1]);
	{
		char c;

		if (read(p[0], &c, 1) != 1) {
			close(p[0]);
			return -1;
		}
	}
	close(p[0]);
	return pid;
}
