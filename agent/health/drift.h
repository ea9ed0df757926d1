/*
 * Drift: what a read-back of the datapath (backend observe) found missing or
 * different after a pass had verified it, and which of it a later read-back
 * found repaired (docs/dataplane-reports.md, "Drift"). Pure bookkeeping: the
 * agent's loop reads back (verify ticks, TC notifications), asks for a
 * repair pass, and counts what this says was repaired
 * (galactic_agent_drift_repaired_total{kind}, NodeDataplane
 * status.driftRepaired).
 *
 * An object counts as drifted only when the last pass had it programmed:
 * something that never was (a host veth that is not there since the ADD)
 * is a failure, not drift, and its eventual success is no repair.
 */
#ifndef GALACTIC_AGENT_HEALTH_DRIFT_H
#define GALACTIC_AGENT_HEALTH_DRIFT_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/dp/backend.h"

/* What a repair is counted as (the metric's kind label). */
enum gdrift_kind {
	GDRIFT_FILTER,      /* a TC filter (bpf) */
	GDRIFT_MAP_ENTRY,   /* a bpf map entry (routes, ifaces, vpcs, node config) */
	GDRIFT_ROUTE,       /* a remote's route (kernel backend: the seg6 route) */
	GDRIFT_ATTACHMENT,  /* an attachment's kernel objects (routes, rules, neighbours, addresses) */
	GDRIFT_VPC,         /* a VPC's kernel objects (VRF, table, seg6local routes, rules) */
	GDRIFT_NODE,        /* the node's (uplink, addresses) */
	GDRIFT_EGRESS,      /* the egress shard's */
	GDRIFT_KINDS
};

const char *gdrift_kind_str(enum gdrift_kind k);
/* The kind a differing result counts as (the backend's what, else the object's kind). */
enum gdrift_kind gdrift_kind_of(const struct gdp_result *r);

struct gdrift {
	struct gdp_results pending;   /* drifted, not yet read back repaired (what = enum gdrift_kind) */
	bool *asked;                  /* per pending entry: a repair was asked since it drifted */
	size_t cap_asked;
	unsigned long repaired[GDRIFT_KINDS];   /* so far */
};

void gdrift_init(struct gdrift *d);
void gdrift_free(struct gdrift *d);

/*
 * One read-back: res holds one result per object (backend observe), except
 * remotes read back programmed, which a backend may only count
 * (res->remotes_ok). Every pending object res has programmed is repaired
 * (counted into repaired[] and added to got[] when got is not NULL); so is
 * a pending remote without a result when res counts programmed remotes and
 * covered (the state the read-back covered; may be NULL) still has it; every
 * object res has not programmed for which was_programmed says the last pass
 * had it becomes pending. Returns how many objects are pending now, or
 * -ENOMEM.
 */
int gdrift_read_back(struct gdrift *d, struct gdp_results *res,
		     bool (*was_programmed)(void *ctx, const struct gdp_result *r), void *ctx,
		     const struct gdp_state *covered, unsigned long got[GDRIFT_KINDS]);
/* Pending objects (drift seen, repair not read back yet). */
size_t gdrift_pending(const struct gdrift *d);
/*
 * Pending objects no repair was asked for yet (gdrift_repair_asked). One a
 * repair pass did not bring back (a host veth that is gone: nothing the
 * agent can make again) stays pending, so its return is counted, but asks
 * for no second repair: the agent would otherwise run a full pass every
 * read-back for as long as it is gone.
 */
size_t gdrift_unasked(const struct gdrift *d);
/* A repair pass was asked for every object pending now. */
void gdrift_repair_asked(struct gdrift *d);

#endif
