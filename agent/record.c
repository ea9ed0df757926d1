/* The node's one durable record (agent/record.h). */
#include "agent/record.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/record_codec.h"
#include "agent/record_index.h"
#include "agent/record_legacy.h"
#include "common/fileio.h"
#include "common/json.h"
#include "common/log.h"
#include "common/grow.h"
#include "common/mac.h"

#define COMP "record"

struct record {
	char dir[4096];
	uint32_t table_min;
	pthread_mutex_t mu;
	/* guarded by mu */
	struct gdp_node node;
	bool have_node;
	int uplink_mtu;
	struct gdp_egress egress;   /* the node's own egress shard (agent/egress) */
	struct rec_vpc *vpcs;
	size_t nvpcs, capvpcs;
	struct rec_att **atts;      /* pointers: a verb may hold one across an unlock */
	size_t natts, capatts;
	/* The attachments by what the verbs look them up by (under mu): by
	 * VPC and id, by the runtime's key (CNI ones), by host interface, by
	 * VPC and address (tag: which of its addresses), by pod MAC. ix_bad:
	 * an insert ran out of memory, the lookups scan until a rebuild succeeds. */
	struct rec_index ix_att, ix_key, ix_host, ix_addr, ix_mac;
	bool ix_bad;
	unsigned long scans;        /* under mu: whole-array scans a removal fell back to (record_scans) */
	bool vcount_bad;            /* under mu: an attachment was counted while its VPC was not listed:
				     * the VPCs' n_atts are recounted before they are used */
	uint16_t argrefs[GDP_ARG_MAX + 1]; /* under mu: attachments holding each number (kept with the index) */
	struct rec_remotes *remotes;
	unsigned long gen;          /* any change */
	unsigned long main_gen;     /* last change of record.json's content */
	unsigned long remotes_gen;  /* last change of the remote set */
	unsigned long saved_main, saved_remotes; /* under commit_mu */
	char held[512];             /* non-empty: damaged file, nothing applied or written */
	/* The commit (record.json + record.journal). */
	bool full_dirty;            /* under mu: the next commit compacts (identity, egress, imports) */
	struct rec_key { char vpc[GDP_ID_MAX + 1], id[GDP_ID_MAX + 1]; } *gone; /* under mu: removed since the last commit, on disk */
	size_t ngone, capgone;
	char *saved_vpcs;           /* under mu: the "vpcs" as last committed (JSON text) */
	bool jvpcs;                 /* under mu: the VPC list may differ from saved_vpcs */
	struct rec_att **jdirty;    /* under mu: attachments changed since the last commit (a->jdirty) */
	size_t njdirty, capjdirty;
	pthread_mutex_t commit_mu;  /* one commit at a time (the pipeline, an import) */
	unsigned long epoch;        /* under commit_mu: record.json's journal epoch */
	int jfd;                    /* under commit_mu: record.journal open to write; -1: the next commit compacts */
	size_t jlines;              /* under commit_mu: commits in the journal */
	size_t joff, jsize;         /* under commit_mu: where the next line goes (the zeroed tail's start); the file's size */
	/* The pipeline's view (record_view_update): what changed since its last update. */
	bool view_reset;            /* under mu: rebuild the view whole (load, import) */
	struct rec_att **vdirty;    /* under mu: attachments changed since (a->vdirty set) */
	size_t nvdirty, capvdirty;
	struct rec_key *vgone;      /* under mu: keys of attachments removed since */
	size_t nvgone, capvgone;
	/* Where the files stand (record_loaded_pos, record_commit_pos). */
	size_t load_lines;          /* journal lines the last load applied */
	struct rec_disk_pos loaded; /* as loaded at open (valid: a record was there, nothing imported) */
	struct rec_disk_pos disk;   /* under commit_mu: after the last commit */
	unsigned long disk_gen;     /* under commit_mu: the generation the files hold (disk.valid) */
};

/* ---- shared remote sets ----------------------------------------------------- */

static struct rec_remotes *remotes_new(size_t n)
{
	struct rec_remotes *x = malloc(sizeof(*x) + (n ? n : 1) * sizeof(x->v[0]));

	if (x) {
		x->refs = 1;
		x->n = n;
	}
	return x;
}

/*
 * The remotes parsed into st, as a rec_remotes without a second copy: the
 * array is grown by the header and slid behind it in place (at 100,000
 * remotes a copy was 10 MB more at the start's peak). st loses them.
 */
static struct rec_remotes *remotes_adopt(struct gdp_state *st)
{
	size_t n = st->n_remotes;
	struct rec_remotes *x = realloc(st->remotes, sizeof(*x) + (n ? n : 1) * sizeof(x->v[0]));

	if (!x)
		return NULL;
	memmove(x->v, (void *)x, n * sizeof(x->v[0]));
	x->refs = 1;
	x->n = n;
	st->remotes = NULL;
	st->n_remotes = st->cap_remotes = 0;
	return x;
}

static struct rec_remotes *remotes_ref(struct rec_remotes *x)
{
	if (x)
		__atomic_add_fetch(&x->refs, 1, __ATOMIC_RELAXED);
	return x;
}

struct rec_remotes *rec_remotes_ref(struct rec_remotes *x)
{
	return remotes_ref(x);
}

static void remotes_unref(struct rec_remotes *x)
{
	if (x && __atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(x);
}

/* ---- what the files hold (each object through agent/record_codec.h) ------- */

static const struct rec_vpc *find_vpc_const(const struct record *r, const char *id);

/* Under mu: an attachment of VPC id (active_only: a desired one), by the
 * VPC's counts (O(VPCs) to find it), by a scan while they are not exact. */
static bool vpc_has_att(const struct record *r, const char *id, bool active_only)
{
	const struct rec_vpc *v = r->vcount_bad ? NULL : find_vpc_const(r, id);

	if (v)
		return active_only ? v->n_active > 0 : v->n_atts > 0;
	for (size_t i = 0; i < r->natts; i++)
		if ((!active_only || r->atts[i]->active) && !strcmp(r->atts[i]->m.vpc, id))
			return true;
	return false;
}

/* Under mu. The VPCs record.json lists: declared ones and those with a
 * desired attachment. */
static json_t *vpcs_json(const struct record *r)
{
	json_t *vs = json_array();

	for (size_t i = 0; i < r->nvpcs; i++) {
		const struct rec_vpc *v = &r->vpcs[i];

		if (v->declared || vpc_has_att(r, v->m.id, true))
			json_array_append_new(vs, rec_vpc_encode(v));
	}
	return vs;
}

/* Under mu. What is desired or declared; reservations of ADDs in flight are
 * not (a number reserved by an ADD that never completed must not outlive a
 * restart). journal: the epoch of the journal that extends this file. */
static char *encode_main(const struct record *r, unsigned long journal)
{
	json_t *o = json_object(), *as = json_array();
	char *text;

	json_object_set_new(o, "version", json_integer(RECORD_VERSION));
	json_object_set_new(o, "journal", json_integer((json_int_t)journal));
	if (r->have_node)
		json_object_set_new(o, "node", rec_node_encode(&r->node, r->uplink_mtu));
	if (r->egress.have)
		json_object_set_new(o, "egressShard", rec_egress_encode(&r->egress));
	for (size_t i = 0; i < r->natts; i++)
		if (r->atts[i]->active)
			json_array_append_new(as, rec_att_encode(r->atts[i]));
	json_object_set_new(o, "vpcs", vpcs_json(r));
	json_object_set_new(o, "attachments", as);
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return text;
}

/*
 * record-remotes.json, streamed to the file (gfile_write_atomic_fn): one
 * element at a time, never the whole text in memory (20 MiB at 100k).
 * Each element by rec_remote_encode.
 */
static int emit_remotes(FILE *f, void *ctx)
{
	const struct rec_remotes *x = ctx;
	int rc;

	fprintf(f, "{\"version\":%d,\"remotes\":[", RECORD_REMOTES_VERSION);
	for (size_t i = 0; x && i < x->n; i++) {
		if (i)
			fputc(',', f);
		if ((rc = rec_remote_encode(f, &x->v[i])))
			return rc;
	}
	fprintf(f, "]}\n");
	return 0;
}

/* ---- loading a directory ---------------------------------------------------- */

static void path_of(const struct record *r, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", r->dir, name);
}

/* ---- the attachments' index (agent/record_index.h) ------------------------- */

static uint64_t h_att(const char *vpc, const char *id)
{
	return rec_index_hash(1, (const char *const[]){ vpc, id }, 2);
}

static uint64_t h_key(const char *network, const char *cid, const char *ifname)
{
	return rec_index_hash(2, (const char *const[]){ network, cid, ifname }, 3);
}

static uint64_t h_host(const char *name)
{
	return rec_index_hash(3, (const char *const[]){ name }, 1);
}

static struct rec_vpc *find_vpc_locked(struct record *r, const char *id);

/* Under mu: a's VPC's counts of attachments (and of desired ones, when a
 * is desired) move by d (kept with the index). */
static void vpc_count(struct record *r, const struct rec_att *a, int d)
{
	struct rec_vpc *v = find_vpc_locked(r, a->m.vpc);

	if (!v) {
		r->vcount_bad = true; /* (an attachment before its VPC: recounted when used) */
	} else if (d > 0) {
		v->n_atts++;
		v->n_active += a->active;
	} else {
		v->n_atts -= v->n_atts > 0;
		v->n_active -= a->active && v->n_active > 0;
	}
}

/* Under mu: a becomes desired or not, its VPC's count with it. */
static void set_active(struct record *r, struct rec_att *a, bool on)
{
	if (a->active == on)
		return;
	vpc_count(r, a, -1);
	a->active = on;
	vpc_count(r, a, 1);
}

/* What gdp_prefix_equal compares (family, length, the address bytes), in the VPC. */
static uint64_t h_addr(const char *vpc, const struct gdp_prefix *p)
{
	static const char hex[] = "0123456789abcdef";
	char b[2 + 2 + 32 + 1], *o = b;

	*o++ = p->family == AF_INET ? '4' : '6';
	*o++ = hex[p->len >> 4];
	*o++ = hex[p->len & 15];
	for (int i = 0; i < (p->family == AF_INET ? 4 : 16); i++) {
		*o++ = hex[p->addr.raw[i] >> 4];
		*o++ = hex[p->addr.raw[i] & 15];
	}
	*o = 0;
	return rec_index_hash(4, (const char *const[]){ vpc, b }, 2);
}

static uint64_t h_mac(const uint8_t m[6])
{
	static const char hex[] = "0123456789abcdef";
	char b[13];

	for (int i = 0; i < 6; i++) {
		b[2 * i] = hex[m[i] >> 4];
		b[2 * i + 1] = hex[m[i] & 15];
	}
	b[12] = 0;
	return rec_index_hash(5, (const char *const[]){ b }, 1);
}

/* Under mu: a enters the index (on failure the index is marked bad, never half-trusted). */
static void index_add(struct record *r, struct rec_att *a)
{
	bool bad = rec_index_put(&r->ix_att, h_att(a->m.vpc, a->m.id), a, 0) != 0;

	if (a->src == REC_SRC_CNI)
		bad |= rec_index_put(&r->ix_key, h_key(a->network, a->m.container_id, a->ifname), a, 0) != 0;
	if (a->m.host_ifname[0])
		bad |= rec_index_put(&r->ix_host, h_host(a->m.host_ifname), a, 0) != 0;
	for (size_t k = 0; k < a->m.n_addrs; k++)
		bad |= rec_index_put(&r->ix_addr, h_addr(a->m.vpc, &a->m.addrs[k]), a, (uint32_t)k) != 0;
	bad |= rec_index_put(&r->ix_mac, h_mac(a->m.pod_mac), a, 0) != 0;
	r->ix_bad |= bad;
	vpc_count(r, a, 1);
	if (a->m.arg <= GDP_ARG_MAX)
		r->argrefs[a->m.arg]++;
}

/* Under mu: a leaves the index (before it is freed). */
static void index_del(struct record *r, struct rec_att *a)
{
	rec_index_del(&r->ix_att, h_att(a->m.vpc, a->m.id), a, 0);
	if (a->src == REC_SRC_CNI)
		rec_index_del(&r->ix_key, h_key(a->network, a->m.container_id, a->ifname), a, 0);
	if (a->m.host_ifname[0])
		rec_index_del(&r->ix_host, h_host(a->m.host_ifname), a, 0);
	for (size_t k = 0; k < a->m.n_addrs; k++)
		rec_index_del(&r->ix_addr, h_addr(a->m.vpc, &a->m.addrs[k]), a, (uint32_t)k);
	rec_index_del(&r->ix_mac, h_mac(a->m.pod_mac), a, 0);
	vpc_count(r, a, -1);
	if (a->m.arg <= GDP_ARG_MAX && r->argrefs[a->m.arg])
		r->argrefs[a->m.arg]--;
}

static void index_clear(struct record *r)
{
	rec_index_clear(&r->ix_att);
	rec_index_clear(&r->ix_key);
	rec_index_clear(&r->ix_host);
	rec_index_clear(&r->ix_addr);
	rec_index_clear(&r->ix_mac);
	for (size_t i = 0; i < r->nvpcs; i++)
		r->vpcs[i].n_atts = r->vpcs[i].n_active = 0;
	r->vcount_bad = false;
	memset(r->argrefs, 0, sizeof(r->argrefs));
	r->ix_bad = false;
}

static void index_free(struct record *r)
{
	rec_index_free(&r->ix_att);
	rec_index_free(&r->ix_key);
	rec_index_free(&r->ix_host);
	rec_index_free(&r->ix_addr);
	rec_index_free(&r->ix_mac);
}

/* Under mu: true when the index can be used (rebuilt whole after a failed insert). */
static bool index_ok(struct record *r)
{
	if (!r->ix_bad)
		return true;
	index_clear(r);
	for (size_t i = 0; i < r->natts; i++)
		index_add(r, r->atts[i]);
	return !r->ix_bad;
}

/* Under mu: the pipeline's view is rebuilt whole at its next update (the
 * record changed in a way the dirty set does not list: load, import). */
static void view_reset_locked(struct record *r)
{
	for (size_t i = 0; i < r->natts; i++)
		r->atts[i]->vdirty = false;
	r->nvdirty = 0;
	r->nvgone = 0;
	r->view_reset = true;
}

/* Under mu: a changed for the next journal line (once in the list). */
static void journal_dirty(struct record *r, struct rec_att *a)
{
	r->jvpcs = true; /* an attachment's state can change which VPCs are listed */
	if (a->jdirty)
		return;
	if (G_GROW(r->jdirty, r->capjdirty, r->njdirty, 16)) {
		r->full_dirty = true; /* the compaction writes it */
		return;
	}
	a->jdirty = true;
	r->jdirty[r->njdirty++] = a;
}

/* Under mu: a leaves the journal's list (before it is freed). */
static void journal_drop(struct record *r, struct rec_att *a)
{
	r->jvpcs = true;
	if (!a->jdirty)
		return;
	for (size_t i = 0; i < r->njdirty; i++)
		if (r->jdirty[i] == a) {
			r->jdirty[i] = r->jdirty[--r->njdirty];
			break;
		}
	a->jdirty = false;
}

/* Under mu: a changed for the view's next update (once in the list). */
static void view_dirty(struct record *r, struct rec_att *a)
{
	if (a->vdirty || r->view_reset)
		return;
	if (G_GROW(r->vdirty, r->capvdirty, r->nvdirty, 16)) {
		view_reset_locked(r); /* the view is rebuilt whole instead */
		return;
	}
	a->vdirty = true;
	r->vdirty[r->nvdirty++] = a;
}

/* Under mu: a leaves the record (before it is freed). */
static void view_gone(struct record *r, struct rec_att *a)
{
	if (a->vdirty) {
		for (size_t i = 0; i < r->nvdirty; i++)
			if (r->vdirty[i] == a) {
				r->vdirty[i] = r->vdirty[--r->nvdirty];
				break;
			}
		a->vdirty = false;
	}
	if (r->view_reset)
		return;
	if (G_GROW(r->vgone, r->capvgone, r->nvgone, 16)) {
		view_reset_locked(r);
		return;
	}
	snprintf(r->vgone[r->nvgone].vpc, sizeof(r->vgone[0].vpc), "%s", a->m.vpc);
	snprintf(r->vgone[r->nvgone].id, sizeof(r->vgone[0].id), "%s", a->m.id);
	r->nvgone++;
}

/* The files' position: record.json's epoch, journal lines, record-remotes.json's identity. */
static void disk_pos(const struct record *r, unsigned long epoch, size_t lines, struct rec_disk_pos *p)
{
	char path[4200];
	struct stat st;

	memset(p, 0, sizeof(*p));
	p->epoch = epoch;
	p->lines = lines;
	path_of(r, RECORD_REMOTES_FILE, path, sizeof(path));
	if (stat(path, &st) == 0) {
		p->rem_ino = (unsigned long long)st.st_ino;
		p->rem_size = (unsigned long long)st.st_size;
		p->rem_mtime_ns = (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec;
	}
	p->valid = true;
}

/* Under mu (or before the record is shared): drops everything in memory. */
static void clear_locked(struct record *r)
{
	for (size_t i = 0; i < r->natts; i++) {
		rec_att_clear(r->atts[i]);
		free(r->atts[i]);
	}
	r->natts = 0;
	index_clear(r);
	r->nvpcs = 0;
	r->ngone = 0;
	r->have_node = false;
	memset(&r->egress, 0, sizeof(r->egress));
	remotes_unref(r->remotes);
	r->remotes = NULL;
	r->njdirty = 0; /* the next commit compacts (full_dirty) */
	r->jvpcs = true;
	view_reset_locked(r);
}

static int add_vpc_locked(struct record *r, const struct rec_vpc *v)
{
	int rc = G_GROW(r->vpcs, r->capvpcs, r->nvpcs, 16);

	if (rc)
		return rc;
	r->vpcs[r->nvpcs] = *v;
	r->vpcs[r->nvpcs].n_atts = 0; /* counted by index_add (one counted before it: vcount_bad) */
	r->vpcs[r->nvpcs++].n_active = 0;
	return 0;
}

/* Takes ownership of a's members; returns the record's copy. */
static struct rec_att *add_att_locked(struct record *r, struct rec_att *a)
{
	struct rec_att *x;

	if (G_GROW(r->atts, r->capatts, r->natts, 64))
		return NULL;
	x = malloc(sizeof(*x));
	if (!x)
		return NULL;
	*x = *a;
	a->netns = NULL;
	a->config = NULL;
	x->slot = r->natts;
	r->atts[r->natts++] = x;
	index_add(r, x);
	return x;
}

static const struct rec_vpc *find_vpc_const(const struct record *r, const char *id)
{
	for (size_t i = 0; i < r->nvpcs; i++)
		if (!strcmp(r->vpcs[i].m.id, id))
			return &r->vpcs[i];
	return NULL;
}

static struct rec_vpc *find_vpc_locked(struct record *r, const char *id)
{
	for (size_t i = 0; i < r->nvpcs; i++)
		if (!strcmp(r->vpcs[i].m.id, id))
			return &r->vpcs[i];
	return NULL;
}

static void drop_vpc_if_unused(struct record *r, const char *id)
{
	struct rec_vpc *v = find_vpc_locked(r, id);

	if (r->vcount_bad) { /* (never on a healthy record: every attachment came after its VPC) */
		r->scans++;
		for (size_t i = 0; i < r->nvpcs; i++)
			r->vpcs[i].n_atts = r->vpcs[i].n_active = 0;
		r->vcount_bad = false;
		for (size_t i = 0; i < r->natts; i++)
			vpc_count(r, r->atts[i], 1);
		if (r->vcount_bad) { /* an attachment whose VPC is not listed: as before, a scan */
			if (v && !v->declared && !vpc_has_att(r, id, false))
				*v = r->vpcs[--r->nvpcs];
			return;
		}
	}
	/* its count of attachments, not a scan of the node's */
	if (v && !v->declared && !v->n_atts)
		*v = r->vpcs[--r->nvpcs];
}

/* Loads both files into r (under mu or unshared). 0, -ENOENT (no record), or
 * -EINVAL with err (damaged: r then holds nothing). */
static int load_dir_once(struct record *r, bool *stale, char *err, size_t errlen)
{
	char path[4200], *text = NULL, why[400];
	struct rec_data d;
	struct gdp_state rs;
	size_t len;
	int rc;

	*stale = false;

	path_of(r, RECORD_FILE, path, sizeof(path));
	rc = gfile_read(path, RECORD_MAX_BYTES, &text, &len);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc)
		return snprintf(err, errlen, "%s: %s", path, strerror(-rc)), rc;
	rc = record_parse(text, len, &d, why, sizeof(why));
	free(text);
	if (rc)
		return snprintf(err, errlen, "%s: %s", path, why), -EINVAL;
	path_of(r, RECORD_JOURNAL_FILE, path, sizeof(path));
	rc = gfile_read(path, RECORD_MAX_BYTES, &text, &len);
	if (rc && rc != -ENOENT) {
		record_data_free(&d);
		return snprintf(err, errlen, "%s: %s", path, strerror(-rc)), rc;
	}
	if (!rc) {
		size_t lines = 0;
		bool torn = false;

		rc = record_parse_journal(text, len, &d, &lines, &torn, why, sizeof(why));
		free(text);
		r->load_lines = rc == 0 ? lines : 0;
		if (rc < 0) {
			record_data_free(&d);
			return snprintf(err, errlen, "%s: %s", path, why), -EINVAL;
		}
		if (rc == 1 && r->jfd == -2) {
			/* a reader beside the agent caught a compaction half-way: read again */
			*stale = true;
			record_data_free(&d);
			return -EAGAIN;
		}
		if (rc == 1)
			glogf(GLOG_INFO, COMP, "%s: another epoch than %s (compacted into it): ignored", path,
			      RECORD_FILE);
		if (torn)
			glogf(GLOG_WARN, COMP, "%s: its last line was never completed (a crash while committing): dropped",
			      path);
	}
	clear_locked(r);
	r->epoch = d.journal;
	r->node = d.node;
	r->have_node = d.have_node;
	r->uplink_mtu = d.uplink_mtu;
	r->egress = d.egress;
	for (size_t i = 0; i < d.nvpcs; i++)
		if (add_vpc_locked(r, &d.vpcs[i]))
			goto nomem;
	for (size_t i = 0; i < d.natts; i++) {
		struct rec_att *x = add_att_locked(r, &d.atts[i]);

		if (!x)
			goto nomem;
		x->on_disk = true;
	}
	record_data_free(&d);

	path_of(r, RECORD_REMOTES_FILE, path, sizeof(path));
	rc = gfile_read(path, RECORD_MAX_BYTES, &text, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return snprintf(err, errlen, "%s: %s", path, strerror(-rc)), rc;
	gdp_state_init(&rs);
	/* each remote is more than 32 bytes of JSON: room for as many as the
	 * file can hold, reserved (pages never written cost nothing), so the
	 * array is not grown by doubling through copies; not reserved
	 * (ENOMEM), it grows as before */
	(void)gdp_state_reserve_remotes(&rs, len / 32 + 1);
	rc = record_parse_remotes(text, len, &rs, why, sizeof(why));
	free(text);
	if (!rc) {
		r->remotes = remotes_adopt(&rs);
		if (!r->remotes)
			rc = -ENOMEM, snprintf(why, sizeof(why), "out of memory");
	}
	gdp_state_free(&rs);
	if (rc) {
		clear_locked(r);
		return snprintf(err, errlen, "%s: %s", path, why), -EINVAL;
	}
	return 0;
nomem:
	record_data_free(&d);
	clear_locked(r);
	return snprintf(err, errlen, "%s: out of memory", path), -ENOMEM;
}

/* The agent's own load (r->jfd -1): a journal of another epoch is the trace
 * of a compaction a crash cut short, ignored. A read-only reader beside a
 * running agent (r->jfd -2: record_dump, record_load_state) may read
 * record.json and the journal across a compaction: it reads both again. */
static int load_dir_locked(struct record *r, char *err, size_t errlen)
{
	bool stale = false;
	int rc = 0;

	for (int i = 0; i < 50; i++) {
		rc = load_dir_once(r, &stale, err, errlen);
		if (!stale)
			return rc;
		usleep(2000);
	}
	snprintf(err, errlen, "%s/%s: changing under the reader (a compaction every read)", r->dir, RECORD_JOURNAL_FILE);
	return -EAGAIN;
}

/* ---- allocator ------------------------------------------------------------ */

/* Under mu. The lowest VPC number free in both numbers and tables. */
static int alloc_vpc_arg(struct record *r, uint16_t *out)
{
	for (uint16_t a = 1; a <= GDP_ARG_MAX; a++) {
		bool used = false;

		for (size_t i = 0; i < r->nvpcs && !used; i++)
			used = r->vpcs[i].m.arg == a || r->vpcs[i].m.table == r->table_min + a;
		if (!used) {
			*out = a;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Under mu. The lowest attachment number no attachment (reserved or not)
 * has: the counts kept with the index, not a walk of every attachment. */
static int alloc_att_arg(struct record *r, uint16_t *out)
{
	for (uint16_t a = 1; a <= GDP_ARG_MAX; a++)
		if (!r->argrefs[a]) {
			*out = a;
			return 0;
		}
	return -ENOSPC;
}

/* ---- cni-attachments.json (the old CNI server's record) ------------------ */

/* Its format: docs/cni.md ("Upgrading"); model fields as the old server
 * derived them from the stored configuration. */

/* One entry; why says which field is wrong. */
static int legacy_cni_att(json_t *v, struct rec_att *a, char *why, size_t n)
{
	json_t *cfg = json_object_get(v, "config"), *x;
	char hm[20] = "", m[20] = "", netns[4096] = "";
	size_t i;

	memset(a, 0, sizeof(*a));
	a->src = REC_SRC_CNI;
	a->active = true;
	if (rec_jcopy(v, "network", a->network, sizeof(a->network), true) ||
	    rec_jcopy(v, "containerID", a->m.container_id, sizeof(a->m.container_id), true) ||
	    rec_jcopy(v, "ifname", a->ifname, sizeof(a->ifname), true) ||
	    rec_jcopy(v, "netns", netns, sizeof(netns), false) ||
	    rec_jcopy(v, "podNamespace", a->pod_ns, sizeof(a->pod_ns), false) ||
	    rec_jcopy(v, "podName", a->pod_name, sizeof(a->pod_name), false) ||
	    rec_jcopy(v, "podUID", a->pod_uid, sizeof(a->pod_uid), false) ||
	    rec_jcopy(v, "hostIfname", a->m.host_ifname, sizeof(a->m.host_ifname), true))
		return snprintf(why, n, "a string field is missing or too long"), -EINVAL;
	if (rec_jcopy(v, "hostMac", hm, sizeof(hm), false) || rec_jcopy(v, "mac", m, sizeof(m), false) ||
	    (hm[0] && gmac_parse(hm, a->host_mac)) || (m[0] && gmac_parse(m, a->m.pod_mac)))
		return snprintf(why, n, "\"hostMac\" / \"mac\" is not a MAC address"), -EINVAL;
	x = json_object_get(v, "arg");
	if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > GDP_ARG_MAX)
		return snprintf(why, n, "\"arg\" must be 1-%d", GDP_ARG_MAX), -EINVAL;
	a->m.arg = (uint16_t)json_integer_value(x);
	x = json_object_get(v, "mtu");
	if (x && (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 65535))
		return snprintf(why, n, "\"mtu\" out of range"), -EINVAL;
	a->m.mtu = x ? (uint32_t)json_integer_value(x) : 0;
	if (!json_is_object(cfg) || rec_jcopy(cfg, "vpc", a->m.vpc, sizeof(a->m.vpc), true) ||
	    rec_jcopy(cfg, "vpcattachment", a->m.id, sizeof(a->m.id), true))
		return snprintf(why, n, "\"config\" has no \"vpc\" / \"vpcattachment\""), -EINVAL;
	json_array_foreach(json_object_get(cfg, "addresses"), i, x) {
		const char *s = rec_jstr(x, "address");
		struct gdp_prefix p;

		if (a->m.n_addrs == GDP_ADDRS_MAX || !s || gdp_prefix_parse(s, &p))
			return snprintf(why, n, "config.addresses[%zu] is not an address", i), -EINVAL;
		/* The pod's address as a host prefix, as the old server derived it. */
		p.len = p.family == AF_INET ? 32 : 128;
		a->m.addrs[a->m.n_addrs++] = p;
		if (p.family == AF_INET)
			a->m.nh4 = gdp_default_nh4(a->m.arg);
	}
	{
		int badf;

		a->egress = rec_families_decode(json_object_get(json_object_get(json_object_get(cfg, "egress"), "internet"),
							   "families"), &badf);
	}
	a->config = json_incref(cfg);
	a->netns = netns[0] ? strdup(netns) : NULL;
	return 0;
}

static int legacy_load_cni(const char *dir, struct rec_att **atts, size_t *natts, struct rec_vpc **vpcs,
		    size_t *nvpcs, char *err, size_t errlen)
{
	char path[4200], why[200];
	json_error_t je;
	json_t *o, *v;
	size_t i;

	*atts = NULL;
	*vpcs = NULL;
	*natts = *nvpcs = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, LEGACY_CNI);
	if (access(path, F_OK) < 0)
		return -ENOENT;
	o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o) || json_integer_value(json_object_get(o, "version")) != 1) {
		snprintf(err, errlen, "%s: %s", path, o ? "not a version 1 CNI record" : je.text);
		json_decref(o);
		return -EINVAL;
	}
	*vpcs = calloc(json_array_size(json_object_get(o, "vpcs")) + 1, sizeof(**vpcs));
	*atts = calloc(json_array_size(json_object_get(o, "attachments")) + 1, sizeof(**atts));
	if (!*vpcs || !*atts)
		goto nomem;
	json_array_foreach(json_object_get(o, "vpcs"), i, v) {
		struct rec_vpc *rv = &(*vpcs)[*nvpcs];
		json_t *a = json_object_get(v, "arg"), *t = json_object_get(v, "table");

		if (rec_jcopy(v, "id", rv->m.id, sizeof(rv->m.id), true) || !json_is_integer(a) ||
		    json_integer_value(a) < 1 || json_integer_value(a) > GDP_ARG_MAX || !json_is_integer(t) ||
		    json_integer_value(t) < 1 || json_integer_value(t) > 0xFFFFFFFFLL) {
			snprintf(err, errlen, "%s: vpcs[%zu] is malformed (id, arg 1-%d, table)", path, i,
				 GDP_ARG_MAX);
			goto bad;
		}
		rv->m.arg = (uint16_t)json_integer_value(a);
		rv->m.table = (uint32_t)json_integer_value(t);
		(*nvpcs)++;
	}
	json_array_foreach(json_object_get(o, "attachments"), i, v) {
		if (legacy_cni_att(v, &(*atts)[*natts], why, sizeof(why))) {
			rec_att_clear(&(*atts)[*natts]);
			snprintf(err, errlen, "%s: attachments[%zu]: %s", path, i, why);
			goto bad;
		}
		(*natts)++;
	}
	json_decref(o);
	return 0;
nomem:
	snprintf(err, errlen, "%s: out of memory", path);
bad:
	json_decref(o);
	record_atts_free(*atts, *natts);
	free(*vpcs);
	*atts = NULL;
	*vpcs = NULL;
	*natts = *nvpcs = 0;
	return -EINVAL;
}

/* ---- legacy import ----------------------------------------------------------- */

static bool file_exists(const struct record *r, const char *name)
{
	char p[4200];

	path_of(r, name, p, sizeof(p));
	return access(p, F_OK) == 0;
}

static void aside(const struct record *r, const char *name)
{
	char a[4200], b[4300];

	path_of(r, name, a, sizeof(a));
	snprintf(b, sizeof(b), "%s%s", a, LEGACY_ASIDE_SUFFIX);
	if (rename(a, b) < 0)
		glogf(GLOG_WARN, COMP, "rename %s aside: %s", a, strerror(errno));
}

/* Under mu: state.json's node, VPCs and attachments replace the declared ones. */
static int import_state_locked(struct record *r, const struct gdp_state *st)
{
	view_reset_locked(r); /* declared attachments are replaced below */
	if (st->node.node_id) {
		r->node = st->node;
		r->have_node = true;
	}
	for (size_t i = 0; i < r->nvpcs; i++)
		r->vpcs[i].declared = false;
	for (size_t i = 0; i < r->natts;) {
		if (r->atts[i]->src == REC_SRC_DECLARED) {
			index_del(r, r->atts[i]);
			journal_drop(r, r->atts[i]);
			rec_att_clear(r->atts[i]);
			free(r->atts[i]);
			r->atts[i] = r->atts[--r->natts];
			if (i < r->natts)
				r->atts[i]->slot = i;
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < st->n_vpcs; i++) {
		struct rec_vpc *v = find_vpc_locked(r, st->vpcs[i].id), nv = { .m = st->vpcs[i], .declared = true };

		if (v) {
			nv.n_atts = v->n_atts; /* its attachments stay */
			nv.n_active = v->n_active;
			*v = nv;
		}
		else if (add_vpc_locked(r, &nv))
			return -ENOMEM;
	}
	for (size_t i = 0; i < st->n_atts; i++) {
		struct rec_att a = { .m = st->atts[i], .src = REC_SRC_DECLARED, .active = true };
		struct rec_att *o = record_find_att(r, a.m.vpc, a.m.id);

		if (o) {
			glogf(GLOG_WARN, COMP, "state.json: attachment %s/%s is already attached through CNI; kept that one",
			      a.m.vpc, a.m.id);
			continue;
		}
		if (!add_att_locked(r, &a))
			return -ENOMEM;
	}
	/* CNI VPCs that lost their declaration keep their numbers while used. */
	for (size_t i = r->nvpcs; i-- > 0;)
		drop_vpc_if_unused(r, r->vpcs[i].m.id);
	return 0;
}

static int set_remotes_locked(struct record *r, const struct gdp_remote *v, size_t n)
{
	struct rec_remotes *x = remotes_new(n);

	if (!x)
		return -ENOMEM;
	if (n)
		memcpy(x->v, v, n * sizeof(*v));
	remotes_unref(r->remotes);
	r->remotes = x;
	r->remotes_gen = ++r->gen;
	return 0;
}

int record_import_legacy(struct record *r, char *err, size_t errlen)
{
	bool has_state = file_exists(r, LEGACY_STATE), has_rem = file_exists(r, LEGACY_REMOTES);
	bool has_cni = file_exists(r, LEGACY_CNI);
	struct gdp_results bad;
	struct gdp_state st;
	struct rec_att *ca = NULL;
	struct rec_vpc *cv = NULL;
	size_t nca = 0, ncv = 0;
	int rc = 0, n = 0;

	if (!has_state && !has_rem && !has_cni)
		return 0;
	gdp_results_init(&bad);
	/* Parse everything first: a file that does not parse changes nothing. */
	rc = legacy_load(r->dir, &st, &bad, err, errlen);
	if (rc) {
		gdp_results_free(&bad);
		return rc;
	}
	for (size_t i = 0; i < bad.n; i++)
		glogf(GLOG_ERROR, COMP, "import: %s (skipped)", bad.v[i].msg);
	gdp_results_free(&bad);
	if (has_cni && (rc = legacy_load_cni(r->dir, &ca, &nca, &cv, &ncv, err, errlen))) {
		gdp_state_free(&st);
		return rc;
	}
	pthread_mutex_lock(&r->mu);
	if (r->held[0]) {
		pthread_mutex_unlock(&r->mu);
		snprintf(err, errlen, "record held (%s): nothing imported", r->held);
		gdp_state_free(&st);
		record_atts_free(ca, nca);
		free(cv);
		return -EBUSY;
	}
	if (has_state && !rc) {
		rc = import_state_locked(r, &st);
		n++;
	}
	if (has_rem && !rc) {
		struct rec_remotes *x = remotes_adopt(&st); /* st's array, not a copy */

		if (x) {
			remotes_unref(r->remotes);
			r->remotes = x;
			r->remotes_gen = ++r->gen;
		} else {
			rc = -ENOMEM;
		}
		n++;
	}
	for (size_t i = 0; has_cni && !rc && i < nca; i++) {
		struct rec_att *a = &ca[i];

		if (record_find_att(r, a->m.vpc, a->m.id))
			continue; /* the record knows it better */
		if (!find_vpc_locked(r, a->m.vpc)) {
			struct rec_vpc nv = { 0 };

			for (size_t k = 0; k < ncv; k++)
				if (!strcmp(cv[k].m.id, a->m.vpc))
					nv = cv[k];
			if (!nv.m.arg) {
				glogf(GLOG_ERROR, COMP, "%s: attachment %s/%s names a VPC without a number; skipped",
				      LEGACY_CNI, a->m.vpc, a->m.id);
				continue;
			}
			if (add_vpc_locked(r, &nv)) {
				rc = -ENOMEM;
				break;
			}
		}
		if (!add_att_locked(r, a))
			rc = -ENOMEM;
	}
	n += has_cni;
	r->main_gen = ++r->gen;
	r->full_dirty = true;
	view_reset_locked(r);
	pthread_mutex_unlock(&r->mu);
	gdp_state_free(&st);
	record_atts_free(ca, nca);
	free(cv);
	if (rc) {
		snprintf(err, errlen, "import: out of memory");
		return rc;
	}
	/* The record first (durable), then the old files go aside: a crash in
	 * between imports them again, which changes nothing. */
	{
		struct rec_snap s;

		if ((rc = record_snapshot(r, &s)))
			return snprintf(err, errlen, "import: out of memory"), rc;
		rc = record_commit(r, &s, err, errlen);
		record_snap_free(&s);
		if (rc)
			return rc;
	}
	if (has_state)
		aside(r, LEGACY_STATE);
	if (has_rem)
		aside(r, LEGACY_REMOTES);
	if (has_cni)
		aside(r, LEGACY_CNI);
	glogf(GLOG_INFO, COMP, "imported%s%s%s into %s/%s (old files renamed *%s)",
	      has_state ? " " LEGACY_STATE : "", has_rem ? " " LEGACY_REMOTES : "",
	      has_cni ? " " LEGACY_CNI : "", r->dir, RECORD_FILE, LEGACY_ASIDE_SUFFIX);
	return n;
}

/* ---- lifecycle ------------------------------------------------------------- */

int record_open(struct record **out, const struct record_opts *o, char *err, size_t errlen)
{
	struct record *r;
	int rc;

	*out = NULL;
	if (!o->dir || !*o->dir)
		return snprintf(err, errlen, "record: needs a state directory"), -EINVAL;
	rc = gfile_mkdir_p(o->dir, 0700);
	if (rc)
		return snprintf(err, errlen, "record: create %s: %s", o->dir, strerror(-rc)), rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return snprintf(err, errlen, "record: out of memory"), -ENOMEM;
	snprintf(r->dir, sizeof(r->dir), "%s", o->dir);
	r->table_min = o->table_min ? o->table_min : GDP_TABLE_MIN_DEFAULT;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->commit_mu, NULL);
	r->jfd = -1;
	rc = load_dir_locked(r, r->held, sizeof(r->held));
	if (rc == -ENOENT) {
		r->held[0] = 0;
		r->main_gen = r->gen = 1; /* a new record: written at the first commit */
		r->full_dirty = true;
	} else if (rc) {
		glogf(GLOG_ERROR, COMP, "record damaged: %s; the kernel is left as it is and nothing is written until the file is repaired or removed (then SIGHUP)",
		      r->held);
	} else {
		glogf(GLOG_INFO, COMP, "loaded %s/%s: %zu VPCs, %zu attachments, %zu remotes", r->dir,
		      RECORD_FILE, r->nvpcs, r->natts, r->remotes ? r->remotes->n : 0);
		disk_pos(r, r->epoch, r->load_lines, &r->loaded);
	}
	*out = r;
	if (!r->held[0]) {
		char ierr[512];
		int n = record_import_legacy(r, ierr, sizeof(ierr));

		if (n < 0)
			glogf(GLOG_ERROR, COMP, "legacy files not imported: %s", ierr);
		if (n)
			r->loaded.valid = false; /* the files changed: not what the kernel was given */
	}
	return 0;
}

bool record_loaded_pos(struct record *r, struct rec_disk_pos *pos)
{
	pthread_mutex_lock(&r->commit_mu);
	*pos = r->loaded;
	pthread_mutex_unlock(&r->commit_mu);
	return pos->valid;
}

bool record_commit_pos(struct record *r, unsigned long gen, struct rec_disk_pos *pos)
{
	bool ok;

	pthread_mutex_lock(&r->commit_mu);
	ok = r->disk.valid && r->disk_gen == gen;
	*pos = r->disk;
	pthread_mutex_unlock(&r->commit_mu);
	pos->valid = ok;
	return ok;
}

bool rec_disk_pos_equal(const struct rec_disk_pos *a, const struct rec_disk_pos *b)
{
	return a->valid && b->valid && a->epoch == b->epoch && a->lines == b->lines && a->rem_ino == b->rem_ino &&
	       a->rem_size == b->rem_size && a->rem_mtime_ns == b->rem_mtime_ns;
}

int record_retry_load(struct record *r, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&r->mu);
	if (!r->held[0]) {
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	rc = load_dir_locked(r, err, errlen);
	if (rc == -ENOENT || rc == 0) {
		r->held[0] = 0;
		r->main_gen = ++r->gen;
		r->full_dirty = true;
		rc = 0;
	} else {
		snprintf(r->held, sizeof(r->held), "%s", err);
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void record_close(struct record *r)
{
	if (!r)
		return;
	clear_locked(r);
	index_free(r);
	free(r->atts);
	free(r->vpcs);
	free(r->gone);
	free(r->vdirty);
	free(r->vgone);
	free(r->jdirty);
	free(r->saved_vpcs);
	if (r->jfd >= 0)
		close(r->jfd);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->commit_mu);
	free(r);
}

const char *record_held(struct record *r, char *buf, size_t n)
{
	bool h;

	pthread_mutex_lock(&r->mu);
	h = r->held[0] != 0;
	snprintf(buf, n, "%s", r->held);
	pthread_mutex_unlock(&r->mu);
	return h ? buf : NULL;
}

/* ---- writers ----------------------------------------------------------------- */

int record_set_node_identity(struct record *r, const struct gdp_node *n, int uplink_mtu)
{
	pthread_mutex_lock(&r->mu);
	if (!r->have_node || memcmp(&r->node, n, sizeof(*n)) || r->uplink_mtu != uplink_mtu) {
		r->node = *n;
		r->have_node = true;
		r->uplink_mtu = uplink_mtu;
		r->main_gen = ++r->gen;
		r->full_dirty = true; /* rare: a compaction carries it */
	}
	pthread_mutex_unlock(&r->mu);
	return 0;
}

bool record_node_identity(struct record *r, struct gdp_node *n, int *uplink_mtu)
{
	bool h;

	pthread_mutex_lock(&r->mu);
	h = r->have_node;
	if (n)
		*n = r->node;
	if (uplink_mtu)
		*uplink_mtu = r->uplink_mtu;
	pthread_mutex_unlock(&r->mu);
	return h;
}

int record_set_egress(struct record *r, const struct gdp_egress *e)
{
	struct gdp_egress none = { 0 };

	if (!e)
		e = &none;
	pthread_mutex_lock(&r->mu);
	if (memcmp(&r->egress, e, sizeof(*e))) {
		r->egress = *e;
		r->main_gen = ++r->gen;
		r->full_dirty = true;
	}
	pthread_mutex_unlock(&r->mu);
	return 0;
}

bool record_egress(struct record *r, struct gdp_egress *e)
{
	bool h;

	pthread_mutex_lock(&r->mu);
	*e = r->egress;
	h = r->egress.have;
	pthread_mutex_unlock(&r->mu);
	return h;
}

/* The same set in the same order (what the learner hands over when nothing changed). */
static bool same_remotes(const struct rec_remotes *x, const struct gdp_remote *v, size_t n)
{
	if (!x || x->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (x->v[i].vpc_ix != v[i].vpc_ix || !gdp_prefix_equal(&x->v[i].prefix, &v[i].prefix) ||
		    memcmp(&x->v[i].sid, &v[i].sid, sizeof(v[i].sid)))
			return false;
	return true;
}

int record_set_remotes(struct record *r, const struct gdp_remote *v, size_t n)
{
	int rc;

	pthread_mutex_lock(&r->mu);
	rc = same_remotes(r->remotes, v, n) ? 1 : set_remotes_locked(r, v, n);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void record_lock(struct record *r) { pthread_mutex_lock(&r->mu); }
void record_unlock(struct record *r) { pthread_mutex_unlock(&r->mu); }
size_t record_n_atts(struct record *r) { return r->natts; }
struct rec_att *record_att(struct record *r, size_t i) { return i < r->natts ? r->atts[i] : NULL; }
bool record_is_held(struct record *r) { return r->held[0] != 0; }
unsigned long record_gen_locked(struct record *r) { return r->gen; }
unsigned long record_scans(struct record *r) { return r->scans; }

static bool is_key(const struct rec_att *a, const char *network, const char *cid, const char *ifname)
{
	return a->src == REC_SRC_CNI && !strcmp(a->network, network) && !strcmp(a->m.container_id, cid) &&
	       !strcmp(a->ifname, ifname);
}

static bool is_att(const struct rec_att *a, const char *vpc, const char *id)
{
	return !strcmp(a->m.vpc, vpc) && !strcmp(a->m.id, id);
}

/* The lookups below: by the index (O(1)), or by a scan while it cannot be trusted. */
struct rec_att *record_find_key(struct record *r, const char *network, const char *cid, const char *ifname)
{
	uint64_t h = h_key(network, cid, ifname);

	if (!index_ok(r)) {
		for (size_t i = 0; i < r->natts; i++)
			if (is_key(r->atts[i], network, cid, ifname))
				return r->atts[i];
		return NULL;
	}
	for (size_t s = rec_index_first(&r->ix_key, h); s != REC_INDEX_END; s = rec_index_next(&r->ix_key, h, s))
		if (is_key(r->ix_key.s[s].p, network, cid, ifname))
			return r->ix_key.s[s].p;
	return NULL;
}

struct rec_att *record_find_att(struct record *r, const char *vpc, const char *att)
{
	uint64_t h = h_att(vpc, att);

	if (!index_ok(r)) {
		for (size_t i = 0; i < r->natts; i++)
			if (is_att(r->atts[i], vpc, att))
				return r->atts[i];
		return NULL;
	}
	for (size_t s = rec_index_first(&r->ix_att, h); s != REC_INDEX_END; s = rec_index_next(&r->ix_att, h, s))
		if (is_att(r->ix_att.s[s].p, vpc, att))
			return r->ix_att.s[s].p;
	return NULL;
}

struct rec_att *record_find_host(struct record *r, const char *host_ifname)
{
	uint64_t h = h_host(host_ifname);

	if (!host_ifname[0])
		return NULL;
	if (!index_ok(r)) {
		for (size_t i = 0; i < r->natts; i++)
			if (!strcmp(r->atts[i]->m.host_ifname, host_ifname))
				return r->atts[i];
		return NULL;
	}
	for (size_t s = rec_index_first(&r->ix_host, h); s != REC_INDEX_END; s = rec_index_next(&r->ix_host, h, s))
		if (!strcmp(((struct rec_att *)r->ix_host.s[s].p)->m.host_ifname, host_ifname))
			return r->ix_host.s[s].p;
	return NULL;
}

static bool is_guest(const struct rec_att *a, const uint8_t mac[6])
{
	return a->active && a->m.guest_addressed && !memcmp(a->m.pod_mac, mac, 6);
}

struct rec_att *record_find_guest(struct record *r, const uint8_t mac[6])
{
	uint64_t h = h_mac(mac);

	if (!index_ok(r)) {
		for (size_t i = 0; i < r->natts; i++)
			if (is_guest(r->atts[i], mac))
				return r->atts[i];
		return NULL;
	}
	for (size_t s = rec_index_first(&r->ix_mac, h); s != REC_INDEX_END; s = rec_index_next(&r->ix_mac, h, s))
		if (is_guest(r->ix_mac.s[s].p, mac))
			return r->ix_mac.s[s].p;
	return NULL;
}

void record_set_macs(struct record *r, struct rec_att *a, const uint8_t pod_mac[6], const uint8_t host_mac[6])
{
	if (memcmp(a->m.pod_mac, pod_mac, 6)) {
		rec_index_del(&r->ix_mac, h_mac(a->m.pod_mac), a, 0);
		memcpy(a->m.pod_mac, pod_mac, 6);
		r->ix_bad |= rec_index_put(&r->ix_mac, h_mac(a->m.pod_mac), a, 0) != 0;
	}
	memcpy(a->host_mac, host_mac, 6);
}

struct rec_att *record_find_addr(struct record *r, const char *vpc, const struct gdp_prefix *p)
{
	uint64_t h = h_addr(vpc, p);

	if (!index_ok(r)) {
		for (size_t i = 0; i < r->natts; i++)
			for (size_t k = 0; k < r->atts[i]->m.n_addrs; k++)
				if (!strcmp(r->atts[i]->m.vpc, vpc) && gdp_prefix_equal(&r->atts[i]->m.addrs[k], p))
					return r->atts[i];
		return NULL;
	}
	for (size_t s = rec_index_first(&r->ix_addr, h); s != REC_INDEX_END; s = rec_index_next(&r->ix_addr, h, s)) {
		struct rec_att *a = r->ix_addr.s[s].p;
		uint32_t k = r->ix_addr.s[s].tag;

		if (k < a->m.n_addrs && !strcmp(a->m.vpc, vpc) && gdp_prefix_equal(&a->m.addrs[k], p))
			return a;
	}
	return NULL;
}

const struct rec_vpc *record_find_vpc(struct record *r, const char *id)
{
	return find_vpc_locked(r, id);
}

struct rec_att *record_reserve(struct record *r, struct rec_att *a, char *err, size_t errlen)
{
	struct rec_vpc *v = find_vpc_locked(r, a->m.vpc);
	bool new_vpc = false;
	struct rec_att *x;

	if (!v) {
		struct rec_vpc nv = { 0 };

		if (alloc_vpc_arg(r, &nv.m.arg)) {
			snprintf(err, errlen, "vpc %s: all %d VPC numbers of this node are in use", a->m.vpc, GDP_ARG_MAX);
			return NULL;
		}
		snprintf(nv.m.id, sizeof(nv.m.id), "%s", a->m.vpc);
		nv.m.table = r->table_min + nv.m.arg;
		if (add_vpc_locked(r, &nv)) {
			snprintf(err, errlen, "vpc %s: out of memory", a->m.vpc);
			return NULL;
		}
		new_vpc = true;
	}
	if (alloc_att_arg(r, &a->m.arg)) {
		snprintf(err, errlen, "vpc %s attachment %s: all %d attachment numbers are in use", a->m.vpc,
			 a->m.id, GDP_ARG_MAX);
		goto undo;
	}
	a->m.nh4.s_addr = 0;
	for (size_t k = 0; k < a->m.n_addrs; k++)
		if (a->m.addrs[k].family == AF_INET)
			a->m.nh4 = gdp_default_nh4(a->m.arg);
	if (a->m.guest_addressed) /* its IPv4 address, once learned, is decapsulated to it */
		a->m.nh4 = gdp_default_nh4(a->m.arg);
	a->active = false;
	x = add_att_locked(r, a);
	if (x)
		return x;
	snprintf(err, errlen, "vpc %s attachment %s: out of memory", a->m.vpc, a->m.id);
undo:
	if (new_vpc)
		drop_vpc_if_unused(r, a->m.vpc);
	return NULL;
}

unsigned long record_activate(struct record *r, struct rec_att *a)
{
	set_active(r, a, true);
	view_dirty(r, a);
	journal_dirty(r, a);
	return a->jgen = r->main_gen = ++r->gen;
}

unsigned long record_add_addr(struct record *r, struct rec_att *a, const struct gdp_prefix *p)
{
	if (a->m.n_addrs >= GDP_ADDRS_MAX)
		return 0;
	a->m.addrs[a->m.n_addrs++] = *p;
	r->ix_bad |= rec_index_put(&r->ix_addr, h_addr(a->m.vpc, p), a, (uint32_t)(a->m.n_addrs - 1)) != 0;
	view_dirty(r, a);
	journal_dirty(r, a);
	return a->jgen = r->main_gen = ++r->gen; /* the journal puts it again */
}

bool record_remote_overlaps(struct record *r, const char *vpc, const struct gdp_prefix *p)
{
	for (size_t i = 0; r->remotes && i < r->remotes->n; i++) {
		const struct gdp_remote *x = &r->remotes->v[i];

		if (!strcmp(gdp_remote_vpc(x), vpc) && x->prefix.family == p->family &&
		    (gdp_prefix_contains(&x->prefix, p) || gdp_prefix_contains(p, &x->prefix)))
			return true;
	}
	return false;
}

unsigned long record_deactivate(struct record *r, struct rec_att *a)
{
	set_active(r, a, false);
	view_dirty(r, a);
	journal_dirty(r, a);
	return a->jgen = r->main_gen = ++r->gen;
}

/* Under mu: a removed attachment that is on disk leaves by a journal "del". */
static void note_gone(struct record *r, const struct rec_att *a)
{
	if (!a->on_disk)
		return;
	if (G_GROW(r->gone, r->capgone, r->ngone, 16)) {
		r->full_dirty = true; /* the compaction drops it instead */
		return;
	}
	snprintf(r->gone[r->ngone].vpc, sizeof(r->gone[0].vpc), "%s", a->m.vpc);
	snprintf(r->gone[r->ngone].id, sizeof(r->gone[0].id), "%s", a->m.id);
	r->ngone++;
}

unsigned long record_remove(struct record *r, struct rec_att *a)
{
	char vpc[GDP_ID_MAX + 1];
	bool was_active = a->active;

	/* its place, not a search (a DEL at 1,000 attachments costs what one does) */
	size_t i = a->slot;

	if (i >= r->natts || r->atts[i] != a) { /* (never: every change of the array keeps slot) */
		r->scans++;
		for (i = 0; i < r->natts && r->atts[i] != a; i++)
			;
	}
	if (i < r->natts) {
		r->atts[i] = r->atts[--r->natts];
		r->atts[i]->slot = i;
	}
	index_del(r, a);
	snprintf(vpc, sizeof(vpc), "%s", a->m.vpc);
	note_gone(r, a);
	view_gone(r, a);
	journal_drop(r, a);
	rec_att_clear(a);
	free(a);
	/* The VPC's table, rules and SID go with its last attachment. */
	drop_vpc_if_unused(r, vpc);
	if (was_active)
		r->main_gen = ++r->gen;
	return r->gen;
}

/* ---- the pipeline's side -------------------------------------------------------- */

unsigned long record_gen(struct record *r)
{
	unsigned long g;

	pthread_mutex_lock(&r->mu);
	g = r->gen;
	pthread_mutex_unlock(&r->mu);
	return g;
}

void record_snap_free(struct rec_snap *s)
{
	if (!s)
		return;
	if (s->remotes && s->st.remotes == s->remotes->v) {
		s->st.remotes = NULL;
		s->st.n_remotes = s->st.cap_remotes = 0;
	}
	gdp_state_free(&s->st);
	remotes_unref(s->remotes);
	free(s->pods);
	memset(s, 0, sizeof(*s));
}

/* Under mu: node, VPCs and active attachments into s (remotes: a reference, not filtered yet). */
static int snapshot_locked(struct record *r, struct rec_snap *s)
{
	size_t nact = 0;

	memset(s, 0, sizeof(*s));
	gdp_state_init(&s->st);
	s->gen = r->gen;
	s->have_node = r->have_node;
	s->st.node = r->node;
	s->st.egress = r->egress;
	for (size_t i = 0; i < r->natts; i++)
		nact += r->atts[i]->active;
	s->pods = calloc(nact + 1, sizeof(*s->pods));
	if (!s->pods)
		return -ENOMEM;
	for (size_t i = 0; i < r->nvpcs; i++)
		/* A CNI VPC's SID and table come with its first desired attachment. */
		if ((r->vpcs[i].declared || vpc_has_att(r, r->vpcs[i].m.id, true)) &&
		    gdp_state_add_vpc(&s->st, &r->vpcs[i].m))
			return -ENOMEM;
	for (size_t i = 0; i < r->natts; i++) {
		const struct rec_att *a = r->atts[i];
		struct rec_pod *p = &s->pods[s->st.n_atts];

		if (!a->active)
			continue;
		snprintf(p->ns, sizeof(p->ns), "%s", a->pod_ns);
		snprintf(p->name, sizeof(p->name), "%s", a->pod_name);
		snprintf(p->guest_ifname, sizeof(p->guest_ifname), "%s", a->ifname);
		if (gdp_state_add_attachment(&s->st, &a->m))
			return -ENOMEM;
		s->st.atts[s->st.n_atts - 1].egress = a->egress; /* REC_FAM_* = GDP_FAM_* */
	}
	s->remotes = remotes_ref(r->remotes);
	return 0;
}

/* Whether st hosts m's VPC; last: the previous answer (remotes run by VPC). */
struct hosted_last {
	uint32_t ix;
	bool set, yes;
};

static bool hosted(const struct gdp_state *st, const struct gdp_remote *m, struct hosted_last *last)
{
	if (!last->set || last->ix != m->vpc_ix)
		*last = (struct hosted_last){ m->vpc_ix, true, gdp_state_find_vpc(st, gdp_remote_vpc(m)) != NULL };
	return last->yes;
}

/* s->st.remotes from s->remotes: shared as they are unless some name a VPC
 * s does not host (then a filtered copy: the learner's set always matches). */
static int snapshot_remotes(struct rec_snap *s)
{
	struct hosted_last last = { 0 };
	bool filter = false;

	s->st.remotes = NULL;
	s->st.n_remotes = s->st.cap_remotes = 0;
	if (!s->remotes)
		return 0;
	for (size_t i = 0; i < s->remotes->n && !filter; i++)
		filter = !hosted(&s->st, &s->remotes->v[i], &last);
	if (!filter) {
		s->st.remotes = s->remotes->v;
		s->st.n_remotes = s->st.cap_remotes = s->remotes->n;
		return 0;
	}
	for (size_t i = 0; i < s->remotes->n; i++)
		if (hosted(&s->st, &s->remotes->v[i], &last) && gdp_state_add_remote(&s->st, &s->remotes->v[i]))
			return -ENOMEM;
	return 0;
}

int record_snapshot(struct record *r, struct rec_snap *s)
{
	int rc;

	pthread_mutex_lock(&r->mu);
	rc = snapshot_locked(r, s);
	pthread_mutex_unlock(&r->mu);
	if (!rc)
		rc = snapshot_remotes(s);
	if (rc)
		record_snap_free(s);
	return rc;
}

/* ---- the pipeline's incremental view ------------------------------------------ */

static uint64_t key_hash(const char *vpc, const char *id)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = vpc; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ 0x1f) * 1099511628211ULL;
	for (const char *p = id; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	return h;
}

/* The slot of key (vpc, id) in v's index: its entry, or the empty slot it would take. */
static size_t view_slot(const struct rec_view *v, const char *vpc, const char *id)
{
	size_t s = key_hash(vpc, id) & v->ix_mask;

	for (; v->ix[s]; s = (s + 1) & v->ix_mask) {
		const struct gdp_attachment *a = &v->s.st.atts[v->ix[s] - 1];

		if (!strcmp(a->vpc, vpc) && !strcmp(a->id, id))
			break;
	}
	return s;
}

/* The index of key in v->s.st.atts, or SIZE_MAX. */
static size_t view_find(const struct rec_view *v, const char *vpc, const char *id)
{
	size_t s = view_slot(v, vpc, id);

	return v->ix[s] ? v->ix[s] - 1 : SIZE_MAX;
}

/* Rebuilds the index for n entries (at most half full). false: dup key or no memory. */
static bool view_reindex(struct rec_view *v)
{
	size_t sz = 64, n = v->s.st.n_atts;

	while (sz < 2 * n + 2)
		sz *= 2;
	free(v->ix);
	v->ix = calloc(sz, sizeof(*v->ix));
	v->ix_mask = sz - 1;
	if (!v->ix)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t s = view_slot(v, v->s.st.atts[i].vpc, v->s.st.atts[i].id);

		if (v->ix[s])
			return false; /* named twice: the view cannot say which (full passes) */
		v->ix[s] = i + 1;
	}
	return true;
}

/* Removes slot s of the index (linear probing: the cluster after it moves up). */
static void view_unslot(struct rec_view *v, size_t s)
{
	size_t j = s;

	v->ix[s] = 0;
	for (;;) {
		size_t k, home;

		j = (j + 1) & v->ix_mask;
		if (!v->ix[j])
			return;
		k = v->ix[j] - 1;
		home = key_hash(v->s.st.atts[k].vpc, v->s.st.atts[k].id) & v->ix_mask;
		/* j's entry may fill s when its home is not cyclically in (s, j] */
		if ((j > s && (home <= s || home > j)) || (j < s && home <= s && home > j)) {
			v->ix[s] = v->ix[j];
			v->ix[j] = 0;
			s = j;
		}
	}
}

static struct rec_view_vpc *view_vpc(struct rec_view *v, const char *id, bool add)
{
	for (size_t i = 0; i < v->nvc; i++)
		if (!strcmp(v->vc[i].id, id))
			return &v->vc[i];
	if (!add)
		return NULL;
	if (G_GROW(v->vc, v->capvc, v->nvc, 8))
		return NULL;
	snprintf(v->vc[v->nvc].id, sizeof(v->vc[0].id), "%s", id);
	v->vc[v->nvc].n = 0;
	return &v->vc[v->nvc++];
}

/* Entry i leaves the view (the last one takes its place). */
static void view_remove(struct rec_view *v, size_t i)
{
	struct gdp_state *st = &v->s.st;
	struct rec_view_vpc *c = view_vpc(v, st->atts[i].vpc, false);
	size_t last = st->n_atts - 1;

	if (c && c->n)
		c->n--;
	view_unslot(v, view_slot(v, st->atts[i].vpc, st->atts[i].id));
	if (i != last) {
		size_t s = view_slot(v, st->atts[last].vpc, st->atts[last].id);

		st->atts[i] = st->atts[last];
		v->s.pods[i] = v->s.pods[last];
		v->ix[s] = i + 1;
	}
	st->n_atts--;
}

static void att_model(const struct rec_att *a, struct gdp_attachment *m, struct rec_pod *p)
{
	*m = a->m;
	m->egress = a->egress; /* REC_FAM_* = GDP_FAM_* */
	/* the view compares pods with memcmp: no stale bytes after the names */
	memset(p, 0, sizeof(*p));
	snprintf(p->ns, sizeof(p->ns), "%s", a->pod_ns);
	snprintf(p->name, sizeof(p->name), "%s", a->pod_name);
	snprintf(p->guest_ifname, sizeof(p->guest_ifname), "%s", a->ifname);
}

static int push_change(struct rec_changes *ch, const struct gdp_attachment *prev, size_t cur)
{
	int rc = G_GROW(ch->atts, ch->cap_atts, ch->n_atts, 8);

	if (rc)
		return rc;
	memset(&ch->atts[ch->n_atts], 0, sizeof(ch->atts[0]));
	ch->atts[ch->n_atts].had = prev != NULL;
	if (prev)
		ch->atts[ch->n_atts].prev = *prev;
	ch->atts[ch->n_atts].cur = cur;
	ch->n_atts++;
	return 0;
}

void record_view_init(struct rec_view *v)
{
	memset(v, 0, sizeof(*v));
	gdp_state_init(&v->s.st);
}

void record_view_free(struct rec_view *v)
{
	record_snap_free(&v->s);
	free(v->ix);
	free(v->vc);
	record_view_init(v);
}

void rec_changes_free(struct rec_changes *ch)
{
	free(ch->atts);
	remotes_unref(ch->old_remotes);
	free(ch->old_filtered);
	memset(ch, 0, sizeof(*ch));
}

/* Under mu: v rebuilt whole from the record. */
static int view_rebuild_locked(struct record *r, struct rec_view *v)
{
	int rc;

	record_view_free(v);
	for (size_t i = 0; i < r->nvdirty; i++)
		r->vdirty[i]->vdirty = false;
	r->nvdirty = r->nvgone = 0;
	r->view_reset = false;
	if ((rc = snapshot_locked(r, &v->s)))
		return rc;
	v->cap_pods = v->s.st.n_atts + 1;
	for (size_t i = 0; i < v->s.st.n_atts; i++) {
		struct rec_view_vpc *c = view_vpc(v, v->s.st.atts[i].vpc, true);

		if (!c)
			return -ENOMEM;
		c->n++;
	}
	v->valid = view_reindex(v);
	if (!v->ix)
		return -ENOMEM;
	return 0;
}

/* Under mu: the VPCs v lists (declared, or with an attachment in v): O(VPCs). */
static int view_vpcs_locked(struct record *r, struct rec_view *v)
{
	v->s.st.n_vpcs = 0;
	for (size_t i = 0; i < r->nvpcs; i++) {
		const struct rec_view_vpc *c = view_vpc(v, r->vpcs[i].m.id, false);

		if ((r->vpcs[i].declared || (c && c->n)) && gdp_state_add_vpc(&v->s.st, &r->vpcs[i].m))
			return -ENOMEM;
	}
	return 0;
}

/* Under mu: the record's changes since v's last update applied to v. */
static int view_update_locked(struct record *r, struct rec_view *v, struct rec_changes *ch, bool *vpcs_changed)
{
	struct gdp_state *st = &v->s.st;
	size_t nv0 = st->n_vpcs;
	int rc = 0;

	v->s.gen = r->gen;
	v->s.have_node = r->have_node;
	st->node = r->node;
	st->egress = r->egress;
	/* removals first: they move entries, the additions after only append */
	for (size_t i = 0; i < r->nvgone && !rc; i++) {
		size_t k = view_find(v, r->vgone[i].vpc, r->vgone[i].id);

		if (k != SIZE_MAX && !(rc = push_change(ch, &st->atts[k], SIZE_MAX)))
			view_remove(v, k);
	}
	for (size_t i = 0; i < r->nvdirty && !rc; i++) {
		const struct rec_att *a = r->vdirty[i];
		size_t k;

		if (a->active)
			continue;
		k = view_find(v, a->m.vpc, a->m.id);
		if (k != SIZE_MAX && !(rc = push_change(ch, &st->atts[k], SIZE_MAX)))
			view_remove(v, k);
	}
	for (size_t i = 0; i < r->nvdirty && !rc; i++) {
		const struct rec_att *a = r->vdirty[i];
		struct gdp_attachment m;
		struct rec_pod pod = { 0 };
		size_t k;

		if (!a->active)
			continue;
		att_model(a, &m, &pod);
		k = view_find(v, a->m.vpc, a->m.id);
		if (k != SIZE_MAX) {
			if (!memcmp(&st->atts[k], &m, sizeof(m)) && !memcmp(&v->s.pods[k], &pod, sizeof(pod)))
				continue; /* activated again as it was */
			if ((rc = push_change(ch, &st->atts[k], k)))
				break;
			st->atts[k] = m;
			v->s.pods[k] = pod;
			continue;
		}
		if ((rc = G_RESERVE(v->s.pods, v->cap_pods, st->n_atts + 2, 16)))
			break;
		if (!view_vpc(v, m.vpc, true) || gdp_state_add_attachment(st, &m)) {
			rc = -ENOMEM;
			break;
		}
		view_vpc(v, m.vpc, false)->n++;
		v->s.pods[st->n_atts - 1] = pod;
		if ((rc = push_change(ch, NULL, st->n_atts - 1)))
			break;
		if (2 * st->n_atts + 2 > v->ix_mask + 1) {
			if (!view_reindex(v)) {
				rc = -ENOMEM;
				break;
			}
		} else {
			v->ix[view_slot(v, m.vpc, m.id)] = st->n_atts;
		}
	}
	for (size_t i = 0; i < r->nvdirty; i++)
		r->vdirty[i]->vdirty = false;
	r->nvdirty = r->nvgone = 0;
	if (rc)
		return rc;
	{
		/* the VPC list is short: rebuilt each time, compared for the remotes' filter */
		struct gdp_vpc *old = nv0 ? malloc(nv0 * sizeof(*old)) : NULL;

		if (nv0 && !old)
			return -ENOMEM;
		if (nv0)
			memcpy(old, st->vpcs, nv0 * sizeof(*old));
		rc = view_vpcs_locked(r, v);
		*vpcs_changed = st->n_vpcs != nv0;
		for (size_t i = 0; !rc && !*vpcs_changed && i < nv0; i++)
			*vpcs_changed = strcmp(old[i].id, st->vpcs[i].id) != 0;
		free(old);
	}
	return rc;
}

int record_view_update(struct record *r, struct rec_view *v, struct rec_changes *ch)
{
	bool vpcs_changed = false;
	int rc;

	memset(ch, 0, sizeof(*ch));
	pthread_mutex_lock(&r->mu);
	if (!v->valid || r->view_reset) {
		ch->whole = true;
		rc = view_rebuild_locked(r, v);
		pthread_mutex_unlock(&r->mu);
		if (!rc)
			rc = snapshot_remotes(&v->s);
		if (rc)
			record_view_free(v); /* invalid: rebuilt next time */
		return rc;
	}
	rc = view_update_locked(r, v, ch, &vpcs_changed);
	if (!rc && (r->remotes != v->s.remotes || vpcs_changed)) {
		/* the old set stays alive (ch) until the delta has compared it */
		ch->old_remotes = v->s.remotes;
		if (v->s.remotes && v->s.st.remotes != v->s.remotes->v)
			ch->old_filtered = v->s.st.remotes;
		v->s.st.remotes = NULL;
		v->s.st.n_remotes = v->s.st.cap_remotes = 0;
		v->s.remotes = remotes_ref(r->remotes);
		pthread_mutex_unlock(&r->mu);
		rc = snapshot_remotes(&v->s);
	} else {
		pthread_mutex_unlock(&r->mu);
	}
	if (rc) {
		record_view_free(v);
		ch->whole = true;
	}
	return rc;
}

/* Journal lines past this compact the journal into record.json: a whole
 * rewrite every (256 + 2 x attachments) commits keeps a commit O(1) amortized
 * and a load O(attachments). */
static size_t journal_limit(const struct record *r)
{
	return 256 + 2 * r->natts;
}

/*
 * Under mu: one journal line with what changed since the last commit (the
 * VPC list if it changed, attachments deleted and put), the bookkeeping
 * advanced as if it were written (a failed write compacts next time).
 * NULL with *nomem false: nothing to write.
 */
static char *encode_line(struct record *r, bool *nomem)
{
	bool vpcs = r->jvpcs || !r->saved_vpcs;
	json_t *o = json_object(), *del = json_array(), *put = json_array(), *vs = vpcs ? vpcs_json(r) : NULL;
	char *vt = vs ? json_dumps(vs, JSON_COMPACT | JSON_SORT_KEYS) : NULL, *text = NULL;

	*nomem = !o || !del || !put || (vpcs && (!vs || !vt));
	if (*nomem)
		goto out;
	r->jvpcs = false;
	if (vpcs && (!r->saved_vpcs || strcmp(vt, r->saved_vpcs))) {
		json_object_set(o, "vpcs", vs);
		free(r->saved_vpcs);
		r->saved_vpcs = vt;
		vt = NULL;
	}
	for (size_t i = 0; i < r->ngone; i++)
		json_array_append_new(del, rec_key_encode(r->gone[i].vpc, r->gone[i].id));
	r->ngone = 0;
	/* only what changed since the last commit: a line costs what it holds */
	for (size_t i = 0; i < r->njdirty; i++) {
		struct rec_att *a = r->jdirty[i];

		a->jdirty = false;
		if (!a->active && a->on_disk) {
			json_array_append_new(del, rec_key_encode(a->m.vpc, a->m.id));
			a->on_disk = false;
		} else if (a->active && (!a->on_disk || a->jgen > r->saved_main)) {
			json_array_append_new(put, rec_att_encode(a));
			a->on_disk = true;
		}
	}
	r->njdirty = 0;
	if (json_array_size(del))
		json_object_set(o, "del", del);
	if (json_array_size(put))
		json_object_set(o, "put", put);
	if (json_object_size(o)) {
		text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		*nomem = !text;
	}
out:
	free(vt);
	json_decref(o);
	json_decref(del);
	json_decref(put);
	json_decref(vs);
	return text;
}

/* Under mu: record.json's whole text at a new epoch; the bookkeeping restarts. */
static char *encode_full(struct record *r, unsigned long epoch)
{
	json_t *vs = vpcs_json(r);
	char *text = encode_main(r, epoch);

	free(r->saved_vpcs);
	r->saved_vpcs = vs ? json_dumps(vs, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(vs);
	for (size_t i = 0; i < r->natts; i++) {
		r->atts[i]->on_disk = r->atts[i]->active;
		r->atts[i]->jdirty = false;
	}
	r->njdirty = 0;
	r->jvpcs = false;
	r->ngone = 0;
	r->full_dirty = false;
	return text;
}

static int pwrite_all(int fd, const char *p, size_t len, off_t at)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The journal is written in place: a compaction creates it with its header
 * and a zeroed tail (written, not fallocated: no unwritten extents), and a
 * commit writes its line over the zeros at joff. Its fdatasync then writes
 * that data and flushes, with no size or extent change for the
 * filesystem's journal to commit (an append that grew the file made every
 * fdatasync a jbd2 commit, carrying whatever else on the disk was dirty:
 * the WAL technique of preallocated segments). The load stops at the first
 * NUL (record_parse_journal). When a line would leave less than
 * JOURNAL_SLACK of zeros, the tail grows by JOURNAL_CHUNK (or half the
 * file, up to JOURNAL_CHUNK_MAX) in the same commit; a commit ahead (a
 * verb's thread) leaves that to the pass.
 */
#define JOURNAL_CHUNK     (256u << 10)
#define JOURNAL_CHUNK_MAX (4u << 20)
#define JOURNAL_SLACK     (64u << 10)

static const char zeros[64u << 10];

/* Zeros over [from, to) of fd. */
static int zero_fill(int fd, size_t from, size_t to)
{
	int rc = 0;

	while (from < to && !rc) {
		size_t n = to - from < sizeof(zeros) ? to - from : sizeof(zeros);

		rc = pwrite_all(fd, zeros, n, (off_t)from);
		from += n;
	}
	return rc;
}

/* The journal's size once a line ending at end is written: its size now, or
 * grown (the pass keeps twice the slack, so that a commit ahead, which
 * leaves the pass a tail shorter than that, seldom has to grow it). */
static size_t journal_grown(const struct record *r, size_t end, bool ahead)
{
	size_t grow = r->jsize / 2;

	if (end + (ahead ? 1 : 2) * JOURNAL_SLACK <= r->jsize)
		return r->jsize;
	grow = grow < JOURNAL_CHUNK ? JOURNAL_CHUNK : grow > JOURNAL_CHUNK_MAX ? JOURNAL_CHUNK_MAX : grow;
	return (end + grow + 4095) & ~(size_t)4095;
}

/* Under commit_mu: record.json at epoch ep, then a new journal of that epoch. */
static int write_compacted(struct record *r, const char *text, unsigned long ep, char *err, size_t errlen)
{
	char path[4200], hdr[80];
	int rc;

	if (r->jfd >= 0)
		close(r->jfd);
	r->jfd = -1;
	path_of(r, RECORD_FILE, path, sizeof(path));
	if ((rc = gfile_write_atomic(path, text, strlen(text), err, errlen)))
		return rc;
	/* record.json holds everything now: an old journal is of an older
	 * epoch (ignored at load) until the new one replaces it */
	r->epoch = ep;
	r->jlines = 0;
	rec_journal_header_encode(hdr, sizeof(hdr), ep);
	path_of(r, RECORD_JOURNAL_FILE, path, sizeof(path));
	/* the header and a zeroed tail the commits write over (above) */
	{
		char *buf = calloc(1, JOURNAL_CHUNK);

		if (!buf)
			return snprintf(err, errlen, "record: out of memory"), -ENOMEM;
		memcpy(buf, hdr, strlen(hdr));
		rc = gfile_write_atomic(path, buf, JOURNAL_CHUNK, err, errlen);
		free(buf);
		if (rc)
			return rc;
	}
	r->jfd = open(path, O_WRONLY | O_CLOEXEC);
	if (r->jfd < 0)
		return rc = -errno, snprintf(err, errlen, "open %s: %s", path, strerror(-rc)), rc;
	r->joff = strlen(hdr);
	r->jsize = JOURNAL_CHUNK;
	return 0;
}

/* The calling thread's last journal fdatasync (record_ahead_sync_ms). */
static _Thread_local double sync_ms;

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Under commit_mu: one commit written at the journal's end (over its
 * zeros), on disk when this returns 0. */
static int write_line(struct record *r, const char *text, bool ahead, char *err, size_t errlen)
{
	size_t n = strlen(text), end = r->joff + n + 1, size = journal_grown(r, end, ahead);
	char *buf = malloc(n + 2);
	int rc;

	if (!buf)
		return snprintf(err, errlen, "record: out of memory"), -ENOMEM;
	memcpy(buf, text, n);
	buf[n] = '\n';
	/* one write: a crash leaves at most a last line without its newline
	 * (or cut by zeros), never acknowledged */
	rc = pwrite_all(r->jfd, buf, n + 1, (off_t)r->joff);
	free(buf);
	/* a tail grown: its zeros, synced with the line (the one size change) */
	if (!rc && size > r->jsize)
		rc = zero_fill(r->jfd, end > r->jsize ? end : r->jsize, size);
	if (!rc) {
		double t = mono_ms();

		if (fdatasync(r->jfd) < 0)
			rc = -errno;
		sync_ms = mono_ms() - t;
	}
	if (rc) {
		snprintf(err, errlen, "append to %s/%s: %s", r->dir, RECORD_JOURNAL_FILE, strerror(-rc));
		close(r->jfd);
		r->jfd = -1;
		return rc;
	}
	r->joff = end;
	if (size > r->jsize)
		r->jsize = size;
	r->jlines++;
	return 0;
}

/* Under commit_mu (released here): everything changed so far to disk. */
static int commit_locked(struct record *r, bool ahead, char *err, size_t errlen)
{
	char path[4200], *main_text = NULL, *line = NULL;
	unsigned long mg = 0, rg = 0, ep = 0;
	struct rec_remotes *rem = NULL;
	bool nomem = false;
	unsigned long cg;
	int rc = 0;

	pthread_mutex_lock(&r->mu);
	cg = r->gen; /* what this commit writes: everything up to it */
	if (r->held[0]) {
		snprintf(err, errlen, "record held: %s", r->held);
		pthread_mutex_unlock(&r->mu);
		pthread_mutex_unlock(&r->commit_mu);
		return -EBUSY;
	}
	if (r->main_gen > r->saved_main) {
		mg = r->main_gen;
		if (ahead && r->jfd >= 0 && r->joff + 2 * JOURNAL_SLACK > r->jsize) {
			/* the journal's tail grows on the pass's thread (write_line) */
			pthread_mutex_unlock(&r->mu);
			pthread_mutex_unlock(&r->commit_mu);
			return -EALREADY;
		}
		if (r->full_dirty || r->jfd < 0 || r->jlines >= journal_limit(r)) {
			if (ahead) {
				/* A compaction is the pass's (its thread's arena): on a
				 * CNI thread, the restart's first one (record.json with
				 * 1,000 attachments) left ~3.6 MiB resident (bench_rss). */
				pthread_mutex_unlock(&r->mu);
				pthread_mutex_unlock(&r->commit_mu);
				return -EALREADY;
			}
			ep = r->epoch + 1;
			main_text = encode_full(r, ep);
			nomem = !main_text;
		} else {
			line = encode_line(r, &nomem);
		}
		if (nomem)
			r->full_dirty = true;
	}
	if (r->remotes_gen > r->saved_remotes) {
		rg = r->remotes_gen;
		rem = remotes_ref(r->remotes);
	}
	pthread_mutex_unlock(&r->mu);
	if (nomem) {
		rc = -ENOMEM;
		snprintf(err, errlen, "record: out of memory");
		goto out;
	}
	/* The remotes first: record.json is what a restart trusts most. */
	if (rem || rg) {
		path_of(r, RECORD_REMOTES_FILE, path, sizeof(path));
		if ((rc = gfile_write_atomic_fn(path, emit_remotes, rem, err, errlen)))
			goto out;
		r->saved_remotes = rg;
	}
	if (main_text)
		rc = write_compacted(r, main_text, ep, err, errlen);
	else if (line)
		rc = write_line(r, line, ahead, err, errlen);
	if (!rc && mg)
		r->saved_main = mg;
	if (!rc) {
		disk_pos(r, r->epoch, r->jlines, &r->disk);
		r->disk_gen = cg;
	} else {
		r->disk.valid = false;
	}
out:
	if (rc && mg) {
		/* what is on disk is not known exactly: the next commit rewrites it whole */
		pthread_mutex_lock(&r->mu);
		r->full_dirty = true;
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_unlock(&r->commit_mu);
	remotes_unref(rem);
	free(main_text);
	free(line);
	return rc;
}

int record_commit(struct record *r, const struct rec_snap *s, char *err, size_t errlen)
{
	(void)s;
	pthread_mutex_lock(&r->commit_mu);
	return commit_locked(r, false, err, errlen);
}

double record_ahead_sync_ms(void)
{
	return sync_ms;
}

int record_commit_ahead(struct record *r, char *err, size_t errlen)
{
	sync_ms = 0;
	if (pthread_mutex_trylock(&r->commit_mu))
		return -EALREADY;
	return commit_locked(r, true, err, errlen);
}

/* A read-only record of dir loaded beside the agent (record_load_state, record_dump): load_dir_locked's result. */
static int reader_load(struct record *r, const char *dir, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->table_min = GDP_TABLE_MIN_DEFAULT;
	r->jfd = -2; /* a reader beside the agent */
	pthread_mutex_init(&r->mu, NULL);
	return load_dir_locked(r, err, errlen);
}

static void reader_free(struct record *r)
{
	clear_locked(r);
	index_free(r);
	free(r->atts);
	free(r->vpcs);
	pthread_mutex_destroy(&r->mu);
}

int record_load_state(const char *dir, struct gdp_state *st, char *err, size_t errlen)
{
	struct record r;
	struct rec_snap s;
	int rc;

	gdp_state_init(st);
	rc = reader_load(&r, dir, err, errlen);
	if (rc == -ENOENT)
		rc = 0;
	if (!rc && !(rc = record_snapshot(&r, &s))) {
		rc = gdp_state_copy(st, &s.st);
		record_snap_free(&s);
	}
	reader_free(&r);
	return rc;
}

char *record_dump(const char *dir, char *err, size_t errlen)
{
	struct record r;
	char *text = NULL;
	int rc = reader_load(&r, dir, err, errlen);

	if (rc == -ENOENT)
		snprintf(err, errlen, "%s/%s: no record", dir, RECORD_FILE);
	else if (!rc && !(text = encode_main(&r, r.epoch)))
		snprintf(err, errlen, "record: out of memory");
	reader_free(&r);
	return text;
}
