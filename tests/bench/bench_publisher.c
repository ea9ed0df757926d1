/*
 * What one pass costs the report publisher at a node of N attachments
 * (issue 10, "an ADD or DEL costs what it changes"): one attachment's result
 * changes per pass, and the publisher does what rpt_update and its sync do
 * with it: rpt_update's copies of the state, results and pods (the sync
 * takes them whole) and of the node and VPCs (the learner's), the desired
 * reports (rpt_desired_build) and the comparison with the last ones that
 * queues the changed names.
 *   ours: the memo of the last build (only the changed report is built);
 *   ref:  a memo from nothing every pass (every report built, as before).
 * Passes alternate (ours, ref, ...). CPU only: no API server, no kernel.
 * Usage: bench_publisher [attachments (1000)] [passes (40)]
 */
#include "agent/report/report.h"
#include "tests/bench/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#define VPCS 4

static int mkstate(struct gdp_state *s, struct gdp_results *res, struct rpt_pod *pods, size_t n)
{
	char buf[64];

	gdp_state_init(s);
	gdp_results_init(res);
	s->node.block[0] = 0xfc;
	s->node.node_id = 2;
	if (!gdp_results_get(res, GDP_OBJ_NODE, "", ""))
		return -1;
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (int v = 0; v < VPCS; v++) {
		struct gdp_vpc vp = { .arg = (uint16_t)(v + 1), .table = 16385u + (uint32_t)v };
		struct gdp_result *r;

		snprintf(vp.id, sizeof(vp.id), "Vpc%d", v);
		if (gdp_state_add_vpc(s, &vp) || !(r = gdp_results_get(res, GDP_OBJ_VPC, vp.id, "")))
			return -1;
		r->programmed = true;
	}
	for (size_t i = 0; i < n; i++) {
		struct gdp_attachment a = { .arg = (uint16_t)(i % 4000 + 1) };
		struct gdp_result *r;

		snprintf(a.vpc, sizeof(a.vpc), "Vpc%zu", i % VPCS);
		snprintf(a.id, sizeof(a.id), "att%zu", i);
		snprintf(a.container_id, sizeof(a.container_id), "ctr-%zu", i);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "gc%zu", i);
		snprintf(buf, sizeof(buf), "fd00:%zx::%zx", i % VPCS, i + 2);
		if (gdp_prefix_parse(buf, &a.addrs[0]))
			return -1;
		snprintf(buf, sizeof(buf), "10.%zu.%zu.%zu", i % VPCS, (i >> 8) & 255, i & 255);
		if (gdp_prefix_parse(buf, &a.addrs[1]))
			return -1;
		a.n_addrs = 2;
		a.nh4 = gdp_default_nh4(a.arg);
		if (gdp_state_add_attachment(s, &a) || !(r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, a.vpc, a.id)))
			return -1;
		r->programmed = true;
		snprintf(pods[i].ns, sizeof(pods[i].ns), "ns%zu", i % 7);
		snprintf(pods[i].name, sizeof(pods[i].name), "pod-%zu", i);
		snprintf(pods[i].guest_ifname, sizeof(pods[i].guest_ifname), "eth0");
	}
	return 0;
}

/* The copies before the publisher took the pass whole: rpt_update's of the
 * state, results and pods, then sync_desired's of the same (ms). */
static double old_copies(const struct gdp_state *st, const struct gdp_results *res, const struct rpt_pod *pods)
{
	struct gdp_state s[2];
	struct gdp_results r[2];
	struct rpt_pod *p[2];
	double t0 = now_ms(), ms;

	for (int k = 0; k < 2; k++) {
		if (gdp_state_copy(&s[k], k ? &s[0] : st) || rpt_results_copy(&r[k], k ? &r[0] : res) ||
		    !(p[k] = calloc(st->n_atts + 1, sizeof(*p[k]))))
			abort();
		memcpy(p[k], k ? p[0] : pods, st->n_atts * sizeof(*p[k]));
	}
	ms = now_ms() - t0;
	for (int k = 0; k < 2; k++) {
		gdp_state_free(&s[k]);
		gdp_results_free(&r[k]);
		free(p[k]);
	}
	return ms;
}

/* rpt_update's copies (the state, results and pods the sync takes whole;
 * the node and VPCs for the learner), then the build and the comparison
 * (sync_desired's loop); returns the names it would queue, *built. */
static size_t pass(struct rpt_desired *d, const struct gdp_state *st, const struct gdp_results *res,
		   const struct rpt_pod *pods, json_t **last, size_t *built, double *copy_ms)
{
	struct gdp_state s2, ls, view = *st;
	struct gdp_results r2;
	struct rpt_pod *p2;
	size_t queued = 0;
	const char *name;
	json_t *desired, *v;
	double t0 = now_ms();

	if (gdp_state_copy(&s2, st) || rpt_results_copy(&r2, res) || !(p2 = calloc(st->n_atts + 1, sizeof(*p2))))
		abort();
	memcpy(p2, pods, st->n_atts * sizeof(*p2));
	view.atts = NULL;
	view.n_atts = view.cap_atts = 0;
	if (gdp_state_copy(&ls, &view))
		abort();
	*copy_ms = now_ms() - t0;
	desired = rpt_desired_build(d, "node-a", &s2, p2, &r2, built);
	if (!desired)
		abort();
	json_object_foreach(desired, name, v) {
		json_t *was = *last ? json_object_get(*last, name) : NULL;

		queued += v != was && !json_equal(v, was);
	}
	json_object_foreach(*last, name, v)
		queued += !json_object_get(desired, name);
	json_decref(*last);
	*last = desired;
	gdp_state_free(&ls);
	gdp_state_free(&s2);
	gdp_results_free(&r2);
	free(p2);
	return queued;
}

int main(int argc, char **argv)
{
	struct bench *b = bench_begin("bench_publisher");
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000, passes = argc > 2 ? strtoul(argv[2], NULL, 10) : 40;
	struct rpt_pod *pods = calloc(n + 1, sizeof(*pods));
	double *ours = calloc(passes, sizeof(double)), *ref = calloc(passes, sizeof(double));
	double *copy = calloc(passes, sizeof(double)), *nbuilt = calloc(passes, sizeof(double));
	double *ocopy = calloc(passes, sizeof(double));
	struct rpt_desired *memo = rpt_desired_new();
	json_t *lo = NULL, *lr = NULL;
	struct gdp_state st;
	struct gdp_results res;
	size_t built, q;
	double cms, t0;
	char what[200];

	if (!n || !passes || !pods || !ours || !ref || !copy || !ocopy || !nbuilt || !memo || mkstate(&st, &res, pods, n)) {
		bench_error(b, "setup of %zu attachments failed", n);
		return bench_end(b);
	}
	/* warm-up: both sides' first build is every report */
	pass(memo, &st, &res, pods, &lo, &built, &cms);
	for (size_t i = 0; i < passes; i++) {
		struct rpt_desired *fresh = rpt_desired_new();
		struct gdp_result *r;
		size_t k = (i * 7919) % n;

		/* one attachment's result changes (a pass of one ADD/DEL) */
		r = gdp_results_get(&res, GDP_OBJ_ATTACHMENT, st.atts[k].vpc, st.atts[k].id);
		if (!r || !fresh)
			abort();
		r->programmed = !r->programmed;
		t0 = now_ms();
		q = pass(memo, &st, &res, pods, &lo, &built, &cms);
		ours[i] = now_ms() - t0;
		copy[i] = cms;
		nbuilt[i] = (double)built;
		bench_check(b, built == 1 && q == 1, "ours: pass %zu built %zu, queued %zu (want 1, 1)", i, built, q);
		if (i == 0)
			pass(fresh, &st, &res, pods, &lr, &built, &cms); /* ref's own last */
		rpt_desired_free(fresh);
		fresh = rpt_desired_new();
		t0 = now_ms();
		q = pass(fresh, &st, &res, pods, &lr, &built, &cms);
		ref[i] = now_ms() - t0;
		bench_check(b, built == n && q == (i ? 1 : 0), "ref: pass %zu built %zu, queued %zu", i, built, q);
		bench_check(b, json_equal(lo, lr), "pass %zu: ours and ref desire different reports", i);
		rpt_desired_free(fresh);
		ocopy[i] = old_copies(&st, &res, pods);
	}
	snprintf(what, sizeof(what), "one pass at %zu attachments, one changed: copies, memo build, compare", n);
	bench_target(b, "publisher pass, one change", "ms",
		     &(struct bench_side){ what, ours, passes },
		     &(struct bench_side){ "the same with every report built (before the memo)", ref, passes }, 0.5);
	bench_fact(b, "rpt_update's copies of state, results, pods", "ms",
		   "part of each pass above", copy, passes);
	bench_fact(b, "the copies as before (rpt_update's, then sync_desired's)", "ms",
		   "measured beside each pass, not part of either side", ocopy, passes);
	bench_fact(b, "reports built per pass (ours)", "reports", "rpt_desired_build's count", nbuilt, passes);
	json_decref(lo);
	json_decref(lr);
	rpt_desired_free(memo);
	gdp_state_free(&st);
	gdp_results_free(&res);
	free(pods);
	free(ours);
	free(ref);
	free(copy);
	free(ocopy);
	free(nbuilt);
	return bench_end(b);
}
