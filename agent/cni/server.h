/*
 * The agent side of galactic-cni: a unix-socket server that turns CNI
 * requests into kernel changes.
 *
 * Per request (one thread each, capped): the pod side (veth pair with the
 * guest end created directly inside the container's namespace, addresses,
 * routes, gateway neighbour, MTU) is done in parallel with other requests;
 * the node side (VPC table, rules, pod routes and neighbours, decap SIDs)
 * goes through the data-plane backend on the whole desired state. Changes
 * are group-committed: one committer thread writes the durable record and
 * runs one backend apply for every batch of waiting requests, so 200
 * concurrent ADDs cost a handful of applies, not 200.
 *
 * Serialized: allocation of VPC and attachment arguments, the record, the
 * backend apply. Parallel: everything inside pod namespaces and veth setup.
 * Requests for the same attachment key wait for each other.
 */
#ifndef GALACTIC_CNI_SERVER_H
#define GALACTIC_CNI_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/dp/backend.h"
#include "agent/dp/model.h"

struct gcni_server;

struct gcni_server_opts {
	const char *socket_path;      /* NULL: /run/galactic/cni.sock */
	const char *state_dir;        /* durable record: <dir>/cni-attachments.json; the
				       * agent's own record (agent/state.h) there is read to
				       * reuse its VPC numbers and avoid its arguments */
	const char *netns;            /* the node's namespace (NULL: ours), as the backend's */
	struct gdp_node node;         /* uplink (default MTU); zero: from the agent's record */
	struct gdp_backend *backend;  /* opened by the daemon; used when apply is NULL */
	/*
	 * Optional: the daemon applies the node's desired state itself (to add
	 * the remote routes it learned). local holds node, VPCs and attachments
	 * of this server; the callback must apply them plus its own remotes and
	 * fill res. Called from the committer thread only.
	 */
	int (*apply)(void *ctx, const struct gdp_state *local, struct gdp_results *res);
	void *apply_ctx;
	uint32_t table_min;           /* 0: GDP_TABLE_MIN_DEFAULT; VPC table = min + arg */
	int default_mtu;              /* pod MTU when the config has none; 0: uplink MTU - 40 */
	unsigned max_conns;           /* concurrent requests; 0: 512 */
	unsigned max_setups;          /* pod-side setups at once; 0: 4 x CPUs */
};

/* Loads the record, applies it (adopting what is in the kernel) and listens. */
int gcni_server_start(struct gcni_server **out, const struct gcni_server_opts *opts,
		      char *err, size_t errlen);
/* Stops accepting, waits for running requests, closes. Kernel state stays. */
void gcni_server_stop(struct gcni_server *s);

/* Remote prefixes of hosted VPCs (used when opts.apply is NULL). Copies. */
int gcni_server_set_remotes(struct gcni_server *s, const struct gdp_remote *v, size_t n);
/* A copy of the local desired state (node, VPCs, committed attachments). */
int gcni_server_snapshot(struct gcni_server *s, struct gdp_state *out);
/* Number of commits (backend applies) so far: for tests and metrics. */
unsigned long gcni_server_commits(struct gcni_server *s);

/* Deterministic host interface name "gc" + 13 hex digits of the ids' hash. */
void gcni_host_ifname(const char *vpc, const char *att, char out[16]);

#endif
