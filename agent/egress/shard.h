/*
 * The node's EgressShard, read and reported (docs/dataplane-egress.md).
 *
 * Pure functions (no I/O): reading an upstream EgressShard object as its
 * writers may leave it (fields may be '' = not assigned, or absent), picking
 * this node's shard (spec.targetRef.name = the node; several: the lowest
 * name, as the upstream binder picks), and building the status this node's
 * agent server-side applies (upstream's flat shape) from what its datapath
 * actually runs. Every input is outside input: fuzz_egress_shard.
 */
#ifndef GALACTIC_AGENT_EGRESS_SHARD_H
#define GALACTIC_AGENT_EGRESS_SHARD_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/model.h"

#define GES_GROUP        "network.datumapis.com"
#define GES_VERSION      "v1alpha1"
#define GES_API_VERSION  GES_GROUP "/" GES_VERSION
#define GES_NS_DEFAULT   "galactic-system"
#define GES_COND_PROGRAMMED "Programmed"
#define GES_COND_READY      "Ready"

struct kube_resource;
extern const struct kube_resource GES_EGRESSSHARDS;

/* What the spec asks this node to run. */
struct ges_spec {
	char name[254], ns[64];
	int64_t generation;
	bool deleting;                 /* metadata.deletionTimestamp set */
	bool has_sid, has_v6, has_v4;  /* assigned (non-empty) */
	struct in6_addr sid, addr6;
	struct in_addr addr4;
};

/*
 * Reads one EgressShard. Returns 1 when it targets node (out filled), 0 when
 * it targets another node (or is not an object naming one), -EINVAL with err
 * when it targets node but a field is malformed (out->name/ns/generation are
 * still filled, so the status can say why).
 */
int ges_parse(const json_t *obj, const char *node, struct ges_spec *out, char *err, size_t errlen);

/*
 * The shard of node among objs (an array of EgressShards): the lowest name
 * among those targeting node. 1 found (out, and *bad = -EINVAL with err when
 * it is malformed), 0 none.
 */
int ges_pick(const json_t *objs, const char *node, struct ges_spec *out, int *bad, char *err, size_t errlen);

/* The identity the node's datapath runs with, from a spec (have = SID and IPv6 address assigned). */
void ges_spec_egress(const struct ges_spec *s, const char *oif, struct gdp_egress *out);

/* What the last datapath pass did with the shard. */
struct ges_observed {
	bool passed;                   /* at least one pass since the shard was handed over */
	bool programmed;               /* the egress result read back as programmed */
	struct gdp_egress running;     /* the identity that pass programmed */
	char message[256];             /* the pass's error, when not programmed */
};

/*
 * The SSA body for /status: observedGeneration, shardSID, shardAddressIPv6/
 * IPv4 (only what is programmed), Programmed (AddressesProgrammed |
 * AddressUnassigned | ProgrammingFailed) and Ready (datapath attached), with
 * upstream-shaped condition items; lastTransitionTime kept from cur when the
 * status of a condition does not change. bad_err: the spec's parse error (or NULL).
 */
json_t *ges_status_intent(const struct ges_spec *s, const char *bad_err, const struct ges_observed *o,
			  const json_t *cur, const char *now);
/* cur's status already says what intent says (fields intent omits are absent in cur too). */
bool ges_status_equal(const json_t *cur, const json_t *intent);

#endif
