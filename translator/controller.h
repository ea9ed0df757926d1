/*
 * The translator's controller: informers on the mapped report kinds, on
 * VPCAttachments, NetworkInterfaces and NetworkInterfaceClaims and on their
 * CRDs (crds.h), one work queue of typed keys (kinds.h: kind +
 * namespace/name) and workers that hand each key to the reconciler of its
 * kind (reconcile.h: rec_attachment, rec_interface, rec_claim). Every write
 * and its bookkeeping go through writes.h.
 *
 * Only the leader writes: workers check leader_is_leader() before a
 * reconcile and right before each write, and drop keys while not leading;
 * becoming leader enqueues every key. A target CRD's change re-queues
 * every object of that kind.
 */
#ifndef GALACTIC_TRANSLATOR_CONTROLLER_H
#define GALACTIC_TRANSLATOR_CONTROLLER_H

#include "common/kube_client.h"
#include "common/leader.h"
#include "common/metrics.h"
#include "translator/mapping.h"
#include "translator/ownership.h"

#include <stdbool.h>

struct controller_opts {
	const char *report_ns;  /* namespace of the reports (NULL: all) */
	const char *watch_ns;   /* namespace of attachments, interfaces, claims (NULL: all) */
	int workers;            /* 0: 8 */
	const char *identity;   /* this replica (Event reportingInstance) */
	const struct ownership *ownership; /* rows left to incumbents (NULL: all ours); borrowed */
	bool no_egress;              /* no EgressShardClaim binding, no InternetEgressReady */
	const char *egress_shard_ns; /* namespace of the EgressShards (NULL: galactic-system) */
};

struct controller;

/* kc, maps and m are borrowed and must outlive the controller. */
struct controller *controller_new(struct kube_client *kc, const struct mapping_set *maps,
				  struct metrics *m, const struct controller_opts *o);
/* Set before controller_start; NULL means "always leader" (single replica). */
void controller_set_leader(struct controller *c, struct leader *l);
/* Callbacks for leader_opts (ud = the controller). */
void controller_on_started_leading(void *ud);
void controller_on_stopped_leading(void *ud);

int controller_start(struct controller *c);
/* All informers have listed once. Thread-safe. */
bool controller_synced(void *ud);
/* Workers are running. Thread-safe. */
bool controller_alive(void *ud);
/* Stops the workers first (no write after this returns), then the informers. */
void controller_stop(struct controller *c);
void controller_free(struct controller *c);

#endif
