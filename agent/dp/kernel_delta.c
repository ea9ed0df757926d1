/*
 * The kernel backend's delta apply: a model delta turned into ops (the
 * added and removed objects' plans) and executed without a dump, trusting
 * what the last full pass verified.
 */
#include <errno.h>
#include <linux/seg6_iptunnel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/kernel_int.h"

/* ------------------------------------------------------------ delta apply */

/*
 * A delta apply plans only the objects in scope and writes them without a
 * dump: creates with NLM_F_EXCL where the key may be someone else's (main
 * table routes, rules: EEXIST fails the delta and the caller reconciles in
 * full, which adopts ours or refuses theirs), replaces inside a VPC table
 * the last full pass verified as ours, deletes by key with our protocol.
 * Each write is acknowledged by the kernel: that acknowledgement is the
 * read-back of a delta (the next full pass reads everything back).
 */
static bool table_ok(const struct kb *k, uint32_t t)
{
	return kb_u32_in(k->ok_tables, k->n_ok_tables, t);
}

/* Ops for every planned object of p (routes, then the rest): verb by kind. */
static int delta_ops(struct kb *k, struct plan *out, struct plan *p, bool del)
{
	for (size_t i = 0; i < p->wroutes.n; i++) {
		const struct gnl_route *r = &p->wroutes.v[i];
		enum verb v = del ? V_DEL : r->table != RT_TABLE_MAIN && table_ok(k, r->table) ? V_REPLACE : V_ADD;

		if (kb_add_op(out, v, O_ROUTE, p->wroute_res.v[i], r))
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->wants.n; i++) {
		struct want *w = &p->wants.v[i];
		enum verb v;

		if (del) {
			if (w->k == O_LINK)
				continue;
			v = V_DEL;
		} else {
			v = w->k == O_LINK ? V_SET : w->k == O_NEIGH ? V_REPLACE : V_ADD;
		}
		if (kb_add_op(out, v, w->k, w->res, &w->o))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The steering elements of the attachments in scope, as one transaction:
 * added (a key that exists with another mark fails it: EEXIST, the caller
 * reconciles in full) and removed (a delta removes only what it added).
 */
static int delta_steer(struct plan *out, const struct plan *padd, const struct plan *pdel, struct gdp_results *res)
{
	struct gds_pod *add = calloc(padd->steer.n + 1, sizeof(*add));
	char (*del)[GDS_IFNAME_MAX + 1] = calloc(pdel->steer.n + 1, sizeof(*del));
	struct gdp_result *node_res;
	char err[320];
	int rc = 0;

	if (!add || !del)
		goto nomem;
	for (size_t i = 0; i < padd->steer.n; i++) {
		add[i] = padd->steer.v[i].pod;
		if (VEC_PUSH(out->steer_res, padd->steer.v[i].res))
			goto nomem;
	}
	for (size_t i = 0; i < pdel->steer.n; i++)
		snprintf(del[i], sizeof(*del), "%s", pdel->steer.v[i].pod.ifname);
	rc = gds_render_elems(add, padd->steer.n, (const char(*)[GDS_IFNAME_MAX + 1])del, pdel->steer.n,
			      &out->steer_text, err, sizeof(err));
	if (rc == -ENOMEM)
		goto nomem;
	if (rc) {
		node_res = gdp_results_find(res, GDP_OBJ_NODE, "", "");
		for (size_t i = 0; i < out->steer_res.n; i++)
			gdp_result_fail(out->steer_res.v[i] ? out->steer_res.v[i] : node_res, rc, "pod steering: %s", err);
		if (!out->steer_res.n && node_res)
			gdp_result_fail(node_res, rc, "pod steering: %s", err);
		out->steer_res.n = 0;
		rc = 0;
	}
	out->steer_added = padd->steer.n;
	out->steer_removed = pdel->steer.n;
	free(add);
	free(del);
	return 0;
nomem:
	free(add);
	free(del);
	return -ENOMEM;
}

/* Plans a throw for sid in table into p (one per SID and table). */
static int delta_throw(struct kb *k, struct plan *p, uint32_t table, const struct in6_addr *sid)
{
	struct gnl_route r;

	kb_base_route(k, &r, AF_INET6, table);
	kb_v6_addr(sid, 128, &r.dst);
	r.type = RTN_THROW;
	for (size_t i = 0; i < p->wroutes.n; i++)
		if (gnl_route_same_key(&p->wroutes.v[i], &r))
			return 0;
	return kb_want_route(p, NULL, &r);
}

int kb_apply_delta(struct gdp_backend *b, const struct gdp_state *d, const struct gdp_delta *dl,
		   struct gdp_results *res)
{
	struct kb *k = (struct kb *)b;
	struct plan padd = { 0 }, pdel = { 0 }, ops = { 0 };
	struct gdp_locals locals = { 0 };
	struct gdp_result *node_res;
	char err[320], pb[64];
	size_t i, j;
	int rc = 0;

	gdp_results_reset(res);
	node_res = gdp_results_get(res, GDP_OBJ_NODE, "", "");
	if (!node_res)
		return -ENOMEM;
	if (dl->full || !k->full_ok || strcmp(k->upname, d->node.uplink[0] ? d->node.uplink : "lo")) {
		gdp_result_fail(node_res, -EAGAIN, "delta apply: needs a full reconcile first");
		return -EAGAIN;
	}
	k->n_delta++;
	/* Results are pointed to by the plan: room for all of them first. */
	if (res->cap < 1 + dl->n_atts + dl->n_remotes) {
		size_t nc = 1 + dl->n_atts + dl->n_remotes;
		struct gdp_result *nv = realloc(res->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		res->v = nv;
		res->cap = nc;
		node_res = &res->v[0];
	}
	for (i = 0; i < dl->n_atts; i++) {
		const struct gdp_attachment *a = &d->atts[dl->atts[i]];
		const struct gdp_vpc *v = gdp_state_find_vpc(d, a->vpc);
		struct gdp_result *ar = gdp_results_get(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);
		struct gnl_link hl;
		int e;

		if (!ar)
			goto nomem;
		node_res = gdp_results_find(res, GDP_OBJ_NODE, "", "");
		e = gdp_validate_attachment(d, dl->atts[i], err, sizeof(err));
		if (!e && (!v || !table_ok(k, v->table))) {
			snprintf(err, sizeof(err), "attachment %s/%s: vpc %s is not programmed", a->vpc, a->id, a->vpc);
			e = -EAGAIN;
		}
		gnl_link_init(&hl);
		if (!e) {
			int ix = (k->n_dumps++, gnl_ifindex_rcu(k->nl, a->host_ifname));

			if (ix < 0) {
				e = ix;
				snprintf(err, sizeof(err), "attachment %s/%s: host interface %s not found", a->vpc, a->id,
					 a->host_ifname);
			} else {
				hl.ifindex = (uint32_t)ix; /* all the plan needs of the link */
			}
		}
		if (e) {
			gdp_result_fail(ar, e, "%s", err);
			rc = rc ? rc : e;
			continue;
		}
		if (kb_plan_attachment(k, &padd, d, a, v, &hl, ar))
			goto nomem;
	}
	for (i = 0; i < dl->n_gone_atts; i++) {
		const struct gdp_attachment *a = &dl->gone_atts[i];
		const struct gdp_vpc *v = gdp_state_find_vpc(d, a->vpc);
		struct gnl_link hl;
		size_t from = pdel.wants.n;

		if (!v || !table_ok(k, v->table)) {
			rc = -EAGAIN; /* its VPC went too: the full pass removes the VPC */
			goto out;
		}
		gnl_link_init(&hl);
		k->n_dumps++;
		{
			int ix = gnl_ifindex_rcu(k->nl, a->host_ifname);

			/* gone with its veth: its routes went with it; its steering element goes by name */
			hl.ifindex = ix > 0 ? (uint32_t)ix : 0;
		}
		if (kb_plan_attachment(k, &pdel, d, a, v, &hl, NULL))
			goto nomem;
		if (!hl.ifindex) /* neighbours and addresses of a device that is gone */
			for (j = from; j < pdel.wants.n; j++)
				if (pdel.wants.v[j].k == O_NEIGH || pdel.wants.v[j].k == O_ADDR)
					pdel.wants.v[j].k = O_LINK; /* skipped by delta_ops */
	}
	for (i = 0; i < dl->n_remotes; i++) {
		const struct gdp_remote *rm = &d->remotes[dl->remotes[i]];
		const struct gdp_vpc *v = gdp_state_find_vpc(d, gdp_remote_vpc(rm));
		struct gdp_result *rr = gdp_results_get(res, GDP_OBJ_REMOTE, gdp_remote_vpc(rm),
							  gdp_prefix_str(&rm->prefix, pb, sizeof(pb)));
		struct gnl_route r;
		int e;

		if (!rr)
			goto nomem;
		e = gdp_validate_remote_in(d, &locals, dl->remotes[i], err, sizeof(err));
		if (!e && (!v || !table_ok(k, v->table))) {
			snprintf(err, sizeof(err), "remote %s in vpc %s: vpc is not programmed", pb, gdp_remote_vpc(rm));
			e = -EAGAIN;
		}
		if (e) {
			gdp_result_fail(rr, e, "%s", err);
			rc = rc ? rc : e;
			continue;
		}
		kb_base_route(k, &r, rm->prefix.family, v->table);
		kb_to_gaddr(&rm->prefix, &r.dst);
		r.oif = k->upidx;
		if (r.family == AF_INET)
			r.scope = RT_SCOPE_LINK;
		r.encap = GNL_ENCAP_SEG6;
		r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
		r.seg6.nsegs = 1;
		r.seg6.segs[0] = rm->sid;
		if (kb_want_route(&padd, rr, &r) || delta_throw(k, &padd, v->table, &rm->sid))
			goto nomem;
	}
	if (dl->n_gone_remotes) {
		/* A throw goes with the last remote of its VPC that used its SID. */
		VEC(struct gnl_route) th = { 0 };
		struct rhash hh = { 0 };
		bool *used = NULL;

		for (i = 0; i < dl->n_gone_remotes; i++) {
			const struct gdp_remote *rm = &dl->gone_remotes[i];
			const struct gdp_vpc *v = gdp_state_find_vpc(d, gdp_remote_vpc(rm));
			struct gnl_route r;

			if (!v || !table_ok(k, v->table)) {
				free(th.v);
				rc = -EAGAIN;
				goto out;
			}
			kb_base_route(k, &r, rm->prefix.family, v->table);
			kb_to_gaddr(&rm->prefix, &r.dst);
			if (kb_want_route(&pdel, NULL, &r))
				goto thfail;
			kb_base_route(k, &r, AF_INET6, v->table);
			kb_v6_addr(&rm->sid, 128, &r.dst);
			r.type = RTN_THROW;
			if (VEC_PUSH(th, r))
				goto thfail;
		}
		if (kb_rhash_init(&hh, th.n) || !(used = calloc(th.n + 1, 1)))
			goto thfail;
		for (i = 0; i < th.n; i++)
			if (kb_rhash_insert(&hh, th.v, i) >= 0)
				used[i] = true; /* a repeat: counted once */
		for (i = 0; i < d->n_remotes; i++) {
			const struct gdp_vpc *v = gdp_state_find_vpc(d, gdp_remote_vpc(&d->remotes[i]));
			struct gnl_route r;
			long x;

			if (!v)
				continue;
			kb_base_route(k, &r, AF_INET6, v->table);
			kb_v6_addr(&d->remotes[i].sid, 128, &r.dst);
			if ((x = kb_rhash_find(&hh, th.v, &r)) >= 0)
				used[x] = true;
		}
		for (i = 0; i < th.n; i++)
			if (!used[i] && kb_want_route(&pdel, NULL, &th.v[i]))
				goto thfail;
		free(hh.slot);
		free(used);
		free(th.v);
		goto thdone;
thfail:
		free(hh.slot);
		free(used);
		free(th.v);
		goto nomem;
thdone:;
	}
	if (delta_ops(k, &ops, &padd, false) || delta_ops(k, &ops, &pdel, true) ||
	    delta_steer(&ops, &padd, &pdel, res))
		goto nomem;
	k->n_delta_ops += ops.ops.n;
	node_res = gdp_results_find(res, GDP_OBJ_NODE, "", "");
	{
		int e = kb_execute(k, &ops, NULL, res, node_res);

		rc = rc ? rc : e;
	}
	for (i = 0; i < res->n; i++) {
		if (!res->v[i].err)
			res->v[i].programmed = true;
		else if (!rc)
			rc = res->v[i].err;
	}
	goto out;
nomem:
	rc = -ENOMEM;
	node_res = gdp_results_find(res, GDP_OBJ_NODE, "", "");
	if (node_res)
		gdp_result_fail(node_res, rc, "delta apply: out of memory");
out:
	gdp_locals_free(&locals);
	kb_plan_free(&padd);
	kb_plan_free(&pdel);
	kb_plan_free(&ops);
	return rc;
}
