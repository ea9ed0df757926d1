/*
 * Node identity from the API (DESIGN §3.2, docs/identity.md): the pure
 * parts. Everything here is a function of its arguments (no I/O), unit-tested
 * in tests/unit/test_identity.c and fuzzed (tests/fuzz/fuzz_identity.c).
 *
 *   NodeDataplane (cluster, name = node)   spec by the operator: sidBlock
 *                                          (/48), nodeID (optional pin), uplinks
 *   NodeID (cluster, name = <block>-<id>)  one node's hold on one ID of one
 *                                          block: created by that node's agent,
 *                                          controlled by its NodeDataplane
 *
 * The NodeID's name is the lock: "<12 hex digits of the block>-<4 hex digits
 * of the ID>", so of two agents creating the same name one gets 201 and the
 * other 409 AlreadyExists. What must be unique cluster-wide is the node's
 * locator (block + ID); IDs are therefore allocated per block (with one block,
 * the usual case, that is the same as cluster-wide unique IDs).
 */
#ifndef GALACTIC_AGENT_IDENTITY_IDENT_H
#define GALACTIC_AGENT_IDENTITY_IDENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GID_GROUP        "network.datumapis.com"
#define GID_VERSION      "v1alpha1"
#define GID_API_VERSION  GID_GROUP "/" GID_VERSION
#define GID_ID_MIN       0x0001
#define GID_ID_MAX       0xDFFF   /* 0xE000-0xFFFF reserved (DESIGN §3.2) */
#define GID_NAME_LEN     17       /* "fcbbbb000001-002a" */
#define GID_BLOCK_STR    44       /* "xxxx:xxxx:xxxx::/48" + NUL, with room */
#define GID_UPLINKS_MAX  8        /* CRD maxItems */
#define GID_IFNAME_MAX   15
#define GID_NODE_MAX     253

/* Condition types and reasons on NodeDataplane status. */
#define GID_COND_IDENTITY "IdentityAssigned"
#define GID_COND_DATAPATH "DatapathReady"
#define GID_COND_READY    "Ready"

/* NodeDataplane spec, validated. */
struct gid_spec {
	uint8_t block[6];
	char block_str[GID_BLOCK_STR];  /* canonical: "fcbb:bb00:1::/48" */
	uint16_t pin;                   /* 0: none */
	size_t n_uplinks;
	char uplinks[GID_UPLINKS_MAX][GID_IFNAME_MAX + 1];
	char uid[64];                   /* the NodeDataplane's metadata.uid */
	int64_t generation;
};

/*
 * Reads a NodeDataplane written by the operator. Returns 0, or -EINVAL with
 * why naming the bad field (name is not node, sidBlock not an IPv6 /48 with
 * host bits zero, nodeID outside 1-0xDFFF, an uplink that is no interface
 * name, more than 8 uplinks, no uid). Nothing of a bad object is used.
 */
int gid_spec_parse(const json_t *ndp, const char *node, struct gid_spec *out, char *why, size_t whylen);

/* "<block hex>-<id hex>" into buf (at least GID_NAME_LEN + 1 bytes). */
void gid_object_name(const uint8_t block[6], uint16_t id, char *buf, size_t n);
/* Inverse of gid_object_name; 0 or -EINVAL. */
int gid_name_parse(const char *name, uint8_t block[6], uint16_t *id);
/* The /64 locator "fcbb:bb00:1:2a::/64" of block + id into buf (>= 50 bytes). */
void gid_locator(const uint8_t block[6], uint16_t id, char *buf, size_t n);

/* First candidate for a node without an ID: FNV-1a of the name, spread over 1-0xDFFF. */
uint16_t gid_hash_start(const char *node);
/* The candidate after id (0xDFFF wraps to 1). */
uint16_t gid_next(uint16_t id);

/* The NodeID this node creates: name, spec {node, block, nodeID}, the
 * network.datumapis.com/node label and a controller ownerReference to the
 * NodeDataplane (uid s->uid). New reference. */
json_t *gid_nodeid_new(const char *node, const struct gid_spec *s, uint16_t id);

/* One NodeID as listed. */
struct gid_held {
	char name[GID_NAME_LEN + 1];
	char node[GID_NODE_MAX + 1];
	uint8_t block[6];
	uint16_t id;
	char uid[64];        /* the NodeID's own uid (delete precondition) */
	char owner_uid[64];  /* controller ownerReference uid, "" if none */
};
/*
 * Reads a listed NodeID. Returns 0, or -EINVAL with why when it is not one we
 * can trust as a hold (name not "<block>-<id>", spec missing or not matching
 * the name). A bad object still takes its name: callers count it as taken.
 */
int gid_held_parse(const json_t *obj, struct gid_held *out, char *why, size_t whylen);

/*
 * What to do with the IDs this node holds (own[], parsed holds whose node is
 * this node). prefer: the ID of the node's record when its block is s's
 * (0: none). The result names the hold to keep (index into own[], or -1 when
 * one must be created: want = the pin, or prefer, or 0 to allocate) and marks
 * in release[] (n entries) the holds to delete once the kept or created one
 * is secured: holds of another block, holds controlled by an earlier
 * NodeDataplane (another uid: the garbage collector takes them anyway), and
 * every hold but the kept one.
 */
struct gid_choice {
	int keep;            /* index into own[], or -1 */
	uint16_t want;       /* when keep < 0: ID to try first (0: allocate) */
	bool release[64];
};
#define GID_OWN_MAX 64
void gid_choose(const struct gid_spec *s, const struct gid_held *own, size_t n, uint16_t prefer,
		struct gid_choice *out);

/*
 * Taken IDs of one block, from the names listed (a bitmap over 0-0xFFFF).
 * gid_next_free: the first ID from `from` (wrapping) not taken, or 0 when
 * the block is full.
 */
struct gid_taken {
	uint8_t bits[0x10000 / 8];
};
void gid_taken_set(struct gid_taken *t, uint16_t id);
bool gid_taken_has(const struct gid_taken *t, uint16_t id);
uint16_t gid_next_free(const struct gid_taken *t, uint16_t from);

/* ---- NodeDataplane status ------------------------------------------------ */

struct gid_cond {
	const char *status;   /* "True" | "False" | "Unknown" */
	const char *reason;   /* CamelCase */
	const char *message;
};

struct gid_status_in {
	const char *node;
	const char *instance;          /* "<host>/<pid>": this process */
	const char *version;
	const char *datapath;          /* "kernel" | "bpf" */
	const char *const *caps;       /* capability names found by preflight */
	size_t n_caps;
	int64_t generation;            /* NodeDataplane metadata.generation */
	/* the identity the data plane runs with (0: none) */
	uint16_t node_id;
	const uint8_t *block;          /* 6 bytes, when node_id */
	struct gid_cond identity;      /* IdentityAssigned */
	struct gid_cond datapath_cond; /* DatapathReady */
	/* drift this process repaired: n_drift pairs (kind, count); counts of 0 left out */
	const char *const *drift_kinds;
	const unsigned long *drift_counts;
	size_t n_drift;
};

/*
 * The server-side apply intent of this agent's NodeDataplane status: nodeID,
 * nodeIDRef, locator, datapath, capabilities, reporter {node, agentInstance,
 * version}, driftRepaired [{kind, count}] (this process's repairs; absent
 * while none), conditions IdentityAssigned, DatapathReady and Ready (True when
 * both are). A condition's lastTransitionTime is kept from cur (the object
 * as last seen, may be NULL) when its status did not change, else now.
 */
json_t *gid_status_intent(const struct gid_status_in *in, const json_t *cur, const char *now);
/* True when cur's status already holds everything intent says. */
bool gid_status_equal(const json_t *cur, const json_t *intent);

#endif
