/*
 * The agent's reports in the Kubernetes API (docs/dataplane-reports.md).
 *
 * Publishing: one NodeAttachment per local attachment, built from the last
 * reconcile (desired state + per-object results) and server-side applied
 * (spec, then /status) under field manager "galactic-agent" by publisher
 * threads sharing one rate-limited work queue. Writes are skipped when the
 * informer cache of this node's reports (label network.datumapis.com/node)
 * already holds the intent, or still predates our last write of the same
 * intent; reports of attachments that are gone are deleted with a UID
 * precondition.
 *
 * Route learning (DESIGN §3.5): an informer on the NodeAttachments of the
 * VPCs this node hosts (label network.datumapis.com/vpc, set-based
 * selector, replaced when the hosted set changes) and, while a cluster
 * upgrades from agents that predate that label (rpt_opts.learn_unlabelled),
 * one on reports without it; the routes[] of other
 * nodes' reports that are
 * Programmed=True, for VPCs this node hosts, become the node's remote
 * prefixes, handed in process to rpt_opts.set_remotes (the agent writes
 * them into its record, agent/record.h, which the apply pipeline programs).
 * Nothing is handed over before the first full list, so a restart while the
 * API server is away keeps the routes of the durable record.
 *
 * Nothing here ever blocks the data plane: rpt_update() only copies the
 * snapshot and queues a key; every API call runs on the report threads.
 */
#ifndef GALACTIC_AGENT_REPORT_H
#define GALACTIC_AGENT_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/backend.h"

/* Field manager: "galactic-agent/<node>", so managedFields say which node's
 * agent reported (the ownership table in docs/architecture.md). */
#define RPT_FIELD_MANAGER_PREFIX "galactic-agent/"
#define RPT_NODE_LABEL    "network.datumapis.com/node"
/* The report's VPC (its spec.vpc): the route learner selects on it. */
#define RPT_VPC_LABEL     "network.datumapis.com/vpc"
/* Past this many hosted VPCs the learner selects every labelled report
 * (the selector would approach the URL length limits). */
#define RPT_SCOPE_MAX_VPCS 64
#define RPT_ROUTES_MAX    16   /* routes[] per report (CRD maxItems) */
#define RPT_VERSION       "0.1.0"

/* ---- pure parts (tests/unit/test_report_*.c) ---------------------------- */

/* What the record knows about an attachment's pod (may be empty). */
struct rpt_pod {
	char ns[64];
	char name[254];
	char guest_ifname[16];
};

/* Who reports. No per-process identity here: a restart of a healthy node
 * must rewrite nothing (the process is on the NodeDataplane status). */
struct rpt_reporter {
	const char *node, *version, *datapath;
};

/* The Programmed condition of one attachment, from the last reconcile. */
struct rpt_cond {
	bool programmed;
	char reason[64];
	char message[512];
};

/*
 * "<node>-<vpc hex>-<attachment hex>" (ids base62 -> 64-bit value -> lowercase
 * hex). Returns 0, or -EINVAL with why when an id is not base62 or the name
 * would not be a valid DNS subdomain (node names must be lowercase DNS).
 */
int rpt_name(const char *node, const char *vpc, const char *att, char *buf, size_t n,
	     char *why, size_t whylen);

/*
 * Full spec intent of attachment a of st (st->node gives the SIDs; the
 * attachment's VPC must be in st): node, vpc, vpcAttachment, containerID,
 * pod, hostInterface, guestInterface, table, podSubnets, localSID, routes[]
 * (IPv6 addresses /128 via the VPC decap SID, IPv4 /32 via the attachment's
 * End.DX4 SID). pod may be NULL. NULL when the VPC is unknown.
 */
json_t *rpt_spec(const char *node, const struct gdp_state *st, const struct gdp_attachment *a,
		 const struct rpt_pod *pod);

/*
 * Programmed from the results: True only when the attachment, its VPC and
 * the node were all verified in the datapath; otherwise False with the first
 * error (or NotReconciled when no result names it). O(1): by the results'
 * index (gdp_results_find, which may extend it: not const).
 */
void rpt_programmed(struct gdp_results *res, const struct gdp_attachment *a,
		    struct rpt_cond *out);

/*
 * Status intent: observedGeneration, the Programmed condition (its
 * lastTransitionTime kept from cur when the status did not change, else now,
 * an RFC 3339 string) and reporter. cur is the object as last seen (or NULL).
 */
json_t *rpt_status(const struct rpt_cond *c, int64_t generation, const json_t *cur,
		   const struct rpt_reporter *r, const char *now);
/* True when cur's status already says what intent says. */
bool rpt_status_equal(const json_t *cur, const json_t *intent);

/*
 * Routes another node's report offers this node. Returns 0 and appends to
 * out->remotes (vpc = the report's VPC), 1 when the report is not for us
 * (our own node, a VPC we do not host, not Programmed=True for its current
 * generation), or -EINVAL with why naming the bad field when the report is
 * malformed (nothing of it is used). local: this node's desired state.
 */
int rpt_routes_from_report(const json_t *obj, const char *my_node, const struct gdp_state *local,
			   struct gdp_state *out, char *why, size_t whylen);

/*
 * The reports' owner: the node's Node object (apiVersion v1, kind Node, its
 * name and uid; not controller, no blockOwnerDeletion), so the garbage
 * collector deletes a node's reports when the Node is deleted.
 * rpt_owner_refs: metadata.ownerReferences with that one entry (new
 * reference). rpt_owner_is: true when obj's ownerReferences hold exactly
 * that entry (uid NULL or "": true when obj has no Node owner).
 */
json_t *rpt_owner_refs(const char *node, const char *uid);
bool rpt_owner_is(const json_t *obj, const char *node, const char *uid);

/* A Kubernetes label value we write: 1-63 of [A-Za-z0-9._-], alphanumeric at both ends. */
bool rpt_label_value_ok(const char *s);

/*
 * The route learner's label selector for the VPCs st hosts:
 * "network.datumapis.com/vpc in (a,b,...)" (ids sorted; an id that is not a
 * label value is left out: it can have no report, rpt_name refuses it), ""
 * when st hosts no VPC, or "network.datumapis.com/vpc" (every labelled
 * report) past RPT_SCOPE_MAX_VPCS. malloc'd; NULL when out of memory.
 */
char *rpt_scope_selector(const struct gdp_state *st);

/*
 * Overlapping prefixes of one VPC in the routes learned from all reports
 * (docs/dataplane-reports.md, "Overlapping prefixes"). Sorts v (VPC,
 * family, length, address, SID) and returns how many routes it keeps:
 *  - the same prefix offered by two reports (a pod moving between nodes, or
 *    two nodes claiming one address): the route with the lowest SID stays,
 *    the others are dropped; the winner depends on nothing but the routes of
 *    that prefix, so every node picks the same one and no route flips when
 *    unrelated reports come and go (BGP's lowest-router-ID tie break);
 *  - a prefix inside another one (an address inside another pod's
 *    delegated block): both stay, longest prefix match sends the inner
 *    addresses to the inner route's node, as any IP routing table does.
 * Each case is counted in *ov and, when on_overlap is not NULL, reported
 * with the route kept (or the outer one) and the other.
 */
struct rpt_overlaps {
	size_t duplicates, nested;
};
typedef void (*rpt_overlap_fn)(const struct gdp_remote *kept, const struct gdp_remote *other,
			       bool nested, void *ud);
size_t rpt_remotes_resolve(struct gdp_remote *v, size_t n, struct rpt_overlaps *ov,
			   rpt_overlap_fn on_overlap, void *ud);

/*
 * The desired reports of a node (name -> {"spec":..., "cond":{programmed,
 * reason, message}}), as the publisher compares them with what it queued
 * last. A memo per attachment ("<vpc>/<id>": a fingerprint of every input
 * its report reads: the attachment and its pod byte for byte, its VPC, the
 * node's name and SIDs, the results of the node, the VPC and the
 * attachment) keeps each entry built: only those whose inputs changed since
 * the last call are built again (*built counts them), the others are the
 * same json objects as the last call returned, and attachments gone are
 * forgotten. Returns a new reference, NULL when out of memory (what the
 * memo lost is built again next time). pods parallel to st->atts (may be
 * NULL); res may extend its index (rpt_programmed). One caller at a time.
 */
struct rpt_desired;
struct rpt_desired *rpt_desired_new(void);
void rpt_desired_free(struct rpt_desired *d);
json_t *rpt_desired_build(struct rpt_desired *d, const char *node, const struct gdp_state *st,
			  const struct rpt_pod *pods, struct gdp_results *res, size_t *built);

/* Copy of results (counters included) without the per-remote ones; 0 or -ENOMEM. */
int rpt_results_copy(struct gdp_results *dst, const struct gdp_results *src);

/* ---- the daemon side ---------------------------------------------------- */

struct metrics;
struct rpt_opts {
	const char *kubeconfig;   /* NULL: in-cluster / $KUBECONFIG (kube_config_load) */
	const char *node;         /* required: enables reports */
	const char *ns;           /* report namespace (required) */
	const char *datapath;     /* "kernel" | "bpf" */
	/* The learner's output: the whole remote set, sorted, each time the
	 * learner looks at the reports (learner thread). Returns 0 (taken), 1
	 * (the set it holds already: the learner keeps no copy of its own to
	 * compare, the sink does) or -errno (retried). Required. */
	int (*set_remotes)(void *ctx, const struct gdp_remote *v, size_t n);
	void *ctx;
	double max_backoff_s;     /* per-key retry cap; 0: 5 s */
	struct metrics *metrics;  /* the API client's galactic_kube_* counters go here; NULL: none */
	/* Learn from one watch of every report of the namespace, as before the
	 * learner was scoped to the hosted VPCs (bench_learner's reference). */
	bool learn_unscoped;
	/* Also learn from reports without the VPC label (a second informer,
	 * selector !network.datumapis.com/vpc): only while a cluster upgrades
	 * from agents that predate the label (galactic-agent
	 * --learn-unlabelled-reports; docs/dataplane-reports.md, "Upgrade"). */
	bool learn_unlabelled;
};

struct rpt;

/* Validates, connects (no request yet) and starts the threads. */
int rpt_start(struct rpt **out, const struct rpt_opts *o, char *err, size_t errlen);
/*
 * After every apply pass (any thread): copies the desired state, the pods
 * (parallel to st->atts, may be NULL) and the results (without remotes: they
 * can be 100k) and wakes the publisher. Never blocks on the API. r may be
 * NULL (reports disabled).
 */
void rpt_update(struct rpt *r, const struct gdp_state *st, const struct rpt_pod *pods,
		const struct gdp_results *res);
/* Stops the threads (pending writes are dropped; the API copy catches up at the next start). */
void rpt_stop(struct rpt *r);
/* What the module received from the API so far (kube_client_rx_bytes) and
 * how often the learner's selector changed. */
struct rpt_stats {
	unsigned long rx_body, rx_wire;
	unsigned long scope_changes;
	/* Overlaps in the last learned set (rpt_remotes_resolve). */
	unsigned long overlap_duplicates, overlap_nested;
	/* Reports the learner parsed (each new resourceVersion once; a pass
	 * takes the unchanged ones from its memo). */
	unsigned long learn_parsed;
	/* The publisher's syncs of the desired reports (one per pass it took)
	 * and the reports they built (rpt_desired_build: only the changed). */
	unsigned long pub_syncs, pub_built;
};
void rpt_get_stats(struct rpt *r, struct rpt_stats *out);

#endif
