/*
 * The three reconcilers (one per kind the translator writes) and what they
 * share. Each reads only the caches, computes the full intent for one
 * object (intent.h, nic.h) and hands it to rec_write(), which applies the
 * ownership configuration and the target schema, skips what the object
 * already shows, and writes through writes.h:
 *   - fields, and conditions when status.conditions is a map list:
 *     server-side apply (resourceVersion precondition);
 *   - conditions when the list is atomic: guarded JSON Patch.
 * Return values: 0 done (forget the key), 1 retry with backoff.
 */
#ifndef GALACTIC_TRANSLATOR_RECONCILE_H
#define GALACTIC_TRANSLATOR_RECONCILE_H

#include "common/kube_store.h"
#include "common/metrics.h"
#include "translator/crds.h"
#include "translator/kinds.h"
#include "translator/mapping.h"
#include "translator/ownership.h"
#include "translator/writes.h"

struct egress_ctx;

/*
 * Attachments as our own last write returned them, kept until the cache
 * shows that version (as client-go's MutationCache): the interface and the
 * claim of a chain are reconciled from the attachment write's response
 * instead of waiting for its watch event (docs/translator.md "Order of
 * work"). Thread-safe.
 */
struct att_fresh;
struct att_fresh *att_fresh_new(void);
void att_fresh_free(struct att_fresh *f);
/* Remembers obj (as the cache keeps it) under its namespace/name; takes the reference. */
void att_fresh_put(struct att_fresh *f, json_t *obj);
/*
 * The newer of cached (taken) and the one remembered for nskey, as a new
 * reference; NULL when cached is NULL (gone from the cache: gone). A
 * remembered copy the cache has caught up with, or of another incarnation,
 * is dropped.
 */
json_t *att_fresh_pick(struct att_fresh *f, const char *nskey, json_t *cached);
/* The cache saw seen (NULL: the object went): drops what it made stale. */
void att_fresh_seen(struct att_fresh *f, const char *nskey, const json_t *seen);

struct rec_ctx {
	struct kube_store *att, *ni, *nic; /* caches of the three kinds */
	struct kube_store **rep;           /* one per mapping entry */
	const struct mapping_set *maps;
	struct crds *crds;
	struct writes *w;
	const struct ownership *own;
	struct egress_ctx *eg; /* NULL: egress off (translator/rec_egress.h) */
	struct metric *m_deferred;
	struct att_fresh *fresh; /* NULL: dependents wait for the watch event */
	/* Called with the attachment a write returned (NULL: nobody): queues its dependents. */
	void (*att_written)(void *ud, const json_t *att);
	void *ud;
};

/* VPCAttachment <- the node's report. *retry_after > 0: look again after that delay. */
int rec_attachment(const struct rec_ctx *c, const struct qkey *k, double *retry_after);
/* NetworkInterface <- its attachment. */
int rec_interface(const struct rec_ctx *c, const struct qkey *k);
/* NetworkInterfaceClaim <- its interface's attachment. */
int rec_claim(const struct rec_ctx *c, const struct qkey *k);

/* The interface's attachment (cache: same name, linked as upstream links them), or NULL. */
json_t *rec_iface_attachment(const struct rec_ctx *c, const json_t *iface);

/* {apiVersion, kind, metadata {name, namespace, uid}, status {}} for obj; NULL if it lacks them. */
json_t *rec_body(enum tkind k, const json_t *obj);
/*
 * Writes full (rec_body + status fields and status.conditions entries) to
 * obj, as above. what: for the log ("attachment", "interface", "claim").
 */
int rec_write(const struct rec_ctx *c, enum tkind k, const char *key, const json_t *obj,
	      json_t *full);

#endif
