/*
 * Node ID allocation through the API server (docs/identity.md).
 *
 * gid_acquire() takes this node's NodeDataplane (as read from the API) and
 * makes sure the node holds exactly one NodeID in its block:
 *   1. list the NodeIDs this node holds (field selector spec.node=<node>);
 *   2. a pin (spec.nodeID) held by this node, or else the hold matching the
 *      node's record (prefer), or else the lowest, is kept;
 *   3. otherwise create one: the pin's name (a 409 from another node's hold
 *      is refused with reason PinnedIDTaken, never stolen), or else the
 *      preferred ID, then candidates from a hash of the node name upward,
 *      skipping the names already listed in the block (field selector
 *      spec.block=<block>); each 409 AlreadyExists means another node got
 *      there first: next candidate;
 *   4. once the kept or created hold is secured, the node's other holds
 *      (another block, an earlier pin, an earlier NodeDataplane) are deleted
 *      with a uid precondition.
 * Race-free because the only claim is a create of a name: the API server
 * (etcd) lets exactly one creator win.
 */
#ifndef GALACTIC_AGENT_IDENTITY_ALLOC_H
#define GALACTIC_AGENT_IDENTITY_ALLOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/identity/ident.h"

struct kube_client;

extern const struct kube_resource GID_NODEIDS;
extern const struct kube_resource GID_NODEDATAPLANES;

struct gid_result {
	bool assigned;             /* id/name/spec are valid */
	bool spec_ok;              /* spec parsed (uplinks, block) */
	struct gid_spec spec;
	uint16_t id;
	char name[GID_NAME_LEN + 1];
	char reason[64];           /* IdentityAssigned reason: Allocated, Reused, Pinned;
				      InvalidSpec, PinnedIDTaken, NodeIDsExhausted */
	char message[512];
	/* counters of this call */
	unsigned long creates;     /* create requests */
	unsigned long conflicts;   /* 409 AlreadyExists: another node held the candidate */
	unsigned long listed;      /* IDs of the block already held when listed (skipped) */
	unsigned long released;    /* own holds deleted */
};

/*
 * ndp: this node's NodeDataplane. prefer/prefer_block: the identity of the
 * node's record (0: none). Returns 0 when decided (out->assigned, or a
 * refusal with reason and message), -1 when an API call failed (message says
 * which; retry later, nothing half-done matters: a created hold is found
 * again by step 1).
 */
int gid_acquire(struct kube_client *kc, const char *node, const json_t *ndp, uint16_t prefer,
		const uint8_t *prefer_block, struct gid_result *out);

#endif
