/*
 * The publisher's desired reports, rebuilt only where their inputs changed
 * (docs/dataplane-reports.md, "What a pass costs the publisher").
 */
#include "agent/report/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gmap.h"
#include "common/log.h"

#define COMP "report"

/* One attachment's desired report as last built, and what it was built from. */
struct dmemo {
	uint64_t fp;         /* fingerprint of every input the entry reads */
	json_t *entry;       /* {"spec":..., "cond":{...}}; NULL: not reported */
	char name[300];      /* its report name (when entry) */
};

struct rpt_desired {
	struct gmap *memo;   /* "<vpc>/<attachment>" -> struct dmemo */
};

struct rpt_desired *rpt_desired_new(void)
{
	struct rpt_desired *d = calloc(1, sizeof(*d));

	if (d && !(d->memo = gmap_new())) {
		free(d);
		d = NULL;
	}
	return d;
}

static void dmemo_free(void *p)
{
	struct dmemo *m = p;

	if (m)
		json_decref(m->entry);
	free(m);
}

void rpt_desired_free(struct rpt_desired *d)
{
	if (!d)
		return;
	gmap_free(d->memo, dmemo_free);
	free(d);
}

/* 64-bit word-wise FNV-style mix: every step is a bijection of the state,
 * so a change of any one word of the input always changes the result. */
static uint64_t fp_mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 32;
	}
	for (; n; b++, n--)
		h = (h ^ *b) * 0x100000001b3ULL;
	return h;
}

static uint64_t fp_str(uint64_t h, const char *s)
{
	return fp_mix(h, s, strlen(s) + 1);
}

/* What rpt_programmed reads of a result (or that there is none). */
static uint64_t fp_result(uint64_t h, const struct gdp_result *r)
{
	int v[2] = { r ? r->err : 0, r ? 1 + (int)r->programmed : 0 };

	h = fp_mix(h, v, sizeof(v));
	return r ? fp_str(h, r->msg) : h;
}

json_t *rpt_desired_build(struct rpt_desired *d, const char *node, const struct gdp_state *st,
			  const struct rpt_pod *pods, struct gdp_results *res, size_t *built)
{
	static const struct rpt_pod nopod;
	json_t *desired = json_object();
	struct gmap *next = gmap_new(), *vix = gmap_new();
	uint64_t *vfp = calloc(st->n_vpcs + 1, sizeof(*vfp));
	uint64_t base = 0xcbf29ce484222325ULL;
	char key[2 * (GDP_ID_MAX + 1) + 2], why[256];
	int err = 0;
	size_t i;

	*built = 0;
	if (!desired || !next || !vix || !vfp)
		goto fail;
	/* What every report of a VPC reads besides its attachment: the node
	 * name and SID block, the node's result, the VPC and its result. */
	base = fp_str(base, node);
	base = fp_mix(base, &st->node, sizeof(st->node));
	base = fp_result(base, res ? gdp_results_find(res, GDP_OBJ_NODE, "", "") : NULL);
	for (i = 0; i < st->n_vpcs; i++) {
		const struct gdp_vpc *v = &st->vpcs[i];
		uint64_t h = fp_mix(base, v, sizeof(*v));

		vfp[i] = fp_result(h, res ? gdp_results_find(res, GDP_OBJ_VPC, v->id, "") : NULL);
		/* the first of a duplicated id, as gdp_state_find_vpc */
		if (!gmap_has(vix, v->id)) {
			gmap_put(vix, v->id, &vfp[i], &err);
			if (err)
				goto fail;
		}
	}
	for (i = 0; i < st->n_atts; i++) {
		const struct gdp_attachment *a = &st->atts[i];
		const struct rpt_pod *pod = pods ? &pods[i] : &nopod;
		const uint64_t *vh = gmap_get(vix, a->vpc);
		struct dmemo *m, *prev;
		uint64_t h;
		bool found;

		/* the attachment and its pod, whole (every byte: a field added
		 * later cannot be missed), and its result */
		h = fp_mix(vh ? *vh : fp_mix(base, "", 1), a, sizeof(*a));
		h = fp_mix(h, pod, sizeof(*pod));
		h = fp_result(h, res ? gdp_results_find(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id) : NULL);
		snprintf(key, sizeof(key), "%s/%s", a->vpc, a->id);
		m = gmap_del(d->memo, key, &found);
		if (!m || m->fp != h) {
			dmemo_free(m);
			if (!(m = calloc(1, sizeof(*m))))
				goto fail;
			m->fp = h;
			(*built)++;
			if (rpt_name(node, a->vpc, a->id, m->name, sizeof(m->name), why, sizeof(why))) {
				glogf(GLOG_WARN, COMP, "attachment %s/%s not reported: %s", a->vpc, a->id, why);
			} else {
				json_t *spec = rpt_spec(node, st, a, pods ? &pods[i] : NULL);
				struct rpt_cond c;

				if (spec) {
					rpt_programmed(res, a, &c);
					m->entry = json_pack("{s:o, s:{s:b, s:s, s:s}}", "spec", spec, "cond",
							     "programmed", c.programmed, "reason", c.reason,
							     "message", c.message);
				}
			}
		}
		prev = gmap_put(next, key, m, &err);
		if (err) {
			dmemo_free(m);
			goto fail;
		}
		dmemo_free(prev); /* the same attachment twice: the last one's */
		if (m->entry && json_object_set(desired, m->name, m->entry))
			goto fail;
	}
	/* What is left are attachments gone since the last build. */
	gmap_free(d->memo, dmemo_free);
	d->memo = next;
	gmap_free(vix, NULL);
	free(vfp);
	return desired;
fail:
	/* The memo keeps what it still holds: the rest is built again next time. */
	gmap_free(next, dmemo_free);
	gmap_free(vix, NULL);
	free(vfp);
	json_decref(desired);
	return NULL;
}
