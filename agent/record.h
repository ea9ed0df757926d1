/*
 * The node's one durable record (docs/architecture.md, "The agent").
 *
 * Everything the agent knows about its node lives here and only here: the
 * node identity (SID block, node ID, uplink and its MTU), the VPCs (number,
 * table, address ranges), the attachments (model fields together with the
 * CNI and pod facts: container, interface, namespace path, pod namespace and
 * name, guest interface, host and pod MACs, egress declaration, normalized
 * CNI configuration), and the remote prefixes learned from other nodes.
 *
 * One owner (this module), one lock, one number allocator for VPC arguments
 * and attachment numbers. Writers (the CNI verbs, the route learner, the
 * identity loader, the legacy import) change the record in memory through
 * the functions below; each change bumps the generation. The apply pipeline
 * (agent/pipeline.h) is the only reader that acts: it takes a snapshot,
 * commits it to disk (record_commit) and applies it.
 *
 * On disk (a state directory, docs/dataplane-kernel.md):
 *   record.json          version 2: node, VPCs, attachments as of the last
 *                        compaction, and the epoch of the journal extending it
 *   record.journal       one line per commit since (the VPC list when it
 *                        changed, attachments put and deleted): a commit
 *                        writes one line over the file's zeroed tail (in
 *                        place: no size change) and fdatasyncs it, so an ADD
 *                        costs what it changed, not every attachment the
 *                        node has; the load stops at the first NUL;
 *                        compacted into record.json (whole rewrite, new
 *                        epoch) when it grows past the node's size, when the
 *                        node identity or egress shard change, and at the
 *                        first commit after a start
 *   record-remotes.json  version 1: learned remotes (rewritten only when the
 *                        remote set changes, so an ADD does not rewrite 100k
 *                        routes)
 * whole files through gfile_write_atomic (tmp + fsync + rename + directory
 * fsync). A journal line is committed once its fdatasync returns; a last
 * line without its newline (a crash in the append) was never acknowledged
 * and is dropped at load. A version 1 record.json (no journal) is read as is.
 *
 * A damaged file (not JSON, unknown version, a malformed object) is never
 * half-used: the record is "held" (record_held says why), nothing is applied
 * or written until it is repaired or removed (SIGHUP retries), so a damaged
 * disk can never flush a running node.
 */
#ifndef GALACTIC_AGENT_RECORD_H
#define GALACTIC_AGENT_RECORD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/model.h"
#include "agent/record_codec.h" /* the objects (rec_vpc, rec_att), their JSON and the files' parsers */

#define RECORD_FILE         "record.json"
#define RECORD_REMOTES_FILE "record-remotes.json"
#define RECORD_JOURNAL_FILE "record.journal"
#define RECORD_MAX_BYTES    (256u << 20)

/* A shared, immutable set of remotes (snapshots hold a reference). */
struct rec_remotes {
	int refs;
	size_t n;
	struct gdp_remote v[];
};

/* What the pipeline applies and reports: a consistent copy at generation gen. */
struct rec_snap {
	unsigned long gen;
	struct gdp_state st;       /* node, VPCs and active attachments (owned); remotes borrowed */
	struct rec_remotes *remotes; /* reference (st.remotes points into it) */
	struct rec_pod {           /* parallel to st.atts */
		char ns[64], name[254], guest_ifname[GDP_IFNAME_MAX + 1];
	} *pods;
	bool have_node;            /* a node identity is known */
};

struct record;

struct record_opts {
	const char *dir;           /* state directory (created 0700 if missing) */
	uint32_t table_min;        /* VPC table = table_min + arg; 0: GDP_TABLE_MIN_DEFAULT */
};

/*
 * Opens the record of dir: loads record.json (+ record-remotes.json), or,
 * when there is none, migrates the legacy files into it (committed before
 * this returns, the legacy files then renamed to *.imported). A damaged
 * file does not fail this call: the record is held (record_held). Returns
 * 0, or -errno when the directory cannot be used (err says why).
 */
int record_open(struct record **out, const struct record_opts *o, char *err, size_t errlen);
void record_close(struct record *r);

/* NULL, or why the record is held (damaged file). Thread-safe copy into buf. */
const char *record_held(struct record *r, char *buf, size_t n);
/* Reloads after a hold (SIGHUP): 0 when the record is usable now. */
int record_retry_load(struct record *r, char *err, size_t errlen);

/*
 * Imports legacy drop-in files present in the directory (state.json:
 * node identity, declared VPCs and attachments, replacing the declared
 * ones; remotes.json: the remote set; cni-attachments.json: CNI
 * attachments not yet in the record), then renames each to *.imported.
 * Returns the number of files imported (0: none), or -errno with err
 * (a file that does not parse is left in place and changes nothing).
 */
int record_import_legacy(struct record *r, char *err, size_t errlen);

/* ---- writers (each takes the lock and bumps the generation) --------------- */

/* Node identity (the identity loader, the legacy import). mtu 0: unknown. */
int record_set_node_identity(struct record *r, const struct gdp_node *n, int uplink_mtu);
/* The node identity; false when none is known yet. */
bool record_node_identity(struct record *r, struct gdp_node *n, int *uplink_mtu);
/*
 * The node's own egress shard (agent/egress: from the EgressShard whose
 * targetRef names the node; NULL or !have clears it). Kept in record.json,
 * so attachments keep their route toward the shard with the API down.
 */
int record_set_egress(struct record *r, const struct gdp_egress *e);
bool record_egress(struct record *r, struct gdp_egress *e);
/* Replaces the remote set (the route learner). Copies v. 0; 1 when v is the
 * set the record holds already (in the same order: nothing changes, the
 * generation stays); -ENOMEM. */
int record_set_remotes(struct record *r, const struct gdp_remote *v, size_t n);

/* ---- the CNI verbs' view: call with the lock held ---------------------------- */

void record_lock(struct record *r);
void record_unlock(struct record *r);
/* Under the lock. The finds are O(1) (an index kept with the attachments). */
size_t record_n_atts(struct record *r);
struct rec_att *record_att(struct record *r, size_t i);
struct rec_att *record_find_key(struct record *r, const char *network, const char *cid,
				const char *ifname);
struct rec_att *record_find_att(struct record *r, const char *vpc, const char *att);
/* The attachment whose host interface is host_ifname, or NULL. */
struct rec_att *record_find_host(struct record *r, const char *host_ifname);
/* An attachment of vpc holding the address p (gdp_prefix_equal), or NULL. */
struct rec_att *record_find_addr(struct record *r, const char *vpc, const struct gdp_prefix *p);
/* An active, self-addressed attachment (agent/cni/learn.h) whose pod MAC is mac, or NULL. */
struct rec_att *record_find_guest(struct record *r, const uint8_t mac[6]);
/* Under the lock: the pair's MACs after it was (re)created (the pod MAC is indexed). */
void record_set_macs(struct record *r, struct rec_att *a, const uint8_t pod_mac[6], const uint8_t host_mac[6]);
const struct rec_vpc *record_find_vpc(struct record *r, const char *id);
bool record_is_held(struct record *r);
/*
 * Under the lock: adds an attachment reserved (inactive) from a, allocating
 * its VPC (number and table, on its first attachment) and its own number;
 * a->m.arg and a->m.nh4 are set here. Takes ownership of a->netns and
 * a->config. Returns the record's copy, or NULL with err.
 */
struct rec_att *record_reserve(struct record *r, struct rec_att *a, char *err, size_t errlen);
/* Under the lock: the reserved attachment becomes desired (next apply). */
unsigned long record_activate(struct record *r, struct rec_att *a);
/* Under the lock: appends an address the node learned for a's guest
 * (agent/cni/learn.h does the checks). The new generation, or 0 when a
 * already holds GDP_ADDRS_MAX addresses. */
unsigned long record_add_addr(struct record *r, struct rec_att *a, const struct gdp_prefix *p);
/* Under the lock: whether a remote prefix of vpc (another node's pod) overlaps p. */
bool record_remote_overlaps(struct record *r, const char *vpc, const struct gdp_prefix *p);
/* Under the lock: back to reserved (taken out of the next apply). */
unsigned long record_deactivate(struct record *r, struct rec_att *a);
/* Under the lock: removes it (its VPC's number goes with the VPC's last one).
 * O(1): by its place in the array and the index, never a scan. */
unsigned long record_remove(struct record *r, struct rec_att *a);
/* Under the lock: how many times a removal or a VPC's "still used?" fell
 * back to a scan of every attachment (the index could not be trusted, or
 * an attachment was not where it was noted): 0 on a healthy record (tests). */
unsigned long record_scans(struct record *r);
/* Under the lock: the current generation. */
unsigned long record_gen_locked(struct record *r);

/* ---- the pipeline -------------------------------------------------------- */

unsigned long record_gen(struct record *r);
/* A consistent copy (lock held only for the copy; remotes are shared). */
int record_snapshot(struct record *r, struct rec_snap *out);
void record_snap_free(struct rec_snap *s);
/* Another reference to a shared remote set (any thread; record_snap_free drops a snapshot's). */
struct rec_remotes *rec_remotes_ref(struct rec_remotes *x);
/*
 * The pipeline's incremental copy of the record. A pass does not copy
 * every attachment: the record's writers list what they change (its dirty
 * set: the attachments activated, deactivated, given an address, and the
 * keys removed), and record_view_update brings the view up to date with
 * that list only, saying what changed (the delta's input, dp/delta.c). The
 * view is rebuilt whole at its first update and after what the list does
 * not cover (a load, an import of drop-in files, a failed allocation).
 * One reader: the pipeline, on its pass thread.
 */
struct rec_view {
	struct rec_snap s;          /* the snapshot at s.gen: node, VPCs, active attachments, remotes */
	bool valid;                 /* false: the next update rebuilds it whole */
	size_t cap_pods;
	size_t *ix, ix_mask;        /* (vpc, id) -> index into s.st.atts + 1 (open addressing) */
	struct rec_view_vpc { char id[GDP_ID_MAX + 1]; size_t n; } *vc; /* attachments per VPC in the view */
	size_t nvc, capvc;
};

/* What one update changed (struct gdp_att_change: backend.h). */
struct rec_changes {
	bool whole;                 /* rebuilt whole: no list (the pass reconciles in full) */
	struct gdp_att_change *atts;
	size_t n_atts, cap_atts;
	/* the remotes the view held before, when they (or its VPCs) changed: alive until freed */
	struct rec_remotes *old_remotes;
	struct gdp_remote *old_filtered;
};

void record_view_init(struct rec_view *v);
void record_view_free(struct rec_view *v);
/* Brings v up to the record's generation (see struct rec_view). 0, or
 * -ENOMEM (v is then rebuilt at the next update). Free ch after the pass. */
int record_view_update(struct record *r, struct rec_view *v, struct rec_changes *ch);
void rec_changes_free(struct rec_changes *ch);

/*
 * Writes what changed since the last commit (record.json and/or
 * record-remotes.json): everything changed so far, so at least up to the
 * snapshot's generation. Commits are serialized; one that finds nothing new
 * writes nothing. 0, or -errno with err; a held record writes nothing and
 * fails.
 */
int record_commit(struct record *r, const struct rec_snap *s, char *err, size_t errlen);
/*
 * The same for a writer that wants its change on disk before the pass
 * commits (agent/cni/verbs.c), unless a commit is running or the change
 * would compact record.json: -EALREADY then, nothing done (that commit or
 * the pass's writes it; a compaction stays on the pass's thread). Never
 * queues behind another commit, so the pass waits for at most one.
 */
int record_commit_ahead(struct record *r, char *err, size_t errlen);
/* The fdatasync of the journal line the calling thread's last
 * record_commit_ahead wrote (ms; 0: it wrote none): the disk's part of the
 * commit, for the verbs' log lines. */
double record_ahead_sync_ms(void);

/*
 * Where the files stand: record.json's journal epoch, the journal lines
 * after it, record-remotes.json's identity (inode, size, modification
 * time). The pipeline writes it into status.json after a pass that applied
 * exactly what the files hold; a restart finding the same position adopts
 * the kernel's state as that pass left it (pipeline_adopt).
 */
struct rec_disk_pos {
	bool valid;
	unsigned long epoch;
	size_t lines;
	unsigned long long rem_ino, rem_size, rem_mtime_ns;
};
/* As loaded at open; false: no record was loaded as it is (new, migrated, imported, held). */
bool record_loaded_pos(struct record *r, struct rec_disk_pos *pos);
/* After the last commit, when the files hold exactly generation gen; false otherwise. */
bool record_commit_pos(struct record *r, unsigned long gen, struct rec_disk_pos *pos);
bool rec_disk_pos_equal(const struct rec_disk_pos *a, const struct rec_disk_pos *b);

/* dir's record (record.json with its journal applied) as one record.json
 * document, read-only (tests, inspection). NULL with err. Free it. */
char *record_dump(const char *dir, char *err, size_t errlen);
/* Loads dir's record (all files) as a desired state, read-only (galactic-bpf, tests). */
int record_load_state(const char *dir, struct gdp_state *st, char *err, size_t errlen);

#endif
