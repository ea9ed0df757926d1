/*
 * The kernel backend's plan: the kernel objects the valid model objects need
 * (attachments, VPCs, remotes, the egress shard), and a pass's desired routes
 * and results by index.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/kernel_int.h"

#define V6_METRIC 1024

/* ------------------------------------------------------------ wanted state */

void kb_plan_free(struct plan *p)
{
	free(p->wants.v);
	free(p->steer.v);
	free(p->steer_text);
	free(p->steer_res.v);
	free(p->wroutes.v);
	free(p->wroute_res.v);
	free(p->ops.v);
	free(p->prot_tables.v);
	free(p->prot_ifindex.v);
	memset(p, 0, sizeof(*p));
}

int kb_want_route(struct plan *p, struct gdp_result *res, const struct gnl_route *r)
{
	int rc = VEC_PUSH(p->wroutes, *r);

	return rc ? rc : VEC_PUSH(p->wroute_res, res);
}

static int want_obj(struct plan *p, struct gdp_result *res, enum okind k, const void *obj, size_t sz)
{
	struct want w;

	memset(&w, 0, sizeof(w));
	w.k = k;
	w.res = res;
	memcpy(&w.o, obj, sz);
	return VEC_PUSH(p->wants, w);
}

bool kb_u32_in(const uint32_t *v, size_t n, uint32_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

int kb_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void kb_to_gaddr(const struct gdp_prefix *p, struct gnl_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = p->family;
	a->len = p->len;
	memcpy(a->a.raw, p->addr.raw, p->family == AF_INET ? 4 : 16);
}

void kb_v6_addr(const struct in6_addr *x, uint8_t len, struct gnl_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	a->len = len;
	a->a.v6 = *x;
}

static void v4_addr(struct in_addr x, uint8_t len, struct gnl_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->len = len;
	a->a.v4 = x;
}

void kb_base_route(struct kb *k, struct gnl_route *r, int family, uint32_t table)
{
	memset(r, 0, sizeof(*r));
	r->family = family;
	r->table = table;
	r->protocol = k->proto;
	r->type = RTN_UNICAST;
	r->scope = RT_SCOPE_UNIVERSE;
	r->priority = family == AF_INET6 ? V6_METRIC : 0;
}

static bool mac_set(const uint8_t m[6])
{
	return m[0] | m[1] | m[2] | m[3] | m[4] | m[5];
}

/* The VPC's steering rule of family af: its pods' mark to its table. */
static void steer_rule(const struct kb *k, const struct gdp_vpc *v, int af, struct gnl_rule *ru)
{
	memset(ru, 0, sizeof(*ru));
	ru->family = af;
	ru->priority = k->rule_prio;
	ru->table = v->table;
	ru->action = FR_ACT_TO_TBL;
	ru->protocol = k->proto;
	ru->fwmark = GDE_MARK_POD | v->arg;
	ru->fwmask = GDE_MARK_MASK;
}

/* Adds the kernel objects one attachment needs. */
int kb_plan_attachment(struct kb *k, struct plan *p, const struct gdp_state *d,
		       const struct gdp_attachment *a, const struct gdp_vpc *v,
		       const struct gnl_link *hl, struct gdp_result *res)
{
	bool has4 = false, has6 = false;
	struct gnl_route r;
	struct gnl_neigh n;
	struct gnl_ifaddr ad;
	struct gnl_link l;
	size_t i;
	int rc = 0;

	for (i = 0; i < a->n_addrs; i++)
		a->addrs[i].family == AF_INET ? (has4 = true) : (has6 = true);
	if (!a->n_addrs || a->guest_addressed)
		has4 = has6 = true; /* a self-addressing guest needs both gateways (also once some of its addresses are learned) */

	gnl_link_init(&l);
	l.ifindex = hl->ifindex;
	l.flags = IFF_UP;
	l.change = IFF_UP;
	l.mtu = a->mtu;
	rc |= want_obj(p, res, O_LINK, &l, sizeof(l));

	memset(&ad, 0, sizeof(ad));
	ad.ifindex = hl->ifindex;
	ad.protocol = k->proto;
	ad.scope = RT_SCOPE_LINK;
	if (has6) {
		struct in6_addr gw = { .s6_addr = { 0xfe, 0x80, [15] = 1 } };

		ad.family = AF_INET6;
		kb_v6_addr(&gw, 64, &ad.addr);
		ad.flags = IFA_F_NODAD | IFA_F_PERMANENT;
		rc |= want_obj(p, res, O_ADDR, &ad, sizeof(ad));
	}
	if (has4) {
		ad.family = AF_INET;
		v4_addr((struct in_addr){ htonl(0xA9FE0101) }, 32, &ad.addr);
		ad.flags = IFA_F_PERMANENT;
		rc |= want_obj(p, res, O_ADDR, &ad, sizeof(ad));
	}

	/* pod steering: H's packets carry the VPC's mark (the VPC's rule) */
	{
		struct steer_want sw = { .res = res };

		snprintf(sw.pod.ifname, sizeof(sw.pod.ifname), "%s", a->host_ifname);
		sw.pod.mark = GDE_MARK_POD | v->arg;
		rc |= VEC_PUSH(p->steer, sw);
	}

	for (i = 0; i < a->n_addrs; i++) {
		kb_base_route(k, &r, a->addrs[i].family, v->table);
		kb_to_gaddr(&a->addrs[i], &r.dst);
		r.oif = hl->ifindex;
		if (r.family == AF_INET)
			r.scope = RT_SCOPE_LINK;
		rc |= kb_want_route(p, res, &r);
		if (mac_set(a->pod_mac)) {
			memset(&n, 0, sizeof(n));
			n.family = a->addrs[i].family;
			n.ifindex = hl->ifindex;
			kb_to_gaddr(&a->addrs[i], &n.dst);
			n.dst.len = n.family == AF_INET ? 32 : 128; /* a block's network address */
			memcpy(n.lladdr, a->pod_mac, 6);
			n.has_lladdr = true;
			n.state = NUD_PERMANENT;
			n.protocol = k->proto;
			rc |= want_obj(p, res, O_NEIGH, &n, sizeof(n));
		}
	}
	if (has4 && a->nh4.s_addr) {
		kb_base_route(k, &r, AF_INET, RT_TABLE_MAIN);
		v4_addr(a->nh4, 32, &r.dst);
		r.oif = hl->ifindex;
		r.scope = RT_SCOPE_LINK;
		rc |= kb_want_route(p, res, &r);
		if (mac_set(a->pod_mac)) {
			memset(&n, 0, sizeof(n));
			n.family = AF_INET;
			n.ifindex = hl->ifindex;
			v4_addr(a->nh4, 32, &n.dst);
			memcpy(n.lladdr, a->pod_mac, 6);
			n.has_lladdr = true;
			n.state = NUD_PERMANENT;
			n.protocol = k->proto;
			rc |= want_obj(p, res, O_NEIGH, &n, sizeof(n));
		}
		kb_base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
		{
			struct in6_addr sid;

			gdp_sid(&d->node, GDP_FN_DX4, a->arg, &sid);
			kb_v6_addr(&sid, 128, &r.dst);
		}
		r.oif = hl->ifindex;
		r.encap = GNL_ENCAP_SEG6LOCAL;
		r.s6l.action = SEG6_LOCAL_ACTION_END_DX4;
		r.s6l.nh4 = a->nh4;
		rc |= kb_want_route(p, res, &r);
	}
	return rc ? -ENOMEM : 0;
}

/* ------------------------------------------------------------ a pass */

uint64_t kb_name_hash(const char *name)
{
	return kb_fnv(1469598103934665603ULL, name, strnlen(name, IFNAMSIZ));
}

/* The dumped link called name (by hash: one lookup per attachment). */
const struct gnl_link *kb_pass_link(const struct pass *ps, const char *name)
{
	size_t j;

	KH_FOREACH(&ps->names, kb_name_hash(name), j)
		if (!strcmp(ps->s.links.v[j].name, name))
			return &ps->s.links.v[j];
	return NULL;
}

/* The route of remote i (its VPC exists). */
static void remote_route(const struct pass *ps, size_t i, struct gnl_route *r)
{
	const struct gdp_remote *rm = &ps->d->remotes[i];

	kb_base_route(ps->k, r, rm->prefix.family, ps->d->vpcs[ps->rvpc[i] - 1].table);
	kb_to_gaddr(&rm->prefix, &r->dst);
	r->oif = ps->upidx;
	if (r->family == AF_INET)
		r->scope = RT_SCOPE_LINK;
	r->encap = GNL_ENCAP_SEG6;
	r->seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
	r->seg6.nsegs = 1;
	r->seg6.segs[0] = rm->sid;
}

const struct gnl_route *kb_des_route(const struct pass *ps, size_t j, struct gnl_route *tmp)
{
	if (j < ps->n_wr)
		return &ps->p.wroutes.v[j];
	remote_route(ps, j - ps->n_wr, tmp);
	return tmp;
}

/* Remote i's result, made on its first failure (NULL: out of memory). */
static struct gdp_result *remote_res(struct pass *ps, size_t i)
{
	struct gdp_result *r;

	if (!ps->rres && !(ps->rres = calloc(ps->d->n_remotes + 1, sizeof(*ps->rres))))
		return NULL;
	if (ps->rres[i])
		return ps->rres[i];
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->kind = GDP_OBJ_REMOTE;
	snprintf(r->vpc, sizeof(r->vpc), "%s", gdp_remote_vpc(&ps->d->remotes[i]));
	gdp_prefix_str(&ps->d->remotes[i].prefix, r->key, sizeof(r->key));
	ps->rres[i] = r;
	ps->n_rres++;
	return r;
}

static bool remote_failed(const struct pass *ps, size_t i)
{
	return ps->rres && ps->rres[i] && ps->rres[i]->err;
}

/* Remote i's result for a failure (the node's when out of memory). */
static struct gdp_result *des_res_remote(struct pass *ps, size_t i)
{
	struct gdp_result *r = remote_res(ps, i);

	return r ? r : ps->node_res;
}

/* The result a failure of desired route j goes to (node's when out of memory). */
struct gdp_result *kb_des_res(struct pass *ps, size_t j)
{
	struct gdp_result *r = j < ps->n_wr ? ps->p.wroute_res.v[j] : remote_res(ps, j - ps->n_wr);

	return r ? r : ps->node_res;
}

bool kb_des_failed(const struct pass *ps, size_t j)
{
	if (j < ps->n_wr)
		return ps->p.wroute_res.v[j] && ps->p.wroute_res.v[j]->err;
	return remote_failed(ps, j - ps->n_wr);
}

/* Inserts desired route j; returns the desired route with the same key, or -1. */
long kb_dhash_insert(struct pass *ps, size_t j)
{
	struct gnl_route t1, t2;
	const struct gnl_route *r = kb_des_route(ps, j, &t1);
	size_t i = (size_t)kb_route_key_hash(r) & ps->wh.mask;

	for (; ps->wh.slot[i]; i = (i + 1) & ps->wh.mask)
		if (gnl_route_same_key(kb_des_route(ps, (size_t)ps->wh.slot[i] - 1, &t2), r))
			return ps->wh.slot[i] - 1;
	ps->wh.slot[i] = (int32_t)j + 1;
	return -1;
}

long kb_dhash_find(const struct pass *ps, const struct gnl_route *r, struct gnl_route *tmp)
{
	size_t i = (size_t)kb_route_key_hash(r) & ps->wh.mask;

	for (; ps->wh.slot[i]; i = (i + 1) & ps->wh.mask)
		if (gnl_route_same_key(kb_des_route(ps, (size_t)ps->wh.slot[i] - 1, tmp), r))
			return ps->wh.slot[i] - 1;
	return -1;
}

static void left_route(const struct rleft *l, struct gnl_route *r)
{
	memset(r, 0, sizeof(*r));
	r->family = l->family;
	r->dst = l->dst;
	r->table = l->table;
	r->priority = l->priority;
	r->oif = l->oif;
	r->protocol = l->protocol;
	r->type = l->type;
	r->scope = l->scope;
}

/* The route an op writes (tmp holds one built on demand). */
const struct gnl_route *kb_op_route(const struct pass *ps, const struct op *o, struct gnl_route *tmp)
{
	if (o->src == S_DESIRED)
		return kb_des_route(ps, o->w, tmp);
	if (o->src == S_LEFT) {
		left_route(&ps->left.v[o->w], tmp);
		return tmp;
	}
	return o->obj;
}

/* The result an op's failure goes to. */
struct gdp_result *kb_op_res(struct pass *ps, const struct op *o, struct gdp_result *node_res)
{
	if (o->src == S_DESIRED)
		return kb_des_res(ps, o->w);
	return o->res ? o->res : node_res;
}

/* ------------------------------------------------------------ egress shard */

/*
 * The shard of this node: which VPCs egress (an attachment declares it),
 * the default routes of those VPCs toward their shard SIDs (a throw for each
 * SID so the encapsulated packet leaves the VPC table), the SIDs' decap in
 * the main table, and the mark rules of the translator (dp/egress.h).
 */
static int plan_egress(struct pass *ps)
{
	struct kb *k = ps->k;
	struct plan *p = &ps->p;
	const struct gdp_state *d = ps->d;
	uint32_t upidx = ps->upidx;
	const bool *vok = ps->vok;
	struct gdp_result **vres = ps->vres, *eres = ps->eres;
	unsigned *vegress = ps->vegress;
	struct gde_vpc *evpcs = ps->evpcs;
	size_t *n_evpcs = &ps->n_evpcs;
	struct gde_shard *sh = &ps->shard;
	const struct gnl_link *ol;
	char err[320];
	struct gnl_rule ru;
	size_t i, j;
	int rc = 0;

	memset(sh, 0, sizeof(*sh));
	sh->sid = d->egress.sid;
	sh->addr6 = d->egress.addr6;
	sh->have_v4 = d->egress.have_v4;
	sh->addr4 = d->egress.addr4;
	snprintf(sh->oif, sizeof(sh->oif), "%s",
		 d->egress.oif[0] ? d->egress.oif : d->node.uplink[0] ? d->node.uplink : "lo");
	if (gde_validate_shard(sh, err, sizeof(err))) {
		gdp_result_fail(eres, -EINVAL, "egress shard: %s", err);
		return 0;
	}
	ol = kb_pass_link(ps, sh->oif);
	if (!ol) {
		gdp_result_fail(eres, -ENODEV, "egress shard: internet interface %s not found", sh->oif);
		return 0;
	}
	for (i = 0; i < d->n_atts; i++) {
		const struct gdp_vpc *v = gdp_state_find_vpc(d, d->atts[i].vpc);

		if (v && vok[v - d->vpcs])
			vegress[v - d->vpcs] |= d->atts[i].egress & (GDP_FAM_V6 | (sh->have_v4 ? GDP_FAM_V4 : 0));
	}
	for (i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *v = &d->vpcs[i];

		if (!vegress[i])
			continue;
		evpcs[(*n_evpcs)++] = (struct gde_vpc){ .arg = v->arg, .table = v->table };
		for (j = 0; j < 2; j++) {
			int af = j ? AF_INET : AF_INET6;
			struct in6_addr sid;
			struct gnl_route r;

			if (!(vegress[i] & (j ? GDP_FAM_V4 : GDP_FAM_V6)))
				continue;
			gde_vpc_sid(&sh->sid, af, v->arg, &sid);
			/* decap on this node: inner routed by its destination (mark rule: main table) */
			kb_base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
			kb_v6_addr(&sid, 128, &r.dst);
			r.oif = ol->ifindex;
			r.encap = GNL_ENCAP_SEG6LOCAL;
			r.s6l.action = af == AF_INET ? SEG6_LOCAL_ACTION_END_DX4 : SEG6_LOCAL_ACTION_END_DX6;
			rc |= kb_want_route(p, eres, &r);
			if (d->egress.shard_only)
				continue; /* the bpf trie routes the VPC toward the shard */
			/* default route of the VPC toward its shard SID */
			kb_base_route(k, &r, af, v->table);
			r.oif = upidx;
			if (af == AF_INET)
				r.scope = RT_SCOPE_LINK;
			r.encap = GNL_ENCAP_SEG6;
			r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
			r.seg6.nsegs = 1;
			r.seg6.segs[0] = sid;
			rc |= kb_want_route(p, vres[i], &r);
			/* the encapsulated packet (iif still the pod's veth) goes on to the main table */
			kb_base_route(k, &r, AF_INET6, v->table);
			kb_v6_addr(&sid, 128, &r.dst);
			r.type = RTN_THROW;
			rc |= kb_want_route(p, vres[i], &r);
		}
		/* replies, un-translated, carry the VPC's reply mark: back into its table */
		memset(&ru, 0, sizeof(ru));
		ru.priority = k->rule_prio > 2 ? k->rule_prio - 1 : k->rule_prio;
		ru.table = v->table;
		ru.action = FR_ACT_TO_TBL;
		ru.protocol = k->proto;
		ru.fwmark = GDE_MARK_REPLY | v->arg;
		ru.fwmask = GDE_MARK_MASK;
		for (j = 0; j < 2; j++) {
			ru.family = j ? AF_INET : AF_INET6;
			rc |= want_obj(p, eres, O_RULE, &ru, sizeof(ru));
		}
	}
	/* the shard's addresses on the internet interface (what Programmed=AddressesProgrammed observes) */
	{
		struct gnl_ifaddr ad;

		memset(&ad, 0, sizeof(ad));
		ad.ifindex = ol->ifindex;
		ad.protocol = k->proto;
		ad.scope = RT_SCOPE_UNIVERSE;
		ad.family = AF_INET6;
		kb_v6_addr(&sh->addr6, 128, &ad.addr);
		ad.flags = IFA_F_NODAD | IFA_F_PERMANENT;
		rc |= want_obj(p, eres, O_ADDR, &ad, sizeof(ad));
		if (sh->have_v4) {
			ad.family = AF_INET;
			v4_addr(sh->addr4, 32, &ad.addr);
			ad.flags = IFA_F_PERMANENT;
			rc |= want_obj(p, eres, O_ADDR, &ad, sizeof(ad));
		}
	}
	/* decapsulated toward the internet: the main table, never a VPC table again */
	memset(&ru, 0, sizeof(ru));
	ru.priority = k->rule_prio > 2 ? k->rule_prio - 2 : k->rule_prio;
	ru.table = RT_TABLE_MAIN;
	ru.action = FR_ACT_TO_TBL;
	ru.protocol = k->proto;
	ru.fwmark = GDE_MARK_OUT;
	ru.fwmask = GDE_MARK_KIND;
	for (j = 0; j < 2; j++) {
		ru.family = j ? AF_INET : AF_INET6;
		rc |= want_obj(p, eres, O_RULE, &ru, sizeof(ru));
	}
	return rc ? -ENOMEM : 0;
}

/*
 * Plan: the kernel objects the valid model objects need (desired routes,
 * rules, neighbours, addresses, links), each tied to its object's result;
 * invalid objects fail alone and what they have in the kernel is protected.
 */
int kb_plan(struct pass *ps)
{
	struct kb *k = ps->k;
	const struct gdp_state *d = ps->d;
	struct gdp_result **vres = ps->vres, **ares = ps->ares;
	bool *vok = ps->vok;
	uint32_t upidx = ps->upidx;
	char err[320], pb[64];
	size_t i, j;

	/* VPCs: model checks, our table range, and nobody else in the table. */
	for (i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *v = &d->vpcs[i];
		int e = gdp_validate_vpc(d, i, err, sizeof(err));

		if (!e && (v->table < k->tmin || v->table > k->tmax)) {
			snprintf(err, sizeof(err), "vpc %s: table %u outside galactic's range %u-%u",
				 v->id, v->table, k->tmin, k->tmax);
			e = -ERANGE;
		}
		/* someone else's route in the table: found by an earlier dump of this pass (route_cb) */
		for (j = 0; !e && j < ps->busy->n; j++)
			if (ps->busy->v[j].table == v->table) {
				snprintf(err, sizeof(err), "vpc %s: table %u already used by something else %s", v->id,
					 v->table, ps->busy->v[j].msg);
				e = -EBUSY;
			}
		for (j = 0; !e && j < ps->s.rules.n; j++) {
			const struct gnl_rule *r = &ps->s.rules.v[j];

			if (r->table == v->table && r->protocol != k->proto) {
				snprintf(err, sizeof(err), "vpc %s: table %u already used by something else (rule pref %u, protocol %u)",
					 v->id, v->table, r->priority, r->protocol);
				e = -EBUSY;
			}
		}
		if (e) {
			gdp_result_fail(vres[i], e, "%s", err);
			if (VEC_PUSH(ps->p.prot_tables, v->table))
				return -ENOMEM;
			continue;
		}
		vok[i] = true;
	}

	if (!(ps->vtab = calloc(d->n_vpcs + 1, sizeof(*ps->vtab))))
		return -ENOMEM;
	for (i = 0; i < d->n_vpcs; i++)
		if (vok[i])
			ps->vtab[ps->n_vtab++] = d->vpcs[i].table;
	qsort(ps->vtab, ps->n_vtab, sizeof(*ps->vtab), kb_u32_cmp);

	if (ps->eres && plan_egress(ps))
		return -ENOMEM;

	for (i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *v = &d->vpcs[i];
		struct gnl_route r;
		struct in6_addr sid;

		if (!vok[i])
			continue;
		kb_base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
		gdp_sid(&d->node, GDP_FN_DECAP, v->arg, &sid);
		kb_v6_addr(&sid, 128, &r.dst);
		r.oif = upidx;
		r.encap = GNL_ENCAP_SEG6LOCAL;
		/* Tables + iif rules on every kernel; a VRF mode (End.DT46 vrftable
		 * into a VRF device per VPC) is not implemented (docs/dataplane-kernel.md). */
		r.s6l.action = SEG6_LOCAL_ACTION_END_DT6;
		r.s6l.table = v->table;
		if (kb_want_route(&ps->p, vres[i], &r))
			return -ENOMEM;
		/* The table ends in unreachable, unless the family egresses through the shard. */
		kb_base_route(k, &r, AF_INET6, v->table);
		r.type = RTN_UNREACHABLE;
		if ((!(ps->vegress[i] & GDP_FAM_V6) || d->egress.shard_only) &&
		    kb_want_route(&ps->p, vres[i], &r))
			return -ENOMEM;
		kb_base_route(k, &r, AF_INET, v->table);
		r.type = RTN_UNREACHABLE;
		if ((!(ps->vegress[i] & GDP_FAM_V4) || d->egress.shard_only) &&
		    kb_want_route(&ps->p, vres[i], &r))
			return -ENOMEM;
		/* Pod steering: one rule per VPC and family, whatever its attachments. */
		for (j = 0; j < 2; j++) {
			struct gnl_rule ru;

			steer_rule(k, v, j ? AF_INET : AF_INET6, &ru);
			if (want_obj(&ps->p, vres[i], O_RULE, &ru, sizeof(ru)))
				return -ENOMEM;
		}
	}

	for (i = 0; i < d->n_atts; i++) {
		const struct gdp_attachment *a = &d->atts[i];
		const struct gdp_vpc *v = gdp_state_find_vpc(d, a->vpc);
		const struct gnl_link *hl = kb_pass_link(ps, a->host_ifname);
		int e = gdp_validate_attachment(d, i, err, sizeof(err));

		if (!e && !vok[v - d->vpcs]) {
			snprintf(err, sizeof(err), "attachment %s/%s: vpc %s is not programmed", a->vpc, a->id, a->vpc);
			e = -EAGAIN;
		}
		if (!e && !hl) {
			snprintf(err, sizeof(err), "attachment %s/%s: host interface %s not found", a->vpc, a->id,
				 a->host_ifname);
			e = -ENODEV;
		}
		if (e) {
			gdp_result_fail(ares[i], e, "%s", err);
			if (hl && VEC_PUSH(ps->p.prot_ifindex, hl->ifindex))
				return -ENOMEM;
			continue;
		}
		if (kb_plan_attachment(k, &ps->p, d, a, v, hl, ares[i]))
			return -ENOMEM;
	}

	/*
	 * Remotes: their routes are not planned one by one (remote_route builds
	 * one when it is needed); only their checks run here. An invalid remote
	 * whose VPC exists keeps its key (W_PROT): what it had stays.
	 */
	if (!(ps->rvpc = calloc(d->n_remotes + 1, sizeof(*ps->rvpc))))
		return -ENOMEM;
	for (i = 0; i < d->n_remotes; i++) {
		const struct gdp_remote *rm = &d->remotes[i];
		const struct gdp_vpc *v = i && ps->rvpc[i - 1] && rm->vpc_ix == d->remotes[i - 1].vpc_ix
						  ? &d->vpcs[ps->rvpc[i - 1] - 1] : gdp_state_find_vpc(d, gdp_remote_vpc(rm));
		int e = gdp_validate_remote_in(d, &ps->locals, i, err, sizeof(err));

		if (v)
			ps->rvpc[i] = (uint32_t)(v - d->vpcs) + 1;
		if (!e && !vok[v - d->vpcs]) {
			snprintf(err, sizeof(err), "remote %s in vpc %s: vpc is not programmed",
				 gdp_prefix_str(&rm->prefix, pb, sizeof(pb)), gdp_remote_vpc(rm));
			e = -EAGAIN;
		}
		if (e)
			gdp_result_fail(des_res_remote(ps, i), e, "%s", err);
	}

	/*
	 * Encapsulated packets are looked up again with the pod's veth as iif,
	 * so the `iif` rule sends them to the VPC table too: each SID this VPC
	 * sends to gets a `throw` there (on to the main table and the
	 * underlay). Only those SIDs: a pod cannot reach another VPC's SIDs.
	 * Distinct (table, SID) pairs are found through a small growing hash.
	 */
	{
		struct { int32_t *slot; size_t mask, n; } th = { 0 };
		size_t from = ps->p.wroutes.n;

		for (i = 0; i < d->n_remotes; i++) {
			struct gnl_route r;
			size_t h;

			if (remote_failed(ps, i) || !ps->rvpc[i])
				continue;
			kb_base_route(k, &r, AF_INET6, d->vpcs[ps->rvpc[i] - 1].table);
			kb_v6_addr(&d->remotes[i].sid, 128, &r.dst);
			r.type = RTN_THROW;
			if ((th.n + 1) * 2 > (th.slot ? th.mask + 1 : 0)) {
				size_t nc = th.slot ? (th.mask + 1) * 2 : 64;
				int32_t *ns = calloc(nc, sizeof(*ns));

				if (!ns) {
					free(th.slot);
					return -ENOMEM;
				}
				for (size_t x = from; x < ps->p.wroutes.n; x++) {
					for (h = (size_t)kb_route_key_hash(&ps->p.wroutes.v[x]) & (nc - 1); ns[h];
					     h = (h + 1) & (nc - 1))
						;
					ns[h] = (int32_t)x + 1;
				}
				free(th.slot);
				th.slot = ns;
				th.mask = nc - 1;
			}
			for (h = (size_t)kb_route_key_hash(&r) & th.mask; th.slot[h]; h = (h + 1) & th.mask)
				if (gnl_route_same_key(&ps->p.wroutes.v[th.slot[h] - 1], &r))
					break;
			if (th.slot[h])
				continue;
			if (kb_want_route(&ps->p, vres[ps->rvpc[i] - 1], &r)) {
				free(th.slot);
				return -ENOMEM;
			}
			th.slot[h] = (int32_t)ps->p.wroutes.n;
			th.n++;
		}
		free(th.slot);
	}

	/* The desired routes are complete: number them, then the remotes'. */
	ps->n_wr = ps->p.wroutes.n;
	ps->n_des = ps->n_wr + d->n_remotes;
	if (!(ps->wst = calloc(ps->n_des + 1, 1)))
		return -ENOMEM;
	for (i = 0; i < d->n_remotes; i++)
		if (remote_failed(ps, i) && ps->rvpc[i])
			ps->wst[ps->n_wr + i] = W_PROT;
	return 0;
}
