/* The agent's apply loop (agent/pipeline.h). */
#include "agent/pipeline.h"

#include <errno.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fileio.h"
#include "common/log.h"

#define COMP "apply"

struct pipeline {
	struct pipeline_opts o;
	pthread_mutex_t pass_mu;      /* one pass at a time */
	pthread_mutex_t mu;           /* guards the fields below */
	pthread_cond_t cv;            /* the loop thread: kicks, stop; pipeline_free: the last waiter out */
	struct waiter *waiters;       /* pipeline_wait_spans callers, each with its own condition */
	unsigned inside;              /* threads in pipeline_wait_spans (pipeline_free waits for 0) */
	pthread_t th;
	bool th_on, stop, kicked;
	unsigned long applied_gen, passes;
	struct gdp_results last;      /* results of every object as of the last pass (indexed) */
	char why_not[512];            /* last reason a pass did not apply (logged once) */
	/* Incremental passes (pass thread only): the record's view (agent/record.h)
	 * and, of the state the last applied pass had, what a delta compares
	 * whole: node, VPCs, egress, remotes (prev.atts stays empty: the view
	 * lists the attachments that changed). */
	struct rec_view view;
	struct gdp_state prev;        /* vpcs owned; remotes borrowed from the view (or the changes) */
	bool have_prev;
	bool verified;                /* a pass applied (or a state was adopted): its results stand when a dump fails */
	bool want_full;               /* kicked for a full reconcile (guarded by mu) */
	bool remotes_whole;           /* the last full pass gave a result for every remote */
	unsigned long full_passes, delta_passes;
	double last_backend_ms;       /* the last pass's backend span (guarded by mu) */
	/* Adoption at start (pipeline_adopt): guarded by mu. */
	bool adopting;                /* adopted, the full pass that reads it back not run yet */
	double adopt_ms;
	bool status_exact;            /* pass thread: the status noted names the files' position */
	/* The tally of last (struct pipeline_tally; guarded by mu, changed on
	 * the pass's thread): entries not programmed, not programmed or failed. */
	size_t n_unprog, n_bad;
	unsigned long visits;         /* result entries walked whole (guarded by mu) */
	/* status.json's next write (under pass_mu): the last pass's figures,
	 * written when due (PIPELINE_STATUS_MS); status_due and status_at
	 * are also guarded by mu (the loop's wait reads them). */
	bool status_pending, status_adopted, status_due;
	int status_rc;
	double status_ms, status_at;  /* the pass's span; the last write (monotonic ms, 0: none) */
	struct rec_disk_pos status_pos;
	double tail_ms;               /* the last pass's part after its waiters went (status, on_pass) */
	/* The read-backs' observer (backend.h), kept open between them and
	 * brought up to date at each (guarded by pass_mu); NULL: none yet, or
	 * closed after an error (the next read-back opens another). */
	struct gdp_backend *obs;
};

/*
 * One thread waiting for a generation to be applied. Each has its own
 * condition: a pass wakes the waiters it applied, not every waiting ADD
 * (a burst of 200 woke 199 others per pass and per arriving ADD, all to
 * queue for mu and sleep again: most of the agent's futex time).
 */
struct waiter {
	unsigned long gen;
	pthread_cond_t cv;
	bool listed;
	struct waiter *next;
};

/* Under mu: wakes and unlists every waiter whose generation is applied
 * (all of them when stopping). */
static void wake_applied(struct pipeline *p)
{
	for (struct waiter **w = &p->waiters; *w;) {
		struct waiter *x = *w;

		if (x->gen <= p->applied_gen || p->stop) {
			*w = x->next;
			x->listed = false;
			pthread_cond_signal(&x->cv);
		} else {
			w = &x->next;
		}
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void write_status(struct pipeline *p, const struct gdp_results *res, int rc, double ms,
			 const struct rec_disk_pos *pos, bool adopted)
{
	json_t *j = json_object(), *errs = json_array();
	char err[512], *s;
	size_t prog = res->remotes_ok + res->n - p->n_unprog;

	if (!p->o.status_path) {
		json_decref(j);
		json_decref(errs);
		return;
	}
	/* the list of what failed: a walk only while something did (the tally) */
	for (size_t i = 0; p->n_unprog && i < res->n; i++) {
		const struct gdp_result *r = &res->v[i];

		if (r->programmed)
			continue;
		json_array_append_new(errs, json_pack("{s:s, s:s, s:s, s:i, s:s}", "kind",
						      gdp_obj_kind_str(r->kind), "vpc", r->vpc, "key",
						      r->key, "errno", -r->err, "message", r->msg));
	}
	if (p->n_unprog) {
		pthread_mutex_lock(&p->mu);
		p->visits += res->n;
		pthread_mutex_unlock(&p->mu);
	}
	json_object_set_new(j, "reconciles", json_integer((json_int_t)p->passes));
	json_object_set_new(j, "rc", json_integer(rc));
	json_object_set_new(j, "objects", json_integer((json_int_t)(res->n + res->remotes_ok)));
	json_object_set_new(j, "programmed", json_integer((json_int_t)prog));
	json_object_set_new(j, "added", json_integer((json_int_t)res->added));
	json_object_set_new(j, "removed", json_integer((json_int_t)res->removed));
	json_object_set_new(j, "unchanged", json_integer((json_int_t)res->unchanged));
	json_object_set_new(j, "retries", json_integer((json_int_t)res->retries));
	json_object_set_new(j, "ms", json_real(ms));
	json_object_set_new(j, "errors", errs);
	json_object_set_new(j, "backend", json_string(p->o.be->ops->name));
	if (adopted)
		json_object_set_new(j, "adopted", json_true());
	/* the files this state came from, when it is exactly theirs (pipeline_adopt) */
	if (pos && pos->valid)
		json_object_set_new(j, "disk",
				    json_pack("{s:I, s:I, s:I, s:I, s:I}", "epoch", (json_int_t)pos->epoch, "lines",
					      (json_int_t)pos->lines, "remotesInode", (json_int_t)pos->rem_ino,
					      "remotesSize", (json_int_t)pos->rem_size, "remotesMtimeNs",
					      (json_int_t)pos->rem_mtime_ns));
	s = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	/* an observation: replaced atomically, not fsynced */
	if (s && gfile_write_atomic_flags(p->o.status_path, s, strlen(s), GFILE_NO_SYNC, err, sizeof(err)))
		glogf(GLOG_WARN, COMP, "status file not written: %s", err);
	free(s);
}

/* Under pass_mu: the noted status to the file, if one is pending. */
static void status_flush(struct pipeline *p)
{
	bool pending = p->status_pending;

	p->status_pending = false;
	pthread_mutex_lock(&p->mu);
	p->status_due = false;
	if (pending)
		p->status_at = now_ms();
	pthread_mutex_unlock(&p->mu);
	if (!pending)
		return;
	write_status(p, &p->last, p->status_rc, p->status_ms, &p->status_pos, p->status_adopted);
}

/*
 * Under pass_mu: the status of the pass just done (results in p->last),
 * written now when forced (a full pass, an adoption) or when the last
 * write is PIPELINE_STATUS_MS old; else left for the loop (status_due).
 */
static void status_note(struct pipeline *p, int rc, double ms, const struct rec_disk_pos *pos, bool adopted,
			bool force)
{
	bool now;

	if (!p->o.status_path)
		return;
	p->status_rc = rc;
	p->status_ms = ms;
	p->status_adopted = adopted;
	memset(&p->status_pos, 0, sizeof(p->status_pos));
	if (pos)
		p->status_pos = *pos;
	p->status_exact = pos && pos->valid;
	p->status_pending = true;
	pthread_mutex_lock(&p->mu);
	now = force || !p->status_at || now_ms() - p->status_at >= PIPELINE_STATUS_MS;
	p->status_due = !now;
	if (!now)
		pthread_cond_broadcast(&p->cv); /* the loop's wait ends in time to write it */
	pthread_mutex_unlock(&p->mu);
	if (now)
		status_flush(p);
}

/* Under mu: r's part of the tally, added or taken away. */
static void tally_one(struct pipeline *p, const struct gdp_result *r, bool add)
{
	size_t u = !r->programmed, b = !r->programmed || r->err;

	if (add) {
		p->n_unprog += u;
		p->n_bad += b;
	} else {
		p->n_unprog -= u;
		p->n_bad -= b;
	}
}

/* Under mu: the tally of p->last counted whole (a full pass, an adoption: O(results) anyway). */
static void tally_count(struct pipeline *p)
{
	p->n_unprog = p->n_bad = 0;
	for (size_t i = 0; i < p->last.n; i++)
		tally_one(p, &p->last.v[i], true);
	p->visits += p->last.n;
}

/* Remote results that still have an entry (failed ones, once folded). */
static size_t remote_entries(const struct gdp_results *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->v[i].kind == GDP_OBJ_REMOTE;
	return n;
}

/* A pass that cannot apply: every object it would have had fails with why. */
static void not_applied(struct pipeline *p, struct gdp_results *res, int err, const char *why)
{
	struct gdp_result *n = gdp_results_get(res, GDP_OBJ_NODE, "", "");

	if (n)
		gdp_result_fail(n, err, "%s", why);
	if (strcmp(p->why_not, why))
		glogf(GLOG_ERROR, COMP, "nothing applied: %s (the kernel is left as it is)", why);
	snprintf(p->why_not, sizeof(p->why_not), "%s", why);
}

/*
 * The scope of an incremental pass: what changed since the snapshot the
 * last pass applied. false: this pass must be a full reconcile. Objects
 * that failed are retried by the next full pass (asked for by the kernel
 * events that can fix them, SIGHUP, drift, and every interval), not by each
 * incremental one: one broken object must not make every ADD a full pass.
 */
static bool delta_scope(struct pipeline *p, const struct rec_snap *snap, const struct rec_changes *ch,
			struct gdp_delta *dl)
{
	return p->have_prev && !ch->whole && p->o.be->ops->apply_delta &&
	       !gdp_delta_compute_changes(&p->prev, &snap->st, ch->atts, ch->n_atts, dl) && !dl->full;
}

/* The view's state became the applied one: what the next delta compares whole. */
static void set_prev(struct pipeline *p, const struct gdp_state *st)
{
	struct gdp_vpc *nv = st->n_vpcs ? realloc(p->prev.vpcs, st->n_vpcs * sizeof(*nv)) : p->prev.vpcs;

	if (st->n_vpcs && !nv) {
		p->have_prev = false; /* the next pass is a full one */
		return;
	}
	p->prev.vpcs = nv;
	if (st->n_vpcs)
		memcpy(nv, st->vpcs, st->n_vpcs * sizeof(*nv));
	p->prev.n_vpcs = p->prev.cap_vpcs = st->n_vpcs;
	p->prev.node = st->node;
	p->prev.egress = st->egress;
	p->prev.remotes = st->remotes;
	p->prev.n_remotes = st->n_remotes;
	p->have_prev = true;
}

/* A delta pass's results replace those of the same objects; the objects
 * the delta removed lose theirs (under mu). The tally follows the entries
 * replaced and dropped, without a walk of the others. */
static void merge_results(struct pipeline *p, const struct gdp_results *res, const struct gdp_delta *dl)
{
	struct gdp_results *last = &p->last;
	char pb[64];
	bool *drop = NULL, any = false;

	if ((dl->n_gone_atts || dl->n_gone_remotes) && (drop = calloc(last->n + 1, 1))) {
		for (size_t i = 0; i < dl->n_gone_atts; i++) {
			struct gdp_result *x = gdp_results_find(last, GDP_OBJ_ATTACHMENT, dl->gone_atts[i].vpc,
								dl->gone_atts[i].id);

			if (x && !drop[x - last->v]) {
				tally_one(p, x, false);
				drop[x - last->v] = any = true;
			}
		}
		for (size_t i = 0; i < dl->n_gone_remotes; i++) {
			struct gdp_result *x = gdp_results_find(last, GDP_OBJ_REMOTE, gdp_remote_vpc(&dl->gone_remotes[i]),
								gdp_prefix_str(&dl->gone_remotes[i].prefix, pb, sizeof(pb)));

			if (x && !drop[x - last->v]) {
				tally_one(p, x, false);
				drop[x - last->v] = any = true;
			}
		}
		if (any)
			gdp_results_drop(last, drop);
	}
	free(drop);
	for (size_t i = 0; i < res->n; i++) {
		size_t had = last->n;
		struct gdp_result *x = gdp_results_get(last, res->v[i].kind, res->v[i].vpc, res->v[i].key);

		if (!x)
			continue;
		if (last->n == had)
			tally_one(p, x, false); /* replaced: its old part goes */
		*x = res->v[i];
		tally_one(p, x, true);
	}
	last->added = res->added;
	last->removed = res->removed;
	last->unchanged = res->unchanged;
	last->retries = res->retries;
	last->failed = res->failed;
	/* index every entry now: later finds (other threads, under mu) only read */
	gdp_results_find(last, GDP_OBJ_NODE, "", "");
}

static int run_pass(struct pipeline *p, bool full)
{
	struct gdp_results res;
	struct gdp_delta dl;
	struct rec_changes ch;
	const struct rec_snap *sp;
	char err[512], held[512];
	double t_ask = now_ms(), t0, t_view, t_apply = 0, t_scoped = 0, t_applied = 0, t_woke;
	bool applied = false, delta = false, noop = false, unread = false;
	struct pipeline_tally tally;
	int rc;

	gdp_results_init(&res);
	gdp_delta_init(&dl);
	pthread_mutex_lock(&p->pass_mu);
	t0 = now_ms();
	pthread_mutex_lock(&p->mu);
	full = full || p->want_full;
	p->want_full = false;
	pthread_mutex_unlock(&p->mu);
	rc = record_view_update(p->o.rec, &p->view, &ch);
	t_view = now_ms();
	if (rc) {
		p->have_prev = false; /* the view is rebuilt whole: the next pass is a full one */
		rec_changes_free(&ch);
		pthread_mutex_unlock(&p->pass_mu);
		glogf(GLOG_ERROR, COMP, "snapshot of the record: out of memory");
		return rc;
	}
	sp = &p->view.s;
	if (record_held(p->o.rec, held, sizeof(held))) {
		snprintf(err, sizeof(err), "the node's record is damaged: %s", held);
		not_applied(p, &res, -EBUSY, err);
		rc = -EBUSY;
	} else if (!sp->have_node) {
		not_applied(p, &res, -ENODATA,
			    "no node identity yet (SID block and node ID: NodeDataplane, or state.json)");
		rc = -ENODATA;
	} else if ((rc = record_commit(p->o.rec, sp, err, sizeof(err)))) {
		char why[600];

		/* Never program what a restart would not know. */
		snprintf(why, sizeof(why), "durable record: %s", err);
		not_applied(p, &res, rc, why);
	} else {
		p->why_not[0] = 0;
		applied = true;
		t_apply = now_ms();
		bool scoped = !full && delta_scope(p, sp, &ch, &dl);

		t_scoped = now_ms();
		if (scoped) {
			if (gdp_delta_empty(&dl)) {
				noop = true; /* nothing changed and nothing failed: nothing to write */
				rc = 0;
			} else {
				delta = true;
				rc = p->o.be->ops->apply_delta(p->o.be, &sp->st, &dl, &res);
				if (rc) {
					glogf(GLOG_INFO, COMP, "incremental apply: %s: reconciling in full",
					      res.n && res.v[0].err ? res.v[0].msg : strerror(rc < 0 ? -rc : rc));
					for (size_t i = 0; i < res.n; i++)
						if (res.v[i].err && res.v[i].kind != GDP_OBJ_NODE)
							glogf(GLOG_INFO, COMP, "incremental apply: %s %s/%s: %s",
							      gdp_obj_kind_str(res.v[i].kind), res.v[i].vpc, res.v[i].key,
							      res.v[i].msg);
					delta = false;
				}
			}
		}
		if (!delta && !noop) {
			gdp_results_reset(&res);
			rc = p->o.be->ops->apply(p->o.be, &sp->st, &res);
			/* the datapath could not be read: nothing changed, what the last pass
			 * verified stands (a failed dump never withdraws what is programmed) */
			unread = rc && res.unread && p->verified;
		}
	}
	t_applied = now_ms();
	pthread_mutex_lock(&p->mu);
	p->passes++;
	p->last_backend_ms = applied && !noop ? t_applied - t_scoped : 0;
	if (delta)
		p->delta_passes++;
	else if (applied && !noop)
		p->full_passes++;
	if (applied && !delta && !noop && p->adopting) {
		p->adopting = false; /* the adopted state is read back (and repaired) now */
		glogf(GLOG_INFO, COMP, "adopted state read back by the first full pass, %.0f ms after it was adopted",
		      now_ms() - p->adopt_ms);
	}
	pthread_mutex_unlock(&p->mu);
	if (noop) {
		struct rec_disk_pos pos;

		gdp_delta_free(&dl);
		/* a status that could not name the files (a change came in during
		 * its pass) is written again once they are what was applied */
		if (!p->status_exact && record_commit_pos(p->o.rec, sp->gen, &pos))
			status_note(p, 0, now_ms() - t0, &pos, false, false);
		/* the level is unchanged: the last results stand */
		pthread_mutex_lock(&p->mu);
		if (sp->gen > p->applied_gen)
			p->applied_gen = sp->gen;
		wake_applied(p);
		pthread_mutex_unlock(&p->mu);
		set_prev(p, &sp->st);
		rec_changes_free(&ch);
		pthread_mutex_unlock(&p->pass_mu);
		gdp_results_free(&res);
		return 0;
	}
	for (size_t i = 0; i < res.n; i++)
		if (res.v[i].err && res.v[i].kind != GDP_OBJ_NODE)
			glogf(GLOG_ERROR, COMP, "%s %s%s%s: %s", gdp_obj_kind_str(res.v[i].kind), res.v[i].vpc,
			      res.v[i].key[0] ? "/" : "", res.v[i].key, res.v[i].msg);
		else if (res.v[i].err && !p->why_not[0])
			glogf(GLOG_ERROR, COMP, "node: %s", res.v[i].msg);
	/* The spans: record (its view brought up to date, the commit to disk),
	 * backend (the delta's scope, then the backend: its netlink or map
	 * writes and read-back, where the kernel's own time is), and the wait
	 * for the pass before (a full one, a read-back) outside the total. */
	glogf(GLOG_INFO, COMP,
	      "%s #%lu: %zu objects, added/replaced %lu, removed %lu, unchanged %lu, ENOMEM retries %lu, failed %lu (%.1f ms: record %.1f, backend %.1f; view %.2f, commit %.2f, scope %.2f, waited %.1f; the pass before after its waiters %.2f)",
	      delta ? "incremental pass" : "reconcile", p->passes, res.n + res.remotes_ok, res.added, res.removed, res.unchanged,
	      res.retries, res.failed, now_ms() - t0, applied ? t_apply - t0 : 0, applied ? t_applied - t_apply : 0,
	      t_view - t0, applied ? t_apply - t_view : 0, applied ? t_scoped - t_apply : 0, t0 - t_ask, p->tail_ms);
	pthread_mutex_lock(&p->mu);
	if (delta) {
		/* the remotes' count moves only with remotes in the delta: without
		 * them (an ADD, a DEL) no walk of every result */
		bool rem = dl.n_remotes || dl.n_gone_remotes || remote_entries(&res);

		merge_results(p, &res, &dl);
		gdp_results_free(&res);
		if (rem) {
			size_t left;

			gdp_results_fold_remotes(&p->last); /* adds the delta's programmed remotes */
			/* Exact when the last full pass named every remote: each one has a
			 * failed entry or was programmed (a changed remote was counted twice). */
			left = remote_entries(&p->last);
			if (p->remotes_whole)
				p->last.remotes_ok = sp->st.n_remotes > left ? sp->st.n_remotes - left : 0;
		}
	} else if (unread) {
		p->want_full = true; /* read again soon; until then the last results stand */
		gdp_results_free(&res);
	} else {
		/* Programmed remotes become a count (100,000 entries are 40 MB). */
		size_t nrem = remote_entries(&res);

		gdp_results_fold_remotes(&res);
		p->remotes_whole = applied && nrem + res.remotes_ok == sp->st.n_remotes;
		gdp_results_free(&p->last);
		p->last = res;
		tally_count(p);
	}
	gdp_results_find(&p->last, GDP_OBJ_NODE, "", ""); /* indexed whole: readers only read */
	/* The waiters go now, with the results in: the status file and the
	 * reports below are observations of this pass, nothing a waiter (a
	 * CNI verb answering its runtime) needs, and 200 ADDs of a burst
	 * wait once per pass. */
	if (sp->gen > p->applied_gen)
		p->applied_gen = sp->gen;
	wake_applied(p);
	tally = (struct pipeline_tally){ .objects = p->last.n + p->last.remotes_ok, .unprogrammed = p->n_unprog,
					 .bad = p->n_bad, .egress = gdp_results_find(&p->last, GDP_OBJ_EGRESS, "", "") };
	pthread_mutex_unlock(&p->mu);
	t_woke = now_ms();
	gdp_delta_free(&dl);
	/* p->last changes only on this thread, under pass_mu: read here without mu */
	{
		struct rec_disk_pos pos = { 0 };

		if (applied)
			record_commit_pos(p->o.rec, sp->gen, &pos);
		/* every full pass writes it; an incremental one when due */
		status_note(p, rc, now_ms() - t0, &pos, false, !delta);
	}
	if (p->o.on_pass)
		p->o.on_pass(p->o.ctx, sp, &p->last, &tally);
	p->tail_ms = now_ms() - t_woke;
#ifdef __GLIBC__
	/* A full pass's dumps and plans are freed now: give the pages back
	 * (the allocator would keep the peak resident between passes). */
	if (applied && !delta)
		malloc_trim(0);
#endif
	/* the next pass's delta is taken from what this one applied; one
	 * that did not apply (or could not read the datapath) left the kernel
	 * as it was while the view moved on: the next is full */
	if (unread)
		glogf(GLOG_WARN, COMP, "reconcile #%lu: the datapath could not be read: nothing was changed, the last "
		      "pass's results stand; a full pass follows", p->passes);
	if (applied && !unread) {
		set_prev(p, &sp->st);
		p->verified = true;
	} else {
		p->have_prev = false;
	}
	rec_changes_free(&ch);
	pthread_mutex_unlock(&p->pass_mu);
	return rc;
}

void pipeline_status_free(struct pipeline_status *s)
{
	gdp_results_free(&s->errors);
	memset(s, 0, sizeof(*s));
}

static bool json_uint(json_t *o, const char *k, unsigned long long *out)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return false;
	*out = (unsigned long long)json_integer_value(x);
	return true;
}

int pipeline_status_parse(const char *text, size_t len, struct pipeline_status *out, char *why, size_t whylen)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *errs, *disk, *x;
	const char *bk;
	size_t i;

	memset(out, 0, sizeof(*out));
	gdp_results_init(&out->errors);
	if (!json_is_object(j)) {
		snprintf(why, whylen, "not a JSON object (line %d: %s)", je.line, je.text);
		json_decref(j);
		return -EINVAL;
	}
	bk = json_string_value(json_object_get(j, "backend"));
	errs = json_object_get(j, "errors");
	disk = json_object_get(j, "disk");
	if (!bk || strlen(bk) >= sizeof(out->backend) || !json_is_integer(json_object_get(j, "rc")) ||
	    !json_is_array(errs) || (disk && !json_is_object(disk))) {
		snprintf(why, whylen, "needs \"backend\", \"rc\" and \"errors\" (a status.json of an older agent?)");
		goto bad;
	}
	snprintf(out->backend, sizeof(out->backend), "%s", bk);
	out->rc = json_integer_value(json_object_get(j, "rc"));
	if (disk) {
		unsigned long long ep, ln;

		if (!json_uint(disk, "epoch", &ep) || !json_uint(disk, "lines", &ln) ||
		    !json_uint(disk, "remotesInode", &out->disk.rem_ino) ||
		    !json_uint(disk, "remotesSize", &out->disk.rem_size) ||
		    !json_uint(disk, "remotesMtimeNs", &out->disk.rem_mtime_ns)) {
			snprintf(why, whylen, "\"disk\": epoch, lines, remotesInode, remotesSize, remotesMtimeNs must be integers >= 0");
			goto bad;
		}
		out->disk.epoch = (unsigned long)ep;
		out->disk.lines = (size_t)ln;
		out->disk.valid = true;
	}
	json_array_foreach(errs, i, x) {
		const char *kind = json_string_value(json_object_get(x, "kind"));
		const char *vpc = json_string_value(json_object_get(x, "vpc"));
		const char *key = json_string_value(json_object_get(x, "key"));
		const char *msg = json_string_value(json_object_get(x, "message"));
		json_t *en = json_object_get(x, "errno");
		struct gdp_result *r;
		int k;

		for (k = GDP_OBJ_NODE; k <= GDP_OBJ_EGRESS && (!kind || strcmp(kind, gdp_obj_kind_str(k))); k++)
			;
		if (k > GDP_OBJ_EGRESS || !vpc || !key || !msg || strlen(vpc) > GDP_ID_MAX || strlen(key) > GDP_ID_MAX ||
		    !json_is_integer(en) || json_integer_value(en) <= 0 || json_integer_value(en) > 4095) {
			snprintf(why, whylen, "errors[%zu]: needs a known kind, vpc, key, errno 1-4095 and message", i);
			goto bad;
		}
		r = gdp_results_get(&out->errors, (enum gdp_obj_kind)k, vpc, key);
		if (!r) {
			snprintf(why, whylen, "out of memory");
			goto bad;
		}
		r->programmed = false;
		r->err = -(int)json_integer_value(en);
		snprintf(r->msg, sizeof(r->msg), "%s", msg);
	}
	json_decref(j);
	return 0;
bad:
	json_decref(j);
	pipeline_status_free(out);
	return -EINVAL;
}

int pipeline_adopt(struct pipeline *p, char *why, size_t whylen)
{
	struct pipeline_status st;
	struct rec_disk_pos loaded;
	struct rec_changes ch;
	struct gdp_results res;
	const struct gdp_state *s;
	char *text = NULL, perr[256];
	size_t len, nrem_err = 0, nerr;
	int rc;

	if (!p->o.status_path)
		return snprintf(why, whylen, "no status file"), -ESTALE;
	if (!record_loaded_pos(p->o.rec, &loaded))
		return snprintf(why, whylen, "the record was not loaded as it was (new, migrated, imported or damaged)"),
		       -ESTALE;
	if ((rc = gfile_read(p->o.status_path, 64u << 20, &text, &len)))
		return snprintf(why, whylen, "%s: %s", p->o.status_path, strerror(-rc)), -ESTALE;
	rc = pipeline_status_parse(text, len, &st, perr, sizeof(perr));
	free(text);
	if (rc)
		return snprintf(why, whylen, "%s: %s", p->o.status_path, perr), -ESTALE;
	if (strcmp(st.backend, p->o.be->ops->name) || st.rc != 0 || !rec_disk_pos_equal(&st.disk, &loaded)) {
		snprintf(why, whylen, "%s", strcmp(st.backend, p->o.be->ops->name) ? "the last pass was another backend's"
					    : st.rc ? "the last pass did not succeed"
						    : "the last pass did not apply what the record's files hold now");
		pipeline_status_free(&st);
		return -ESTALE;
	}
	pthread_mutex_lock(&p->pass_mu);
	rc = record_view_update(p->o.rec, &p->view, &ch);
	rec_changes_free(&ch);
	s = &p->view.s.st;
	if (rc || !p->view.s.have_node) {
		pthread_mutex_unlock(&p->pass_mu);
		pipeline_status_free(&st);
		return snprintf(why, whylen, "%s", rc ? "out of memory" : "no node identity"), -ESTALE;
	}
	/* Every object as the last pass verified it: programmed, but for its errors. */
	gdp_results_init(&res);
	rc = !gdp_results_get(&res, GDP_OBJ_NODE, "", "");
	for (size_t i = 0; i < s->n_vpcs && !rc; i++)
		rc = !gdp_results_get(&res, GDP_OBJ_VPC, s->vpcs[i].id, "");
	for (size_t i = 0; i < s->n_atts && !rc; i++)
		rc = !gdp_results_get(&res, GDP_OBJ_ATTACHMENT, s->atts[i].vpc, s->atts[i].id);
	if (s->egress.have && !rc)
		rc = !gdp_results_get(&res, GDP_OBJ_EGRESS, "", "");
	if (!rc && !p->o.be->ops->adopt)
		rc = -EOPNOTSUPP;
	for (size_t i = 0; i < res.n; i++)
		res.v[i].programmed = true;
	for (size_t i = 0; i < st.errors.n && !rc; i++) {
		const struct gdp_result *e = &st.errors.v[i];
		struct gdp_result *x = gdp_results_get(&res, e->kind, e->vpc, e->key);

		if (!x) {
			rc = 1;
			break;
		}
		*x = *e;
		nrem_err += e->kind == GDP_OBJ_REMOTE;
	}
	nerr = st.errors.n;
	pipeline_status_free(&st);
	if (!rc && (rc = p->o.be->ops->adopt(p->o.be, s, &res)) < 0)
		snprintf(perr, sizeof(perr), "the backend cannot adopt it: %s", strerror(-rc));
	else if (rc)
		snprintf(perr, sizeof(perr), "%s", rc == -EOPNOTSUPP ? "the backend cannot adopt" : "out of memory");
	if (rc) {
		gdp_results_free(&res);
		record_view_free(&p->view);
		pthread_mutex_unlock(&p->pass_mu);
		return snprintf(why, whylen, "%s", perr), -ESTALE;
	}
	res.remotes_ok = s->n_remotes > nrem_err ? s->n_remotes - nrem_err : 0;
	gdp_results_find(&res, GDP_OBJ_NODE, "", ""); /* indexed whole: readers only read */
	set_prev(p, s);
	pthread_mutex_lock(&p->mu);
	gdp_results_free(&p->last);
	p->last = res;
	tally_count(p);
	p->remotes_whole = true;
	p->verified = true;
	p->adopting = true;
	p->adopt_ms = now_ms();
	p->want_full = true; /* the read-back: once the record is quiet, at the latest 2 s from now */
	if (p->view.s.gen > p->applied_gen)
		p->applied_gen = p->view.s.gen;
	wake_applied(p);
	pthread_mutex_unlock(&p->mu);
	status_note(p, 0, 0, &loaded, true, true);
	glogf(GLOG_INFO, COMP,
	      "adopted the datapath as the last pass left it (%zu VPCs, %zu attachments, %zu remotes; %zu not programmed): "
	      "answering CNI now, reading the kernel back once the record is quiet",
	      s->n_vpcs, s->n_atts, s->n_remotes, nerr);
	pthread_mutex_unlock(&p->pass_mu);
	return 0;
}

bool pipeline_adopting(struct pipeline *p)
{
	bool a;

	pthread_mutex_lock(&p->mu);
	a = p->adopting;
	pthread_mutex_unlock(&p->mu);
	return a;
}

int pipeline_pass(struct pipeline *p)
{
	return run_pass(p, true);
}

void pipeline_counters(struct pipeline *p, unsigned long *full, unsigned long *delta)
{
	pthread_mutex_lock(&p->mu);
	*full = p->full_passes;
	*delta = p->delta_passes;
	pthread_mutex_unlock(&p->mu);
}

/*
 * What a read-back covers, from the view the last pass applied: node,
 * egress, VPCs and attachments copied (a pass may change the view while
 * the observer reads beside it), the remotes shared by reference (the
 * record's immutable set; copied only when the view holds a filtered set
 * of its own). No pods, no pass over the remotes: at 100,000 remotes a
 * read-back used to take two whole snapshots of the record.
 */
static int applied_copy(const struct rec_view *v, struct rec_snap *out)
{
	const struct gdp_state *s = &v->s.st;

	memset(out, 0, sizeof(*out));
	gdp_state_init(&out->st);
	out->gen = v->s.gen;
	out->have_node = v->s.have_node;
	out->st.node = s->node;
	out->st.egress = s->egress;
	if ((s->n_vpcs && !(out->st.vpcs = malloc(s->n_vpcs * sizeof(*s->vpcs)))) ||
	    (s->n_atts && !(out->st.atts = malloc(s->n_atts * sizeof(*s->atts)))))
		goto nomem;
	if (s->n_vpcs)
		memcpy(out->st.vpcs, s->vpcs, s->n_vpcs * sizeof(*s->vpcs));
	if (s->n_atts)
		memcpy(out->st.atts, s->atts, s->n_atts * sizeof(*s->atts));
	out->st.n_vpcs = out->st.cap_vpcs = s->n_vpcs;
	out->st.n_atts = out->st.cap_atts = s->n_atts;
	if (v->s.remotes && s->remotes == v->s.remotes->v) {
		out->remotes = rec_remotes_ref(v->s.remotes);
		out->st.remotes = out->remotes->v;
	} else if (s->n_remotes) {
		if (!(out->st.remotes = malloc(s->n_remotes * sizeof(*s->remotes))))
			goto nomem;
		memcpy(out->st.remotes, s->remotes, s->n_remotes * sizeof(*s->remotes));
	}
	out->st.n_remotes = out->st.cap_remotes = s->n_remotes;
	return 0;
nomem:
	record_snap_free(out);
	return -ENOMEM;
}

/* The observer, open and up to date (under pass_mu, no apply running): 0, or -errno. */
static int observer_ready(struct pipeline *p)
{
	const struct gdp_backend_ops *ops = p->o.be->ops;

	if (p->obs && ops->observer_sync && ops->observer_sync(p->o.be, p->obs) == 0)
		return 0;
	if (p->obs) {
		ops->observer_close(p->o.be, p->obs);
		p->obs = NULL;
	}
	return ops->observer_open(p->o.be, &p->obs);
}

int pipeline_verify(struct pipeline *p, struct gdp_results *res, struct rec_snap *covered)
{
	const struct gdp_backend_ops *ops = p->o.be->ops;
	struct rec_snap own = { 0 }, *cv = covered ? covered : &own;
	unsigned long passes;
	char held[64];
	int rc;

	memset(cv, 0, sizeof(*cv));
	pthread_mutex_lock(&p->pass_mu);
	/* What the last pass applied, when one did: a change not applied yet
	 * (a learned route, an ADD in flight) is no difference in the kernel. */
	if (record_held(p->o.rec, held, sizeof(held))) {
		rc = -EBUSY;
	} else if (p->have_prev && p->view.s.have_node) {
		/* The view as the last pass applied it, read back beside the
		 * passes by an observer of its own (kept open from one read-back
		 * to the next): a read-back of 100,000 routes no longer holds up
		 * an ADD's pass. A change not applied yet: the pass that applies
		 * it comes first, the next tick reads. */
		if (ops->observer_open && record_gen(p->o.rec) != p->view.s.gen)
			rc = -EBUSY;
		else if ((rc = applied_copy(&p->view, cv)))
			;
		else if (!ops->observer_open || observer_ready(p))
			rc = ops->observe(p->o.be, &cv->st, res); /* (no observer: serialized, as before) */
		else {
			struct gdp_backend *obs = p->obs;

			pthread_mutex_lock(&p->mu);
			passes = p->passes;
			pthread_mutex_unlock(&p->mu);
			pthread_mutex_unlock(&p->pass_mu);
			rc = ops->observe(obs, &cv->st, res);
			pthread_mutex_lock(&p->pass_mu);
			/* its socket or context failed: the next read-back opens another */
			if ((rc < 0 || res->unread) && p->obs == obs) {
				ops->observer_close(p->o.be, obs);
				p->obs = NULL;
			}
			pthread_mutex_lock(&p->mu);
			/* a pass ran meanwhile: what was read may be half of its writes */
			if (p->passes != passes && rc >= 0)
				rc = -EBUSY;
			pthread_mutex_unlock(&p->mu);
		}
	} else if ((rc = record_snapshot(p->o.rec, cv))) {
		;
	} else if (!cv->have_node) {
		rc = -ENODATA;
	} else {
		rc = ops->observe(p->o.be, &cv->st, res); /* no pass applied yet: the record as it is */
	}
	pthread_mutex_unlock(&p->pass_mu);
	if (rc < 0 || !covered)
		record_snap_free(cv);
#ifdef __GLIBC__
	/* The read's dumps are freed now: give the pages back, as after a full
	 * pass (the observer kept open would otherwise hold the heap's top). */
	if (rc != -EBUSY && rc != -ENODATA)
		malloc_trim(0);
#endif
	return rc;
}

static void *loop(void *arg)
{
	struct pipeline *p = arg;
	double interval = (p->o.interval_s > 0 ? p->o.interval_s : 30) * 1000, last = now_ms(),
	       last_full = now_ms();

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		bool due = now_ms() - last_full >= interval;
		bool pending = record_gen(p->o.rec) > p->applied_gen;
		/* A full pass asked for (kernel events, SIGHUP, drift) waits for
		 * a quiet record (500 ms without a pass), so a burst of ADDs is
		 * not queued behind a reconcile of everything; the periodic one
		 * caps the wait. */
		/* an adopted state is read back soon whatever comes in (pipeline_adopt) */
		bool adopt_due = p->adopting && now_ms() - p->adopt_ms >= 2000;
		bool full_now = due || adopt_due || (p->want_full && !pending && now_ms() - last >= 500);

		if (!p->kicked && !full_now && !pending) {
			struct timespec ts;
			double wake = last_full + interval - now_ms();

			if (p->status_due) {
				double left = p->status_at + PIPELINE_STATUS_MS - now_ms();

				if (left <= 0) {
					/* the last incremental pass's status, due now */
					pthread_mutex_unlock(&p->mu);
					pthread_mutex_lock(&p->pass_mu);
					status_flush(p);
					pthread_mutex_unlock(&p->pass_mu);
					pthread_mutex_lock(&p->mu);
					continue;
				}
				if (wake > left)
					wake = left;
			}
			if (wake > 200)
				wake = 200; /* record writers that do not kick are seen within 200 ms */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(wake * 1e6);
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			continue;
		}
		p->kicked = false;
		if (!full_now && p->want_full) {
			/* this pass is incremental; the full one stays asked for */
			p->want_full = false;
			pthread_mutex_unlock(&p->mu);
			run_pass(p, false);
			pthread_mutex_lock(&p->mu);
			p->want_full = true;
		} else {
			pthread_mutex_unlock(&p->mu);
			run_pass(p, full_now);
			pthread_mutex_lock(&p->mu);
		}
		last = now_ms();
		if (full_now)
			last_full = last;
	}
	wake_applied(p); /* stopping: every waiter goes */
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int pipeline_new(struct pipeline **out, const struct pipeline_opts *o, char *err, size_t errlen)
{
	struct pipeline *p;

	*out = NULL;
	if (!o->rec || !o->be) {
		snprintf(err, errlen, "pipeline: needs a record and a backend");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "pipeline: out of memory");
		return -ENOMEM;
	}
	p->o = *o;
	pthread_mutex_init(&p->pass_mu, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	gdp_results_init(&p->last);
	record_view_init(&p->view);
	gdp_state_init(&p->prev);
	*out = p;
	return 0;
}

int pipeline_start(struct pipeline *p, char *err, size_t errlen)
{
	if (pthread_create(&p->th, NULL, loop, p)) {
		snprintf(err, errlen, "pipeline: cannot start its thread");
		return -EAGAIN;
	}
	p->th_on = true;
	return 0;
}

void pipeline_kick_full(struct pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	p->want_full = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pipeline_kick(struct pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	p->kicked = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

int pipeline_wait(struct pipeline *p, unsigned long gen)
{
	return pipeline_wait_spans(p, gen, NULL);
}

int pipeline_wait_spans(struct pipeline *p, unsigned long gen, double *backend_ms)
{
	struct waiter w = { .gen = gen };
	int rc = 0;

	pthread_cond_init(&w.cv, NULL);
	pthread_mutex_lock(&p->mu);
	p->inside++;
	p->kicked = true;
	pthread_cond_signal(&p->cv); /* the loop thread, the only one waiting there */
	if (p->applied_gen < gen && !p->stop) {
		w.next = p->waiters;
		/* listed only while this frame waits: the pass unlists it before waking us */
		// cppcheck-suppress autoVariables
		p->waiters = &w;
		w.listed = true;
		while (w.listed)
			pthread_cond_wait(&w.cv, &p->mu);
	}
	if (p->applied_gen < gen)
		rc = -ESHUTDOWN;
	if (backend_ms)
		*backend_ms = p->last_backend_ms;
	if (--p->inside == 0 && p->stop)
		pthread_cond_broadcast(&p->cv); /* pipeline_free waits for the last one out */
	pthread_mutex_unlock(&p->mu);
	pthread_cond_destroy(&w.cv);
	return rc;
}

int pipeline_result(struct pipeline *p, enum gdp_obj_kind kind, const char *vpc, const char *key,
		    struct gdp_result *out)
{
	struct gdp_result *x;
	int rc = -ENOENT;

	pthread_mutex_lock(&p->mu);
	x = gdp_results_find(&p->last, kind, vpc, key);
	if (x) {
		*out = *x;
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

unsigned long pipeline_passes(struct pipeline *p)
{
	unsigned long n;

	pthread_mutex_lock(&p->mu);
	n = p->passes;
	pthread_mutex_unlock(&p->mu);
	return n;
}

unsigned pipeline_waiting(struct pipeline *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->inside;
	pthread_mutex_unlock(&p->mu);
	return n;
}

unsigned long pipeline_visits(struct pipeline *p)
{
	unsigned long n;

	pthread_mutex_lock(&p->mu);
	n = p->visits;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	wake_applied(p);
	/* A woken waiter still re-locks mu and reads its answer: the pipeline
	 * (its mutex included) stays until the last one is out. */
	while (p->inside)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (p->th_on)
		pthread_join(p->th, NULL);
	status_flush(p); /* the last pass's, if not written yet */
	if (p->obs)
		p->o.be->ops->observer_close(p->o.be, p->obs);
	gdp_results_free(&p->last);
	record_view_free(&p->view);
	free(p->prev.vpcs);
	pthread_mutex_destroy(&p->pass_mu);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}
