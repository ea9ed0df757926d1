/*
 * Forwarding throughput, bpf backend against kernel backend, on the traffic
 * suite's topology (iperf3 between pods on two nodes, same run):
 *   bench_bpf_fwd [seconds per run, default 3; runs alternate K B K B]
 */
#define GBT_BENCH 1
/* The suite's tests and fixtures are unused here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "tests/netns/test_bpf_traffic.c"
