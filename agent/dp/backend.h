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
#define GDP_RULE_PRIO_DEFAULT  1000   /* priority of `iif <host veth> lookup <table>` */

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

/* One model object's outcome. */
struct gdp_result {
	enum gdp_obj_kind kind;
	char vpc[GDP_ID_MAX + 1];       /* empty for the node */
	char key[GDP_ID_MAX + 1];       /* attachment id, remote prefix; empty for node/vpc */
	int err;                        /* 0 or -errno of the first failure */
	bool programmed;                /* verified present in the datapath (observe/apply) */
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
/* Records the first error of an object (later ones are only counted). */
void gdp_result_fail(struct gdp_result *res, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *gdp_obj_kind_str(enum gdp_obj_kind k);

struct gdp_caps {
	bool vrf;               /* VRF devices can be created */
	bool seg6;              /* seg6 encap routes */
	bool seg6local;         /* seg6local routes */
	bool dt46;              /* End.DT4/End.DT46 usable (needs vrf) */
	char detail[256];       /* what was probed, for NodeDataplane status */
};

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
	 * Fills one result per model object (invalid objects fail alone).
	 * Returns 0 when every object is programmed, else the first -errno.
	 */
	int (*apply)(struct gdp_backend *b, const struct gdp_state *desired,
		     struct gdp_results *res);
	/*
	 * Read-only: compares the datapath with desired and fills one result
	 * per object (programmed = present and right). Returns the number of
	 * differences found (datapath entries missing or different, plus owned
	 * leftovers; 0 = in sync), or -errno.
	 */
	int (*observe)(struct gdp_backend *b, const struct gdp_state *desired,
		       struct gdp_results *res);
	void (*close)(struct gdp_backend *b);
};

/* Every backend handle starts with this. */
struct gdp_backend {
	const struct gdp_backend_ops *ops;
};

extern const struct gdp_backend_ops gdp_kernel_backend;

/* Backends other than kernel register themselves (e.g. from main) before lookup. */
int gdp_backend_register(const struct gdp_backend_ops *ops);
/* Looks a backend up by name ("kernel" always; others once registered). NULL if unknown. */
const struct gdp_backend_ops *gdp_backend_find(const char *name);

#endif
