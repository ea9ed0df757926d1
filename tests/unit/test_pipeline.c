/*
 * The pipeline's answer to a backend that could not read the datapath
 * (gdp_results.unread, a dump failed even after its retries): nothing was
 * changed, so the last pass's results stand (a failed dump never withdraws
 * what is programmed) and a full pass is asked for. Any other failure, and
 * an unread first pass (nothing verified yet), are reported as they are.
 * And the verify read-back's observer, kept open between read-backs.
 */
#include "tests/lib/gtest.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pipeline.h"
#include "agent/record.h"
#include "common/fileio.h"
#include "tests/lib/recfix.h"

static char dir[64];

enum mode { OK, UNREAD, FAIL };

struct fake {
	struct gdp_backend b;
	enum mode mode;
	int applies;
};

static int fake_apply(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	struct fake *f = (struct fake *)b;
	struct gdp_result *n = gdp_results_get(res, GDP_OBJ_NODE, "", "");

	f->applies++;
	for (size_t i = 0; i < d->n_atts; i++) {
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, d->atts[i].vpc, d->atts[i].id);

		ck_assert_ptr_nonnull(r);
		r->programmed = f->mode == OK;
	}
	ck_assert_ptr_nonnull(n = gdp_results_find(res, GDP_OBJ_NODE, "", ""));
	if (f->mode == OK) {
		n->programmed = true;
		return 0;
	}
	res->unread = f->mode == UNREAD;
	gdp_result_fail(n, f->mode == UNREAD ? -EAGAIN : -EIO, "dump kernel state: %s",
			f->mode == UNREAD ? "interrupted" : "broken");
	return n->err;
}

static const struct gdp_backend_ops FAKE = { .name = "fake", .apply = fake_apply };

static void reserve(struct record *r, const char *id)
{
	struct rec_att t, *a;
	char container[80];

	snprintf(container, sizeof(container), "c-%s", id);
	recfix_cni_att(&t, "vpcA", id, container);
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.1", &t.m.addrs[0]), 0);
	t.m.n_addrs = 1;
	t.config = json_pack("{s:s, s:s}", "vpc", "vpcA", "vpcattachment", id);
	t.netns = strdup("/var/run/netns/x");
	record_lock(r);
	a = recfix_reserve_locked(r, &t);
	record_activate(r, a); /* desired from the next pass on */
	record_unlock(r);
}

static struct gdp_result node_of(struct pipeline *p)
{
	struct gdp_result r;

	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_NODE, "", "", &r), 0);
	return r;
}

START_TEST(t_unread_keeps_last_results)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct fake f = { .b = { &FAKE }, .mode = UNREAD };
	struct record *rec;
	struct pipeline *p;
	struct gdp_result r;
	char err[512];

	recfix_mkdir(dir, sizeof(dir), "gpipe");
	rec = recfix_open(dir);
	record_set_node_identity(rec, &n, 1500);
	reserve(rec, "a1");
	ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &f.b }, err, sizeof(err)), 0);

	/* an unread first pass: nothing was verified yet, the failure shows */
	ck_assert_int_eq(pipeline_pass(p), -EAGAIN);
	ck_assert_int_eq(node_of(p).err, -EAGAIN);
	/* a good pass */
	f.mode = OK;
	ck_assert_int_eq(pipeline_pass(p), 0);
	ck_assert_int_eq(node_of(p).err, 0);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a1", &r), 0);
	ck_assert(r.programmed);
	/* unread: the pass fails, but what was programmed stays programmed */
	f.mode = UNREAD;
	ck_assert_int_eq(pipeline_pass(p), -EAGAIN);
	r = node_of(p);
	ck_assert_int_eq(r.err, 0);
	ck_assert(r.programmed);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a1", &r), 0);
	ck_assert(r.programmed);
	ck_assert_int_eq(r.err, 0);
	/* the same with an attachment added meanwhile: it has no result yet (not "failed") */
	reserve(rec, "a2");
	ck_assert_int_eq(pipeline_pass(p), -EAGAIN);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a2", &r), -ENOENT);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a1", &r), 0);
	ck_assert(r.programmed);
	/* the next good pass covers both */
	f.mode = OK;
	ck_assert_int_eq(pipeline_pass(p), 0);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a2", &r), 0);
	ck_assert(r.programmed);
	/* any other failure replaces the results, as before */
	f.mode = FAIL;
	ck_assert_int_eq(pipeline_pass(p), -EIO);
	ck_assert_int_eq(node_of(p).err, -EIO);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a1", &r), 0);
	ck_assert(!r.programmed);
	ck_assert_int_eq(f.applies, 6);

	pipeline_free(p);
	record_close(rec);
	recfix_rmdir(dir);
}
END_TEST

struct waiter_arg {
	struct pipeline *p;
	unsigned long gen;
	atomic_int done; /* 1 + the wait's return */
};

static void *waiter(void *arg)
{
	struct waiter_arg *w = arg;
	int rc = pipeline_wait(w->p, w->gen);

	atomic_store(&w->done, 1 + (rc ? 1 : 0));
	return NULL;
}

static bool done_within(struct waiter_arg *w, int ms)
{
	for (int i = 0; i < ms && !atomic_load(&w->done); i++)
		usleep(1000);
	return atomic_load(&w->done) != 0;
}

/* Each waiter has its own condition on the pipeline's list (agent/pipeline.c):
 * a pass releases the waiters whose generation it applied; one waiting for a
 * later generation stays listed and waiting, and the pass that applies it
 * releases it. */
START_TEST(t_pass_wakes_only_applied_waiters)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct fake f = { .b = { &FAKE }, .mode = OK };
	struct waiter_arg a = { 0 }, b = { 0 };
	pthread_t ta, tb;
	struct record *rec;
	struct pipeline *p;
	char err[512];

	recfix_mkdir(dir, sizeof(dir), "gpipew");
	rec = recfix_open(dir);
	record_set_node_identity(rec, &n, 1500);
	ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &f.b }, err, sizeof(err)), 0);
	ck_assert_int_eq(pipeline_pass(p), 0);
	reserve(rec, "w1");
	a.p = b.p = p;
	a.gen = record_gen(rec);
	b.gen = a.gen + 1; /* the next change, not made yet */
	ck_assert_int_eq(pthread_create(&ta, NULL, waiter, &a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, waiter, &b), 0);
	ck_assert(!done_within(&a, 100)); /* no pass yet: both wait */
	ck_assert(!atomic_load(&b.done));
	ck_assert_int_eq(pipeline_pass(p), 0);
	ck_assert(done_within(&a, 5000));
	ck_assert_int_eq(atomic_load(&a.done), 1);
	ck_assert(!done_within(&b, 100)); /* its generation is not applied: still waiting */
	reserve(rec, "w2");
	ck_assert_uint_ge(record_gen(rec), b.gen);
	ck_assert_int_eq(pipeline_pass(p), 0);
	ck_assert(done_within(&b, 5000));
	ck_assert_int_eq(atomic_load(&b.done), 1);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pipeline_free(p);
	record_close(rec);
	recfix_rmdir(dir);
}
END_TEST

/*
 * pipeline_free with threads waiting: it wakes them (-ESHUTDOWN) and returns
 * only once none is inside pipeline_wait any more, so a woken waiter never
 * re-locks (or reads) a pipeline that is gone. Many waiters, many rounds, on
 * a pipeline with no loop thread (nothing to join, so the free is as fast as
 * it gets); ASan reports any access to the freed pipeline (before the fix:
 * a heap-use-after-free in pipeline_wait_spans in the first rounds).
 */
START_TEST(t_free_waits_for_woken_waiters)
{
	enum { ROUNDS = 30, WAITERS = 24 };
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct fake f = { .b = { &FAKE }, .mode = OK };
	struct waiter_arg w[WAITERS];
	pthread_t t[WAITERS];
	struct record *rec;
	char err[512];

	recfix_mkdir(dir, sizeof(dir), "gpipef");
	rec = recfix_open(dir);
	record_set_node_identity(rec, &n, 1500);
	for (int r = 0; r < ROUNDS; r++) {
		struct pipeline *p;

		ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &f.b }, err,
					      sizeof(err)), 0);
		for (int i = 0; i < WAITERS; i++) {
			w[i] = (struct waiter_arg){ .p = p, .gen = record_gen(rec) + 1 + (unsigned long)i };
			ck_assert_int_eq(pthread_create(&t[i], NULL, waiter, &w[i]), 0);
		}
		/* every one inside (a call after pipeline_free began would be the caller's bug) */
		for (int ms = 0; pipeline_waiting(p) < WAITERS && ms < 10000; ms++)
			usleep(1000);
		ck_assert_uint_eq(pipeline_waiting(p), WAITERS);
		pipeline_free(p);
		for (int i = 0; i < WAITERS; i++) {
			pthread_join(t[i], NULL);
			ck_assert_int_eq(atomic_load(&w[i].done), 2); /* -ESHUTDOWN: nothing applied it */
		}
	}
	record_close(rec);
	recfix_rmdir(dir);
}
END_TEST

/*
 * The verify read-back's observer is kept open from one read-back to the
 * next (brought up to date each time, reopened after an error, closed with
 * the pipeline), and what it reads is the view the last pass applied, its
 * remotes shared rather than copied.
 */
struct obsfake {
	struct gdp_backend b;   /* the backend, and (a second one) its observer */
	struct obsfake *of;     /* the observer's backend */
	int opens, syncs, closes, observes, fail_next;
	const struct gdp_remote *seen;
	size_t seen_n, seen_atts;
};

static struct obsfake the_obs;

static int obs_apply(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	struct gdp_result *n = gdp_results_get(res, GDP_OBJ_NODE, "", "");

	(void)b;
	for (size_t i = 0; i < d->n_atts; i++)
		gdp_results_get(res, GDP_OBJ_ATTACHMENT, d->atts[i].vpc, d->atts[i].id)->programmed = true;
	n->programmed = true;
	return 0;
}

static int obs_observe(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	struct obsfake *o = (struct obsfake *)b;

	ck_assert_ptr_eq(o, &the_obs); /* read by the observer, not the backend */
	o->observes++;
	o->seen = d->remotes;
	o->seen_n = d->n_remotes;
	o->seen_atts = d->n_atts;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	if (o->fail_next) {
		o->fail_next = 0;
		res->unread = true;
		return -EIO;
	}
	return 0;
}

static int obs_open(struct gdp_backend *b, struct gdp_backend **out)
{
	the_obs.of = (struct obsfake *)b;
	the_obs.opens++;
	*out = &the_obs.b;
	return 0;
}

static void obs_close(struct gdp_backend *b, struct gdp_backend *o)
{
	(void)b;
	ck_assert_ptr_eq(o, &the_obs.b);
	the_obs.closes++;
}

static int obs_sync(struct gdp_backend *b, struct gdp_backend *o)
{
	(void)b;
	ck_assert_ptr_eq(o, &the_obs.b);
	the_obs.syncs++;
	return 0;
}

static const struct gdp_backend_ops OBSFAKE = { .name = "fake", .apply = obs_apply, .observe = obs_observe,
						.observer_open = obs_open, .observer_close = obs_close,
						.observer_sync = obs_sync };

START_TEST(t_verify_keeps_its_observer)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct gdp_backend be = { &OBSFAKE };
	struct gdp_remote rm[2] = { { .vpc_ix = gdp_vpc_ix("vpcA") }, { .vpc_ix = gdp_vpc_ix("vpcA") } };
	struct gdp_results res;
	struct rec_snap c1, c2;
	struct record *rec;
	struct pipeline *p;
	char err[512];

	memset(&the_obs, 0, sizeof(the_obs));
	the_obs.b.ops = &OBSFAKE;
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::7/128", &rm[0].prefix), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::8/128", &rm[1].prefix), 0);
	recfix_mkdir(dir, sizeof(dir), "gpipeo");
	rec = recfix_open(dir);
	record_set_node_identity(rec, &n, 1500);
	reserve(rec, "a1");
	ck_assert_int_eq(record_set_remotes(rec, rm, 2), 0);
	ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &be }, err, sizeof(err)), 0);
	ck_assert_int_eq(pipeline_pass(p), 0);

	gdp_results_init(&res);
	ck_assert_int_eq(pipeline_verify(p, &res, &c1), 0);
	ck_assert_int_eq(pipeline_verify(p, &res, &c2), 0);
	/* opened once, brought up to date for the second */
	ck_assert_int_eq(the_obs.opens, 1);
	ck_assert_int_eq(the_obs.syncs, 1);
	ck_assert_int_eq(the_obs.observes, 2);
	ck_assert_uint_eq(the_obs.seen_atts, 1);
	ck_assert_uint_eq(the_obs.seen_n, 2);
	/* the remotes are the view's set, shared: both read-backs (alive at once) point at the same array */
	ck_assert_ptr_eq(c1.st.remotes, c2.st.remotes);
	ck_assert_ptr_eq(the_obs.seen, c2.st.remotes);
	ck_assert_uint_eq(c1.st.n_atts, 1);
	ck_assert(c1.have_node);
	record_snap_free(&c1);
	record_snap_free(&c2);
	/* its read failed: closed, the next read-back opens another */
	the_obs.fail_next = 1;
	gdp_results_reset(&res);
	ck_assert_int_eq(pipeline_verify(p, &res, &c1), -EIO);
	ck_assert_int_eq(the_obs.closes, 1);
	record_snap_free(&c1);
	gdp_results_reset(&res);
	ck_assert_int_eq(pipeline_verify(p, &res, NULL), 0);
	ck_assert_int_eq(the_obs.opens, 2);
	/* a change not applied yet: nothing read */
	reserve(rec, "a2");
	gdp_results_reset(&res);
	ck_assert_int_eq(pipeline_verify(p, &res, &c1), -EBUSY);
	ck_assert_int_eq(the_obs.observes, 4);
	record_snap_free(&c1);
	gdp_results_free(&res);
	pipeline_free(p);
	ck_assert_int_eq(the_obs.closes, 2); /* the pipeline closes the one it kept */
	record_close(rec);
	recfix_rmdir(dir);
}
END_TEST

/*
 * The pass's own bookkeeping costs what a pass changed: after a full pass
 * over N attachments, incremental passes (one ADD each) walk no result of
 * the others (pipeline_visits: the tally, status.json's error list), while
 * the tally they hand on (on_pass) and status.json stay exact: a failed
 * attachment is counted, listed, and forgotten when it goes.
 */
struct dfake {
	struct gdp_backend b;
	char bad[16];             /* this attachment fails */
	unsigned long deltas, fulls;
	pthread_mutex_t mu;       /* the last tally (on_pass runs on the pass's thread after the waiters go) */
	struct pipeline_tally last;
};

static void dfake_att(struct dfake *f, struct gdp_results *res, const struct gdp_attachment *a)
{
	struct gdp_result *r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);

	ck_assert_ptr_nonnull(r);
	if (strcmp(a->id, f->bad)) {
		r->programmed = true;
		return;
	}
	gdp_result_fail(r, -EIO, "host interface %s: broken", a->host_ifname);
}

static int dfake_apply(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	struct dfake *f = (struct dfake *)b;
	int rc = 0;

	f->fulls++;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (size_t i = 0; i < d->n_atts; i++) {
		dfake_att(f, res, &d->atts[i]);
		rc = strcmp(d->atts[i].id, f->bad) ? rc : -EIO;
	}
	return rc;
}

static int dfake_delta(struct gdp_backend *b, const struct gdp_state *d, const struct gdp_delta *dl,
		       struct gdp_results *res)
{
	struct dfake *f = (struct dfake *)b;

	f->deltas++;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (size_t i = 0; i < dl->n_atts; i++) {
		if (!strcmp(d->atts[dl->atts[i]].id, f->bad))
			return -EIO; /* the pipeline reconciles in full */
		dfake_att(f, res, &d->atts[dl->atts[i]]);
	}
	return 0;
}

static const struct gdp_backend_ops DFAKE = { .name = "fake", .apply = dfake_apply, .apply_delta = dfake_delta };

static void dfake_on_pass(void *ctx, const struct rec_snap *snap, const struct gdp_results *res,
			  const struct pipeline_tally *t)
{
	struct dfake *f = ctx;

	(void)snap;
	ck_assert_uint_eq(t->objects, res->n + res->remotes_ok);
	pthread_mutex_lock(&f->mu);
	f->last = *t;
	pthread_mutex_unlock(&f->mu);
}

/* The tally on_pass got once it counts objects (the pass's last step, after its waiters went). */
static struct pipeline_tally tally_of(struct dfake *f, size_t objects)
{
	struct pipeline_tally t;

	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&f->mu);
		t = f->last;
		pthread_mutex_unlock(&f->mu);
		if (t.objects == objects)
			break;
		usleep(1000);
	}
	ck_assert_uint_eq(t.objects, objects);
	return t;
}

static struct rec_att *reserve_n(struct record *r, unsigned i)
{
	struct rec_att t, *a;
	char id[16], container[32], ip[64];

	snprintf(id, sizeof(id), "x%u", i);
	snprintf(container, sizeof(container), "c-%u", i);
	snprintf(ip, sizeof(ip), "fd00:a::%x", i + 1);
	recfix_cni_att(&t, "vpcA", id, container);
	ck_assert_int_eq(gdp_prefix_parse(ip, &t.m.addrs[0]), 0);
	t.m.n_addrs = 1;
	t.config = json_pack("{s:s, s:s}", "vpc", "vpcA", "vpcattachment", id);
	t.netns = strdup("/var/run/netns/x");
	record_lock(r);
	a = recfix_reserve_locked(r, &t);
	record_activate(r, a);
	record_unlock(r);
	return a;
}

static void read_status(const char *path, struct pipeline_status *st, long long *reconciles, long long *programmed)
{
	char *text = NULL, why[256];
	size_t len;
	json_t *j;

	ck_assert_int_eq(gfile_read(path, 1 << 20, &text, &len), 0);
	ck_assert_msg(pipeline_status_parse(text, len, st, why, sizeof(why)) == 0, "%s", why);
	j = json_loadb(text, len, 0, NULL);
	ck_assert_ptr_nonnull(j);
	*reconciles = json_integer_value(json_object_get(j, "reconciles"));
	*programmed = json_integer_value(json_object_get(j, "programmed"));
	json_decref(j);
	free(text);
}

START_TEST(t_delta_pass_walks_only_its_change)
{
	enum { N = 300, ADDS = 20 };
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct dfake f = { .b = { &DFAKE }, .mu = PTHREAD_MUTEX_INITIALIZER };
	struct pipeline_status st;
	struct pipeline_tally t;
	char err[512], status[128];
	unsigned long v0, full0, delta0, full1, delta1, passes;
	long long reconciles, programmed;
	struct rec_att *bad;
	struct record *rec;
	struct pipeline *p;

	recfix_mkdir(dir, sizeof(dir), "gpiped");
	snprintf(status, sizeof(status), "%s/status.json", dir);
	rec = recfix_open(dir);
	record_set_node_identity(rec, &n, 1500);
	for (unsigned i = 0; i < N; i++)
		reserve_n(rec, i);
	ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = rec, .be = &f.b, .status_path = status,
							       .interval_s = 3600, .on_pass = dfake_on_pass,
							       .ctx = &f },
				      err, sizeof(err)), 0);
	ck_assert_int_eq(pipeline_pass(p), 0);
	/* the full pass counted its results once */
	ck_assert_uint_ge(pipeline_visits(p), N);
	ck_assert_uint_eq(tally_of(&f, N + 1).bad, 0);
	ck_assert_int_eq(pipeline_start(p, err, sizeof(err)), 0);
	v0 = pipeline_visits(p);
	pipeline_counters(p, &full0, &delta0);
	for (unsigned i = N; i < N + ADDS; i++) {
		reserve_n(rec, i);
		ck_assert_int_eq(pipeline_wait(p, record_gen(rec)), 0);
	}
	pipeline_counters(p, &full1, &delta1);
	ck_assert_uint_eq(full1, full0);          /* no full pass came between */
	ck_assert_uint_ge(delta1 - delta0, 1);
	/* twenty ADDs among 300: none of their passes walked the others' results */
	t = tally_of(&f, N + ADDS + 1);
	ck_assert_uint_eq(pipeline_visits(p), v0);
	ck_assert_uint_eq(t.bad, 0);
	ck_assert_uint_eq(t.unprogrammed, 0);

	/* one that fails: its delta falls back to a full pass; counted and listed */
	snprintf(f.bad, sizeof(f.bad), "x%d", N + ADDS);
	bad = reserve_n(rec, N + ADDS);
	ck_assert_int_eq(pipeline_wait(p, record_gen(rec)), 0);
	t = tally_of(&f, N + ADDS + 2);
	ck_assert_uint_eq(t.bad, 1);
	ck_assert_uint_eq(t.unprogrammed, 1);
	/* a good ADD beside it keeps it counted (the status lists it: a walk while something failed) */
	reserve_n(rec, N + ADDS + 1);
	ck_assert_int_eq(pipeline_wait(p, record_gen(rec)), 0);
	ck_assert_uint_eq(tally_of(&f, N + ADDS + 3).bad, 1);
	/* it goes: forgotten without a recount */
	pipeline_counters(p, &full0, &delta0);
	record_lock(rec);
	record_deactivate(rec, bad);
	record_unlock(rec);
	ck_assert_int_eq(pipeline_wait(p, record_gen(rec)), 0);
	pipeline_counters(p, &full1, &delta1);
	ck_assert_uint_eq(full1, full0);
	t = tally_of(&f, N + ADDS + 2);
	ck_assert_uint_eq(t.bad, 0);
	ck_assert_uint_eq(t.unprogrammed, 0);
	passes = pipeline_passes(p);
	/* status.json: at most PIPELINE_STATUS_MS behind; the last pass's once the pipeline stops */
	pipeline_free(p);
	read_status(status, &st, &reconciles, &programmed);
	ck_assert_int_eq(reconciles, (long long)passes);
	ck_assert_int_eq(programmed, N + ADDS + 2);
	ck_assert_uint_eq(st.errors.n, 0);
	pipeline_status_free(&st);
	record_close(rec);
	recfix_rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_add_test(tc, t_unread_keeps_last_results);
	tcase_add_test(tc, t_pass_wakes_only_applied_waiters);
	tcase_add_test(tc, t_free_waits_for_woken_waiters);
	tcase_add_test(tc, t_verify_keeps_its_observer);
	tcase_add_test(tc, t_delta_pass_walks_only_its_change);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
