/*
 * The agent's durable local record: the node's desired state as JSON in a
 * state directory, so the agent can restart (and attach) while the API
 * server is away. Files:
 *   state.json    node, VPCs, attachments (written by the agent, atomically)
 *   remotes.json  remote prefixes -> SIDs (learned routes; for tests a file)
 * Format: docs/dataplane-kernel.md.
 */
#ifndef GALACTIC_AGENT_STATE_H
#define GALACTIC_AGENT_STATE_H

#include <stddef.h>

#include "agent/dp/backend.h"

#define GST_STATE_FILE   "state.json"
#define GST_REMOTES_FILE "remotes.json"

/*
 * Loads dir/state.json and dir/remotes.json (each optional) into st.
 * An object that cannot be parsed is skipped and reported in bad (one result
 * naming it); the rest is loaded. Returns 0, or -errno when a file exists but
 * is not JSON at all (err says which and where).
 */
int gst_load(const char *dir, struct gdp_state *st, struct gdp_results *bad, char *err, size_t errlen);

/* Writes state.json (node, VPCs, attachments) via a temporary file + fsync + rename. */
int gst_save(const char *dir, const struct gdp_state *st, char *err, size_t errlen);
/* Writes remotes.json the same way. */
int gst_save_remotes(const char *dir, const struct gdp_state *st, char *err, size_t errlen);

/* Writes len bytes to path atomically (tmp in the same dir, fsync, rename, fsync dir). */
int gst_write_atomic(const char *path, const void *data, size_t len);

#endif
