/*
 * The agent's one apply loop: snapshot the record -> commit it to disk ->
 * apply through the backend (which observes: a pass that wrote anything
 * reads the kernel back) -> hand the results on (reports, status file,
 * waiting CNI verbs). One pass at a time; every change of the record made
 * while a pass runs is in the next one (group commit: 200 concurrent ADDs
 * cost a handful of passes).
 *
 * Passes run when a writer asks (pipeline_wait, pipeline_kick: CNI verbs,
 * learned routes, identity) and are incremental: the backend gets the
 * snapshot and what changed since the last applied one (gdp_delta) and
 * touches only that. A full reconcile (dump, diff, repair everything) runs
 * at the first pass, when a delta apply fails or cannot express the change,
 * when asked (pipeline_kick_full: kernel notifications, SIGHUP, drift) and
 * every interval seconds, so the node stays level-triggered.
 */
#ifndef GALACTIC_AGENT_PIPELINE_H
#define GALACTIC_AGENT_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/dp/backend.h"
#include "agent/record.h"

struct pipeline;

/*
 * What the last pass's results add up to, kept by the pipeline as passes
 * change them: a full pass counts its results, an incremental one only
 * the entries it replaced or dropped, so an ADD among 1,000 attachments
 * looks at its own results, not at every one.
 */
struct pipeline_tally {
	size_t objects;                 /* entries + folded remotes (res->n + res->remotes_ok) */
	size_t unprogrammed;            /* entries not verified present (status.json's "errors") */
	size_t bad;                     /* entries not programmed, or with an error (ghealth_verdict's failures) */
	const struct gdp_result *egress; /* the egress shard's entry, or NULL (an indexed lookup) */
};

struct pipeline_opts {
	struct record *rec;
	struct gdp_backend *be;
	const char *status_path;  /* status.json of the last pass (NULL: none) */
	double interval_s;        /* periodic pass; 0: 30 s */
	/* After every pass, on the pass's thread (reports: rpt_update; health:
	 * the tally says whether anything failed without a walk of res). */
	void (*on_pass)(void *ctx, const struct rec_snap *snap, const struct gdp_results *res,
			const struct pipeline_tally *t);
	void *ctx;
};

int pipeline_new(struct pipeline **out, const struct pipeline_opts *o, char *err, size_t errlen);
/* Runs one pass now on the caller's thread (serialized with the loop). Returns its rc. */
int pipeline_pass(struct pipeline *p);
/*
 * Reads the datapath back against the view the last pass applied (the
 * record's current state before any pass applied) without
 * changing anything (backend observe). With a backend observer (backend.h)
 * beside the passes, kept open from one read-back to the next (reopened
 * after an error): the record must be at the generation the last pass
 * applied (else -EBUSY: that pass comes first), and a pass that ran during
 * the read makes it -EBUSY too; without one, serialized with passes.
 * Returns the number of differences (0: in sync) with one result per object
 * in res, or -EBUSY (record held, a change not applied yet, a pass ran
 * meanwhile) / -ENODATA (no node identity): nothing to verify. covered (may
 * be NULL) gets the state read back when it returns >= 0 (node, VPCs,
 * attachments; the remotes shared, no pods): free it with record_snap_free
 * (also safe after an error).
 */
int pipeline_verify(struct pipeline *p, struct gdp_results *res, struct rec_snap *covered);
/*
 * At start, before the loop: adopts the datapath as the previous agent
 * left it, when its status.json says its last pass (same backend, rc 0)
 * applied exactly what the record's files hold now (struct rec_disk_pos:
 * nothing was committed after it, nothing imported since). The record's
 * view then becomes the applied state without a pass, every object's
 * result is the one that pass verified (programmed, or its error from
 * status.json), and the full reconcile that reads the kernel back (and
 * repairs drift) runs once the record has been quiet for 500 ms, at the
 * latest 2 s after the adoption. Meanwhile the CNI verbs are answered from
 * it: a new ADD is an incremental pass against the adopted state, a CHECK
 * reads the adopted result, and status.json says "adopted" with 0 passes.
 * 0: adopted; -ESTALE (why says what did not match): nothing adopted, the
 * first pass must be a full one, as without.
 */
int pipeline_adopt(struct pipeline *p, char *why, size_t whylen);
/* Adopted and not read back yet (the first full pass has not run). */
bool pipeline_adopting(struct pipeline *p);

/* What status.json says (pipeline_status_parse; fuzz_record). */
struct pipeline_status {
	char backend[32];
	long long rc;
	struct rec_disk_pos disk;   /* valid: the files' position the pass applied */
	struct gdp_results errors;  /* the objects that were not programmed, with their errors */
};
/* Parses status.json text (strict: every field's type; errors' kinds by
 * name). 0, or -EINVAL with why (out then holds nothing). Free with
 * pipeline_status_free. */
int pipeline_status_parse(const char *text, size_t len, struct pipeline_status *out, char *why, size_t whylen);
void pipeline_status_free(struct pipeline_status *s);

/* Starts the loop thread. */
int pipeline_start(struct pipeline *p, char *err, size_t errlen);
/* Asks for a pass soon (any thread, never blocks): incremental when the backend can. */
void pipeline_kick(struct pipeline *p);
/*
 * Asks for a full reconcile (kernel changes, SIGHUP, drift): run once the
 * record has been quiet for 500 ms, at the latest at the next interval.
 */
void pipeline_kick_full(struct pipeline *p);
/* Passes that reconciled everything / only what changed, so far. */
void pipeline_counters(struct pipeline *p, unsigned long *full, unsigned long *delta);
/*
 * Waits until a pass that includes record generation gen has applied it
 * and its results are in (pipeline_result); the pass's status file and
 * reports (on_pass) follow on its thread. 0, or -ESHUTDOWN when the
 * pipeline stops first.
 */
int pipeline_wait(struct pipeline *p, unsigned long gen);
/* The same; *backend_ms: the backend span (its writes and read-back, the
 * kernel's time) of the pass that covered gen, for the verbs' log lines. */
int pipeline_wait_spans(struct pipeline *p, unsigned long gen, double *backend_ms);
/* A copy of one object's result from the last pass: 0, or -ENOENT. */
int pipeline_result(struct pipeline *p, enum gdp_obj_kind kind, const char *vpc, const char *key,
		    struct gdp_result *out);
/* Passes run so far. */
unsigned long pipeline_passes(struct pipeline *p);
/* Threads inside pipeline_wait / pipeline_wait_spans now. */
unsigned pipeline_waiting(struct pipeline *p);
/*
 * Result entries the pipeline's own bookkeeping walked so far (the tally
 * of a full pass, status.json's error list while something failed): an
 * incremental pass adds what it changed, not every attachment (tests hold
 * it to that).
 */
unsigned long pipeline_visits(struct pipeline *p);
/*
 * status.json (status_path): written after every full pass and after an
 * incremental one when the last write is PIPELINE_STATUS_MS old; else the
 * loop writes it once that much has passed, and pipeline_free writes what
 * is left. An observation for operators and for the next start's adoption
 * (a crash within that window leaves the one before: no adoption, a full
 * first pass), not a rename per ADD.
 */
#define PIPELINE_STATUS_MS 200
/* Stops the loop (a pass in progress finishes), wakes every waiter
 * (-ESHUTDOWN), and frees once none is inside pipeline_wait any more; the
 * last pass's status.json is written if it was not yet. Nothing may call
 * into p once pipeline_free has begun. */
void pipeline_free(struct pipeline *p);

#endif
