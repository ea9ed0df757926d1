/*
 * The agent's own health (docs/identity.md, "Health"): /metrics, /healthz,
 * /readyz on common/metrics' HTTP server, and the agent's galactic_agent_*
 * metrics. The agent's loops tell it what they saw; it decides nothing else.
 *
 *   /healthz  the apply loop is alive (a pass finished within the stall limit)
 *   /readyz   + the node has an identity (from the API or its record)
 *             + the backend is attached and the last pass verified the
 *               datapath (bpf: programs on the uplink and on every host veth,
 *               maps; kernel: routes, rules, neighbours read back)
 *
 * Everything here is thread-safe and never blocks on the API or the kernel.
 */
#ifndef GALACTIC_AGENT_HEALTH_HEALTH_H
#define GALACTIC_AGENT_HEALTH_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics;
struct ghealth;

struct ghealth_opts {
	const char *addr;        /* "127.0.0.1" | "0.0.0.0" */
	int port;                /* 0: pick a free one (ghealth_port) */
	const char *datapath;    /* "kernel" | "bpf" */
	const char *version;
	double stall_s;          /* /healthz fails when no pass finished for this long; 0: 300 */
};

/* Parses "HOST:PORT" ("[::1]:9090" too); 0 or -EINVAL. */
int ghealth_parse_addr(const char *s, char *host, size_t n, int *port);

int ghealth_start(struct ghealth **out, const struct ghealth_opts *o, char *err, size_t errlen);
int ghealth_port(const struct ghealth *h);
/* The registry, for other components' metrics (kube client, ...). */
struct metrics *ghealth_metrics(struct ghealth *h);

/* One apply (verify = false) or verify-only (verify = true) pass of the datapath. */
struct ghealth_pass {
	bool verify_only;
	bool verified;           /* every object read back right, nothing left over */
	size_t objects, programmed, failed;
	unsigned long added, removed; /* what the pass wrote */
	double seconds;
	const char *why;         /* when !verified: the first failure */
};
void ghealth_pass(struct ghealth *h, const struct ghealth_pass *p);
/* Drift repaired (read back as repaired, agent/health/drift.h): n more of kind ("filter", "map_entry", ...). */
void ghealth_drift_repaired(struct ghealth *h, const char *kind, unsigned long n);
/* The identity the data plane runs with (0: none) and, when none, why. */
void ghealth_identity(struct ghealth *h, uint16_t node_id, const char *why);

struct gdp_results;
/*
 * Whether a pass's (or a read-back's) results say the datapath is as desired:
 * every object programmed (verified present) without error. programmed gets
 * their count; why the first failure ("attachment vpcA/a1: host interface
 * gc0 not found"), empty when verified.
 */
bool ghealth_verdict(const struct gdp_results *res, size_t *programmed, char *why, size_t n);

/* Ready now, and why not (for logs and tests). */
bool ghealth_ready(struct ghealth *h, char *why, size_t n);

void ghealth_stop(struct ghealth *h);

#endif
