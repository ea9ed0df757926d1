/*
 * make bench: the agent's memory with 1,000 attachments and 100,000 remote
 * routes (issue 10: RSS < 32 MB at peak and at rest; issue 13: agent under
 * 32 MB), on the kernel and the bpf backend.
 *
 * For each backend: a namespace node (tests/lib/topo.*) and a real
 * galactic-agent on it (--interval BENCH_INTERVAL, default 5 s, so full
 * passes happen during the run). Before it starts, its state directory gets
 * the VPCs (state.json) and R remote prefixes (default 100,000) over 200
 * SIDs (the decap SIDs of nodes 2..201) in the legacy remotes.json drop-in
 * the other benches use (the agent imports it into its record, then keeps
 * it in record-remotes.json): the route learner's path (reports in a real
 * API server) is not used, the remote set arrives in one piece the same
 * way. 70% IPv6 /128, 30% IPv4 /32. Then N attachments (default 1,000)
 * through galactic-cni (dual-stack), 8 at a time, each as a runtime calls
 * it (fork + exec, CNI_* environment, config on stdin). Then the agent is
 * left alone for BENCH_REST full passes (default 2): its VmRSS then is the
 * resting figure. Then it is restarted twice (SIGTERM, start: it loads
 * record.json + record-remotes.json): first with status.json removed (the
 * first pass reconciles everything before a CNI request is answered, as
 * before adoption), then as it is (it adopts the last pass's datapath and
 * answers at once, the read-back follows); from each start, a CHECK of a
 * pod it has and an ADD of a new one are retried every 20 ms until they
 * succeed (issue 10: the agent answers CNI while it adopts state after a
 * restart). Target: each answered, adopting, in <= 0.5x the time without.
 * Then it is rested again. VmHWM (/proc/PID/status, the peak resident set of the
 * process) and VmRSS are read after each phase.
 *
 * Targets (absolute, bench_limit: issue 10's bound, 32 MB = 30.52 MiB):
 * the highest VmHWM of the two agent lives <= the bound, the highest
 * resting VmRSS <= the bound, per backend.
 *
 *   build/rel/bench/bench_rss [N] [R]
 *
 * Environment: BENCH_BACKENDS="kernel bpf" (default both), BENCH_INTERVAL=S,
 * BENCH_REST=P, BENCH_KEEP=1 (copies the agent logs into a directory of
 * the run's own, printed: bench_keep).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench.h"
#include "tests/lib/cnirt.h"
#include "tests/lib/topo.h"

#define BOUND_MIB (32e6 / (1024.0 * 1024.0)) /* issue 10: 32 MB */
#define NSIDS     200
#define WORKERS   8

static struct topo T;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* cmd (ADD, CHECK) of pod b<idx> on node 1 through galactic-cni, as a runtime calls it. */
static int cni_call(const char *cmd, int idx)
{
	char conf[1400], sock[300], bin[512], ns[300], cid[80], prev[300] = "";

	cnirt_sock(&T, 1, sock, sizeof(sock));
	if (!strcmp(cmd, "CHECK")) /* what its ADD answered */
		snprintf(prev, sizeof(prev),
			 ",\"prevResult\":{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"fd00:a::1:%x/128\"},"
			 "{\"address\":\"10.1.%d.%d/32\"}]}",
			 idx + 1, 10 + idx / 250, idx % 250 + 1);
	snprintf(conf, sizeof(conf),
		 "{\"cniVersion\":\"1.1.0\",\"name\":\"bench\",\"type\":\"galactic-cni\",\"vpc\":\"%s\","
		 "\"vpcattachment\":\"B%d\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		 "\"addresses\":[{\"address\":\"fd00:a::1:%x/128\",\"gateway\":\"fe80::1\"},"
		 "{\"address\":\"10.1.%d.%d/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		 "\"agentSocket\":\"%s\",\"timeoutSeconds\":300%s}",
		 TOPO_VPC_A, idx, idx + 1, 10 + idx / 250, idx % 250 + 1, sock, prev);
	snprintf(bin, sizeof(bin), "%s/build/rel/bin/galactic-cni", cnirt_top());
	snprintf(ns, sizeof(ns), "/run/netns/%s-b%d", T.prefix, idx);
	snprintf(cid, sizeof(cid), "cb%d", idx);
	return cnirt_exec(&(struct cnirt_call){ bin, cmd, cid, ns, "IgnoreUnknown=1;K8S_POD_NAMESPACE=bench",
						"/opt/cni/bin", -1 },
			  conf);
}

/* n ADDs, WORKERS at a time (each worker takes every WORKERS-th pod); failures. */
static int add_all(int n)
{
	int fails = 0;

	fflush(stdout);
	for (int w = 0; w < WORKERS; w++)
		if (fork() == 0) {
			int f = 0;

			for (int i = w; i < n; i += WORKERS)
				f += cni_call("ADD", i) != 0;
			_exit(f > 250 ? 250 : f);
		}
	for (int w = 0; w < WORKERS; w++) {
		int st;

		if (wait(&st) > 0)
			fails += WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
	}
	return fails;
}

/* The remote set: R prefixes over NSIDS decap SIDs (nodes 2..NSIDS+1), in remotes.json. */
static int write_remotes(unsigned r)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/n1/remotes.json.tmp", T.dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"remotes\":[");
	for (unsigned k = 0; k < r; k++) {
		unsigned node = 2 + k % NSIDS;
		char pfx[64];

		if (k % 10 < 7) /* IPv6 /128 in fd00:a::/64, away from the pods' fd00:a::1:x */
			snprintf(pfx, sizeof(pfx), "fd00:a::2:%x:%x/128", (k >> 16) + 1, k & 0xffff);
		else /* IPv4 /32 in 10.1.0.0/16, away from the pods' 10.1.10-13.x */
			snprintf(pfx, sizeof(pfx), "10.1.%u.%u/32", 32 + (k / 10 * 3 + k % 10 - 7) / 250,
				 (k / 10 * 3 + k % 10 - 7) % 250 + 1);
		/* fcbb:bb00:1:<node>:e001:: is node's VPC decap SID for arg 1 (model.h) */
		fprintf(f, "%s\n {\"vpc\":\"%s\",\"prefix\":\"%s\",\"sid\":\"fcbb:bb00:1:%x:e001::\"}", k ? "," : "",
			TOPO_VPC_A, pfx, node);
	}
	fprintf(f, "]}\n");
	if (fclose(f))
		return -1;
	return topo_sh("mv %s %s/n1/remotes.json", path, T.dir) ? -1 : 0;
}

/* VmHWM and VmRSS of the agent (MiB); -1 when unreadable. */
static int agent_mem(double *hwm, double *rss)
{
	char path[64], line[256];
	FILE *f;

	*hwm = *rss = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)topo_agent_pid(&T, 1));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long kb;

		if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
			*hwm = (double)kb / 1024;
		else if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
			*rss = (double)kb / 1024;
	}
	fclose(f);
	return *hwm < 0 || *rss < 0 ? -1 : 0;
}

/* Full passes ("reconcile #") the agent has logged so far. */
static long full_passes(void)
{
	char out[64];

	if (topo_out(out, sizeof(out), "grep -c 'reconcile #' %s/n1/agent.log", T.dir))
		return 0;
	return strtol(out, NULL, 10);
}

/* Waits until k more full passes than `from` were logged. */
static int wait_full(long from, long k, double timeout_s)
{
	double end = now_ms() + timeout_s * 1e3;

	while (now_ms() < end) {
		if (full_passes() >= from + k) {
			/* The pass is logged before it hands its results over and
			 * frees what it held: let it finish (the next one is
			 * BENCH_INTERVAL away). */
			usleep(1500000);
			return 0;
		}
		usleep(200000);
	}
	return -1;
}

/* Routes in the node's VPC A table (kernel) or entries of the routes map (bpf). */
static long programmed(const char *bk)
{
	char out[64];

	if (!strcmp(bk, "bpf"))
		return topo_status_int(&T, 1, "programmed");
	if (topo_out(out, sizeof(out), "ip -n %s-n1 -6 route show table %d | wc -l; ", T.prefix, TOPO_TABLE_A))
		return -1;
	return strtol(out, NULL, 10);
}

struct phase {
	const char *name;
	double hwm, rss;
};

/* A restart's answers, ms from starting the agent (issue 10: the agent
 * answers CNI while it adopts state after a restart). */
struct restart_ms {
	double check, add, full;
};

/*
 * SIGTERM, start again (without status.json when !adopt: the first pass
 * then reconciles everything before anything is answered, as before
 * adoption), and from the start on, at once: a CHECK of pod b0 (it has
 * it) and an ADD of the new pod b<newpod>, each retried every 20 ms until
 * it succeeds (the socket is not there yet, or the CHECK finds nothing
 * applied); then the first full pass of the new agent (status.json).
 */
static int timed_restart(struct bench *b, const char *bk, const char *extra, int newpod, bool adopt,
			 struct restart_ms *out)
{
	double *t = mmap(NULL, 2 * sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0), t0;
	char path[600];
	long f0;
	int ok = 0;

	if (t == MAP_FAILED || topo_agent_stop(&T, 1, SIGTERM) < 0) {
		bench_error(b, "%s: stopping the agent failed", bk);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/n1/status.json", T.dir);
	if (!adopt)
		unlink(path);
	t[0] = t[1] = -1;
	f0 = full_passes();
	fflush(stdout);
	t0 = now_ms();
	if (topo_agent_start(&T, 1, extra) <= 0) {
		bench_error(b, "%s: agent did not restart", bk);
		return -1;
	}
	for (int k = 0; k < 2; k++)
		if (fork() == 0) {
			/* the refusals while it starts are expected: not printed */
			if (!freopen("/dev/null", "w", stderr))
				_exit(126);
			while (now_ms() - t0 < 120000) {
				if (cni_call(k ? "ADD" : "CHECK", k ? newpod : 0) == 0) {
					t[k] = now_ms() - t0;
					_exit(0);
				}
				usleep(20000);
			}
			_exit(1);
		}
	for (int k = 0; k < 2; k++) {
		int st;

		if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	out->check = t[0];
	out->add = t[1];
	/* the new agent's first full pass ("reconcile #" in its log; incremental passes count in status.json too) */
	out->full = -1;
	while (now_ms() - t0 < 300000 && out->full < 0) {
		if (full_passes() > f0)
			out->full = now_ms() - t0;
		else
			usleep(100000);
	}
	munmap(t, 2 * sizeof(double));
	printf("bench_rss: %s: restart %s: CHECK of an attachment answered %.0f ms after the start, ADD of a new one %.0f ms, "
	       "first full pass done by %.0f ms (read each 100 ms)\n",
	       bk, adopt ? "adopting the last pass" : "without status.json (full first pass)", out->check, out->add,
	       out->full);
	return bench_check(b, ok == 2 && out->full >= 0, "%s: restart (%s): CHECK or ADD never answered, or no full pass",
			   bk, adopt ? "adopting" : "full first pass")
		       ? 0
		       : -1;
}

static int run_backend(struct bench *b, const char *bk, int n, unsigned r, int interval, int rest)
{
	char extra[600], sock[300], path[512], name[200], what[400], rwhat[200];
	struct phase ph[4] = { { "after start (import + first full pass)", 0, 0 },
			       { "after the ADDs", 0, 0 },
			       { "at rest", 0, 0 },
			       { "restarted, at rest", 0, 0 } };
	double peak, rest_rss, t0;
	struct restart_ms ra, rb;
	long from;
	int fails;
	FILE *f;

	if (topo_sh("mkdir -p -m 0700 /run/galactic") || topo_up(&T, 2)) {
		bench_error(b, "%s: setup failed (topology)", bk);
		return -1;
	}
	/* the 200 remote nodes' locators: via node 2, as a fabric routes the block */
	if (topo_sh("ip -n %s-n1 -6 route add fcbb:bb00:1::/48 via 2001:db8:f::2 dev up0", T.prefix)) {
		bench_error(b, "%s: setup failed (route to the SID block)", bk);
		return -1;
	}
	cnirt_sock(&T, 1, sock, sizeof(sock));
	if (!strcmp(bk, "bpf"))
		snprintf(extra, sizeof(extra), "--cni-socket %s --interval %d --backend bpf --bpffs /sys/fs/bpf/%s-n1", sock,
			 interval, T.prefix);
	else
		snprintf(extra, sizeof(extra), "--cni-socket %s --interval %d", sock, interval);
	/* Namespaces first (the runtime's job), in one ip -batch. */
	snprintf(path, sizeof(path), "%s/netns.batch", T.dir);
	f = fopen(path, "w");
	if (!f) {
		bench_error(b, "%s: cannot write %s", bk, path);
		return -1;
	}
	for (int i = 0; i < n + 2; i++) /* and two pods added at the restarts */
		fprintf(f, "netns add %s-b%d\n", T.prefix, i);
	fclose(f);
	if (topo_sh("ip -batch %s", path)) {
		bench_error(b, "%s: creating %d namespaces failed", bk, n);
		return -1;
	}
	t0 = now_ms();
	if (topo_write_state(&T, 1, 0) || write_remotes(r) || topo_agent_start(&T, 1, extra) <= 0 ||
	    cnirt_wait_socket(&T, 1, 120) || topo_wait_reconciled(&T, 1, 1, 300)) {
		bench_error(b, "%s: agent did not start (%s/n1/agent.log)", bk, T.dir);
		return -1;
	}
	agent_mem(&ph[0].hwm, &ph[0].rss);
	printf("bench_rss: %s: agent up with %u remotes in %.1f s\n", bk, r, (now_ms() - t0) / 1e3);
	t0 = now_ms();
	fails = add_all(n);
	agent_mem(&ph[1].hwm, &ph[1].rss);
	printf("bench_rss: %s: %d ADDs in %.1f s, %d failed\n", bk, n, (now_ms() - t0) / 1e3, fails);
	if (!bench_check(b, fails == 0, "%s: %d of %d ADDs failed", bk, fails, n))
		return -1;
	from = full_passes();
	if (!bench_check(b, wait_full(from, rest, 60.0 + 3.0 * interval * rest) == 0,
			 "%s: the agent did not finish %d full passes after the ADDs", bk, rest))
		return -1;
	agent_mem(&ph[2].hwm, &ph[2].rss);
	{
		long want = strcmp(bk, "bpf") ? (long)(r * 7 / 10 + (unsigned)n) : (long)r;
		long have = programmed(bk);

		/* kernel: the IPv6 remotes and every pod's /128 in table A; bpf: every object programmed */
		bench_check(b, have >= want, "%s: %ld programmed, expected at least %ld", bk, have, want);
	}
	/* Restarts: the record's two files are parsed; the first reconciles in
	 * full before it answers (no status.json), the second adopts. */
	if (timed_restart(b, bk, extra, n, false, &ra) || timed_restart(b, bk, extra, n + 1, true, &rb))
		return -1;
	{
		struct { const char *verb; double *ours, *ref; } tg[2] = { { "CHECK of an attachment", &rb.check, &ra.check },
									 { "ADD of a new attachment", &rb.add, &ra.add } };

		for (int k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "%s backend: restart with %d attachments and %u remotes, %s answered: adopting / full first pass",
				 bk, n, r, tg[k].verb);
			snprintf(what, sizeof(what), "ms from the agent's start, adopting the last pass (status.json)");
			snprintf(rwhat, sizeof(rwhat), "ms from the start, status.json removed: the first pass reconciles all first");
			bench_target(b, name, "ms", &(struct bench_side){ what, tg[k].ours, 1 },
				     &(struct bench_side){ rwhat, tg[k].ref, 1 }, 0.5);
		}
		snprintf(name, sizeof(name), "%s: restart, first full pass done (adopting)", bk);
		bench_fact(b, name, "ms", "ms from the start until status.json counts a pass: the adopted state read back",
			   &rb.full, 1);
		snprintf(name, sizeof(name), "%s: restart, first full pass done (status.json removed)", bk);
		bench_fact(b, name, "ms", "ms from the start until the first (full) pass", &ra.full, 1);
	}
	from = full_passes();
	if (!bench_check(b, wait_full(from, rest, 60.0 + 3.0 * interval * rest) == 0,
			 "%s: the restarted agent did not finish %d full passes", bk, rest))
		return -1;
	agent_mem(&ph[3].hwm, &ph[3].rss);
	for (int i = 0; i < 4; i++)
		printf("bench_rss: %s: %-40s VmHWM %7.1f MiB  VmRSS %7.1f MiB\n", bk, ph[i].name, ph[i].hwm, ph[i].rss);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "%s: VmRSS %s", bk, ph[i].name);
		snprintf(what, sizeof(what), "galactic-agent, %d attachments, %u remotes, /proc/PID/status", n, r);
		bench_fact(b, name, "MiB", what, &ph[i].rss, 1);
		snprintf(name, sizeof(name), "%s: VmHWM %s", bk, ph[i].name);
		bench_fact(b, name, "MiB", what, &ph[i].hwm, 1);
	}
	peak = ph[2].hwm > ph[3].hwm ? ph[2].hwm : ph[3].hwm;
	rest_rss = ph[2].rss > ph[3].rss ? ph[2].rss : ph[3].rss;
	snprintf(name, sizeof(name), "%s backend: agent peak RSS (VmHWM), %d attachments, %u remote routes", bk, n, r);
	snprintf(what, sizeof(what),
		 "highest VmHWM of the agent's two lives (import, %d ADDs, %d full passes; restart, %d full passes)", n,
		 rest, rest);
	bench_limit(b, name, "MiB", &(struct bench_side){ what, &peak, 1 }, BOUND_MIB);
	snprintf(name, sizeof(name), "%s backend: agent resting RSS (VmRSS), %d attachments, %u remote routes", bk, n, r);
	snprintf(what, sizeof(what), "higher VmRSS after %d full passes with nothing to do (before and after the restart)",
		 rest);
	bench_limit(b, name, "MiB", &(struct bench_side){ what, &rest_rss, 1 }, BOUND_MIB);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	unsigned r = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 100000;
	int interval = getenv("BENCH_INTERVAL") ? atoi(getenv("BENCH_INTERVAL")) : 5;
	int rest = getenv("BENCH_REST") ? atoi(getenv("BENCH_REST")) : 2;
	char bks[64], *save = NULL;
	struct bench *b = bench_begin("bench_rss");

	snprintf(bks, sizeof(bks), "%s", getenv("BENCH_BACKENDS") ? getenv("BENCH_BACKENDS") : "kernel bpf");
	if (!bench_need_root(b, "network namespaces, the agent's data plane"))
		return bench_end(b);
	if (n < 1 || n > 1000) /* 1,000: the pods' addresses (10.1.10-13.x) and the attachment numbers */
		n = 1000;
	if (r < 1 || r > 210000)
		r = 100000;
	if (interval < 3) /* the resting figure is read 1.5 s after a pass */
		interval = 5;
	if (rest < 1)
		rest = 2;
	for (char *bk = strtok_r(bks, " ,", &save); bk; bk = strtok_r(NULL, " ,", &save)) {
		char prefix[sizeof(T.prefix)];

		if (strcmp(bk, "kernel") && strcmp(bk, "bpf")) {
			bench_error(b, "unknown backend '%s' in BENCH_BACKENDS", bk);
			break;
		}
		run_backend(b, bk, n, r, interval, rest);
		{
			char log[600], name[64];

			snprintf(log, sizeof(log), "%s/n1/agent.log", T.dir);
			snprintf(name, sizeof(name), "agent-%s.log", bk);
			bench_keep(b, log, name);
		}
		topo_sh("rm -f /run/galactic/%s-n*.sock", T.prefix);
		snprintf(prefix, sizeof(prefix), "%s", T.prefix);
		topo_down(&T);
		if (!strcmp(bk, "bpf"))
			topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2", prefix, prefix);
		if (bench_failed(b))
			break;
	}
	return bench_end(b);
}
