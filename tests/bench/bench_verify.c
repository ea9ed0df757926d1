/*
 * make bench: what one verify tick (the read-back of the datapath between
 * passes, --verify-interval) costs galactic-agent at R remote routes
 * (default 100,000), kernel backend: CPU time and wall time per tick, and
 * the agent's resident set.
 *
 * One namespace node (tests/lib/topo.*) with one pod and R remotes
 * (topo_write_state: /128s of vpcA toward node 2, programmed as seg6
 * routes by the agent's first pass), a real galactic-agent with
 * --interval 3600 (no periodic pass in the window) and --verify-interval 1
 * --metrics-addr. Once its first pass is done and two ticks have run, its
 * CPU time (utime + stime, /proc/PID/stat) over BENCH_SECONDS (default 15)
 * is divided by the ticks counted meanwhile
 * (galactic_agent_passes_total{kind="verify"}); the wall time of each tick
 * is galactic_agent_last_pass_seconds{kind="verify"}, read once a second;
 * VmHWM and VmRSS at the end of the window.
 *
 *   build/rel/bench/bench_verify [R]
 *
 * First, in process, what a tick costs besides its observe, before and
 * after the tick kept its observer and read the applied view: a record of
 * 1,000 attachments and R remotes, and the kernel backend on the node's
 * namespace; per call, 50 calls each: record_snapshot (two per tick
 * before), pipeline_verify with an observe that reads nothing (the copy of
 * the applied view and the observer's sync: the tick's own part now),
 * observer_open + observer_close (each tick before), observer_sync (each
 * tick now).
 *
 * Environment: BENCH_AGENT (default build/rel/bin/galactic-agent);
 * BENCH_AGENT_REF: another galactic-agent binary (e.g. built from the main
 * branch) run in turn with ours, BENCH_ROUNDS times each (default 2), for
 * an A/B in one invocation (target: ours/ref <= 1.1 per tick, CPU: no
 * dearer than the reference, within this machine's noise);
 * BENCH_SECONDS.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/pipeline.h"
#include "agent/record.h"
#include "tests/bench/bench.h"
#include "tests/lib/daemon.h"
#include "tests/lib/topo.h"

static struct topo T;

/* utime + stime of pid, in ms (-1: gone). */
static double cpu_ms(pid_t pid)
{
	char p[64], buf[2048], *s;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(p, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	s = strrchr(buf, ')');
	/* fields 14 and 15 (utime, stime) after the command's ')' : state is field 3 */
	if (!s || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

/* VmHWM or VmRSS of pid, MiB (-1: unknown). */
static double vm_mib(pid_t pid, const char *key)
{
	char p[64], line[256];
	double kb = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (!(f = fopen(p, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			kb = atof(line + strlen(key) + 1);
	fclose(f);
	return kb < 0 ? -1 : kb / 1024.0;
}

static double ticks(int port)
{
	double a = gt_metric(port, "galactic_agent_passes_total{kind=\"verify\",result=\"verified\"}");
	double b = gt_metric(port, "galactic_agent_passes_total{kind=\"verify\",result=\"failed\"}");

	return (a < 0 ? 0 : a) + (b < 0 ? 0 : b);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct run {
	double cpu_per_tick, wall_per_tick, hwm, rss, ticks;
};

/* One agent life: start, first pass, ticks measured over secs, stop. 0 or -1. */
static int one_run(struct bench *b, const char *agent, int secs, struct run *out)
{
	char cmd[2048], d[512], p[600];
	double walls[600], t0, c0, c1, v0, v1;
	size_t nw = 0;
	int port = gt_free_port(), status;
	pid_t pid;

	topo_state_dir(&T, 1, d, sizeof(d));
	snprintf(p, sizeof(p), "%s/status.json", d);
	unlink(p); /* each life starts with a full pass */
	snprintf(cmd, sizeof(cmd),
		 "exec %s --state-dir %s --netns %s-n1 --backend kernel --interval 3600 --verify-interval 1 "
		 "--metrics-addr 127.0.0.1:%d >>%s/agent.log 2>&1",
		 agent, d, T.prefix, port, d);
	pid = fork();
	if (pid == 0) {
		setsid();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (!bench_check(b, pid > 0, "fork") ||
	    !bench_check(b, topo_wait_reconciled(&T, 1, 1, 300) == 0, "%s: no first pass (see %s/agent.log)", agent, d))
		goto fail;
	for (t0 = gt_now(); ticks(port) < 2 && gt_now() - t0 < 60;)
		usleep(100 * 1000);
	if (!bench_check(b, ticks(port) >= 2, "%s: no verify ticks (see %s/agent.log)", agent, d))
		goto fail;
	c0 = cpu_ms(pid);
	v0 = ticks(port);
	for (t0 = gt_now(); gt_now() - t0 < secs;) {
		double w = gt_metric(port, "galactic_agent_last_pass_seconds{kind=\"verify\"}");

		if (w > 0 && nw < sizeof(walls) / sizeof(walls[0]))
			walls[nw++] = w * 1e3;
		usleep(1000 * 1000);
	}
	c1 = cpu_ms(pid);
	v1 = ticks(port);
	out->hwm = vm_mib(pid, "VmHWM");
	out->rss = vm_mib(pid, "VmRSS");
	out->ticks = v1 - v0;
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!bench_check(b, c0 >= 0 && c1 >= c0 && v1 > v0, "%s: CPU or ticks not read (%.0f ticks)", agent, v1 - v0))
		return -1;
	out->cpu_per_tick = (c1 - c0) / (v1 - v0);
	qsort(walls, nw, sizeof(walls[0]), cmp_d);
	out->wall_per_tick = nw ? walls[nw / 2] : -1;
	printf("  %s: %.0f ticks in %d s: CPU %.1f ms per tick, wall %.1f ms (median), VmHWM %.1f MiB, VmRSS %.1f MiB\n",
	       agent, out->ticks, secs, out->cpu_per_tick, out->wall_per_tick, out->hwm, out->rss);
	return 0;
fail:
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
	}
	return -1;
}

/* ---- in process: the tick's own part, besides the observe ---- */

static struct gdp_backend noop_obs;

static int noop_apply(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	(void)b;
	for (size_t i = 0; i < d->n_atts; i++)
		gdp_results_get(res, GDP_OBJ_ATTACHMENT, d->atts[i].vpc, d->atts[i].id)->programmed = true;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	return 0;
}

static int noop_observe(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	(void)b;
	(void)d;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	return 0;
}

static int noop_open(struct gdp_backend *b, struct gdp_backend **o)
{
	(void)b;
	*o = &noop_obs;
	return 0;
}

static void noop_close(struct gdp_backend *b, struct gdp_backend *o)
{
	(void)b;
	(void)o;
}

static int noop_sync(struct gdp_backend *b, struct gdp_backend *o)
{
	(void)b;
	(void)o;
	return 0;
}

static const struct gdp_backend_ops NOOP = { .name = "noop", .apply = noop_apply, .observe = noop_observe,
					     .observer_open = noop_open, .observer_close = noop_close,
					     .observer_sync = noop_sync };

static double cpu_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#define REPS 50

static void in_process(struct bench *b, unsigned nrem)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct gdp_remote *rm = calloc(nrem + 1, sizeof(*rm));
	struct gdp_backend nb = { &NOOP }, *kb = NULL, *o = NULL;
	struct record *rec = NULL;
	struct pipeline *p = NULL;
	char err[512], dir[300], ns[64];
	double c, v[4] = { -1, -1, -1, -1 };
	int bad = 0;

	snprintf(dir, sizeof(dir), "%s/inproc", T.dir);
	if (!bench_check(b, rm && !mkdir(dir, 0700) &&
			 !record_open(&rec, &(struct record_opts){ .dir = dir }, err, sizeof(err)), "record: %s", err))
		goto out;
	record_set_node_identity(rec, &n, 1500);
	for (int i = 0; i < 1000; i++) {
		struct rec_att a = { .src = REC_SRC_CNI }, *x;
		char ad[32];

		snprintf(a.m.vpc, sizeof(a.m.vpc), "vpcA");
		snprintf(a.m.id, sizeof(a.m.id), "att%d", i);
		snprintf(a.m.host_ifname, sizeof(a.m.host_ifname), "gc%d", i);
		snprintf(a.network, sizeof(a.network), "net");
		snprintf(a.m.container_id, sizeof(a.m.container_id), "c-%d", i);
		snprintf(a.ifname, sizeof(a.ifname), "eth0");
		snprintf(ad, sizeof(ad), "10.1.%d.%d", i / 250, i % 250 + 1);
		gdp_prefix_parse(ad, &a.m.addrs[0]);
		a.m.n_addrs = 1;
		a.config = json_pack("{s:s, s:s}", "vpc", "vpcA", "vpcattachment", a.m.id);
		a.netns = strdup("/var/run/netns/x");
		record_lock(rec);
		x = record_reserve(rec, &a, err, sizeof(err));
		if (x)
			record_activate(rec, x);
		record_unlock(rec);
		bad += !x;
	}
	for (unsigned i = 0; i < nrem; i++) {
		char pf[64];

		snprintf(pf, sizeof(pf), "fd00:a::%x:%x/128", i >> 16, i & 0xffff);
		gdp_prefix_parse(pf, &rm[i].prefix);
		rm[i].vpc_ix = gdp_vpc_ix("vpcA");
		rm[i].sid.s6_addr[0] = 0xfc;
	}
	if (!bench_check(b, !bad && record_set_remotes(rec, rm, nrem) == 0 &&
				    !pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &nb }, err, sizeof(err)) &&
				    pipeline_pass(p) == 0,
			 "in-process record and pipeline"))
		goto out;
	c = cpu_now_ms();
	for (int i = 0; i < REPS; i++) {
		struct rec_snap s;

		bad += record_snapshot(rec, &s) != 0;
		record_snap_free(&s);
	}
	v[0] = (cpu_now_ms() - c) / REPS;
	c = cpu_now_ms();
	for (int i = 0; i < REPS; i++) {
		struct gdp_results r;
		struct rec_snap s;

		gdp_results_init(&r);
		bad += pipeline_verify(p, &r, &s) != 0;
		record_snap_free(&s);
		gdp_results_free(&r);
	}
	v[1] = (cpu_now_ms() - c) / REPS;
	topo_node_ns(&T, 1, ns, sizeof(ns));
	if (!bench_check(b, !bad && gdp_kernel_backend.open(&kb, &(struct gdp_backend_opts){ .netns = ns }, err,
							   sizeof(err)) == 0,
			 "kernel backend: %s", err))
		goto out;
	c = cpu_now_ms();
	for (int i = 0; i < REPS; i++) {
		bad += gdp_kernel_backend.observer_open(kb, &o) != 0;
		gdp_kernel_backend.observer_close(kb, o);
	}
	v[2] = (cpu_now_ms() - c) / REPS;
	bad += gdp_kernel_backend.observer_open(kb, &o) != 0;
	c = cpu_now_ms();
	for (int i = 0; i < REPS; i++)
		bad += gdp_kernel_backend.observer_sync(kb, o) != 0;
	v[3] = (cpu_now_ms() - c) / REPS;
	gdp_kernel_backend.observer_close(kb, o);
	if (!bench_check(b, !bad, "in-process calls failed (%d)", bad))
		goto out;
	printf("  in process, 1,000 attachments and %u remotes, CPU per call: record_snapshot %.3f ms (two per tick "
	       "before), the new tick's copy and sync %.3f ms; observer open + close %.3f ms (each tick before), sync "
	       "%.4f ms\n",
	       nrem, v[0], v[1], v[2], v[3]);
	bench_fact(b, "record_snapshot", "ms", "CPU per call, 1,000 attachments (two per tick before)", &v[0], 1);
	bench_fact(b, "pipeline_verify without its observe", "ms", "CPU per call: the tick's own part now", &v[1], 1);
	bench_fact(b, "kernel observer_open + observer_close", "ms", "CPU per call (each tick before)", &v[2], 1);
	bench_fact(b, "kernel observer_sync", "ms", "CPU per call (each tick now)", &v[3], 1);
out:
	if (kb)
		gdp_kernel_backend.close(kb);
	pipeline_free(p);
	record_close(rec);
	free(rm);
	topo_sh("rm -rf %s", dir);
}

int main(int argc, char **argv)
{
	struct bench *b = bench_begin("bench_verify");
	unsigned r = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
	const char *ours = getenv("BENCH_AGENT") ? getenv("BENCH_AGENT") : "build/rel/bin/galactic-agent";
	const char *ref = getenv("BENCH_AGENT_REF");
	int rounds = getenv("BENCH_ROUNDS") ? atoi(getenv("BENCH_ROUNDS")) : 2;
	int secs = getenv("BENCH_SECONDS") ? atoi(getenv("BENCH_SECONDS")) : 15;
	double oc[16], rc[16], ow[16], rw[16], oh[16], rh[16];
	int n = 0;

	if (rounds < 1 || rounds > 16)
		rounds = 2;
	if (!bench_need_root(b, "network namespaces"))
		return bench_end(b);
	if (topo_up(&T, 1) || topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1") < 0 ||
	    topo_write_state(&T, 1, r)) {
		bench_error(b, "topology setup failed");
		topo_down(&T);
		return bench_end(b);
	}
	printf("bench_verify: %u remotes, %d s per agent life, %s%s\n", r, secs, ours, ref ? " vs the reference" : "");
	in_process(b, r);
	for (int i = 0; i < rounds && !bench_failed(b); i++) {
		struct run o, f;

		if (one_run(b, ours, secs, &o))
			break;
		if (ref && one_run(b, ref, secs, &f))
			break;
		oc[n] = o.cpu_per_tick, ow[n] = o.wall_per_tick, oh[n] = o.hwm;
		if (ref)
			rc[n] = f.cpu_per_tick, rw[n] = f.wall_per_tick, rh[n] = f.hwm;
		n++;
	}
	if (n && ref) {
		bench_target(b, "verify tick CPU", "ms", &(struct bench_side){ "ours: CPU per tick", oc, (size_t)n },
			     &(struct bench_side){ "reference agent: CPU per tick", rc, (size_t)n }, 1.1);
		bench_fact(b, "verify tick wall, reference", "ms", "median of the ticks' galactic_agent_last_pass_seconds", rw,
			   (size_t)n);
		bench_fact(b, "agent VmHWM, reference", "MiB", "after the window", rh, (size_t)n);
	}
	if (n) {
		bench_fact(b, "verify tick CPU", "ms", "agent utime+stime over the window / ticks in it", oc, (size_t)n);
		bench_fact(b, "verify tick wall", "ms", "median of the ticks' galactic_agent_last_pass_seconds", ow, (size_t)n);
		bench_fact(b, "agent VmHWM", "MiB", "after the window", oh, (size_t)n);
	}
	topo_down(&T);
	return bench_end(b);
}
