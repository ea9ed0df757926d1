/*
 * The durable files of agents before agent/record.h (part of the record
 * module), kept to migrate them and for tests that write a node that way:
 *   state.json            node, VPCs, attachments (hand-written or by tooling)
 *   remotes.json          remote prefixes -> SIDs (the old route learner)
 *   cni-attachments.json  the old CNI server's record (parsed in record.c)
 * Format: docs/dataplane-kernel.md ("Upgrading from the three files").
 */
#ifndef GALACTIC_AGENT_RECORD_LEGACY_H
#define GALACTIC_AGENT_RECORD_LEGACY_H

#include <stddef.h>

#include "agent/dp/backend.h"

#define LEGACY_STATE   "state.json"
#define LEGACY_REMOTES "remotes.json"
#define LEGACY_CNI     "cni-attachments.json"
#define LEGACY_ASIDE_SUFFIX ".imported"

/*
 * Loads dir/state.json and dir/remotes.json (each optional) into st.
 * An object that cannot be parsed is skipped and reported in bad (one result
 * naming it); the rest is loaded. Returns 0, or -errno when a file exists but
 * is not JSON at all (err says which and where).
 */
int legacy_load(const char *dir, struct gdp_state *st, struct gdp_results *bad, char *err, size_t errlen);

/* Writes state.json (node, VPCs, attachments) as the old agents' tooling did. */
int legacy_save_state(const char *dir, const struct gdp_state *st, char *err, size_t errlen);
/* Writes remotes.json as the old route learner did. */
int legacy_save_remotes(const char *dir, const struct gdp_state *st, char *err, size_t errlen);

#endif
