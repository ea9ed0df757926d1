/*
 * The apply pipeline (agent/pipeline.h) over a recording fake backend:
 * passes are incremental and their scope is what changed (each ADD hands
 * the backend one attachment, however many the node holds; a DEL one
 * removal); a restart adopts what the last pass left when status.json says
 * it applied exactly the record's files (results as that pass verified
 * them, errors included), answers from it at once and reads it back in
 * full soon after; anything else (another backend, files changed since, a
 * failed pass, a damaged status.json) is not adopted; status.json's parser
 * refuses what it cannot use.
 */
#include "tests/lib/gtest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/pipeline.h"
#include "agent/record.h"
#include "common/fileio.h"
#include "tests/lib/recfix.h"

static char dir[64], status_path[128];

/* What the fake backend was asked (one process: the pipeline's thread writes, the test reads after a wait). */
static struct {
	unsigned full, delta, adopted;
	size_t last_added, last_gone, max_added;
	char fail_id[16];  /* this attachment fails */
	const char *name;
} fb;

static void prog_all(const struct gdp_state *s, struct gdp_results *res)
{
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (size_t i = 0; i < s->n_vpcs; i++)
		gdp_results_get(res, GDP_OBJ_VPC, s->vpcs[i].id, "")->programmed = true;
}

static void prog_att(const struct gdp_attachment *a, struct gdp_results *res)
{
	struct gdp_result *r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);

	if (fb.fail_id[0] && !strcmp(a->id, fb.fail_id))
		gdp_result_fail(r, -EEXIST, "add route: File exists");
	else
		r->programmed = true;
}

static int f_apply(struct gdp_backend *b, const struct gdp_state *s, struct gdp_results *res)
{
	(void)b;
	fb.full++;
	prog_all(s, res);
	for (size_t i = 0; i < s->n_atts; i++)
		prog_att(&s->atts[i], res);
	return 0;
}

static int f_delta(struct gdp_backend *b, const struct gdp_state *s, const struct gdp_delta *d, struct gdp_results *res)
{
	(void)b;
	fb.delta++;
	fb.last_added = d->n_atts;
	fb.last_gone = d->n_gone_atts;
	if (d->n_atts > fb.max_added)
		fb.max_added = d->n_atts;
	for (size_t i = 0; i < d->n_atts; i++)
		prog_att(&s->atts[d->atts[i]], res);
	return 0;
}

static int f_observe(struct gdp_backend *b, const struct gdp_state *s, struct gdp_results *res)
{
	return f_apply(b, s, res);
}

/* trusts what it is given, as the real ones do (the uplink aside) */
static int f_adopt(struct gdp_backend *b, const struct gdp_state *s, struct gdp_results *res)
{
	(void)b;
	(void)s;
	ck_assert_ptr_nonnull(gdp_results_find(res, GDP_OBJ_NODE, "", ""));
	fb.adopted++;
	return 0;
}

static struct gdp_backend_ops ops = { .name = "fake", .apply = f_apply, .apply_delta = f_delta, .observe = f_observe,
				      .adopt = f_adopt };
static struct gdp_backend be = { .ops = &ops };

static struct record *open_rec(void) { return recfix_open(dir); }

static struct pipeline *new_pl(struct record *r)
{
	struct pipeline *p;
	char err[256];

	ck_assert_int_eq(pipeline_new(&p, &(struct pipeline_opts){ .rec = r, .be = &be, .status_path = status_path,
								   .interval_s = 600 },
				      err, sizeof(err)),
			 0);
	return p;
}

/* One ADD as the CNI verbs do it: reserve, activate; the generation to wait for. */
static unsigned long add(struct record *r, int i, struct rec_att **out)
{
	struct rec_att t, *a;
	unsigned long g;
	char id[16], container[16];

	snprintf(id, sizeof(id), "a%d", i);
	snprintf(container, sizeof(container), "c%d", i);
	recfix_cni_att(&t, "vpcA", id, container);
	t.m.n_addrs = 1;
	t.m.addrs[0].family = AF_INET6;
	t.m.addrs[0].len = 128;
	t.m.addrs[0].addr.raw[0] = 0xfd;
	t.m.addrs[0].addr.raw[14] = (uint8_t)(i >> 8);
	t.m.addrs[0].addr.raw[15] = (uint8_t)i;
	record_lock(r);
	a = recfix_reserve_locked(r, &t);
	g = record_activate(r, a);
	record_unlock(r);
	if (out)
		*out = a;
	return g;
}

static void setup(void)
{
	recfix_mkdir(dir, sizeof(dir), "gpl");
	snprintf(status_path, sizeof(status_path), "%s/status.json", dir);
	memset(&fb, 0, sizeof(fb));
	fb.name = "fake";
	ops.name = "fake";
}

static void teardown(void) { recfix_rmdir(dir); }

/* A node with n attachments, applied by passes; the record and pipeline stay open. */
static struct pipeline *node_with(struct record *r, int n)
{
	struct gdp_node nd = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 3 };
	struct pipeline *p;
	char err[256];

	record_set_node_identity(r, &nd, 1500);
	p = new_pl(r);
	ck_assert_int_eq(pipeline_pass(p), 0);
	ck_assert_int_eq(pipeline_start(p, err, sizeof(err)), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(pipeline_wait(p, add(r, i, NULL)), 0);
	return p;
}

START_TEST(t_passes_cost_what_changed)
{
	struct record *r;
	struct pipeline *p;
	struct rec_att *a;
	struct gdp_result x;
	unsigned long full, delta;

	setup();
	r = open_rec();
	p = node_with(r, 300);
	/* two full passes (the first, and the VPC's first attachment: a new
	 * table is checked whole), then one attachment per ADD */
	pipeline_counters(p, &full, &delta);
	ck_assert_uint_eq(full, 2);
	ck_assert_uint_eq(fb.full, 2);
	ck_assert_uint_ge(fb.delta, 299);
	ck_assert_uint_ge(delta, 299);
	ck_assert_uint_eq(fb.max_added, 1);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a299", &x), 0);
	ck_assert(x.programmed);
	/* a DEL is one removal, and its result goes */
	record_lock(r);
	a = record_find_att(r, "vpcA", "a7");
	ck_assert_ptr_nonnull(a);
	{
		unsigned long g = record_remove(r, a);

		record_unlock(r);
		ck_assert_int_eq(pipeline_wait(p, g), 0);
	}
	ck_assert_uint_eq(fb.last_gone, 1);
	ck_assert_uint_eq(fb.last_added, 0);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a7", &x), -ENOENT);
	ck_assert_uint_eq(fb.full, 2);
	pipeline_free(p);
	record_close(r);
	teardown();
}
END_TEST

START_TEST(t_restart_adopts_last_pass)
{
	struct record *r;
	struct pipeline *p;
	struct gdp_result x;
	char why[512], *text;
	size_t len;
	unsigned f0;

	setup();
	r = open_rec();
	snprintf(fb.fail_id, sizeof(fb.fail_id), "a3");
	p = node_with(r, 20);
	/* the periodic full pass: status.json names the files it applied */
	ck_assert_int_eq(pipeline_pass(p), 0);
	pipeline_free(p);
	record_close(r);
	ck_assert_int_eq(gfile_read(status_path, 1 << 20, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"disk\""));
	free(text);

	/* restart: adopted, no pass run, results as that pass verified them */
	f0 = fb.full;
	r = open_rec();
	p = new_pl(r);
	ck_assert_msg(pipeline_adopt(p, why, sizeof(why)) == 0, "not adopted: %s", why);
	ck_assert(pipeline_adopting(p));
	ck_assert_uint_eq(fb.adopted, 1);
	ck_assert_uint_eq(fb.full, f0);
	ck_assert_uint_eq(pipeline_passes(p), 0);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a5", &x), 0);
	ck_assert(x.programmed);
	ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a3", &x), 0);
	ck_assert(!x.programmed);
	ck_assert_int_eq(x.err, -EEXIST);
	ck_assert_str_eq(x.msg, "add route: File exists");
	ck_assert_int_eq(gfile_read(status_path, 1 << 20, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"adopted\": true"));
	free(text);
	/* a new ADD is an incremental pass against the adopted state */
	{
		char err[256];
		unsigned d0 = fb.delta;

		ck_assert_int_eq(pipeline_start(p, err, sizeof(err)), 0);
		ck_assert_int_eq(pipeline_wait(p, add(r, 100, NULL)), 0);
		ck_assert_uint_eq(fb.delta, d0 + 1);
		ck_assert_uint_eq(fb.last_added, 1);
		ck_assert_int_eq(pipeline_result(p, GDP_OBJ_ATTACHMENT, "vpcA", "a100", &x), 0);
		ck_assert(x.programmed);
	}
	/* the read-back follows: at the latest 2 s after the adoption */
	{
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		int waited = 0;

		while (pipeline_adopting(p) && waited++ < 100)
			nanosleep(&ts, NULL);
		ck_assert(!pipeline_adopting(p));
		ck_assert_uint_eq(fb.full, f0 + 1);
	}
	pipeline_free(p);
	record_close(r);
	teardown();
}
END_TEST

START_TEST(t_no_adoption_when_unsure)
{
	struct record *r;
	struct pipeline *p;
	char why[512];

	setup();
	/* nothing there yet: a new record */
	r = open_rec();
	p = new_pl(r);
	ck_assert_int_eq(pipeline_adopt(p, why, sizeof(why)), -ESTALE);
	pipeline_free(p);
	record_close(r);
	teardown();

	/* the files changed after the last pass (a commit it did not apply) */
	setup();
	r = open_rec();
	p = node_with(r, 5);
	ck_assert_int_eq(pipeline_pass(p), 0);
	pipeline_free(p);
	add(r, 50, NULL);
	{
		struct rec_snap s;
		char err[256];

		ck_assert_int_eq(record_snapshot(r, &s), 0);
		ck_assert_int_eq(record_commit(r, &s, err, sizeof(err)), 0);
		record_snap_free(&s);
	}
	record_close(r);
	r = open_rec();
	p = new_pl(r);
	ck_assert_int_eq(pipeline_adopt(p, why, sizeof(why)), -ESTALE);
	ck_assert_msg(strstr(why, "what the record's files hold") != NULL, "%s", why);
	pipeline_free(p);
	record_close(r);

	/* another backend ran last */
	r = open_rec();
	p = new_pl(r);
	ck_assert_int_eq(pipeline_pass(p), 0);
	pipeline_free(p);
	record_close(r);
	ops.name = "other";
	r = open_rec();
	p = new_pl(r);
	ck_assert_int_eq(pipeline_adopt(p, why, sizeof(why)), -ESTALE);
	ck_assert_msg(strstr(why, "another backend") != NULL, "%s", why);
	pipeline_free(p);
	record_close(r);
	ops.name = "fake";

	/* a damaged status.json */
	ck_assert_int_eq(gfile_write_atomic(status_path, "{\"rc\": 0", 8, NULL, 0), 0);
	r = open_rec();
	p = new_pl(r);
	ck_assert_int_eq(pipeline_adopt(p, why, sizeof(why)), -ESTALE);
	pipeline_free(p);
	record_close(r);
	teardown();
}
END_TEST

START_TEST(t_status_parse)
{
	struct pipeline_status st;
	char why[256];
	static const char *bad[] = {
		"",
		"[]",
		"{\"rc\": 0, \"errors\": []}",
		"{\"backend\": \"kernel\", \"rc\": \"0\", \"errors\": []}",
		"{\"backend\": \"kernel\", \"rc\": 0, \"errors\": {}}",
		"{\"backend\": \"kernel\", \"rc\": 0, \"errors\": [], \"disk\": {\"epoch\": -1, \"lines\": 0, \"remotesInode\": 0, \"remotesSize\": 0, \"remotesMtimeNs\": 0}}",
		"{\"backend\": \"kernel\", \"rc\": 0, \"errors\": [{\"kind\": \"planet\", \"vpc\": \"v\", \"key\": \"k\", \"errno\": 17, \"message\": \"m\"}]}",
		"{\"backend\": \"kernel\", \"rc\": 0, \"errors\": [{\"kind\": \"attachment\", \"vpc\": \"v\", \"key\": \"k\", \"errno\": 0, \"message\": \"m\"}]}",
		"{\"backend\": \"kernel\", \"backend\": \"bpf\", \"rc\": 0, \"errors\": []}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		ck_assert_msg(pipeline_status_parse(bad[i], strlen(bad[i]), &st, why, sizeof(why)) == -EINVAL,
			      "accepted: %s", bad[i]);
		ck_assert_msg(why[0], "refused without a reason: %s", bad[i]);
	}
	{
		const char *ok = "{\"backend\": \"bpf\", \"rc\": 0, \"reconciles\": 4, \"errors\": [{\"kind\": \"attachment\", "
				 "\"vpc\": \"v\", \"key\": \"k\", \"errno\": 17, \"message\": \"m\"}], \"disk\": {\"epoch\": 3, "
				 "\"lines\": 9, \"remotesInode\": 12, \"remotesSize\": 40, \"remotesMtimeNs\": 5}}";

		ck_assert_int_eq(pipeline_status_parse(ok, strlen(ok), &st, why, sizeof(why)), 0);
		ck_assert_str_eq(st.backend, "bpf");
		ck_assert(st.disk.valid);
		ck_assert_uint_eq(st.disk.lines, 9);
		ck_assert_uint_eq(st.errors.n, 1);
		ck_assert_int_eq(st.errors.v[0].err, -17);
		ck_assert_str_eq(gdp_obj_kind_str(st.errors.v[0].kind), "attachment");
		pipeline_status_free(&st);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_passes_cost_what_changed);
	tcase_add_test(tc, t_restart_adopts_last_pass);
	tcase_add_test(tc, t_no_adoption_when_unsure);
	tcase_add_test(tc, t_status_parse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
