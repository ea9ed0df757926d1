/*
 * The interface every data-plane backend implements (kernel: dp/kernel.c,
 * bpf: dp/bpf/). The agent holds one backend, opened at start-up, and hands
 * it the whole desired state (model.h) each time; the backend makes the node
 * match it (level-triggered) and reports one result per model object.
 *
 * Stability: fields and ops are only ever added at the end.
 */
#ifndef GALACTIC_AGENT_DP_BACKEND_H
#define GALACTIC_AGENT_DP_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/model.h"

/* Defaults marking what galactic owns in the kernel. */
#define GDP_RTPROT_DEFAULT     0x9a   /* route/rule protocol number (154) */
#define GDP_TABLE_MIN_DEFAULT  0x4000 /* VPC tables: [min, max] */
#define GDP_TABLE_MAX_DEFAULT  0x4fff
#define GDP_RULE_PRIO_DEFAULT  1000   /* priority of `fwmark <VPC steering mark> lookup <table>` */

struct gdp_backend_opts {
	const char *netns;      /* NULL: the caller's namespace; else a name under /run/netns or a path */
	uint8_t rtproto;        /* 0: GDP_RTPROT_DEFAULT */
	uint32_t table_min;     /* 0: defaults */
	uint32_t table_max;
	uint32_t rule_prio;     /* 0: default */
	unsigned batch;         /* requests per socket round trip; 0: backend default */
	unsigned max_retries;   /* ENOMEM retries per request; 0: backend default */
	const char *bpffs_dir;  /* bpf backend: pin directory */
};

enum gdp_obj_kind {
	GDP_OBJ_NODE,
	GDP_OBJ_VPC,
	GDP_OBJ_ATTACHMENT,
	GDP_OBJ_REMOTE,
	GDP_OBJ_EGRESS,     /* the node's egress shard (dp/egress.h); vpc and key empty */
};

/*
 * What of an object a read-back found missing or different, when the
 * backend can say more than the object's kind (the drift counters' kind,
 * agent/health/drift.h): 0 = the object itself (a route for a remote).
 */
enum gdp_what {
	GDP_WHAT_OBJECT = 0,
	GDP_WHAT_FILTER,    /* bpf: a TC filter (decap on the uplink, encap on a host veth) */
	GDP_WHAT_MAP,       /* bpf: a map entry (routes, ifaces, vpcs, node config) */
};

/* One model object's outcome. */
struct gdp_result {
	enum gdp_obj_kind kind;
	char vpc[GDP_ID_MAX + 1];       /* empty for the node */
	char key[GDP_ID_MAX + 1];       /* attachment id, remote prefix; empty for node/vpc */
	int err;                        /* 0 or -errno of the first failure */
	bool programmed;                /* verified present in the datapath (observe/apply) */
	uint8_t what;                   /* enum gdp_what of the first failure */
	char msg[256];                  /* "add route fd00:a::2/128 table 16385: File exists" */
};

struct gdp_results {
	struct gdp_result *v;
	size_t n, cap;
	/* counters of the last apply */
	unsigned long added, removed, unchanged, retries, failed;
	/* Hash index by (kind, vpc, key), built lazily over v[0..n) by
	 * gdp_results_get/_find, so lookups are O(1) at 100k remotes.
	 * Entries appended directly to v are indexed at the next lookup. */
	size_t *idx;            /* slot -> entry index + 1; 0 = empty */
	size_t idx_cap, idx_done;
	/* Remotes verified programmed whose entries were folded into this
	 * count (gdp_results_fold_remotes): they count as programmed objects. */
	size_t remotes_ok;
	/* The backend could not read the datapath (a dump failed even after its
	 * retries), so it changed nothing and these results say nothing of the
	 * objects: the caller keeps the last results it had (never withdraws
	 * what is programmed on a failed read). */
	bool unread;
};

void gdp_results_init(struct gdp_results *r);
void gdp_results_reset(struct gdp_results *r);
void gdp_results_free(struct gdp_results *r);
/* Finds or adds the result of one object; NULL on allocation failure. */
struct gdp_result *gdp_results_get(struct gdp_results *r, enum gdp_obj_kind kind,
				   const char *vpc, const char *key);
/* Finds the result of one object (the latest if it appears twice); NULL if none.
 * Not const: it may extend the index. */
struct gdp_result *gdp_results_find(struct gdp_results *r, enum gdp_obj_kind kind,
				    const char *vpc, const char *key);
/* Drops the entries i with drop[i] (drop has n entries), keeping the order
 * of the rest; O(n), the index is rebuilt at the next lookup. */
void gdp_results_drop(struct gdp_results *r, const bool *drop);
/*
 * Folds the results of remotes that are programmed without error into
 * r->remotes_ok and drops their entries (at 100,000 remotes they are 40 MB
 * that no reader looks at one by one); failed remotes keep theirs. Gives
 * the freed part of v back. Returns how many were folded.
 */
size_t gdp_results_fold_remotes(struct gdp_results *r);
/* Records the first error of an object (later ones are only counted). */
void gdp_result_fail(struct gdp_result *res, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, saying what of the object failed (enum gdp_what). */
void gdp_result_fail_what(struct gdp_result *res, enum gdp_what what, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *gdp_obj_kind_str(enum gdp_obj_kind k);

struct gdp_caps {
	bool vrf;               /* VRF devices can be created */
	bool seg6;              /* seg6 encap routes */
	bool seg6local;         /* seg6local routes */
	bool dt46;              /* End.DT4/End.DT46 usable (needs vrf) */
	char detail[256];       /* what was probed, for NodeDataplane status */
};

/*
 * What changed between the state of the last pass and desired (dp/delta.c):
 * the scope of a delta apply. Indexes point into desired; what went away is
 * copied (desired no longer has it). A change the delta cannot express (the
 * node, a VPC's number, table or ranges, an attachment's fields, a VPC added
 * or removed, remotes named twice, the egress shard, an attachment declaring
 * egress added or removed while the node has a shard) sets full: the caller
 * then reconciles everything instead.
 */
struct gdp_delta {
	bool full;
	size_t *atts, n_atts;                   /* attachments added (indexes into desired->atts) */
	struct gdp_attachment *gone_atts;       /* attachments removed (their last model) */
	size_t n_gone_atts;
	size_t *remotes, n_remotes;             /* remotes added or changed (indexes into desired->remotes) */
	struct gdp_remote *gone_remotes;        /* remotes removed */
	size_t n_gone_remotes;
	/* capacities of the four arrays (common/grow.h) */
	size_t cap_atts, cap_gone_atts, cap_remotes, cap_gone_remotes;
};

void gdp_delta_init(struct gdp_delta *d);
void gdp_delta_free(struct gdp_delta *d);
/* True when nothing is in scope (and full is not set). */
bool gdp_delta_empty(const struct gdp_delta *d);
/*
 * Fills d with what changed from prev to cur (d is reset first). Remotes
 * are compared only when their arrays differ (same array: unchanged, O(1)).
 * 0, or -ENOMEM.
 */
int gdp_delta_compute(const struct gdp_state *prev, const struct gdp_state *cur, struct gdp_delta *d);
/* One attachment that changed since the last applied state (the record's
 * view lists them: agent/record.h, struct rec_view). */
struct gdp_att_change {
	bool had;                       /* it was in the last applied state, as prev */
	struct gdp_attachment prev;
	size_t cur;                     /* its index in desired->atts, SIZE_MAX: gone */
};
/*
 * gdp_delta_compute for a desired state known to differ from prev only in
 * the attachments listed in ch (and in node, VPCs, egress and remotes,
 * compared as there): O(changed) for the attachments, so a pass costs
 * what changed, not every attachment of the node. prev->atts is not read.
 */
int gdp_delta_compute_changes(const struct gdp_state *prev, const struct gdp_state *cur,
			      const struct gdp_att_change *ch, size_t n, struct gdp_delta *d);
/* Adds attachment cur->atts[i] to the scope (a retry of a failed one); no-op if there. */
int gdp_delta_add_att(struct gdp_delta *d, size_t i);

struct gdp_backend;

struct gdp_backend_ops {
	const char *name;       /* "kernel", "bpf" */
	/* Opens and prepares the datapath; on failure *out is NULL and err says why. */
	int (*open)(struct gdp_backend **out, const struct gdp_backend_opts *opts,
		    char *err, size_t errlen);
	/* What this node supports. */
	int (*caps)(struct gdp_backend *b, struct gdp_caps *caps);
	/*
	 * Makes the datapath equal to desired: adopts what is already right,
	 * adds what is missing, removes what it owns and desired no longer has.
	 * Fills one result per model object (invalid objects fail alone); a
	 * backend may count the remotes it programmed in res->remotes_ok
	 * instead of giving each a result (100,000 results are 40 MB).
	 * Returns 0 when every object is programmed, else the first -errno.
	 */
	int (*apply)(struct gdp_backend *b, const struct gdp_state *desired,
		     struct gdp_results *res);
	/*
	 * Read-only: compares the datapath with desired and fills one result
	 * per object (programmed = present and right; remotes read back right
	 * may be only counted, res->remotes_ok). Returns the number of
	 * differences found (datapath entries missing or different, plus owned
	 * leftovers; 0 = in sync), or -errno.
	 */
	int (*observe)(struct gdp_backend *b, const struct gdp_state *desired,
		       struct gdp_results *res);
	void (*close)(struct gdp_backend *b);
	/*
	 * Optional (NULL: the caller always uses apply). Applies only the
	 * objects in scope (delta) of desired, without reading or diffing what
	 * is out of scope: added attachments' objects, removed attachments'
	 * objects, changed remotes. Owned leftovers out of scope stay until the
	 * next apply. Fills results only for the objects in scope (and the
	 * node). Returns 0 when all of them are programmed, else -errno: the
	 * caller then runs apply (a full reconcile) to restore the level.
	 * -EAGAIN: the scope needs a full reconcile (e.g. a table not verified).
	 */
	int (*apply_delta)(struct gdp_backend *b, const struct gdp_state *desired,
			   const struct gdp_delta *delta, struct gdp_results *res);
	/*
	 * Optional (NULL: none). A check cheap enough to run every few hundred
	 * ms between passes, for datapath state that changes without a
	 * notification: 1 when the datapath's size changed since the last
	 * apply ended or since the last call that returned 1 (an entry added
	 * or deleted behind the agent's back: worth a read-back), 0 when not,
	 * while an apply runs, or when the kernel does not tell; -errno. Any
	 * thread.
	 */
	int (*size_changed)(struct gdp_backend *b);
	/*
	 * Optional. At start, instead of a first full apply: trusts that the
	 * datapath holds applied as the previous agent's last pass verified
	 * it (res: that pass's results, agent/pipeline.h pipeline_adopt), so
	 * delta applies may follow at once; the next full apply checks
	 * everything. Touches nothing (it may look up the uplink). 0, or
	 * -errno: then the first pass must be a full apply.
	 */
	int (*adopt)(struct gdp_backend *b, const struct gdp_state *applied, struct gdp_results *res);
	/*
	 * Optional (NULL: observe runs on b, serialized with the applies). An
	 * observer: a handle of its own on the same datapath (its own netlink
	 * socket and nftables context, a copy of what the last applies left),
	 * opened while no apply runs, then used for observe only, beside
	 * applies on b: a read-back of 100,000 routes no longer holds up the
	 * passes of CNI ADDs. observer_close (again while no apply runs) adds
	 * its counters to b's and frees it.
	 */
	int (*observer_open)(struct gdp_backend *b, struct gdp_backend **out);
	void (*observer_close)(struct gdp_backend *b, struct gdp_backend *observer);
	/*
	 * Optional (with observer_open). An observer kept open between
	 * read-backs: brought up to what the applies on b left since it was
	 * opened or last synced (again while no apply runs), its netlink socket
	 * and nftables context kept; its counters go to b's. 0, or -errno: close
	 * it and open another.
	 */
	int (*observer_sync)(struct gdp_backend *b, struct gdp_backend *observer);
};

/* Every backend handle starts with this. */
struct gdp_backend {
	const struct gdp_backend_ops *ops;
};

extern const struct gdp_backend_ops gdp_kernel_backend;

/* The kernel backend's counters (a handle it opened): what passes cost. */
struct gdp_kernel_counters {
	unsigned long full_passes;   /* apply calls (each a full reconcile) */
	unsigned long delta_passes;  /* apply_delta calls that ran */
	unsigned long dumps;         /* netlink dumps sent (full passes, read-backs, observe) */
	unsigned long dumps_interrupted; /* dump tries the kernel interrupted (NLM_F_DUMP_INTR), read again */
	unsigned long delta_ops;     /* writes a delta planned */
};
void gdp_kernel_counters(const struct gdp_backend *b, struct gdp_kernel_counters *c);

/* Backends other than kernel register themselves (e.g. from main) before lookup. */
int gdp_backend_register(const struct gdp_backend_ops *ops);
/* Looks a backend up by name ("kernel" always; others once registered). NULL if unknown. */
const struct gdp_backend_ops *gdp_backend_find(const char *name);

#endif
