/*
 * The egress binder's decisions (docs/translator.md "Internet egress"), pure:
 * no I/O, no clock (the caller passes now). From a VPCAttachment, the
 * NetworkContext its spec.vpc.name names (same namespace), its
 * EgressShardClaim (same name and namespace) and the EgressShards of the
 * shard namespace:
 *   - what egress the attachment declares (egress_want),
 *   - the claim it should have (egress_claim_new, egress_claim_matches),
 *   - the shard it binds to and why it cannot (egress_pick_shard,
 *     egress_refusal),
 *   - the claim's status and the attachment's InternetEgressReady condition.
 * Upstream facts: ../shared/UPSTREAM.md §1, §2, §4, §5.
 */
#ifndef GALACTIC_TRANSLATOR_EGRESS_H
#define GALACTIC_TRANSLATOR_EGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define EGRESS_FINALIZER "cloud.datumapis.com/egress-shard-binding"
#define EGRESS_NODE_LABEL "network.datumapis.com/egress-node"
#define EGRESS_SHARD_LABEL "network.datumapis.com/egress-shard"
#define EGRESS_DEFAULT_SHARD_NS "galactic-system"
#define EGRESS_COND "InternetEgressReady"

/* Claim Ready reasons (upstream's names). */
#define ER_BOUND "Bound"
#define ER_NO_SHARD "NoShardOnNode"
#define ER_NOT_READY "ShardNotReady"
#define ER_MISMATCH "ShardMismatch"
#define ER_FAMILY "FamilyUnsupported"
#define ER_MISSING "ShardMissing"
#define ER_TERMINATING "ShardTerminating"

/* Attachment InternetEgressReady reasons (NetworkContextInternetEgressReason). */
#define EA_READY "Ready"
#define EA_NO_ADDRESS "AddressUnavailable"
#define EA_UNAVAILABLE "Unavailable"

enum egress_decl {
	ED_NONE,    /* no NetworkContext, no egress.internet, or mode != Enabled: no claim, no condition */
	ED_NO_NODE, /* declared, but status.node is not set yet: no claim, no condition */
	ED_BAD,     /* declared with families we cannot serve: no claim, condition False/Unavailable */
	ED_OK,      /* one claim for node with families */
};

struct egress_want {
	enum egress_decl decl;
	char node[254];
	char vpc[254];
	const char *families[2]; /* "IPv6", "IPv4" (static strings), in the declaration's order */
	size_t nfam;
	char why[256]; /* ED_BAD: the consumer-facing reason (names no node, shard or tenant) */
};

/* What att (with nc, the NetworkContext named by spec.vpc.name, or NULL) declares. */
void egress_want(const json_t *att, const json_t *nc, struct egress_want *out);

/*
 * The claim to create for att (decl ED_OK): name/namespace of att, a
 * controller ownerReference with att's uid, label egress-node=<node>, spec
 * attachment, vpc, nodeName, families. NULL when att lacks name/ns/uid.
 */
json_t *egress_claim_new(const json_t *att, const struct egress_want *w);

/* True when claim is att's (controller owner uid) with exactly w's spec; else why names the difference. */
bool egress_claim_matches(const json_t *claim, const json_t *att, const struct egress_want *w,
			  char *why, size_t whylen);

/* The shard (borrowed from shards, an array) whose spec.targetRef.name is node; lowest name wins. */
const json_t *egress_pick_shard(const json_t *shards, const char *node);

/*
 * Why an unbound claim with families cannot bind to shard (NULL: no shard
 * on the node): ER_* reason and msg (which may name node and shard), or NULL
 * when the shard is usable.
 */
const char *egress_refusal(const json_t *shard, const char *node, const char *const *families,
			   size_t nfam, char *msg, size_t msglen);

/* True when the shard carries our finalizer. */
bool egress_shard_held(const json_t *shard);

/* The claim's bound shard name (status.shardRef.name, when shardRef.namespace is shard_ns), or NULL. */
const char *egress_claim_shard(const json_t *claim, const char *shard_ns);

/*
 * The server-side-apply body for claim's /status: observedGeneration,
 * shardRef (when shard is not NULL) and condition Ready (status, reason,
 * msg; lastTransitionTime kept from the claim unless status changes).
 */
json_t *egress_claim_status(const json_t *claim, const char *shard_ns, const char *shard,
			    const char *status, const char *reason, const char *msg, const char *now);

/*
 * The InternetEgressReady condition att should show, or NULL (none intended:
 * the translator withdraws its own). claim: att's claim or NULL; shard: the
 * claim's bound shard or NULL. While the claim is not decided yet (absent,
 * being replaced, no Ready), what att shows is kept (copied), so nothing
 * flaps. The message names no node, no shard and no other tenant.
 */
json_t *egress_att_condition(const json_t *att, const struct egress_want *w, const json_t *claim,
			     const json_t *shard, const char *now);

#endif
