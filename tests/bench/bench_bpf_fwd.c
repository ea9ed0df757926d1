/*
 * Forwarding throughput, bpf backend against kernel backend, on the traffic
 * suite's topology (iperf3 TCP between pods on two nodes, same run, runs
 * alternate K B K B ...). No target (the issue sets none): the ratio is a
 * fact in build/bench-results/bench_bpf_fwd.json; a run that cannot measure
 * (not root, bpf unavailable, no iperf3, a failed run) fails.
 *   bench_bpf_fwd [seconds per run, default 3] [pairs, default 3]
 */
#define GBT_BENCH 1
/* The suite's tests and fixtures are unused here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "tests/netns/test_bpf_traffic.c"

#include "tests/bench/bench.h"

/* Pod-to-pod TCP throughput across nodes (a1 -> a2), Gbit/s; -1 on failure. */
static double iperf(int secs)
{
	char cmd[512];
	double bps = -1;
	FILE *f;

	if (sh("ip netns exec %s-a2 iperf3 -s -1 -D -I /tmp/%s-iperf.pid", pfx, pfx))
		return -1;
	usleep(300 * 1000);
	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s-a1 iperf3 -c fd00:a::2 -t %d -J | jq .end.sum_received.bits_per_second",
		 pfx, secs);
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%lf", &bps) != 1)
			bps = -1;
		pclose(f);
	}
	return bps < 0 ? -1 : bps / 1e9;
}

#define MAX_PAIRS 10

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 3, pairs = argc > 2 ? atoi(argv[2]) : 3;
	double k[MAX_PAIRS], b[MAX_PAIRS], q[MAX_PAIRS];
	struct bench *bn = bench_begin("bench_bpf_fwd");
	char why[512];

	run_id = (int)getpid();
	if (secs < 1 || pairs < 1 || pairs > MAX_PAIRS) {
		bench_error(bn, "usage: bench_bpf_fwd [seconds 1..] [pairs 1..%d]", MAX_PAIRS);
		return bench_end(bn);
	}
	if (!bench_need_root(bn, "network namespaces, bpf"))
		return bench_end(bn);
	if (gbpf_preflight(NULL, why, sizeof(why))) {
		bench_error(bn, "bpf unavailable: %s", why);
		return bench_end(bn);
	}
	if (sh("command -v iperf3 >/dev/null && command -v jq >/dev/null")) {
		bench_error(bn, "iperf3 and jq are needed (make deps)");
		return bench_end(bn);
	}
	for (int r = 0; r < pairs; r++) {
		topo_up(false);
		k[r] = iperf(secs);
		topo_down();
		topo_up(true);
		b[r] = iperf(secs);
		topo_down();
		if (k[r] <= 0 || b[r] <= 0) {
			bench_error(bn, "iperf3 run %d failed (kernel %.2f, bpf %.2f Gbit/s)", r + 1, k[r], b[r]);
			return bench_end(bn);
		}
		q[r] = b[r] / k[r];
		printf("pair %d: kernel backend %.2f Gbit/s, bpf backend %.2f Gbit/s (%.2fx)\n", r + 1, k[r], b[r],
		       q[r]);
	}
	bench_fact(bn, "kernel backend (seg6 routes)", "Gbit/s", "iperf3 TCP pod -> pod across nodes", k,
		   (size_t)pairs);
	bench_fact(bn, "bpf backend (tc programs)", "Gbit/s", "same, bpf backend", b, (size_t)pairs);
	bench_fact(bn, "throughput ratio bpf / kernel", "x", "per pair (higher is better for bpf)", q,
		   (size_t)pairs);
	return bench_end(bn);
}
