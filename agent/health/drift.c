/* Drift bookkeeping (drift.h). */
#include "agent/health/drift.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

const char *gdrift_kind_str(enum gdrift_kind k)
{
	static const char *const n[GDRIFT_KINDS] = { "filter", "map_entry", "route", "attachment",
						     "vpc", "node", "egress" };

	return (unsigned)k < GDRIFT_KINDS ? n[k] : "?";
}

enum gdrift_kind gdrift_kind_of(const struct gdp_result *r)
{
	if (r->what == GDP_WHAT_FILTER)
		return GDRIFT_FILTER;
	if (r->what == GDP_WHAT_MAP)
		return GDRIFT_MAP_ENTRY;
	switch (r->kind) {
	case GDP_OBJ_REMOTE: return GDRIFT_ROUTE;
	case GDP_OBJ_ATTACHMENT: return GDRIFT_ATTACHMENT;
	case GDP_OBJ_VPC: return GDRIFT_VPC;
	case GDP_OBJ_EGRESS: return GDRIFT_EGRESS;
	case GDP_OBJ_NODE: break;
	}
	return GDRIFT_NODE;
}

void gdrift_init(struct gdrift *d)
{
	memset(d, 0, sizeof(*d));
	gdp_results_init(&d->pending);
}

void gdrift_free(struct gdrift *d)
{
	gdp_results_free(&d->pending);
	free(d->asked);
}

size_t gdrift_pending(const struct gdrift *d)
{
	return d->pending.n;
}

size_t gdrift_unasked(const struct gdrift *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->pending.n; i++)
		n += !d->asked[i];
	return n;
}

void gdrift_repair_asked(struct gdrift *d)
{
	for (size_t i = 0; i < d->pending.n; i++)
		d->asked[i] = true;
}

static bool ok(const struct gdp_result *r)
{
	return r->programmed && !r->err;
}

/*
 * Which pending remotes without a result covered still has (counted as read
 * back programmed): one pass over its remotes, only when some are asked.
 */
static void counted_remotes(struct gdrift *d, struct gdp_results *res, const struct gdp_state *covered,
			    bool *in)
{
	bool ask = false;
	char pb[64];

	if (!covered || !res->remotes_ok)
		return;
	for (size_t i = 0; i < d->pending.n && !ask; i++)
		ask = d->pending.v[i].kind == GDP_OBJ_REMOTE &&
		      !gdp_results_find(res, GDP_OBJ_REMOTE, d->pending.v[i].vpc, d->pending.v[i].key);
	for (size_t i = 0; ask && i < covered->n_remotes; i++) {
		const struct gdp_remote *rm = &covered->remotes[i];
		struct gdp_result *p = gdp_results_find(&d->pending, GDP_OBJ_REMOTE, gdp_remote_vpc(rm),
							 gdp_prefix_str(&rm->prefix, pb, sizeof(pb)));

		if (p)
			in[p - d->pending.v] = true;
	}
}

int gdrift_read_back(struct gdrift *d, struct gdp_results *res,
		     bool (*was_programmed)(void *ctx, const struct gdp_result *r), void *ctx,
		     const struct gdp_state *covered, unsigned long got[GDRIFT_KINDS])
{
	bool *drop = NULL, *in = NULL, any = false;

	/* Pending objects read back as programmed: repaired. One gone from
	 * the state (no result, and not counted) is no longer anyone's drift:
	 * forgotten. */
	if (d->pending.n) {
		drop = calloc(d->pending.n, sizeof(*drop));
		in = calloc(d->pending.n, sizeof(*in));
		if (!drop || !in) {
			free(drop);
			free(in);
			return -ENOMEM;
		}
		counted_remotes(d, res, covered, in);
		for (size_t i = 0; i < d->pending.n; i++) {
			struct gdp_result *p = &d->pending.v[i];
			struct gdp_result *r = gdp_results_find(res, p->kind, p->vpc, p->key);

			if (r && !ok(r))
				continue;
			drop[i] = any = true;
			if (r || in[i]) {
				d->repaired[p->what]++;
				if (got)
					got[p->what]++;
			}
		}
		if (any) {
			size_t n = 0;

			for (size_t i = 0; i < d->pending.n; i++)
				if (!drop[i])
					d->asked[n++] = d->asked[i];
			gdp_results_drop(&d->pending, drop);
		}
		free(drop);
		free(in);
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct gdp_result *r = &res->v[i];
		struct gdp_result *p;

		if (ok(r) || (was_programmed && !was_programmed(ctx, r)))
			continue;
		if (gdp_results_find(&d->pending, r->kind, r->vpc, r->key))
			continue;
		if (G_GROW(d->asked, d->cap_asked, d->pending.n, 16))
			return -ENOMEM;
		p = gdp_results_get(&d->pending, r->kind, r->vpc, r->key);
		if (!p)
			return -ENOMEM;
		d->asked[d->pending.n - 1] = false;
		p->what = (uint8_t)gdrift_kind_of(r);
		p->err = r->err;
		memcpy(p->msg, r->msg, sizeof(p->msg));
	}
	return (int)d->pending.n;
}
