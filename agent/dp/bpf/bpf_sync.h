/*
 * Desired state (model.h) -> the bpf maps. Level-triggered: each call reads
 * what the maps hold, removes what desired no longer has, writes only what
 * differs, and reports one result per model object. Interfaces and TC
 * attachment need the node's netns and live in bpf_backend.c.
 */
#ifndef GALACTIC_DP_BPF_BPF_SYNC_H
#define GALACTIC_DP_BPF_BPF_SYNC_H

#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_dp.h"
#include "agent/dp/model.h"

struct gbpf_sync_stats {
	unsigned long added, removed, unchanged, failed;
};

/*
 * gdp_prefix_str's exact output ("addr/len"), without inet_ntop's cost for
 * the common case; buf >= 64. Used for 100k result keys.
 */
char *gbpf_prefix_str(const struct gdp_prefix *p, char *buf, size_t len);

/*
 * Appends the result of one remote (key = its prefix) without searching the
 * existing results: the caller knows it is not there yet. NULL on ENOMEM.
 */
struct gdp_result *gbpf_result_remote(struct gdp_results *res, const struct gdp_remote *rm);

/* Outer source of encapsulated packets: the node's locator address block:node::. */
void gbpf_node_src(const struct gdp_node *n, uint8_t out[16]);

/* Node config (block, node id, source). res may be NULL. */
int gbpf_sync_node(struct gbpf *g, const struct gdp_state *d, struct gdp_results *res);
/* VPC argument -> table entries; clears arguments desired no longer has. */
int gbpf_sync_vpcs(struct gbpf *g, const struct gdp_state *d, struct gdp_results *res,
		   struct gbpf_sync_stats *st);
/*
 * The routes trie: every remote prefix toward its SID, plus each local pod
 * address marked local (so a broader remote prefix never captures a pod of
 * this node). l2 (may be NULL) gives the precomputed next hop of a SID
 * (NULL: the program looks it up). Duplicate remotes (same VPC and prefix)
 * fail all but the first.
 */
typedef const struct gbpf_route *(*gbpf_l2_fn)(void *ctx, const uint8_t sid[16]);
int gbpf_sync_routes(struct gbpf *g, const struct gdp_state *d, gbpf_l2_fn l2, void *l2ctx,
		     struct gdp_results *res, struct gbpf_sync_stats *st);

/*
 * The trie entries of the node's egress shard (d->egress, from the node
 * record): for each VPC with an attachment declaring egress, a default
 * (/0) per declared family (IPv4 only when the shard has an IPv4 address)
 * toward the VPC's shard SID, flagged GBPF_RT_SHARD. Writes at most cap
 * entries; returns how many are wanted (0: no shard or no VPC egresses).
 */
size_t gbpf_shard_routes(const struct gdp_state *d, struct gbpf_route_key *k, struct gbpf_route *v,
			 size_t cap);

/*
 * Only the entries of a delta (backend.h, struct gdp_delta): the added
 * attachments' pod addresses (local), the added or changed remotes (one
 * batch), deletes of what went. No walk of the trie. res holds the
 * attachments' results already (found by key); remote results are added.
 */
int gbpf_sync_routes_delta(struct gbpf *g, const struct gdp_state *d, const struct gdp_delta *dl,
			   gbpf_l2_fn l2, void *l2ctx, struct gdp_results *res, struct gbpf_sync_stats *st);

#endif
