/*
 * The agent's egress-shard thread (docs/dataplane-egress.md): watches the
 * EgressShards of one namespace (upstream: galactic-system), hands the
 * identity of the one whose spec.targetRef.name is this node to the agent
 * (on_shard: the agent writes it into its record and applies), and
 * server-side applies that shard's /status under galactic-agent/<node>
 * from what each datapath pass actually programmed.
 *
 * Never blocks the data plane: the record keeps the last identity handed
 * over, so the node keeps routing toward its shard with the API down; a
 * shard that disappears from a synced list is withdrawn; a malformed spec
 * changes nothing that runs and is reported as ProgrammingFailed.
 */
#ifndef GALACTIC_AGENT_EGRESS_EGRESS_H
#define GALACTIC_AGENT_EGRESS_EGRESS_H

#include <stdbool.h>

#include "agent/dp/model.h"

struct ges_daemon;

struct metrics;
struct ges_daemon_opts {
	const char *kubeconfig;        /* NULL: kube_config_load */
	struct metrics *metrics;       /* the API client's galactic_kube_* counters; NULL: none */
	const char *node;              /* required */
	const char *ns;                /* NULL: GES_NS_DEFAULT */
	const char *oif;               /* internet interface handed with the identity (NULL: the uplink) */
	/* The identity to run (have = false: none). Called on the thread; must not block long. */
	void (*on_shard)(void *ud, const struct gdp_egress *e);
	void *ud;
	double resync_s;               /* 0: 60 */
};

int ges_daemon_start(struct ges_daemon **out, const struct ges_daemon_opts *o, char *err, size_t errlen);
/* After each pass (any thread, never blocks): the identity it ran and whether it read back programmed. */
void ges_daemon_datapath(struct ges_daemon *d, const struct gdp_egress *running, bool programmed,
			 const char *message);

struct ges_daemon_stats {
	unsigned long status_writes, api_errors, handed;
	bool have_shard;
	char shard[254];
};
void ges_daemon_stats(struct ges_daemon *d, struct ges_daemon_stats *out);
void ges_daemon_stop(struct ges_daemon *d);

#endif
