/*
 * The kernel backend's diff: the route dump streamed against the desired
 * routes, the rest of the dump against the plan by key, the steering map
 * against the listing; what differs becomes ops.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/kernel_int.h"

/* ------------------------------------------------------------ diff */

int kb_add_op(struct plan *p, enum verb v, enum okind k, struct gdp_result *res, const void *obj)
{
	struct op o = { .verb = v, .k = k, .res = res, .obj = obj, .src = S_OBJ };

	return VEC_PUSH(p->ops, o);
}

static bool neigh_key_eq(const struct gnl_neigh *a, const struct gnl_neigh *b)
{
	return a->family == b->family && a->ifindex == b->ifindex && gnl_addr_eq(&a->dst, &b->dst);
}

static bool addr_key_eq(const struct gnl_ifaddr *a, const struct gnl_ifaddr *b)
{
	return a->family == b->family && a->ifindex == b->ifindex && gnl_addr_eq(&a->addr, &b->addr);
}

/* Is t the table of a VPC that passed its checks? */
static bool ok_vpc_table(const struct pass *ps, uint32_t t)
{
	return ps->n_vtab && bsearch(&t, ps->vtab, ps->n_vtab, sizeof(t), kb_u32_cmp);
}

/*
 * One dumped route, compared as it arrives (nothing of the dump is kept):
 * a desired route with its key is marked equal, different, or someone
 * else's; a route of ours nobody wants is kept as a leftover (its key) to
 * delete unless an invalid object protects it; someone else's route in a
 * VPC table that passed its checks refuses the VPC (the pass is planned
 * again without it).
 */
static int route_cb(const struct nlmsghdr *h, void *arg)
{
	struct pass *ps = arg;
	struct kb *k = ps->k;
	const struct rtmsg *rtm = NLMSG_DATA(h);
	struct gnl_route r, tmp;
	long j;

	if (rtm->rtm_flags & RTM_F_CLONED)
		return 0;
	/* A route we cannot decode is kept with what we could read; never abort the dump. */
	if (gnl_route_parse(h, &r) && !r.family)
		return 0;
	if (r.protocol != k->proto && ok_vpc_table(ps, r.table)) {
		bool known = false;

		for (size_t i = 0; i < ps->busy->n && !known; i++)
			known = ps->busy->v[i].table == r.table;
		if (!known) {
			struct busy b = { .table = r.table };
			char t[200];

			snprintf(b.msg, sizeof(b.msg), "(route %s, protocol %u)", gnl_route_str(&r, t, sizeof(t)),
				 r.protocol);
			if (VEC_PUSH(*ps->busy, b))
				ps->err = -ENOMEM;
			ps->busy_new = true;
		}
	}
	j = kb_dhash_find(ps, &r, &tmp);
	if (j >= 0 && ps->wst[j] == W_NONE) {
		if (r.protocol != k->proto) {
			struct fgn f = { (size_t)j, r.protocol };

			ps->wst[j] = W_FOREIGN;
			if (VEC_PUSH(ps->foreign, f))
				ps->err = -ENOMEM;
		} else
			ps->wst[j] = gnl_route_equal(&r, kb_des_route(ps, (size_t)j, &tmp)) ? W_EQUAL : W_DIFF;
		return 0;
	}
	if (j >= 0 && (ps->wst[j] == W_PROT || ps->wst[j] == W_SKIP))
		return 0;
	/* Leftovers: ours (by protocol), nobody's desired key (or a second route with one), not protected. */
	if (r.protocol != k->proto || kb_u32_in(ps->p.prot_tables.v, ps->p.prot_tables.n, r.table) ||
	    (r.oif && kb_u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, r.oif)))
		return 0;
	{
		struct rleft l = { .dst = r.dst, .table = r.table, .priority = r.priority, .oif = r.oif,
				   .family = (uint8_t)r.family, .protocol = r.protocol, .type = r.type,
				   .scope = r.scope };

		if (VEC_PUSH(ps->left, l))
			ps->err = -ENOMEM;
	}
	return 0;
}

/* From scratch: what an earlier, interrupted read of the routes marked. */
static void routes_reset(void *arg)
{
	struct pass *ps = arg;

	for (size_t j = 0; j < ps->n_des; j++)
		if (ps->wst[j] == W_EQUAL || ps->wst[j] == W_DIFF || ps->wst[j] == W_FOREIGN)
			ps->wst[j] = W_NONE;
	ps->left.n = 0;
	ps->foreign.n = 0;
}

/* Both families' route dumps, streamed into route_cb: one try of dump_routes. */
static int routes_once(void *arg)
{
	static const int fams[] = { AF_INET6, AF_INET };
	struct pass *ps = arg;
	int rc = 0;

	for (size_t f = 0; f < 2 && !rc; f++) {
		struct nl_msg *m;

		if (gnl_route_dump_msg(&m, fams[f], 0))
			return -ENOMEM;
		ps->k->n_dumps++;
		rc = gnl_dump(ps->k->nl, m, route_cb, ps);
		nlmsg_free(m);
		if (!rc && ps->err)
			rc = ps->err;
	}
	return rc;
}

/* The route dump (IPv6, IPv4); an interrupted one is read again from scratch, with gnl_dump_restarting's policy. */
static int dump_routes(struct pass *ps)
{
	struct gnl_retry p = { GNL_DUMP_TRIES, GNL_DUMP_BACKOFF_US, GNL_DUMP_BACKOFF_MAX_US, 0, 0 };
	int rc;

	routes_reset(ps);
	rc = gnl_retry_intr(&p, routes_once, ps, routes_reset, ps);
	ps->k->n_dump_intr += p.interrupted;
	ps->k->last_intr = p.interrupted;
	return rc;
}

/*
 * Diff: desired objects against the dump. Missing -> add, same key but
 * different -> replace, equal -> unchanged; ours that nobody wants -> delete
 * (unless an invalid object protects them). Routes: the desired ones are
 * indexed by key and the route dump streamed against them (route_cb);
 * kb_execute() then writes straight from ps->wst and ps->left. The rest fills
 * ps->p.ops. Returns -EAGAIN when the dump found a VPC table used by
 * someone else that the plan took for ours: planned again without it.
 */
int kb_diff(struct pass *ps)
{
	struct kb *k = ps->k;
	const struct gdp_state *d = ps->d;
	struct gdp_results *res = ps->res;
	struct gdp_result **ares = ps->ares;
	bool *ruclaimed = NULL, *nclaimed = NULL, *aclaimed = NULL;
	struct khash hru = { 0 }, hn = { 0 }, ha = { 0 }, hlk = { 0 };
	size_t i, j;
	int rc = 0;

	/* Desired routes: one per key. A later duplicate fails alone. */
	if (kb_rhash_init(&ps->wh, ps->n_des))
		goto nomem;
	/* (the keys invalid remotes protect last: a desired route is never their duplicate) */
	for (size_t round = 0; round < 2; round++)
	for (i = 0; i < ps->n_des; i++) {
		long dup;

		if ((ps->wst[i] == W_PROT) != (round == 1))
			continue;
		if (i >= ps->n_wr && !ps->rvpc[i - ps->n_wr])
			continue; /* a remote without a VPC: no route, nothing to protect */
		dup = kb_dhash_insert(ps, i);
		if (dup >= 0 && ps->wst[i] != W_PROT) {
			char t[200];
			struct gnl_route tmp;

			gdp_result_fail(kb_des_res(ps, i), -EEXIST, "route %s: duplicate of another object's route",
					gnl_route_str(kb_des_route(ps, i, &tmp), t, sizeof(t)));
			ps->wst[i] = W_DUP;
		}
	}
	/* Its object already failed (e.g. an invalid remote, a refused VPC): leave it alone. */
	for (i = 0; i < ps->n_des; i++)
		if (ps->wst[i] == W_NONE && kb_des_failed(ps, i))
			ps->wst[i] = W_SKIP;
	rc = dump_routes(ps);
	if (rc) {
		kb_dump_failed(k, res, ps->node_res, "dump kernel routes", rc);
		goto done;
	}
	if (ps->busy_new) {
		rc = -EAGAIN;
		goto done;
	}
	for (i = 0; i < ps->n_des; i++) {
		struct gnl_route tmp;
		char t[200];

		switch (ps->wst[i]) {
		case W_EQUAL:
			res->unchanged++;
			break;
		case W_FOREIGN: {
			unsigned proto = 0;

			for (j = 0; j < ps->foreign.n; j++)
				if (ps->foreign.v[j].j == i)
					proto = ps->foreign.v[j].protocol;
			gdp_result_fail(kb_des_res(ps, i), -EEXIST, "add route %s: exists and is not galactic's (protocol %u)",
					gnl_route_str(kb_des_route(ps, i, &tmp), t, sizeof(t)), proto);
			ps->wst[i] = W_SKIP;
			break;
		}
		case W_NONE:
		case W_DIFF:
			/* its object failed on another of its routes: none of it is written */
			if (kb_des_failed(ps, i))
				ps->wst[i] = W_SKIP;
			break;
		}
	}

	ruclaimed = calloc(ps->s.rules.n + 1, 1);
	nclaimed = calloc(ps->s.neighs.n + 1, 1);
	aclaimed = calloc(ps->s.addrs.n + 1, 1);
	if (!ruclaimed || !nclaimed || !aclaimed || kb_kh_init(&hru, ps->s.rules.n) ||
	    kb_kh_init(&hn, ps->s.neighs.n) || kb_kh_init(&ha, ps->s.addrs.n) || kb_kh_init(&hlk, ps->s.links.n))
		goto nomem;
	for (i = 0; i < ps->s.rules.n; i++)
		kb_kh_put(&hru, kb_rule_hash(&ps->s.rules.v[i]), i);
	for (i = 0; i < ps->s.neighs.n; i++)
		kb_kh_put(&hn, kb_neigh_hash(&ps->s.neighs.v[i]), i);
	for (i = 0; i < ps->s.addrs.n; i++)
		kb_kh_put(&ha, kb_ifaddr_hash(&ps->s.addrs.v[i]), i);
	for (i = 0; i < ps->s.links.n; i++)
		kb_kh_put(&hlk, kb_link_hash(ps->s.links.v[i].ifindex), i);

	for (i = 0; i < ps->p.wants.n; i++) {
		struct want *w = &ps->p.wants.v[i];
		bool found = false;

		switch (w->k) {
		case O_RULE:
			KH_FOREACH(&hru, kb_rule_hash(&w->o.ru), j)
				if (!found && ps->s.rules.v[j].protocol == k->proto && gnl_rule_equal(&ps->s.rules.v[j], &w->o.ru))
					found = true, ruclaimed[j] = 1;
			if (!found && kb_add_op(&ps->p, V_ADD, O_RULE, w->res, &w->o.ru))
				goto nomem;
			break;
		case O_NEIGH:
			KH_FOREACH(&hn, kb_neigh_hash(&w->o.n), j)
				if (!found && neigh_key_eq(&ps->s.neighs.v[j], &w->o.n)) {
					const struct gnl_neigh *kn = &ps->s.neighs.v[j];

					found = true;
					nclaimed[j] = 1;
					if (kn->protocol != k->proto || kn->state != NUD_PERMANENT ||
					    !kn->has_lladdr || memcmp(kn->lladdr, w->o.n.lladdr, 6)) {
						if (kb_add_op(&ps->p, V_REPLACE, O_NEIGH, w->res, &w->o.n))
							goto nomem;
					} else {
						res->unchanged++;
					}
				}
			if (!found && kb_add_op(&ps->p, V_ADD, O_NEIGH, w->res, &w->o.n))
				goto nomem;
			break;
		case O_ADDR:
			KH_FOREACH(&ha, kb_ifaddr_hash(&w->o.a), j)
				if (!found && addr_key_eq(&ps->s.addrs.v[j], &w->o.a))
					found = true, aclaimed[j] = 1;
			if (!found && kb_add_op(&ps->p, V_ADD, O_ADDR, w->res, &w->o.a))
				goto nomem;
			break;
		case O_LINK:
			KH_FOREACH(&hlk, kb_link_hash(w->o.l.ifindex), j)
				if (ps->s.links.v[j].ifindex == w->o.l.ifindex) {
					const struct gnl_link *kl = &ps->s.links.v[j];

					if (!(kl->flags & IFF_UP) || (w->o.l.mtu && kl->mtu != w->o.l.mtu)) {
						if (kb_add_op(&ps->p, V_SET, O_LINK, w->res, &w->o.l))
							goto nomem;
					} else {
						res->unchanged++;
					}
				}
			break;
		case O_ROUTE:
			break;
		}
	}

	/* Leftovers: ours (by protocol), unclaimed, not belonging to an invalid object. */
	for (i = 0; i < ps->s.rules.n; i++) {
		const struct gnl_rule *r = &ps->s.rules.v[i];
		bool prot = false;

		if (ruclaimed[i] || r->protocol != k->proto)
			continue;
		for (j = 0; j < d->n_atts && !prot; j++)
			prot = ares[j]->err && !strcmp(d->atts[j].host_ifname, r->iifname);
		prot = prot || kb_u32_in(ps->p.prot_tables.v, ps->p.prot_tables.n, r->table);
		if (!prot && kb_add_op(&ps->p, V_DEL, O_RULE, NULL, r))
			goto nomem;
	}
	for (i = 0; i < ps->s.neighs.n; i++)
		if (!nclaimed[i] && ps->s.neighs.v[i].protocol == k->proto &&
		    !kb_u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, ps->s.neighs.v[i].ifindex) &&
		    kb_add_op(&ps->p, V_DEL, O_NEIGH, NULL, &ps->s.neighs.v[i]))
			goto nomem;
	for (i = 0; i < ps->s.addrs.n; i++)
		if (!aclaimed[i] && ps->s.addrs.v[i].protocol == k->proto &&
		    !kb_u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, ps->s.addrs.v[i].ifindex) &&
		    kb_add_op(&ps->p, V_DEL, O_ADDR, NULL, &ps->s.addrs.v[i]))
			goto nomem;
	goto done;
nomem:
	rc = -ENOMEM;
done:
	free(ruclaimed);
	free(nclaimed);
	free(aclaimed);
	kb_kh_free(&hru);
	kb_kh_free(&hn);
	kb_kh_free(&ha);
	kb_kh_free(&hlk);
	return rc;
}

/*
 * Pod steering against the kernel's table (full passes): each wanted
 * element equal -> unchanged, different -> replaced, missing -> added;
 * elements nobody wants go, except those of failed attachments (a bad
 * input never takes down what it had). A missing or damaged table is
 * written again whole (one transaction). Dry: the differences fail their
 * attachments. Returns how many elements differ, or -ENOMEM.
 */
int kb_steer_diff(struct pass *ps, bool dry)
{
	struct kb *k = ps->k;
	struct plan *p = &ps->p;
	const struct gdp_state *d = ps->d;
	struct gds_pod *got = NULL, *add = NULL;
	char (*del)[GDS_IFNAME_MAX + 1] = NULL;
	char *json = NULL, err[320] = "", why[400];
	struct khash hg = { 0 };
	bool *claimed = NULL, rewrite = false;
	size_t ngot = 0, nadd = 0, ndel = 0, i, j;
	int rc, ndiff = 0;

	rc = k->nft ? gds_nft_list(k->nft, &json, err, sizeof(err)) : -ENOTSUP;
	if (!rc)
		rc = gds_parse(json, &got, &ngot, err, sizeof(err));
	free(json);
	if (rc == -ENOMEM)
		return rc;
	if (rc && rc != -ENOENT && rc != -EPROTO && rc != -EINVAL) {
		/* nftables itself failed: every attachment's steering is unknown */
		for (i = 0; i < p->steer.n; i++)
			gdp_result_fail(p->steer.v[i].res, rc, "pod steering: %s", k->nft ? err : "no libnftables context");
		return 0;
	}
	rewrite = rc != 0;
	snprintf(why, sizeof(why), "%s", rc == -ENOENT ? "no table" : err);
	add = calloc(p->steer.n + 1, sizeof(*add));
	del = calloc(p->steer.n + ngot + 1, sizeof(*del));
	claimed = calloc(ngot + 1, sizeof(*claimed));
	if (!add || !del || !claimed || kb_kh_init(&hg, ngot))
		goto nomem;
	for (i = 0; i < ngot; i++)
		kb_kh_put(&hg, kb_name_hash(got[i].ifname), i);
	for (i = 0; i < p->steer.n; i++) {
		struct steer_want *w = &p->steer.v[i];
		bool found = false, same = false;

		if (w->res && w->res->err)
			continue; /* its attachment already failed */
		KH_FOREACH(&hg, kb_name_hash(w->pod.ifname), j)
			if (!found && !strcmp(got[j].ifname, w->pod.ifname)) {
				found = claimed[j] = true;
				same = got[j].mark == w->pod.mark;
			}
		if (!rewrite && same) {
			ps->res->unchanged++;
			continue;
		}
		if (found && !rewrite)
			snprintf(del[ndel++], sizeof(*del), "%s", w->pod.ifname); /* replaced: deleted, then added */
		add[nadd++] = w->pod;
		ndiff++;
		if (VEC_PUSH(p->steer_res, w->res))
			goto nomem;
		if (dry)
			gdp_result_fail(w->res, -ENOENT, "missing or different: steering %s -> mark 0x%x (nftables table inet %s%s%s)",
					w->pod.ifname, w->pod.mark, GDS_TABLE, rewrite ? ": " : "", rewrite ? why : "");
	}
	p->steer_added = nadd;
	for (i = 0; i < ngot; i++) {
		bool prot = false;

		if (claimed[i])
			continue;
		for (j = 0; j < d->n_atts && !prot; j++)
			prot = ps->ares[j]->err && !strcmp(d->atts[j].host_ifname, got[i].ifname);
		if (prot) {
			if (rewrite) /* kept as it is when the table is written again */
				add[nadd++] = got[i];
			continue;
		}
		if (!rewrite)
			snprintf(del[ndel++], sizeof(*del), "%s", got[i].ifname);
		p->steer_removed++;
		ndiff++;
	}
	if (dry && ndiff > (int)p->steer_res.n)
		gdp_result_fail(gdp_results_find(ps->res, GDP_OBJ_NODE, "", ""), -ENOENT,
				"missing or different: %lu steering elements nobody wants (nftables table inet %s)",
				p->steer_removed, GDS_TABLE);
	if (!dry && (rewrite || ndiff)) {
		rc = rewrite ? gds_render(add, nadd, &p->steer_text, err, sizeof(err))
			     : gds_render_elems(add, nadd, (const char(*)[GDS_IFNAME_MAX + 1])del, ndel, &p->steer_text, err,
						sizeof(err));
		if (rc == -ENOMEM)
			goto nomem;
		if (rc) {
			for (i = 0; i < p->steer_res.n; i++)
				gdp_result_fail(p->steer_res.v[i], rc, "pod steering: %s", err);
			p->steer_res.n = 0;
		}
	}
	rc = ndiff;
	goto out;
nomem:
	rc = -ENOMEM;
out:
	kb_kh_free(&hg);
	free(got);
	free(add);
	free(del);
	free(claimed);
	return rc;
}
