/*
 * The CNI verbs on the agent side: ADD, DEL, CHECK, GC, STATUS turned into
 * changes of the node's record (agent/record.h) plus the pod side
 * (agent/cni/pod.h: the veth pair and everything inside the container's
 * namespace). The node side (VPC table, rules, pod routes and neighbours,
 * SIDs) is never touched here: it is the apply pipeline's, and a verb only
 * waits for the pass that includes its change and reads that pass's result
 * for its attachment (group commit: concurrent verbs share passes).
 *
 * Serialized under the record's lock: the numbers (the record's one
 * allocator), conflicts, what a pass takes. Parallel: pod-side setups (capped).
 * Requests for the same attachment key wait for each other.
 */
#ifndef GALACTIC_CNI_VERBS_H
#define GALACTIC_CNI_VERBS_H

#include <jansson.h>
#include <stddef.h>

#include "agent/cni/proto.h"
#include "agent/dp/backend.h"
#include "agent/record.h"

struct gcni_verbs;

struct gcni_verbs_opts {
	struct record *rec;
	const char *netns;            /* the node's namespace (NULL: ours), as the backend's */
	int default_mtu;              /* pod MTU when the config has none; 0: uplink MTU - 40 */
	unsigned max_setups;          /* pod-side setups at once; 0: 4 x CPUs */
	/* The apply pipeline (agent/pipeline.h), injected by the daemon. */
	/* backend_ms (may be NULL): the backend span of the pass that covered gen */
	int (*wait_applied)(void *ctx, unsigned long gen, double *backend_ms);
	int (*result)(void *ctx, enum gdp_obj_kind kind, const char *vpc, const char *key,
		      struct gdp_result *out);
	void *ctx;
};

int gcni_verbs_new(struct gcni_verbs **out, const struct gcni_verbs_opts *o, char *err, size_t errlen);
void gcni_verbs_free(struct gcni_verbs *v);

/* Where an ADD's time went (the listener logs it): the pod side (veth pair,
 * addresses, routes in the container: kernel work), the wait for the pass
 * that applied it, and that pass's backend span (its kernel writes). */
struct gcni_spans {
	double setup_ms, apply_ms, backend_ms; /* DEL: setup_ms is the pod side's teardown */
	double commit_ms; /* the verb's own journal append and fdatasync (commit ahead): the disk's wait */
	double commit_sync_ms, commit_cpu_ms; /* of which the fdatasync; the thread's CPU in it */
};

/* One request (nsfd: the container's namespace or -1). ADD returns the CNI
 * result (new reference) or NULL with e; the others 0 or -1 with e. sp
 * (may be NULL) gets the ADD's (DEL's) spans. */
json_t *gcni_verb_add(struct gcni_verbs *v, struct cni_req *q, int nsfd, struct cni_err *e,
		      struct gcni_spans *sp);
int gcni_verb_del(struct gcni_verbs *v, struct cni_req *q, struct cni_err *e, struct gcni_spans *sp);
int gcni_verb_check(struct gcni_verbs *v, struct cni_req *q, int nsfd, struct cni_err *e);
int gcni_verb_gc(struct gcni_verbs *v, struct cni_req *q, struct cni_err *e);

/* Deterministic host interface name "gc" + 13 hex digits of the ids' hash. */
void gcni_host_ifname(const char *vpc, const char *att, char out[16]);

#endif
