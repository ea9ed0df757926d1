/*
 * make bench: 200 concurrent CNI ADDs on one node.
 *
 * Two nodes (tests/lib/topo.*), galactic-agent with its CNI server on each.
 * First 20 ADDs one after another (the uncontended ADD, same invocation).
 * Then 200 pods on node 1 are ADDed at once (each a fork+exec of
 * galactic-cni with CNI_* and stdin, as a runtime does): p50/p90/p99/max ADD
 * latency, the number of backend commits the agent needed, its commit time
 * and CPU, and (last round) the time
 * from the first ADD until the last of the 200 pods got an IPv6 echo reply
 * from a pod on node 2 (node 2 learns the 200 prefixes from a hand-written
 * remotes.json drop-in + SIGHUP, standing in for the report watch: the
 * report -> API -> learner path is not in this figure).
 *
 * The reference, in the same run, before ours in each round: the reference
 * ptp + host-local plugins (containernetworking/plugins, built by
 * tests/controlplane/build-cni.sh), IPv4 only so that duplicate address
 * detection does not dominate, host-local with a private data dir. The same
 * namespace setup (pod netns made by the runtime, not timed; the plugin runs
 * in node 1's namespace, the node's host side, where the agent puts its
 * host veths), the same fork+exec driver and the same span (fork+exec of the
 * plugin until it is reaped): nref ADDs one after another, then the bursts
 * in rounds (BENCH_ROUNDS, default 3): the reference's n ADDs at once and
 * its n DELs at once, then our n ADDs at once and (but in the last round)
 * their DELs. Every DEL must leave node 1 as it was (no veth, no host-local
 * allocation); no namespace is left. Target (issue 13): our burst's p99 <=
 * 0.2x the reference burst's p99, the median of the per-round ratios.
 * Results in build/bench-results/bench_cni.json.
 *
 *   build/rel/bench/bench_cni [N]      (N concurrent ADDs, default 200)
 *
 * Environment: BENCH_ROUNDS=R rounds of bursts (default 3, at most 15),
 * BENCH_SEQ=M sequential ADDs of ours (default 1,000, at least 500 for the
 * target; the reference does min(M, 100)): the first and last tenth are
 * reported apart, end to end and by parts from the agent's log (pod setup
 * and the pass's backend span are the kernel's work; the rest is ours).
 * Target (issue 10: an ADD costs what it changes, not what the node holds):
 * ours, the last tenth's p50 <= 1.25x the first tenth's, with M >= 500,
 * BENCH_REMOTES=R remote routes on node 1 before any ADD (the cost of an
 * ADD must not grow with what the node holds), BENCH_GAP_MS=G a pause
 * before each sequential ADD (pods one by one: a full pass the previous
 * ADD caused would show), BENCH_SEQ_DEL=1 then DELs the sequential pods one
 * after another (p50/p99 end to end, and by parts from the agent's DEL
 * lines: in the agent, pod teardown, the pass's backend span, ours; and the
 * full passes the agent logged meanwhile, which must be 0; with
 * BENCH_GAP_MS before each; always with BENCH_SEQ >= 500, so the bursts
 * run on the node as it was), BENCH_BACKEND=bpf, BENCH_KEEP=1 (node 1's agent
 * log copied into a directory of the run's own, printed: bench_keep),
 * BENCH_NODE1_SETUP=CMD a shell command run once node 1's agent has
 * reconciled, before any ADD, with NS set to node 1's network namespace
 * (other software's state in the node, e.g. `tests/bench/kernel_floor.sh
 * fill "$NS" nhid`: the host end's readiness walk against routes the agent
 * does not own, in either form). The agents
 * run with the default safety-net interval (--interval 30, not the tests'
 * 1 s: at 100k remotes a full reconcile every second is not a node). The agent
 * on node 1's RSS (VmRSS, VmHWM = peak) is reported at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/icmp6.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/model.h"
#include "tests/bench/bench.h"
#include "tests/lib/cnirt.h"
#include "tests/lib/topo.h"

static struct topo T;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The driver both sides share, as a runtime calls a plugin: fork, (ref only:
 * setns into the node's host namespace), exec bin with the CNI_* environment
 * and conf on stdin, stdout to /dev/null, reap. Returns the exit code.
 */
static int cni_exec(const char *bin, const char *cmd, const char *conf, const char *pod, const char *cid,
		    const char *cni_path, int hostns)
{
	char ns[300];

	snprintf(ns, sizeof(ns), "/run/netns/%s-%s", T.prefix, pod);
	return cnirt_exec(&(struct cnirt_call){ bin, cmd, cid, ns, "IgnoreUnknown=1;K8S_POD_NAMESPACE=bench", cni_path,
						hostns },
			  conf);
}

static int round_no; /* in the container ids: each round's pods are new to both plugins */

/* Ours: ADD (or DEL) of pod <name> on node through galactic-cni -> the node's agent. */
static int cni_call(const char *cmd, int node, const char *name, const char *att, int idx)
{
	char conf[1024], sock[512], bin[512], cid[64];

	cnirt_sock(&T, node, sock, sizeof(sock));
	snprintf(conf, sizeof(conf),
		 "{\"cniVersion\":\"1.1.0\",\"name\":\"bench\",\"type\":\"galactic-cni\",\"vpc\":\"%s\","
		 "\"vpcattachment\":\"%s\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		 "\"addresses\":[{\"address\":\"fd00:a::%x:%x/128\",\"gateway\":\"fe80::1\"},"
		 "{\"address\":\"10.1.%d.%d/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		 "\"agentSocket\":\"%s\",\"timeoutSeconds\":300}",
		 TOPO_VPC_A, att, node, idx + 1, 10 * node + idx / 250, idx % 250 + 1, sock);
	snprintf(bin, sizeof(bin), "%s/build/rel/bin/galactic-cni", cnirt_top());
	snprintf(cid, sizeof(cid), "c%s.%d", name, round_no);
	return cni_exec(bin, cmd, conf, name, cid, "/opt/cni/bin", -1);
}

static int cni_add(int node, const char *name, const char *att, int idx)
{
	return cni_call("ADD", node, name, att, idx);
}

/* The reference: ptp + host-local (IPv4), run in node 1's namespace. */
static char ref_bin[512];      /* the directory build-cni.sh built them in */
static char ref_data[512];     /* host-local's private data dir */
static int ref_hostns = -1;

static int ref_call(const char *cmd, const char *name)
{
	char conf[1024], bin[600], cid[64];

	snprintf(conf, sizeof(conf),
		 "{\"cniVersion\":\"1.1.0\",\"name\":\"benchref\",\"type\":\"ptp\",\"ipMasq\":false,\"mtu\":1400,"
		 "\"ipam\":{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.2.0.0/16\"}]],"
		 "\"dataDir\":\"%s\"}}",
		 ref_data);
	snprintf(bin, sizeof(bin), "%s/ptp", ref_bin);
	snprintf(cid, sizeof(cid), "c%s.%d", name, round_no);
	return cni_exec(bin, cmd, conf, name, cid, ref_bin, ref_hostns);
}

/* host-local allocations left in its data dir (one file per address). */
static long ref_allocations(void)
{
	char out[64];

	if (topo_out(out, sizeof(out), "find %s -type f -name '10.2.*' 2>/dev/null | wc -l", ref_data))
		return -1;
	return strtol(out, NULL, 10);
}

/* veths in node 1's namespace (its uplink is one). */
static long node_veths(void)
{
	char out[64];

	if (topo_out(out, sizeof(out), "ip -n %s-n1 -o link show type veth | wc -l", T.prefix))
		return -1;
	return strtol(out, NULL, 10);
}

/*
 * n plugin calls at once: one child per pod, each timing its own call
 * (fork+exec until reaped) into lat[i] (shared memory); done[i] 1 or -1.
 * kind 'b': ours (ADD of b<i>), 'e': its DEL, 'p': reference ADD of p<i>, 'd': its DEL.
 * Returns the wall time until all returned (ms).
 */
static double burst(char kind, int n, double *lat, int *done)
{
	double t0 = now_ms();

	fflush(stdout); /* before the forks */
	for (int i = 0; i < n; i++) {
		if (fork() == 0) {
			char name[16], att[16];
			double s = now_ms();
			int rc;

			snprintf(name, sizeof(name), "%c%d", kind == 'b' || kind == 'e' ? 'b' : 'p', i);
			snprintf(att, sizeof(att), "B%d", i);
			if (kind == 'b' || kind == 'e')
				rc = cni_call(kind == 'b' ? "ADD" : "DEL", 1, name, att, i);
			else
				rc = ref_call(kind == 'p' ? "ADD" : "DEL", name);
			lat[i] = now_ms() - s;
			done[i] = rc == 0 ? 1 : -1;
			_exit(rc ? 1 : 0);
		}
	}
	for (int i = 0; i < n; i++) {
		int st;

		wait(&st);
	}
	return now_ms() - t0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

/* "VmRSS 12 MiB, peak 20 MiB" of node's agent. */
static void rss(int node, char *buf, size_t n)
{
	char out[128];

	topo_out(out, sizeof(out), "awk '/VmRSS|VmHWM/ {printf \"%%s %%d \", $1, $2/1024}' /proc/%d/status",
		 (int)topo_agent_pid(&T, node));
	snprintf(buf, n, "%s(MiB)", out);
}

static unsigned long commits_from_log(int node)
{
	char out[64];

	topo_out(out, sizeof(out), "grep -cE '(reconcile|incremental pass) #' %s/n%d/agent.log", T.dir, node);
	return strtoul(out, NULL, 10);
}

/* Sum of the durations of node's last k passes (ms, from the agent's log). */
static double commit_ms_from_log(int node, unsigned long k)
{
	char out[64];

	if (!k || topo_out(out, sizeof(out),
			   "grep -E '(reconcile|incremental pass) #' %s/n%d/agent.log | tail -n %lu | sed -E 's/.*\\(([0-9.]+) ms[:)].*/\\1/' | "
			   "awk '{s += $1} END {printf \"%%.1f\", s}'",
			   T.dir, node, k))
		return 0;
	return strtod(out, NULL);
}

/* CPU of node's agent so far (ms; its threads included): user, system. */
static int agent_cpu_ms(int node, double *user, double *sys)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)topo_agent_pid(&T, node));
	f = fopen(path, "r");
	*user = *sys = 0;
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* after "pid (comm)": state is field 3, utime 14, stime 15 */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	*user = (double)ut * 1e3 / (double)sysconf(_SC_CLK_TCK);
	*sys = (double)st * 1e3 / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

/* The 1-minute load average: how busy the shared machine was. */
static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* One agent log line of a successful ADD (or DEL) of container c<tag><i>.<r>. */
struct add_line {
	int i, r;
	long long ms; /* the listener's accepted -> answered */
	double agent, setup, applied, backend; /* DEL: setup is the pod teardown */
};

/* 0 when line is the listener's "<verb> container c<tag><i>.<r> ...: ok (...)" line, filled into l. */
static int parse_verb_line(const char *line, const char *verb, char tag, struct add_line *l)
{
	char want[32];
	const char *c, *ok;

	snprintf(want, sizeof(want), "msg=\"%s container c%c", verb, tag);
	c = strstr(line, want);
	if (!c || sscanf(c + strlen(want), "%d.%d ", &l->i, &l->r) != 2 || l->i < 0 || !(ok = strstr(c, ": ok (")))
		return -1;
	/* "pod setup" (ADD) or "pod teardown" (DEL): the same five figures */
	return sscanf(ok, ": ok (%lld ms; %lf in the agent: pod %*s %lf, applied %lf, backend %lf", &l->ms, &l->agent,
		      &l->setup, &l->applied, &l->backend) == 5 ? 0 : -1;
}

static int parse_add_line(const char *line, char tag, struct add_line *l)
{
	return parse_verb_line(line, "ADD", tag, l);
}

/* node 1's agent log's size now (where the next lines start), or -1 */
static long log_size(void)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/n1/agent.log", T.dir);
	return stat(path, &st) ? -1 : (long)st.st_size;
}

/*
 * Where each sequential ADD's time went, from node 1's agent log (the
 * listener's line for container cr<i>.0): in the agent (request in to
 * answer), the pod side (veth pair, addresses and routes in the container:
 * kernel work) and the backend span of the pass that applied it (its
 * netlink or map writes and read-back: the kernel's, with the backend's own
 * planning). ours = agent - pod setup - backend: the record, its view, the
 * journal commit, the delta, the hand-offs and every wait in between.
 * The sequential DELs' lines (verb "DEL") give the same figures with the
 * pod teardown (the veth's deletion: the kernel's, which flushes what used
 * it) in setup. Lines before byte from are skipped; full (if not NULL)
 * counts the full passes ("reconcile #") after it. Returns how many of the
 * n were found.
 */
static int verb_spans(int node, const char *verb, long from, int n, double *agent, double *setup, double *backend,
		      double *ours, int *full)
{
	char path[600], line[2048];
	int found = 0;
	FILE *f;

	if (full)
		*full = 0;
	snprintf(path, sizeof(path), "%s/n%d/agent.log", T.dir, node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	for (int i = 0; i < n; i++)
		agent[i] = -1;
	if (from > 0)
		fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		struct add_line l;

		if (full)
			*full += strstr(line, "msg=\"reconcile #") != NULL;
		if (parse_verb_line(line, verb, 'r', &l) || l.r != 0 || l.i >= n)
			continue;
		found += agent[l.i] < 0;
		agent[l.i] = l.agent;
		setup[l.i] = l.setup;
		backend[l.i] = l.backend;
		ours[l.i] = l.agent - l.setup - l.backend;
	}
	fclose(f);
	return found;
}

/*
 * Where the burst's ADDs of round r went, from node 1's agent log (the
 * listener's line of each container b<i>.<r>) and the bench's own span of
 * each (lat, unsorted): before the agent (fork + exec of the plugin, its
 * connect, until the agent accepted), accepted -> request in (the
 * greeting read and the request written by the plugin), in the agent
 * before the pod setup (the wait for a setup slot, the record's lock),
 * the pod setup, the wait for the pass, and after the answer (the plugin
 * reading it, printing, exiting, reaped). Prints p50 / p99 of each;
 * returns how many of the n ADDs the log had.
 */
static int burst_spans(int round, int n, const double *lat)
{
	double *v = calloc((size_t)n * 6, sizeof(double));
	char path[600], line[2048];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/n1/agent.log", T.dir);
	f = v ? fopen(path, "r") : NULL;
	if (!f) {
		free(v);
		return 0;
	}
	for (int i = 0; i < n; i++)
		v[i] = -1;
	while (fgets(line, sizeof(line), f)) {
		struct add_line l;
		int i;

		if (parse_add_line(line, 'b', &l) || l.r != round || l.i >= n)
			continue;
		i = l.i;
		found += v[i] < 0;
		v[i] = (double)l.ms - l.agent;           /* accepted -> request in */
		v[n + i] = l.agent - l.setup - l.applied; /* slot wait, record */
		v[2 * n + i] = l.setup;                  /* pod setup */
		v[3 * n + i] = l.applied;                /* the wait for the pass */
		v[4 * n + i] = lat[i] - (double)l.ms;    /* outside the agent: exec, connect, answer read, exit */
		v[5 * n + i] = l.agent;                  /* in the agent */
	}
	fclose(f);
	if (found == n) {
		const char *names[6] = { "accepted -> request in", "slot wait + record", "pod setup", "pass wait",
					 "outside the agent", "in the agent" };

		printf("bench_cni: round %d, where our ADDs went (p50 / p99 ms):", round + 1);
		for (int k = 0; k < 6; k++) {
			qsort(v + k * n, (size_t)n, sizeof(double), cmp_d);
			printf("%s %s %.1f / %.1f", k ? ";" : "", names[k], pct(v + k * n, n, 0.5), pct(v + k * n, n, 0.99));
		}
		printf("\n");
	}
	free(v);
	return found;
}

/* p50 of v[from, from + k) (sorts a copy). */
static double p50_of(const double *v, int from, int k)
{
	double *c = malloc(sizeof(double) * (size_t)(k > 0 ? k : 1)), m;

	if (!c || k <= 0) {
		free(c);
		return 0;
	}
	memcpy(c, v + from, sizeof(double) * (size_t)k);
	qsort(c, (size_t)k, sizeof(double), cmp_d);
	m = pct(c, k, 0.5);
	free(c);
	return m;
}

/* CPU of the reaped children so far (ms): the burst's forks and the plugins they ran. */
static double children_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* One round: the reference burst (ADDs, then DELs), then ours. */
struct round {
	double p50, p90, p99, max, rate, commits, commit_ms, usr, sys, ccpu;
	double rp50, rp90, rp99, rmax, rrate, rdp99, rccpu;
};

#define MAX_ROUNDS 15

/* bench_fact over one field of every round. */
static void round_fact(struct bench *b, const struct round *rd, int nr, size_t off, const char *name,
		       const char *unit, const char *what)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < nr; r++)
		memcpy(&v[r], (const char *)&rd[r] + off, sizeof(v[r]));
	bench_fact(b, name, unit, what, v, (size_t)nr);
}

/* Waits until node 1 holds want veths again (DELs done); returns what it holds. */
static long wait_veths(long want, double timeout_ms)
{
	double end = now_ms() + timeout_ms;
	long have;

	while ((have = node_veths()) != want && now_ms() < end)
		usleep(50000);
	return have;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, fails = 0;
	int nref = getenv("BENCH_SEQ") ? atoi(getenv("BENCH_SEQ")) : 1000, nrseq;
	int gap_ms = getenv("BENCH_GAP_MS") ? atoi(getenv("BENCH_GAP_MS")) : 0;
	unsigned nremotes = getenv("BENCH_REMOTES") ? (unsigned)atoi(getenv("BENCH_REMOTES")) : 0;
	const char *bk = getenv("BENCH_BACKEND") ? getenv("BENCH_BACKEND") : "kernel";
	double *lat, *ref, *ref_sorted, *rlat, *rdel, *rseq, t0 = 0, t_ping = 0;
	int rounds = getenv("BENCH_ROUNDS") ? atoi(getenv("BENCH_ROUNDS")) : 3;
	struct round rd[MAX_ROUNDS];
	double load;
	long veths0;
	int *rdone;
	char rss_seq[128] = "", rss_end[128] = "";
	char extra[600], sock[512];
	int *done;
	struct bench *b = bench_begin("bench_cni");

	if (!bench_need_root(b, "network namespaces, the agent's data plane"))
		return bench_end(b);
	if (n < 1 || n > 4000)
		n = 200;
	if (nref < 10 || nref > 1000)
		nref = 1000;
	nrseq = nref < 100 ? nref : 100; /* the reference's sequential ADDs: a figure, not a target */
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 3;
	memset(rd, 0, sizeof(rd));
	lat = mmap(NULL, sizeof(double) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rlat = mmap(NULL, sizeof(double) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rdel = mmap(NULL, sizeof(double) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	done = mmap(NULL, sizeof(int) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rdone = mmap(NULL, sizeof(int) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* The reference plugins (cached by version; built on a cold machine). */
	if (topo_out(ref_bin, sizeof(ref_bin), "%s/tests/controlplane/build-cni.sh 2>&1 | tail -1", cnirt_top()) ||
	    topo_sh("test -x %s/ptp -a -x %s/host-local", ref_bin, ref_bin)) {
		bench_error(b, "building the reference ptp + host-local plugins failed (tests/controlplane/build-cni.sh, "
			    "needs go): %s", ref_bin);
		return bench_end(b);
	}
	if (lat == MAP_FAILED || rlat == MAP_FAILED || rdel == MAP_FAILED || done == MAP_FAILED ||
	    rdone == MAP_FAILED || topo_sh("mkdir -p -m 0700 /run/galactic") || topo_up(&T, 2)) {
		bench_error(b, "setup failed (topology)");
		return bench_end(b);
	}
	ref = calloc((size_t)nref, sizeof(double));
	ref_sorted = calloc((size_t)nref, sizeof(double));
	rseq = calloc((size_t)nref, sizeof(double));
	for (int node = 1; node <= 2; node++) {
		cnirt_sock(&T, node, sock, sizeof(sock));
		if (!strcmp(bk, "bpf"))
			snprintf(extra, sizeof(extra), "--cni-socket %s --interval 30 --backend bpf --bpffs /sys/fs/bpf/%s-n%d",
				 sock, T.prefix, node);
		else
			snprintf(extra, sizeof(extra), "--cni-socket %s --interval 30", sock);
		if (topo_write_state(&T, node, node == 1 ? nremotes : 0) || topo_agent_start(&T, node, extra) <= 0 ||
		    cnirt_wait_socket(&T, node, 20) || topo_wait_reconciled(&T, node, 1, 300)) {
			bench_error(b, "agent on n%d did not start (%s/n%d/agent.log)", node, T.dir, node);
			return bench_end(b);
		}
	}
	if (getenv("BENCH_NODE1_SETUP") && topo_sh("NS=%s-n1 && export NS && %s", T.prefix, getenv("BENCH_NODE1_SETUP"))) {
		bench_error(b, "BENCH_NODE1_SETUP failed: %s", getenv("BENCH_NODE1_SETUP"));
		return bench_end(b);
	}
	/* Namespaces first (the runtime's job, not timed), in one ip -batch. */
	{
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/netns.batch", T.dir);
		f = fopen(path, "w");
		for (int i = 0; i < n; i++)
			fprintf(f, "netns add %s-b%d\n", T.prefix, i);
		for (int i = 0; i < nref; i++)
			fprintf(f, "netns add %s-r%d\n", T.prefix, i);
		for (int i = 0; i < n; i++)
			fprintf(f, "netns add %s-p%d\n", T.prefix, i);
		for (int i = 0; i < nrseq; i++)
			fprintf(f, "netns add %s-q%d\n", T.prefix, i);
		fprintf(f, "netns add %s-target\n", T.prefix);
		fclose(f);
		if (topo_sh("ip -batch %s", path)) {
			bench_error(b, "creating namespaces failed");
			return bench_end(b);
		}
	}
	if (cni_add(2, "target", "T0", 0)) {
		bench_error(b, "ADD of the target pod on n2 failed");
		return bench_end(b);
	}

	/* Reference: one ADD at a time. */
	for (int i = 0; i < nref; i++) {
		char name[16], att[16];
		double s = now_ms();

		snprintf(name, sizeof(name), "r%d", i);
		snprintf(att, sizeof(att), "R%d", i);
		if (gap_ms > 0) { /* not timed: pods that come one by one, not back to back */
			usleep((useconds_t)gap_ms * 1000);
			s = now_ms();
		}
		if (cni_add(1, name, att, 3000 + i)) {
			bench_error(b, "sequential ADD %d failed", i);
			return bench_end(b);
		}
		ref[i] = now_ms() - s;
	}
	rss(1, rss_seq, sizeof(rss_seq));
	{
		int tenth = nref / 10;
		double *sp = calloc((size_t)nref * 4, sizeof(double));

		/* first and last tenth apart, by parts, before ref[] is sorted */
		if (sp && verb_spans(1, "ADD", 0, nref, sp, sp + nref, sp + 2 * nref, sp + 3 * nref, NULL) == nref) {
			double *ag = sp, *su = sp + nref, *be = sp + 2 * nref, *ou = sp + 3 * nref;
			double e1 = p50_of(ref, 0, tenth), e2 = p50_of(ref, nref - tenth, tenth);
			double o1 = p50_of(ou, 0, tenth), o2 = p50_of(ou, nref - tenth, tenth);
			char what[300], rwhat[300], name[200];

			printf("bench_cni: %d sequential ADDs (%s backend, %u remotes), p50 first %d / last %d: end to end %.1f / %.1f ms "
			       "(%.2fx); in the agent %.2f / %.2f: pod setup %.2f / %.2f and the pass's backend %.2f / %.2f (the kernel's "
			       "part), ours %.2f / %.2f (%.2fx)\n",
			       nref, bk, nremotes, tenth, tenth, e1, e2, e1 > 0 ? e2 / e1 : 0, p50_of(ag, 0, tenth),
			       p50_of(ag, nref - tenth, tenth), p50_of(su, 0, tenth), p50_of(su, nref - tenth, tenth),
			       p50_of(be, 0, tenth), p50_of(be, nref - tenth, tenth), o1, o2, o1 > 0 ? o2 / o1 : 0);
			fflush(stdout);
			if (nref >= 500) {
				/* issue 10: an ADD costs what it changes, not what the node holds */
				snprintf(name, sizeof(name),
					 "%d sequential ADDs, the agent's own part: last %d p50 / first %d p50 (%s backend)", nref,
					 tenth, tenth, bk);
				snprintf(what, sizeof(what),
					 "p50 of the last %d ADDs: in the agent minus pod setup minus the pass's backend span (agent log)",
					 tenth);
				snprintf(rwhat, sizeof(rwhat), "the same of the first %d ADDs, same run", tenth);
				bench_target(b, name, "ms", &(struct bench_side){ what, &o2, 1 },
					     &(struct bench_side){ rwhat, &o1, 1 }, 1.25);
				snprintf(name, sizeof(name), "sequential ADD end to end, last %d / first %d p50", tenth, tenth);
				e1 = e1 > 0 ? e2 / e1 : 0;
				bench_fact(b, name, "", "client side (fork + exec of galactic-cni until reaped), kernel included", &e1, 1);
				e1 = p50_of(su, nref - tenth, tenth) - p50_of(su, 0, tenth);
				bench_fact(b, "sequential ADD pod setup growth, last - first p50", "ms",
					   "veth pair and container side: the kernel's, per interface it holds", &e1, 1);
				e1 = p50_of(be, nref - tenth, tenth) - p50_of(be, 0, tenth);
				bench_fact(b, "sequential ADD backend growth, last - first p50", "ms",
					   "the pass's backend span: rules, routes, neighbours (kernel) or maps and filters (bpf)", &e1, 1);
			}
		} else if (nref >= 500) {
			bench_not_measured(b, "sequential ADDs, the agent's own part: last / first p50", 1.25,
					   "the agent log of n1 did not give the spans of all %d sequential ADDs", nref);
		}
		free(sp);

		qsort(ref, (size_t)tenth, sizeof(double), cmp_d);
		qsort(ref + nref - tenth, (size_t)tenth, sizeof(double), cmp_d);
		printf("bench_cni: %d sequential ADDs with %u remote routes (%s backend): first %d p50 %.1f p99 %.1f ms, last %d p50 %.1f p99 %.1f ms\n",
		       nref, nremotes, bk, tenth, pct(ref, tenth, 0.5), pct(ref, tenth, 0.99), tenth,
		       pct(ref + nref - tenth, tenth, 0.5), pct(ref + nref - tenth, tenth, 0.99));
		fflush(stdout); /* before the forks below */
		memcpy(ref_sorted, ref, (size_t)nref * sizeof(double));
		qsort(ref_sorted, (size_t)nref, sizeof(double), cmp_d);
		ref = ref_sorted;
		printf("bench_cni: %d sequential ADDs with %u remote routes (%s backend): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		       nref, nremotes, bk, pct(ref, nref, 0.5), pct(ref, nref, 0.99), ref[nref - 1]);
		fflush(stdout);
	}

	/* BENCH_SEQ_DEL=1: then the same pods DELed one after another (a DEL
	 * must cost what it removes, not what the node holds). */
	/* (always at 500 or more: the bursts then run on the node as the
	 * sequential ADDs found it, not with 1,000 more attachments) */
	if ((getenv("BENCH_SEQ_DEL") && atoi(getenv("BENCH_SEQ_DEL")) > 0) || nref >= 500) {
		double *dl = calloc((size_t)nref, sizeof(double));
		int tenth = nref / 10;
		long from = log_size();

		for (int i = 0; dl && i < nref; i++) {
			char name[16], att[16];
			double s;

			snprintf(name, sizeof(name), "r%d", i);
			snprintf(att, sizeof(att), "R%d", i);
			if (gap_ms > 0)
				usleep((useconds_t)gap_ms * 1000);
			s = now_ms();
			if (cni_call("DEL", 1, name, att, 3000 + i)) {
				bench_error(b, "sequential DEL %d failed", i);
				return bench_end(b);
			}
			dl[i] = now_ms() - s;
		}
		if (dl) {
			double *sp = calloc((size_t)nref * 4, sizeof(double));
			int full = 0;

			usleep(300 * 1000); /* the last DEL's line and any pass it caused are logged */
			/* where each DEL's time went, by parts from the agent's log */
			if (sp && verb_spans(1, "DEL", from, nref, sp, sp + nref, sp + 2 * nref, sp + 3 * nref, &full) == nref) {
				const char *nm[4] = { "in the agent", "pod teardown", "the pass's backend", "ours" };
				int t = nref / 10;

				/* the first DELs leave a node holding all nref attachments, the last
				 * one holding a tenth of them: ours must not follow the count */
				printf("bench_cni: %d sequential DELs (%s backend, %u remotes), p50 first %d / last %d: in the agent "
				       "%.2f / %.2f, pod teardown %.2f / %.2f, the pass's backend %.2f / %.2f, ours %.2f / %.2f\n",
				       nref, bk, nremotes, t, t, p50_of(sp, 0, t), p50_of(sp, nref - t, t),
				       p50_of(sp + nref, 0, t), p50_of(sp + nref, nref - t, t), p50_of(sp + 2 * nref, 0, t),
				       p50_of(sp + 2 * nref, nref - t, t), p50_of(sp + 3 * nref, 0, t),
				       p50_of(sp + 3 * nref, nref - t, t));
				printf("bench_cni: %d sequential DELs (%s backend, %u remotes), p50 / p99 ms:", nref, bk, nremotes);
				for (int k = 0; k < 4; k++) {
					qsort(sp + k * nref, (size_t)nref, sizeof(double), cmp_d);
					printf("%s %s %.2f / %.2f", k ? ";" : "", nm[k], pct(sp + k * nref, nref, 0.5),
					       pct(sp + k * nref, nref, 0.99));
				}
				printf("; full passes during the DELs: %d\n", full);
				{
					double f = full, a50 = pct(sp, nref, 0.5), o50 = pct(sp + 3 * nref, nref, 0.5);

					bench_fact(b, "full passes during the sequential DELs", "", "agent log: reconcile # lines", &f, 1);
					bench_fact(b, "sequential DEL in the agent, p50", "ms", "agent log: request in to answer", &a50, 1);
					bench_fact(b, "sequential DEL, the agent's own part, p50", "ms",
						   "in the agent minus pod teardown minus the pass's backend span", &o50, 1);
				}
			} else {
				printf("bench_cni: the agent log of n1 did not give the spans of all %d sequential DELs\n", nref);
			}
			free(sp);
			qsort(dl, (size_t)tenth, sizeof(double), cmp_d);
			qsort(dl + nref - tenth, (size_t)tenth, sizeof(double), cmp_d);
			printf("bench_cni: %d sequential DELs with %u remote routes (%s backend): first %d p50 %.1f p99 %.1f ms, last %d p50 %.1f p99 %.1f ms\n",
			       nref, nremotes, bk, tenth, pct(dl, tenth, 0.5), pct(dl, tenth, 0.99), tenth,
			       pct(dl + nref - tenth, tenth, 0.5), pct(dl + nref - tenth, tenth, 0.99));
			qsort(dl, (size_t)nref, sizeof(double), cmp_d);
			printf("bench_cni: %d sequential DELs with %u remote routes (%s backend): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			       nref, nremotes, bk, pct(dl, nref, 0.5), pct(dl, nref, 0.99), dl[nref - 1]);
			fflush(stdout);
			bench_fact(b, "sequential DEL end to end", "ms",
				   "client side (fork + exec of galactic-cni until reaped), one DEL after another", dl, (size_t)nref);
			free(dl);
		}
	}

	/* The reference plugins, the same way: sequential, then the burst, then DELs. */
	{
		char path[512];

		snprintf(ref_data, sizeof(ref_data), "%s/host-local", T.dir);
		snprintf(path, sizeof(path), "/run/netns/%s-n1", T.prefix);
		ref_hostns = open(path, O_RDONLY | O_CLOEXEC);
		if (ref_hostns < 0 || (veths0 = node_veths()) < 0) {
			bench_error(b, "opening %s: %s", path, strerror(errno));
			return bench_end(b);
		}
	}
	for (int i = 0; i < nrseq; i++) {
		char name[16];
		double s = now_ms();

		snprintf(name, sizeof(name), "q%d", i);
		if (ref_call("ADD", name)) {
			bench_error(b, "sequential reference ptp ADD %d failed", i);
			return bench_end(b);
		}
		rseq[i] = now_ms() - s;
	}
	for (int i = 0; i < nrseq; i++) {
		char name[16];

		snprintf(name, sizeof(name), "q%d", i);
		if (ref_call("DEL", name)) {
			bench_error(b, "sequential reference ptp DEL %d failed", i);
			return bench_end(b);
		}
	}
	qsort(rseq, (size_t)nrseq, sizeof(double), cmp_d);
	load = loadavg(); /* before the bursts: later it counts their own processes */

	/*
	 * The bursts, in rounds: the reference's n ADDs then its n DELs, then
	 * our n ADDs (and, but in the last round, their DELs), so that a
	 * machine whose load drifts moves both sides of a round alike. Every
	 * DEL must leave node 1 as it was: no veth, no host-local allocation.
	 */
	for (int r = 0; r < rounds; r++) {
		struct round *x = &rd[r];
		unsigned long c0, c1;
		double usr0, sys0, usr1, sys1, t;
		long veths, allocs;
		int rf = 0, rdf = 0, f = 0;

		round_no = r;
		x->rccpu = children_cpu_ms();
		t = burst('p', n, rlat, rdone);
		x->rccpu = children_cpu_ms() - x->rccpu;
		for (int i = 0; i < n; i++)
			rf += rdone[i] != 1;
		veths = node_veths() - veths0;
		allocs = ref_allocations();
		bench_check(b, rf == 0, "round %d: %d of %d concurrent reference ADDs failed", r + 1, rf, n);
		bench_check(b, veths == n && allocs == n,
			    "round %d: the reference burst made %ld veths and %ld host-local allocations for %d ADDs",
			    r + 1, veths, allocs, n);
		qsort(rlat, (size_t)n, sizeof(double), cmp_d);
		x->rp50 = pct(rlat, n, 0.5);
		x->rp90 = pct(rlat, n, 0.9);
		x->rp99 = pct(rlat, n, 0.99);
		x->rmax = rlat[n - 1];
		x->rrate = n / (t / 1e3);
		burst('d', n, rdel, rdone);
		for (int i = 0; i < n; i++)
			rdf += rdone[i] != 1;
		veths = node_veths() - veths0;
		allocs = ref_allocations();
		bench_check(b, rdf == 0, "round %d: %d of %d concurrent reference DELs failed", r + 1, rdf, n);
		bench_check(b, veths == 0 && allocs == 0,
			    "round %d: the reference DELs left %ld veths and %ld host-local allocations behind", r + 1,
			    veths, allocs);
		qsort(rdel, (size_t)n, sizeof(double), cmp_d);
		x->rdp99 = pct(rdel, n, 0.99);

		c0 = commits_from_log(1);
		agent_cpu_ms(1, &usr0, &sys0);
		t0 = now_ms();
		x->ccpu = children_cpu_ms();
		t = burst('b', n, lat, done);
		x->ccpu = children_cpu_ms() - x->ccpu;
		c1 = commits_from_log(1);
		x->commits = (double)(c1 - c0);
		x->commit_ms = commit_ms_from_log(1, c1 - c0);
		agent_cpu_ms(1, &usr1, &sys1);
		x->usr = usr1 - usr0;
		x->sys = sys1 - sys0;
		x->rate = n / (t / 1e3);
		for (int i = 0; i < n; i++)
			f += done[i] != 1;
		bench_check(b, f == 0, "round %d: %d of %d concurrent galactic-cni ADDs failed", r + 1, f, n);
		if (f == 0 && burst_spans(r, n, lat) != n)
			printf("bench_cni: round %d: the agent log did not give the spans of all %d ADDs\n", r + 1, n);
		qsort(lat, (size_t)n, sizeof(double), cmp_d);
		x->p50 = pct(lat, n, 0.5);
		x->p90 = pct(lat, n, 0.9);
		x->p99 = pct(lat, n, 0.99);
		x->max = lat[n - 1];
		printf("bench_cni: round %d: reference ptp + host-local p50 %.1f p99 %.1f max %.1f ms "
		       "(DELs p99 %.1f); galactic-cni p50 %.1f p99 %.1f max %.1f ms, %.0f commits; p99 ratio %.3f\n",
		       r + 1, x->rp50, x->rp99, x->rmax, x->rdp99, x->p50, x->p99, x->max, x->commits,
		       x->rp99 > 0 ? x->p99 / x->rp99 : 0);
		printf("bench_cni: round %d: CPU for the burst: the agent %.0f ms (user %.0f, system %.0f), the runtime's "
		       "side (forks + plugins) %.0f ms; the reference's runtime side (forks + ptp + host-local) %.0f ms\n",
		       r + 1, x->usr + x->sys, x->usr, x->sys, x->ccpu, x->rccpu);
		fflush(stdout);
		if (r == rounds - 1)
			break; /* the last round's pods stay: they ping node 2 below */
		burst('e', n, rdel, rdone);
		f = 0;
		for (int i = 0; i < n; i++)
			f += rdone[i] != 1;
		veths = wait_veths(veths0, 10000) - veths0;
		bench_check(b, f == 0 && veths == 0, "round %d: %d of %d galactic-cni DELs failed, %ld veths left behind",
			    r + 1, f, n, veths);
		if (bench_failed(b))
			break;
	}
	close(ref_hostns);
	ref_hostns = -1;
	{
		char path[512];
		FILE *f;

		/* the runtime's part: the reference pods' namespaces go, then host-local's dir */
		snprintf(path, sizeof(path), "%s/netns-ref.batch", T.dir);
		f = fopen(path, "w");
		for (int i = 0; i < n; i++)
			fprintf(f, "netns del %s-p%d\n", T.prefix, i);
		for (int i = 0; i < nrseq; i++)
			fprintf(f, "netns del %s-q%d\n", T.prefix, i);
		fclose(f);
		bench_check(b, topo_sh("ip -batch %s", path) == 0, "deleting the reference pods' namespaces");
		topo_sh("rm -rf %s", ref_data);
	}
	for (int i = 0; i < n; i++)
		fails += done[i] != 1;

	if (bench_failed(b))
		goto out; /* a round failed: nothing to ping */
	/* Node 2 learns the n prefixes (one write, like one watch batch). */
	{
		char path[512], sid[64];
		struct gdp_node nd = { .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = 1 };
		struct in6_addr a;
		FILE *f;

		gdp_sid(&nd, GDP_FN_DECAP, 1, &a);
		inet_ntop(AF_INET6, &a, sid, sizeof(sid));
		snprintf(path, sizeof(path), "%s/n2/remotes.json.tmp", T.dir);
		f = fopen(path, "w");
		fprintf(f, "{\"remotes\":[");
		for (int i = 0; i < n; i++)
			fprintf(f, "%s{\"vpc\":\"%s\",\"prefix\":\"fd00:a::1:%x/128\",\"sid\":\"%s\"}", i ? "," : "",
				TOPO_VPC_A, i + 1, sid);
		fprintf(f, "]}\n");
		fclose(f);
		topo_sh("mv %s/n2/remotes.json.tmp %s/n2/remotes.json", T.dir, T.dir);
		kill(topo_agent_pid(&T, 2), SIGHUP); /* drop-in files are imported on SIGHUP */
		gdp_sid(&(struct gdp_node){ .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = 2 },
			GDP_FN_DECAP, 1, &a);
		inet_ntop(AF_INET6, &a, sid, sizeof(sid));
		snprintf(path, sizeof(path), "%s/n1/remotes.json.tmp", T.dir);
		f = fopen(path, "w");
		fprintf(f, "{\"remotes\":[{\"vpc\":\"%s\",\"prefix\":\"fd00:a::2:1/128\",\"sid\":\"%s\"}]}\n",
			TOPO_VPC_A, sid);
		fclose(f);
		topo_sh("mv %s/n1/remotes.json.tmp %s/n1/remotes.json", T.dir, T.dir);
		kill(topo_agent_pid(&T, 1), SIGHUP);
	}
	/* Until every pod has an answer from the target on node 2: one raw
	 * ICMPv6 socket inside each pod, echo requests every 20 ms to the pods
	 * still waiting, so the measurement costs no process per probe. */
	{
		int left = n - fails, self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		int *fd = calloc((size_t)n, sizeof(int));
		char *ok = calloc((size_t)n, 1);
		double deadline = now_ms() + 120000;
		struct sockaddr_in6 dst = { .sin6_family = AF_INET6 };
		struct pollfd *pf = calloc((size_t)n, sizeof(*pf));

		inet_pton(AF_INET6, "fd00:a::2:1", &dst.sin6_addr);
		for (int i = 0; i < n; i++) {
			char path[256];
			int ns;
			struct icmp6_filter flt;

			fd[i] = -1;
			if (done[i] != 1)
				continue;
			snprintf(path, sizeof(path), "/run/netns/%s-b%d", T.prefix, i);
			ns = open(path, O_RDONLY | O_CLOEXEC);
			if (ns < 0 || setns(ns, CLONE_NEWNET)) {
				bench_error(b, "setns into %s: %s", path, strerror(errno));
				return bench_end(b);
			}
			fd[i] = socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ICMPV6);
			ICMP6_FILTER_SETBLOCKALL(&flt);
			ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &flt);
			setsockopt(fd[i], IPPROTO_ICMPV6, ICMP6_FILTER, &flt, sizeof(flt));
			close(ns);
			if (setns(self, CLONE_NEWNET)) {
				bench_error(b, "setns back: %s", strerror(errno));
				return bench_end(b);
			}
		}
		while (left > 0 && now_ms() < deadline) {
			struct icmp6_hdr req = { .icmp6_type = ICMP6_ECHO_REQUEST };
			int np = 0;

			for (int i = 0; i < n; i++) {
				if (ok[i] || fd[i] < 0)
					continue;
				req.icmp6_id = htons((uint16_t)i);
				req.icmp6_seq = htons(1);
				sendto(fd[i], &req, sizeof(req), 0, (struct sockaddr *)&dst, sizeof(dst));
				pf[np].fd = fd[i];
				pf[np].events = POLLIN;
				np++;
			}
			poll(pf, (nfds_t)np, 20);
			for (int i = 0; i < n; i++) {
				struct icmp6_hdr rep;

				if (ok[i] || fd[i] < 0)
					continue;
				while (recv(fd[i], &rep, sizeof(rep), 0) >= (ssize_t)sizeof(rep))
					if (rep.icmp6_type == ICMP6_ECHO_REPLY && !ok[i]) {
						ok[i] = 1;
						left--;
					}
			}
		}
		t_ping = now_ms() - t0;
		if (left) {
			fprintf(stderr, "bench_cni: %d pods never reached node 2\n", left);
			fails += left;
		}
		for (int i = 0; i < n; i++)
			if (fd[i] >= 0)
				close(fd[i]);
		close(self);
		free(fd);
		free(ok);
		free(pf);
	}
	rss(1, rss_end, sizeof(rss_end));
	printf("bench_cni: agent n1 RSS after the sequential ADDs: %s; at the end: %s\n", rss_seq, rss_end);
	if (!bench_failed(b)) {
		double r50 = pct(ref, nref, 0.5), failed = fails, ours[MAX_ROUNDS], theirs[MAX_ROUNDS];
		char what[200], rwhat[200], name[160];
		int nr = rounds;
		const struct round *last = &rd[nr - 1];

		bench_check(b, fails == 0, "%d of %d concurrent ADDs (last round) failed or never reached node 2", fails, n);
		snprintf(what, sizeof(what), "%d galactic-cni ADDs one after another (uncontended ADD)", nref);
		bench_fact(b, "sequential ADD", "ms", what, ref, (size_t)nref);
		snprintf(what, sizeof(what), "%d reference ptp + host-local ADDs one after another", nrseq);
		bench_fact(b, "reference sequential ADD", "ms", what, rseq, (size_t)nrseq);
#define RF(field, fname, unit, fmt)                                                 \
	do {                                                                        \
		snprintf(what, sizeof(what), fmt ", one sample per round", n);      \
		round_fact(b, rd, nr, offsetof(struct round, field), fname, unit, what); \
	} while (0)
		RF(p50, "concurrent ADD p50", "ms", "%d concurrent galactic-cni ADDs on one node, p50");
		RF(p90, "concurrent ADD p90", "ms", "%d concurrent galactic-cni ADDs on one node, p90");
		RF(p99, "concurrent ADD p99", "ms", "%d concurrent galactic-cni ADDs on one node, p99");
		RF(max, "concurrent ADD max", "ms", "the slowest of %d concurrent galactic-cni ADDs");
		RF(rate, "concurrent ADD rate", "ADD/s", "%d / time until all returned");
		RF(rp50, "reference concurrent ADD p50", "ms", "%d concurrent reference ptp + host-local ADDs, p50");
		RF(rp90, "reference concurrent ADD p90", "ms", "%d concurrent reference ptp + host-local ADDs, p90");
		RF(rp99, "reference concurrent ADD p99", "ms", "%d concurrent reference ptp + host-local ADDs, p99");
		RF(rmax, "reference concurrent ADD max", "ms", "the slowest of %d concurrent reference ADDs");
		RF(rrate, "reference concurrent ADD rate", "ADD/s", "%d / time until all returned");
		RF(rdp99, "reference concurrent DEL p99", "ms", "%d concurrent reference DELs, p99");
		RF(commits, "backend commits for the burst", "", "group commits the agent logged during %d ADDs");
		RF(commit_ms, "agent commit time for the burst", "ms",
		   "sum of the durations of those commits (agent log; they run one after another), %d ADDs");
		RF(usr, "agent user CPU for the burst", "ms", "the agent on n1 during %d ADDs");
		RF(sys, "agent system CPU for the burst", "ms", "the agent on n1 during %d ADDs (kernel: netlink)");
		RF(ccpu, "runtime side CPU for the burst", "ms",
		   "the bench's %d forks and the galactic-cni processes they ran (getrusage of the reaped children)");
		RF(rccpu, "reference runtime side CPU for the burst", "ms",
		   "the bench's %d forks and the ptp + host-local processes they ran");
#undef RF
		bench_fact(b, "load average before the bursts", "",
			   "1 minute, /proc/loadavg: how busy the shared machine was", &load, 1);
		bench_fact(b, "failed ADDs", "", "in the last round's burst", &failed, 1);
		printf("bench_cni: concurrent p50 is %.1fx the uncontended ADD; throughput %.1fx the sequential rate "
		       "(last round)\n",
		       last->p50 / r50, last->rate / (1e3 / r50));
		snprintf(what, sizeof(what), "first ADD -> last of %d pods pinging a pod on node 2 (last round; routes "
			 "fed by hand through remotes.json, not through reports)", n);
		bench_fact(b, "first ADD to last pod pings", "ms", what, &t_ping, 1);
		/* The issue's target: the bursts' p99s, ours / the reference's, paired by round. */
		for (int r = 0; r < nr; r++) {
			ours[r] = rd[r].p99;
			theirs[r] = rd[r].rp99;
		}
		snprintf(name, sizeof(name), "%d concurrent CNI ADDs p99: galactic-cni / reference ptp + host-local", n);
		snprintf(what, sizeof(what), "p99 of %d concurrent galactic-cni ADDs (dual-stack, through the agent)", n);
		snprintf(rwhat, sizeof(rwhat), "p99 of %d concurrent ptp + host-local ADDs (IPv4), same driver", n);
		bench_target(b, name, "ms", &(struct bench_side){ what, ours, (size_t)nr },
			     &(struct bench_side){ rwhat, theirs, (size_t)nr }, 0.2);
	}
out:
	{
		char log[600];

		snprintf(log, sizeof(log), "%s/n1/agent.log", T.dir);
		bench_keep(b, log, "agent-n1.log");
	}
	topo_sh("rm -f /run/galactic/%s-n*.sock", T.prefix);
	{
		char prefix[sizeof(T.prefix)];

		snprintf(prefix, sizeof(prefix), "%s", T.prefix);
		topo_down(&T);
		if (!strcmp(bk, "bpf"))
			topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2", prefix, prefix);
	}
	return bench_end(b);
}
