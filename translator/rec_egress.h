/*
 * The egress binder's I/O side (docs/translator.md "Internet egress"): the
 * EgressShardClaim reconciler (key: the attachment's namespace/name, kind
 * EgressShardClaim), the EgressShard reconciler (releases the shard's
 * finalizer when its last bound claim goes) and the attachment's
 * InternetEgressReady condition, which rec_attachment adds to its one
 * server-side apply. Decisions are in egress.h (pure).
 *
 * Writes: the claim is created (controller-owned by the attachment) and
 * deleted (uid precondition) as a whole; its label and the shard's
 * finalizer by JSON Patch guarded by test operations (uid, and the exact
 * finalizer list or entry), so nobody else's labels or finalizers are
 * touched; the claim's status by server-side apply through rec_write
 * (resourceVersion precondition, schema-aware). Binding runs finalizer,
 * label, status in that order under one lock shared with the release, so
 * a claim never reads as bound while its shard is not held.
 */
#ifndef GALACTIC_TRANSLATOR_REC_EGRESS_H
#define GALACTIC_TRANSLATOR_REC_EGRESS_H

#include "common/kube_client.h"
#include "common/kube_store.h"
#include "common/metrics.h"
#include "translator/kinds.h"

#include <jansson.h>
#include <stdbool.h>

struct rec_ctx;
struct egress_ctx;

struct egress_opts {
	const char *shard_ns; /* namespace of the EgressShards (NULL: EGRESS_DEFAULT_SHARD_NS) */
	const char *watch_ns; /* namespace of the claims (NULL: all) */
	const char *instance; /* Event reportingInstance */
	bool (*may_write)(void *ud);
	void *ud;
};

/* kc and m are borrowed. */
struct egress_ctx *egress_ctx_new(struct kube_client *kc, struct metrics *m,
				  const struct egress_opts *o);
/* The caches (borrowed): NetworkContexts, EgressShardClaims, EgressShards. */
void egress_ctx_set_stores(struct egress_ctx *e, struct kube_store *nc, struct kube_store *esc,
			   struct kube_store *es);
const char *egress_ctx_shard_ns(const struct egress_ctx *e);
void egress_ctx_free(struct egress_ctx *e);

/* Index functions for the claim cache: "shard" (shard ns/name from shardRef and label), "node". */
void egress_claim_shard_index(const json_t *obj, struct kube_index_values *out, void *ud);
void egress_claim_node_index(const json_t *obj, struct kube_index_values *out, void *ud);

/* The claim of attachment k (kind TK_ESC). 0 done, 1 retry. */
int rec_egress(const struct rec_ctx *c, const struct qkey *k);
/* The shard k (kind TK_ES): releases our finalizer when no live claim holds it. */
int rec_shard(const struct rec_ctx *c, const struct qkey *k);
/* Appends att's InternetEgressReady (if any is intended) to intent.status.conditions. */
void rec_egress_att_condition(const struct rec_ctx *c, const json_t *att, json_t *intent,
			      const char *now);

#endif
