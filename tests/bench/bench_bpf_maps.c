/*
 * 100,000 remote prefixes into the bpf routes trie through the agent's path
 * (model -> validation -> sort/dedupe -> diff against the map -> per-SID
 * next hop -> batch update, with one result per remote), exactly as the bpf
 * backend's apply runs it (gdp_bpf_sync_routes: inside the node's netns,
 * with the next-hop resolver apply passes), against a raw
 * bpf_map_update_batch of the same entries (the very keys and values the
 * agent wrote, next hops included) into an identical map, in the same run.
 * The node netns has a route to the remote block and a permanent neighbour,
 * so every one of the 1,000 SIDs resolves (checked). Rounds alternate raw,
 * agent; compared in CPU time (one thread, no sleeps; wall time on shared
 * cores mostly measures who else ran); target: median per-round ratio
 * <= 1.1x. Facts for the breakdown: the same sync without the resolver, the
 * remotes sorted by SID, the 1,000 resolutions alone; also an idempotent
 * re-apply and the whole backend apply.
 *   bench_bpf_maps [N]   (default 100000; needs root for bpf)
 *   bench_bpf_maps --profile K [N [sync|raw]]   K syncs alone, then K raw
 *       batches alone (or only one side's K), user/system CPU of each (for
 *       perf record / callgrind on one side); no result file
 * Results in build/bench-results/bench_bpf_maps.json.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/bpf/bpf_backend.h"
#include "agent/dp/bpf/bpf_dp.h"
#include "agent/dp/bpf/bpf_sync.h"
#include "tests/bench/bench.h"

#define ROUNDS 5

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time of this process (user + system): what the work costs, whoever else runs. */
static double cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* n remotes over 4 VPCs and 250 remote nodes: IPv6 /64s and IPv4 /32s. */
static void build(struct gdp_state *s, size_t n)
{
	gdp_state_init(s);
	memcpy(s->node.block, (uint8_t[]){ 0xfc, 0, 0, 0, 0, 0 }, 6);
	s->node.node_id = 1;
	for (int v = 0; v < 4; v++) {
		struct gdp_vpc vpc = { .arg = (uint16_t)(v + 1), .table = (uint32_t)(0x4001 + v) };

		snprintf(vpc.id, sizeof(vpc.id), "vpc%d", v);
		if (gdp_state_add_vpc(s, &vpc))
			abort();
	}
	for (size_t i = 0; i < n; i++) {
		struct gdp_remote r = { 0 };
		struct gdp_node far = { .block = { 0xfc, 0, 0, 0, 0, 0 },
					.node_id = (uint16_t)(2 + (i % 250)) };
		uint32_t x = (uint32_t)(i / 4);
		char vpc[16];

		snprintf(vpc, sizeof(vpc), "vpc%zu", i % 4);
		if (gdp_remote_set_vpc(&r, vpc))
			abort();
		if (i % 8 < 6) {
			r.prefix.family = AF_INET6;
			r.prefix.len = 64;
			r.prefix.addr.raw[0] = 0xfd;
			r.prefix.addr.raw[4] = (uint8_t)(x >> 24);
			r.prefix.addr.raw[5] = (uint8_t)(x >> 16);
			r.prefix.addr.raw[6] = (uint8_t)(x >> 8);
			r.prefix.addr.raw[7] = (uint8_t)x;
		} else {
			r.prefix.family = AF_INET;
			r.prefix.len = 32;
			r.prefix.addr.v4.s_addr = htonl(0x0a000000u | x);
		}
		gdp_sid(&far, GDP_FN_DECAP, (uint16_t)(1 + i % 4), &r.sid);
		if (gdp_state_add_remote(s, &r))
			abort();
	}
}

static int cmp_sid(const void *a, const void *b)
{
	return memcmp(((const struct gdp_remote *)a)->sid.s6_addr, ((const struct gdp_remote *)b)->sid.s6_addr, 16);
}

static char ns[64];

/* The node netns: uplink up0, a route to the remote block via a permanent neighbour. */
static int netns_up(void)
{
	char cmd[1024];

	snprintf(ns, sizeof(ns), "gbb%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "ip netns add %s && ip -n %s link set lo up && ip -n %s link add up0 type veth peer name fab0 && "
		 "ip -n %s link set up0 up && ip -n %s link set fab0 up && "
		 "ip -n %s -6 addr add 2001:db8:f::1/64 dev up0 nodad && "
		 "ip -n %s -6 neigh add 2001:db8:f::2 lladdr 02:00:00:00:0f:02 dev up0 nud permanent && "
		 "ip -n %s -6 route add fc00::/32 via 2001:db8:f::2 dev up0",
		 ns, ns, ns, ns, ns, ns, ns, ns);
	return system(cmd) ? -1 : 0;
}

static void netns_down(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns);
	if (system(cmd))
		fprintf(stderr, "bench_bpf_maps: ip netns del %s failed\n", ns);
}

/* A bpf backend on the node netns with its own pins; node and VPC entries in place. */
static int backend_open(struct gdp_backend **b, const struct gdp_state *s, char *pins, size_t plen,
			int round, char *err, size_t errlen)
{
	struct gdp_backend_opts o = { 0 };
	struct gbpf_sync_stats vst = { 0 };
	int e;

	snprintf(pins, plen, "/sys/fs/bpf/galactic-bench-%d-%d", (int)getpid(), round);
	o.netns = ns;
	o.bpffs_dir = pins;
	if ((e = gdp_bpf_backend.open(b, &o, err, errlen)))
		return e;
	if ((e = gbpf_sync_node(gdp_bpf_handle(*b), s, NULL)) ||
	    (e = gbpf_sync_vpcs(gdp_bpf_handle(*b), s, NULL, &vst)))
		snprintf(err, errlen, "node/vpc entries: %s", strerror(-e));
	return e;
}

static void backend_close(struct gdp_backend *b, const char *pins)
{
	char err[512];

	if (b)
		b->ops->close(b);
	gbpf_unpin_all(pins, err, sizeof(err));
}

/*
 * The whole bpf backend apply on the node netns (kernel plumbing for the 4
 * VPCs, maps, link sweep, next-hop precompute): first apply and a re-apply.
 */
static int backend_apply(const struct gdp_state *s, double *first, double *again, double *obs,
			 char *err, size_t errlen)
{
	struct gdp_backend *b = NULL;
	struct gdp_results res;
	char pins[128];
	double t;
	int rc;

	if ((rc = backend_open(&b, s, pins, sizeof(pins), 99, err, errlen)))
		goto out;
	gdp_results_init(&res);
	t = now();
	rc = b->ops->apply(b, s, &res);
	*first = now() - t;
	gdp_results_reset(&res);
	t = now();
	rc = rc ? rc : b->ops->apply(b, s, &res);
	*again = now() - t;
	gdp_results_reset(&res);
	t = now();
	if (!rc && b->ops->observe(b, s, &res)) {
		snprintf(err, errlen, "backend observe: out of sync after apply");
		rc = -1;
	} else if (rc) {
		snprintf(err, errlen, "backend apply: %s", strerror(-rc));
	}
	*obs = now() - t;
	gdp_results_free(&res);
out:
	backend_close(b, pins);
	return rc;
}

/*
 * CPU time of resolving each distinct SID once with gbpf_resolve (what the
 * backend's resolver does per new SID), inside the node netns; -1 on failure.
 */
static double resolve_all(struct gdp_backend *be, const struct gdp_state *s)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), nsfd;
	char path[128];
	uint8_t src[16];
	double c, t = -1;
	int bad = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || nsfd < 0 || setns(nsfd, CLONE_NEWNET))
		goto out;
	gbpf_node_src(&s->node, src);
	c = cpu();
	for (uint16_t node = 2; node < 252; node++)
		for (uint16_t arg = 1; arg <= 4; arg++) {
			struct gdp_node far = { .block = { 0xfc, 0, 0, 0, 0, 0 }, .node_id = node };
			struct gbpf_route r = { 0 };
			struct in6_addr sid;

			gdp_sid(&far, GDP_FN_DECAP, arg, &sid);
			bad += gbpf_resolve(gdp_bpf_handle(be), src, sid.s6_addr, &r) != 0;
		}
	t = bad ? -1 : cpu() - c;
	if (setns(self, CLONE_NEWNET))
		abort();
out:
	if (self >= 0)
		close(self);
	if (nsfd >= 0)
		close(nsfd);
	return t;
}

/* Every entry of the routes map: the raw side writes exactly these. */
static size_t read_map(int fd, struct gbpf_route_key *k, struct gbpf_route *v, size_t cap, size_t *with_l2)
{
	struct gbpf_route_key cur, *prev = NULL;
	size_t n = 0;

	*with_l2 = 0;
	while (n < cap && !bpf_map_get_next_key(fd, prev, &cur)) {
		k[n] = cur;
		if (bpf_map_lookup_elem(fd, &k[n], &v[n]))
			break;
		*with_l2 += (v[n].flags & GBPF_RT_L2) != 0;
		prev = &k[n++];
	}
	return n;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/*
 * One side alone, k times (no other work between): the agent's sync into
 * fresh pins, then the raw batch of what it wrote into a fresh map. Prints
 * user/system CPU per call; for profiling one side without the other.
 */
static int profile(size_t n, int k, const char *only)
{
	struct gbpf_route_key *rk = calloc(n + 1, sizeof(*rk));
	struct gbpf_route *rv = calloc(n + 1, sizeof(*rv));
	struct gdp_state s;
	char err[512], pins[128];
	size_t got = 0, l2 = 0;
	int rc = 1;

	if (!rk || !rv)
		goto out;
	build(&s, n);
	if (netns_up())
		goto down;
	for (int i = 0; i < (only && !strcmp(only, "raw") ? 1 : k); i++) {
		struct gbpf_sync_stats st = { 0 };
		struct gdp_backend *be = NULL;
		struct gdp_results res;
		struct rusage a, z;
		int e;

		if (backend_open(&be, &s, pins, sizeof(pins), 200 + i, err, sizeof(err))) {
			fprintf(stderr, "bpf backend: %s\n", err);
			backend_close(be, pins);
			goto down;
		}
		gdp_results_init(&res);
		getrusage(RUSAGE_SELF, &a);
		e = gdp_bpf_sync_routes(be, &s, &res, &st);
		getrusage(RUSAGE_SELF, &z);
		printf("sync %d: user %.1f ms, system %.1f ms, added %lu failed %lu, %zu results (+%zu counted)\n", i,
		       (tv(z.ru_utime) - tv(a.ru_utime)) * 1e3, (tv(z.ru_stime) - tv(a.ru_stime)) * 1e3, st.added,
		       st.failed, res.n, res.remotes_ok);
		if (!i)
			got = read_map(gbpf_map_fd(gdp_bpf_handle(be), GBPF_MAP_ROUTES), rk, rv, n + 1, &l2);
		gdp_results_free(&res);
		backend_close(be, pins);
		if (e)
			goto down;
	}
	for (int i = 0; i < (only && !strcmp(only, "sync") ? 0 : k); i++) {
		LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
		LIBBPF_OPTS(bpf_map_batch_opts, bo);
		__u32 count = (__u32)got;
		struct rusage a, z;
		int fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "bench_raw", sizeof(*rk), sizeof(*rv),
					GBPF_MAX_ROUTES, &mo);

		if (fd < 0)
			goto down;
		getrusage(RUSAGE_SELF, &a);
		bpf_map_update_batch(fd, rk, rv, &count, &bo);
		getrusage(RUSAGE_SELF, &z);
		printf("raw %d: user %.1f ms, system %.1f ms, %u entries (%zu with L2)\n", i,
		       (tv(z.ru_utime) - tv(a.ru_utime)) * 1e3, (tv(z.ru_stime) - tv(a.ru_stime)) * 1e3, count, l2);
		close(fd);
	}
	rc = 0;
down:
	netns_down();
	gdp_state_free(&s);
out:
	free(rk);
	free(rv);
	return rc;
}

int main(int argc, char **argv)
{
	size_t n, got, l2;
	double raw[ROUNDS], agent[ROUNDS], again[ROUNDS], cpu_raw[ROUNDS], cpu_agent[ROUNDS], t, c;
	double nol2[ROUNDS], cpu_grouped[ROUNDS], resolve_s[ROUNDS];
	struct gdp_state grouped;
	double bfirst = 0, bagain = 0, bobs = 0;
	struct gbpf_route_key *k;
	struct gbpf_route *v;
	struct gdp_state s;
	char err[512], pins[128];
	struct bench *b;
	int e;

	if (argc > 2 && !strcmp(argv[1], "--profile"))
		return profile(argc > 3 ? strtoul(argv[3], NULL, 10) : 100000, atoi(argv[2]),
			       argc > 4 ? argv[4] : NULL);
	n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	k = calloc(n + 1, sizeof(*k));
	v = calloc(n + 1, sizeof(*v));
	b = bench_begin("bench_bpf_maps");

	if (!bench_need_root(b, "bpf maps and a network namespace")) {
		free(k);
		free(v);
		return bench_end(b);
	}
	if (!k || !v || n < 1) {
		bench_error(b, "bad N or out of memory");
		free(k);
		free(v);
		return bench_end(b);
	}
	build(&s, n);
	build(&grouped, n);
	qsort(grouped.remotes, grouped.n_remotes, sizeof(*grouped.remotes), cmp_sid);
	if (netns_up()) {
		bench_error(b, "cannot build the node namespace %s", ns);
		netns_down();
		free(k);
		free(v);
		return bench_end(b);
	}
	/* Round 0 (not counted) is the agent's: its map gives the raw side's entries. */
	for (int round = 0; round <= ROUNDS; round++) {
		LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
		LIBBPF_OPTS(bpf_map_batch_opts, bo);
		struct gbpf_sync_stats st = { 0 };
		struct gdp_backend *be = NULL;
		struct gdp_results res;
		__u32 count = (__u32)n;
		int fd;

		if (round) { /* Reference: the same entries, prepared, one batch call, same map shape. */
			fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "bench_raw", sizeof(*k), sizeof(*v),
					    GBPF_MAX_ROUTES, &mo);
			if (fd < 0) {
				bench_error(b, "create raw map: %s", strerror(errno));
				break;
			}
			t = now();
			c = cpu();
			e = bpf_map_update_batch(fd, k, v, &count, &bo);
			raw[round - 1] = now() - t;
			cpu_raw[round - 1] = cpu() - c;
			close(fd);
			if (e || count != n) {
				bench_error(b, "raw batch: %s (%u of %zu)", strerror(errno), count, n);
				break;
			}
		}
		if ((e = backend_open(&be, &s, pins, sizeof(pins), round, err, sizeof(err)))) {
			bench_error(b, "bpf backend: %s", err);
			backend_close(be, pins);
			break;
		}
		gdp_results_init(&res);
		t = now();
		c = cpu();
		e = gdp_bpf_sync_routes(be, &s, &res, &st);
		t = now() - t;
		c = cpu() - c;
		if (e || st.added != n || st.failed) {
			bench_error(b, "agent route sync: %s, added %lu failed %lu", strerror(-e), st.added,
				    st.failed);
			gdp_results_free(&res);
			backend_close(be, pins);
			break;
		}
		if (round) {
			agent[round - 1] = t;
			cpu_agent[round - 1] = c;
		}
		if (round && (resolve_s[round - 1] = resolve_all(be, &s)) < 0) {
			bench_error(b, "resolving the 1,000 SIDs directly failed");
			gdp_results_free(&res);
			backend_close(be, pins);
			break;
		}
		got = read_map(gbpf_map_fd(gdp_bpf_handle(be), GBPF_MAP_ROUTES), k, v, n + 1, &l2);
		if (!bench_check(b, got == n && l2 == n,
				 "round %d: %zu entries in the routes map, %zu with a resolved next hop (want %zu)",
				 round, got, l2, n)) {
			gdp_results_free(&res);
			backend_close(be, pins);
			break;
		}
		/* Level-triggered re-apply of the same state: reads, compares, writes nothing. */
		memset(&st, 0, sizeof(st));
		gdp_results_reset(&res);
		t = now();
		e = gdp_bpf_sync_routes(be, &s, &res, &st);
		if (round)
			again[round - 1] = now() - t;
		gdp_results_free(&res);
		backend_close(be, pins);
		if (e || st.added || st.unchanged != n) {
			bench_error(b, "re-apply: %s, added %lu unchanged %lu", strerror(-e), st.added,
				    st.unchanged);
			break;
		}
		/* The same sync without next hops (what this bench used to time): the resolver's share. */
		if (round) {
			struct gdp_backend *bn = NULL;

			if ((e = backend_open(&bn, &s, pins, sizeof(pins), 50 + round, err, sizeof(err)))) {
				bench_error(b, "bpf backend: %s", err);
				backend_close(bn, pins);
				break;
			}
			memset(&st, 0, sizeof(st));
			gdp_results_init(&res);
			c = cpu();
			e = gbpf_sync_routes(gdp_bpf_handle(bn), &s, NULL, NULL, &res, &st);
			nol2[round - 1] = cpu() - c;
			gdp_results_free(&res);
			backend_close(bn, pins);
			if (e || st.added != n) {
				bench_error(b, "route sync without next hops: %s", strerror(-e));
				break;
			}
		}
		/* The same remotes grouped by SID (as a learner adding node by node would give them). */
		if (round) {
			struct gdp_backend *bg = NULL;

			if ((e = backend_open(&bg, &grouped, pins, sizeof(pins), 70 + round, err, sizeof(err)))) {
				bench_error(b, "bpf backend: %s", err);
				backend_close(bg, pins);
				break;
			}
			memset(&st, 0, sizeof(st));
			gdp_results_init(&res);
			c = cpu();
			e = gdp_bpf_sync_routes(bg, &grouped, &res, &st);
			cpu_grouped[round - 1] = cpu() - c;
			gdp_results_free(&res);
			backend_close(bg, pins);
			if (e || st.added != n) {
				bench_error(b, "route sync of the grouped remotes: %s", strerror(-e));
				break;
			}
		}
		if (round)
			printf("round %d: CPU ms: raw batch %.1f, agent route sync %.1f (%.2fx; without next "
			       "hops %.1f; grouped by SID %.1f; 1,000 resolves alone %.1f) | wall ms: raw %.1f, agent %.1f; re-apply %.1f\n",
			       round, cpu_raw[round - 1] * 1e3, cpu_agent[round - 1] * 1e3,
			       cpu_agent[round - 1] / cpu_raw[round - 1], nol2[round - 1] * 1e3, cpu_grouped[round - 1] * 1e3,
			       resolve_s[round - 1] * 1e3,
			       raw[round - 1] * 1e3, agent[round - 1] * 1e3, again[round - 1] * 1e3);
	}
	if (backend_apply(&s, &bfirst, &bagain, &bobs, err, sizeof(err)))
		bench_error(b, "%s", err);
	netns_down();
	{
		char wa[200], wr[200];
		struct bench_side sa, sr;

		snprintf(wa, sizeof(wa), "agent route sync of %zu remotes with the backend's next-hop resolver "
			 "(1,000 SIDs), CPU time of the process (user+system) over the call", n);
		snprintf(wr, sizeof(wr), "bpf_map_update_batch of the same %zu keys and values, CPU time of the "
			 "process over the call", n);
		sa = (struct bench_side){ wa, cpu_agent, ROUNDS };
		sr = (struct bench_side){ wr, cpu_raw, ROUNDS };
		if (!bench_failed(b)) {
			/* CPU, not wall: both spans are one thread's work and syscalls, and on
			 * shared cores wall time mostly measures who else ran meanwhile. */
			bench_target(b, "route sync / raw batch update (CPU)", "s", &sa, &sr, 1.1);
			bench_fact(b, "route sync, wall", "s", "agent route sync, wall time", agent, ROUNDS);
			bench_fact(b, "raw batch, wall", "s", "raw batch, wall time", raw, ROUNDS);
			bench_fact(b, "route sync without the next-hop resolver, CPU", "s",
				   "same sync, l2 = NULL (the program resolves per packet): the resolver's share",
				   nol2, ROUNDS);
			bench_fact(b, "route sync with the resolver, remotes grouped by SID, CPU", "s",
				   "same remotes sorted by SID: the resolver cache's last-SID shortcut hits",
				   cpu_grouped, ROUNDS);
			bench_fact(b, "1,000 next-hop resolutions alone, CPU", "s",
				   "gbpf_resolve once per distinct SID in the node netns (BPF_PROG_TEST_RUN each)",
				   resolve_s, ROUNDS);
			bench_fact(b, "idempotent re-apply (no change), wall", "s",
				   "agent route sync, same state again", again, ROUNDS);
			bench_fact(b, "whole bpf backend apply, wall", "s",
				   "kernel plumbing + maps + filters, first apply", &bfirst, 1);
			bench_fact(b, "whole bpf backend re-apply, wall", "s", "same state again", &bagain, 1);
			bench_fact(b, "whole bpf backend observe, wall", "s", "after apply", &bobs, 1);
		}
	}
	gdp_state_free(&s);
	gdp_state_free(&grouped);
	free(k);
	free(v);
	return bench_end(b);
}
