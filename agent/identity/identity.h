/*
 * The agent's identity thread (docs/identity.md): watches this node's
 * NodeDataplane and the NodeIDs it holds, keeps exactly one hold
 * (gid_acquire), hands every identity the API decides to the agent through
 * on_identity (the agent writes it into its record and applies), and
 * server-side applies the NodeDataplane status under galactic-agent/<node>.
 *
 * Never blocks the data plane: the agent starts from its record; this thread
 * only ever proposes an identity. With the API away it retries with backoff
 * and the node keeps what its record says.
 */
#ifndef GALACTIC_AGENT_IDENTITY_IDENTITY_H
#define GALACTIC_AGENT_IDENTITY_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/identity/alloc.h"

struct gid_daemon;

struct metrics;
struct gid_daemon_opts {
	const char *kubeconfig;        /* NULL: kube_config_load */
	struct metrics *metrics;       /* the API client's galactic_kube_* counters; NULL: none */
	const char *node;              /* required */
	const char *datapath;          /* "kernel" | "bpf" */
	const char *version;
	const char *const *caps;       /* copied */
	size_t n_caps;
	/* The identity of the node's record at start (0: none): kept when the
	 * API agrees, preferred when a new hold must be made. */
	uint16_t record_id;
	uint8_t record_block[6];
	/*
	 * Called on the identity thread when the API decided an identity that
	 * differs from the last one handed over (or from the record's): block,
	 * node ID, uplinks in r->spec. Must not block for long.
	 */
	void (*on_identity)(void *ud, const struct gid_result *r);
	void *ud;
	double resync_s;               /* full re-check period; 0: 60 */
	double max_backoff_s;          /* 0: 10 */
};

int gid_daemon_start(struct gid_daemon **out, const struct gid_daemon_opts *o, char *err, size_t errlen);

/*
 * After each datapath pass (any thread, never blocks): the identity the data
 * plane runs with (0: none) and whether the pass verified the datapath. The
 * status is rewritten when this changes what it says.
 */
void gid_daemon_datapath(struct gid_daemon *d, uint16_t node_id, const uint8_t block[6], bool verified,
			 const char *reason, const char *message);

/*
 * Drift this process repaired so far, by kind (agent/health/drift.h): n
 * pairs of a kind name and its count, shown in status.driftRepaired (kinds
 * with a zero count left out). Any thread, never blocks; the status is
 * rewritten when a count changes (only when something was repaired).
 */
#define GID_DRIFT_KINDS 16
void gid_daemon_drift(struct gid_daemon *d, const char *const *kinds, const unsigned long *counts, size_t n);

/* Counters, for tests and metrics. */
struct gid_daemon_stats {
	unsigned long acquires, api_errors, status_writes, identities;
	bool decided;                  /* the API has answered at least once */
	bool assigned;
	char reason[64], message[512];
};
void gid_daemon_stats(struct gid_daemon *d, struct gid_daemon_stats *out);

/* Stops its informers and writer thread (no callback after it returns);
 * the gid_daemon_* setters stay safe to call until gid_daemon_stop. */
void gid_daemon_quiesce(struct gid_daemon *d);
void gid_daemon_stop(struct gid_daemon *d);

#endif
