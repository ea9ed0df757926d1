/*
 * Kernel backend: makes a node's routing state match the desired model with
 * netlink (libgnl). Level-triggered: every apply dumps what the kernel has,
 * diffs it against what the model needs, and sends only the difference.
 *
 * What galactic owns in the kernel is marked, never guessed:
 *   routes, rules   rtm_protocol / FRA_PROTOCOL = opts.rtproto (default 154)
 *   neighbours      NDA_PROTOCOL = rtproto       addresses  IFA_PROTO = rtproto
 *   VPC tables      in [table_min, table_max]
 * Anything else is never modified or deleted; a VPC table that holds foreign
 * routes or is named by a foreign rule is refused ("used by something else").
 *
 * Per VPC (table T, arg a):
 *   SID(0xE,a)/128 encap seg6local End.DT6 table T   (main table, dev uplink|lo)
 *   unreachable default (v4 + v6) in T                (no fall-through to main)
 *   rule fwmark (GDE_MARK_POD | a)/GDE_MARK_MASK lookup T (v4 + v6): pod steering
 * Per attachment (host veth H, arg b):
 *   H up (+ mtu); fe80::1/64 (nodad) and/or 169.254.1.1/32 on H: the pod's gateways
 *   H -> GDE_MARK_POD | a in the steering map (dp/steer.h: nftables marks what
 *   H receives at prerouting, so H takes T's rule: no rule per attachment, as
 *   every IPv6 rule added flushes the whole IPv6 FIB); pod address routes dev H in T;
 *   permanent neighbours pod address -> pod MAC on H
 *   IPv4: nh4/32 dev H (main), neighbour nh4 -> pod MAC,
 *         SID(0xD,b)/128 encap seg6local End.DX4 nh4 (main, dev H)
 * Per remote prefix: prefix in T encap seg6 mode encap.red segs SID dev uplink|lo
 *   and, once per distinct SID, `throw SID/128` in T: the encapsulated packet
 *   is routed again with the pod's mark (so through T); the throw sends
 *   it on to the main table. Pods reach no other SIDs (unreachable default).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "agent/nl/objects.h"
#include "common/grow.h"

#define V6_METRIC 1024

struct kb {
	struct gdp_backend base;
	struct gnl_sock *nl;
	char *netns;
	uint8_t proto;
	uint32_t tmin, tmax, rule_prio;
	unsigned batch, max_retries;
	struct gdp_caps caps;
	char clsact_on[GDP_IFNAME_MAX + 1]; /* uplink that has its clsact */
	char *egress_text;      /* the nftables program last applied (NULL: none) */
	char *egress_listing;   /* the table as listed right after that apply (stateless) */
	bool egress_clean;      /* no galactic_egress table is left (checked once when egress is off) */
	struct gds_nft *nft;    /* libnftables in the backend's netns: pod steering (dp/steer.h) */
	/* What the last full reconcile verified, for delta applies. */
	bool full_ok;                       /* a full apply has run */
	uint32_t upidx;                     /* the uplink's ifindex then */
	char upname[GDP_IFNAME_MAX + 1];
	uint32_t *ok_tables;                /* VPC tables that passed their checks */
	size_t n_ok_tables;
	/* Counters (tests, docs): what each kind of pass cost. */
	unsigned long n_full, n_delta, n_dumps, n_delta_ops;
	unsigned long n_dump_intr; /* dump tries the kernel interrupted (NLM_F_DUMP_INTR), all passes */
	unsigned last_intr;        /* of the last dump that failed: how many tries were interrupted */
};

#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(vec, item)                                                     \
	({                                                                      \
		int rc_ = G_GROW((vec).v, (vec).cap, (vec).n, 64);              \
		if (!rc_)                                                       \
			(vec).v[(vec).n++] = (item);                            \
		rc_;                                                            \
	})

/* What a pass keeps of the dump: everything but the routes, which are
 * compared with the desired ones as they arrive (route_cb) and not kept. */
struct snap {
	VEC(struct gnl_link) links;
	VEC(struct gnl_rule) rules;
	VEC(struct gnl_neigh) neighs;
	VEC(struct gnl_ifaddr) addrs;
};

static void snap_free(struct snap *s)
{
	free(s->links.v);
	free(s->rules.v);
	free(s->neighs.v);
	free(s->addrs.v);
	memset(s, 0, sizeof(*s));
}

static int link_cb(const struct nlmsghdr *h, void *arg)
{
	struct snap *s = arg;
	struct gnl_link l;

	return gnl_link_parse(h, &l) ? 0 : VEC_PUSH(s->links, l);
}

static int rule_cb(const struct nlmsghdr *h, void *arg)
{
	struct snap *s = arg;
	struct gnl_rule r;

	return gnl_rule_parse(h, &r) ? 0 : VEC_PUSH(s->rules, r);
}

static int neigh_cb(const struct nlmsghdr *h, void *arg)
{
	struct snap *s = arg;
	struct gnl_neigh n;

	return gnl_neigh_parse(h, &n) ? 0 : VEC_PUSH(s->neighs, n);
}

static int addr_cb(const struct nlmsghdr *h, void *arg)
{
	struct snap *s = arg;
	struct gnl_ifaddr a;

	return gnl_ifaddr_parse(h, &a) ? 0 : VEC_PUSH(s->addrs, a);
}

struct count_reset {
	size_t *count, base;
};

static void count_reset(void *arg)
{
	struct count_reset *r = arg;

	*r->count = r->base; /* an interrupted dump is re-read from scratch */
}

/* One dump into s, read again (with gnl_dump_restarting's backoff) while the kernel interrupts it. */
static int dump_one(struct kb *k, struct nl_msg *m, gnl_dump_cb cb, struct snap *s, size_t *count)
{
	struct count_reset r = { count, *count };
	unsigned intr = 0;
	int rc;

	if (!m)
		return -ENOMEM;
	k->n_dumps++;
	rc = gnl_dump_restarting(k->nl, m, cb, s, count_reset, &r, &intr);
	k->n_dump_intr += intr;
	k->last_intr = intr;
	nlmsg_free(m);
	return rc;
}

/* A dump that failed: nothing was written, and the results say so (res->unread). */
static void dump_failed(struct kb *k, struct gdp_results *res, struct gdp_result *node_res, const char *what,
			int rc)
{
	res->unread = true;
	if (rc == -EAGAIN)
		gdp_result_fail(node_res, rc,
				"%s: interrupted %u times in a row (the kernel's tables kept changing); nothing was changed",
				what, k->last_intr);
	else
		gdp_result_fail(node_res, rc, "%s: %s", what, strerror(-rc));
}

/* Links, rules, neighbours, addresses (the routes come later, streamed). */
static int snapshot(struct kb *k, struct snap *s)
{
	struct nl_msg *m;
	int rc;

	memset(s, 0, sizeof(*s));
	gnl_link_dump_msg(&m);
	if ((rc = dump_one(k, m, link_cb, s, &s->links.n)))
		return rc;
	gnl_rule_dump_msg(&m, AF_INET6);
	if ((rc = dump_one(k, m, rule_cb, s, &s->rules.n)))
		return rc;
	gnl_rule_dump_msg(&m, AF_INET);
	if ((rc = dump_one(k, m, rule_cb, s, &s->rules.n)))
		return rc;
	gnl_neigh_dump_msg(&m, AF_UNSPEC);
	if ((rc = dump_one(k, m, neigh_cb, s, &s->neighs.n)))
		return rc;
	gnl_ifaddr_dump_msg(&m, AF_UNSPEC);
	return dump_one(k, m, addr_cb, s, &s->addrs.n);
}

/* ------------------------------------------------------------ route hash */

struct rhash {
	int32_t *slot;  /* index + 1, 0 = empty */
	size_t mask;
};

static uint64_t route_key_hash(const struct gnl_route *r)
{
	uint64_t h = 1469598103934665603ULL;
	uint8_t buf[32];
	size_t i, n = 0;

	buf[n++] = (uint8_t)r->family;
	buf[n++] = r->dst.len;
	memcpy(buf + n, &r->table, 4), n += 4;
	memcpy(buf + n, &r->priority, 4), n += 4;
	memcpy(buf + n, r->dst.a.raw, 16), n += 16;
	for (i = 0; i < n; i++)
		h = (h ^ buf[i]) * 1099511628211ULL;
	return h;
}

/* Slots for n entries: a power of two, at most half full. */
static size_t hash_cap(size_t n)
{
	size_t sz = 64;

	while (sz < n * 2)
		sz *= 2;
	return sz;
}

static int rhash_init(struct rhash *h, size_t n)
{
	size_t sz = hash_cap(n);

	h->slot = calloc(sz, sizeof(*h->slot));
	h->mask = sz - 1;
	return h->slot ? 0 : -ENOMEM;
}

/* Returns the index of a route with the same key, or -1 after inserting idx. */
static long rhash_insert(struct rhash *h, const struct gnl_route *base, size_t idx)
{
	size_t i = (size_t)route_key_hash(&base[idx]) & h->mask;

	for (; h->slot[i]; i = (i + 1) & h->mask)
		if (gnl_route_same_key(&base[h->slot[i] - 1], &base[idx]))
			return h->slot[i] - 1;
	h->slot[i] = (int32_t)idx + 1;
	return -1;
}

static long rhash_find(const struct rhash *h, const struct gnl_route *base, const struct gnl_route *r)
{
	size_t i = (size_t)route_key_hash(r) & h->mask;

	for (; h->slot[i]; i = (i + 1) & h->mask)
		if (gnl_route_same_key(&base[h->slot[i] - 1], r))
			return h->slot[i] - 1;
	return -1;
}

/*
 * Index of the dumped rules, neighbours, addresses and links by key, so the
 * diff is linear in what the node holds (a linear search per wanted object
 * was quadratic: 1,000 attachments = millions of rule comparisons a pass).
 * Entries of one hash are met in insertion order: the lowest index first,
 * as the linear search found them.
 */
struct khash {
	uint64_t *h;
	int32_t *ix;    /* index + 1, 0 = empty */
	size_t mask;
};

#define KH_FOREACH(t, hv, j)                                                           \
	for (size_t kh_i_ = (size_t)(hv) & (t)->mask; (t)->ix[kh_i_]; kh_i_ = (kh_i_ + 1) & (t)->mask) \
		if ((t)->h[kh_i_] == (hv) && ((j) = (size_t)(t)->ix[kh_i_] - 1, 1))

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static int kh_init(struct khash *t, size_t n)
{
	size_t sz = hash_cap(n);

	t->h = calloc(sz, sizeof(*t->h));
	t->ix = calloc(sz, sizeof(*t->ix));
	t->mask = sz - 1;
	return t->h && t->ix ? 0 : -ENOMEM;
}

static void kh_put(struct khash *t, uint64_t hv, size_t idx)
{
	size_t i = (size_t)hv & t->mask;

	while (t->ix[i])
		i = (i + 1) & t->mask;
	t->h[i] = hv;
	t->ix[i] = (int32_t)idx + 1;
}

static void kh_free(struct khash *t)
{
	free(t->h);
	free(t->ix);
}

static uint64_t addr_hash(uint64_t h, const struct gnl_addr *a)
{
	h = fnv(h, &a->family, sizeof(a->family));
	h = fnv(h, &a->len, sizeof(a->len));
	return fnv(h, a->a.raw, gnl_addr_bytes(a->family)); /* as gnl_addr_eq compares */
}

static uint64_t rule_hash(const struct gnl_rule *r)
{
	uint64_t h = 1469598103934665603ULL;

	h = fnv(h, &r->family, sizeof(r->family));
	h = fnv(h, &r->priority, sizeof(r->priority));
	h = fnv(h, &r->table, sizeof(r->table));
	h = fnv(h, r->iifname, strnlen(r->iifname, sizeof(r->iifname)));
	h = fnv(h, &r->fwmark, sizeof(r->fwmark));
	h = fnv(h, &r->fwmask, sizeof(r->fwmask));
	if (r->dst.family)
		h = addr_hash(h, &r->dst);
	return fnv(h, r->oifname, strnlen(r->oifname, sizeof(r->oifname)));
}

static uint64_t neigh_hash(const struct gnl_neigh *n)
{
	uint64_t h = fnv(1469598103934665603ULL, &n->ifindex, sizeof(n->ifindex));

	return addr_hash(fnv(h, &n->family, sizeof(n->family)), &n->dst);
}

static uint64_t ifaddr_hash(const struct gnl_ifaddr *a)
{
	uint64_t h = fnv(1469598103934665603ULL, &a->ifindex, sizeof(a->ifindex));

	return addr_hash(fnv(h, &a->family, sizeof(a->family)), &a->addr);
}

static uint64_t link_hash(uint32_t ifindex)
{
	return fnv(1469598103934665603ULL, &ifindex, sizeof(ifindex));
}

/* ------------------------------------------------------------ wanted state */

enum okind { O_ROUTE, O_RULE, O_NEIGH, O_ADDR, O_LINK };
enum verb { V_ADD, V_REPLACE, V_DEL, V_SET };

/* A desired object other than a route (routes: plan.wroutes). */
struct want {
	enum okind k;
	struct gdp_result *res;
	union {
		struct gnl_rule ru;
		struct gnl_neigh n;
		struct gnl_ifaddr a;
		struct gnl_link l;
	} o;
};

/* Where an op's route is, when obj is NULL (a full pass's routes are not copied into ops). */
enum osrc { S_OBJ, S_DESIRED, S_LEFT };

struct op {
	enum verb verb;
	enum okind k;
	struct gdp_result *res;
	const void *obj;        /* S_OBJ */
	uint8_t src;            /* enum osrc */
	size_t w;               /* S_DESIRED: desired route; S_LEFT: leftover (struct pass) */
};

/* A host veth's element of the steering map, tied to its attachment's result. */
struct steer_want {
	struct gds_pod pod;
	struct gdp_result *res;
};

struct plan {
	VEC(struct want) wants;
	VEC(struct steer_want) steer;   /* desired (or, in a delta's removals, departing) elements */
	char *steer_text;               /* the steering transaction execute runs (NULL: none) */
	VEC(struct gdp_result *) steer_res; /* whose elements it writes (a failure is theirs) */
	unsigned long steer_added, steer_removed;
	VEC(struct gnl_route) wroutes;  /* desired routes but the remotes' (those are built on demand) */
	VEC(struct gdp_result *) wroute_res;
	VEC(struct op) ops;
	VEC(uint32_t) prot_tables;      /* tables of invalid VPCs: leave as they are */
	VEC(uint32_t) prot_ifindex;     /* devices of invalid attachments */
};

static void plan_free(struct plan *p)
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

static int want_route(struct plan *p, struct gdp_result *res, const struct gnl_route *r)
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

static bool u32_in(const uint32_t *v, size_t n, uint32_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void to_gaddr(const struct gdp_prefix *p, struct gnl_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = p->family;
	a->len = p->len;
	memcpy(a->a.raw, p->addr.raw, p->family == AF_INET ? 4 : 16);
}

static void v6_addr(const struct in6_addr *x, uint8_t len, struct gnl_addr *a)
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

static void base_route(struct kb *k, struct gnl_route *r, int family, uint32_t table)
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
static int plan_attachment(struct kb *k, struct plan *p, const struct gdp_state *d,
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
		v6_addr(&gw, 64, &ad.addr);
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
		base_route(k, &r, a->addrs[i].family, v->table);
		to_gaddr(&a->addrs[i], &r.dst);
		r.oif = hl->ifindex;
		if (r.family == AF_INET)
			r.scope = RT_SCOPE_LINK;
		rc |= want_route(p, res, &r);
		if (mac_set(a->pod_mac)) {
			memset(&n, 0, sizeof(n));
			n.family = a->addrs[i].family;
			n.ifindex = hl->ifindex;
			to_gaddr(&a->addrs[i], &n.dst);
			n.dst.len = n.family == AF_INET ? 32 : 128; /* a block's network address */
			memcpy(n.lladdr, a->pod_mac, 6);
			n.has_lladdr = true;
			n.state = NUD_PERMANENT;
			n.protocol = k->proto;
			rc |= want_obj(p, res, O_NEIGH, &n, sizeof(n));
		}
	}
	if (has4 && a->nh4.s_addr) {
		base_route(k, &r, AF_INET, RT_TABLE_MAIN);
		v4_addr(a->nh4, 32, &r.dst);
		r.oif = hl->ifindex;
		r.scope = RT_SCOPE_LINK;
		rc |= want_route(p, res, &r);
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
		base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
		{
			struct in6_addr sid;

			gdp_sid(&d->node, GDP_FN_DX4, a->arg, &sid);
			v6_addr(&sid, 128, &r.dst);
		}
		r.oif = hl->ifindex;
		r.encap = GNL_ENCAP_SEG6LOCAL;
		r.s6l.action = SEG6_LOCAL_ACTION_END_DX4;
		r.s6l.nh4 = a->nh4;
		rc |= want_route(p, res, &r);
	}
	return rc ? -ENOMEM : 0;
}

/* ------------------------------------------------------------ a pass */

/* A dumped route of ours nobody wants: what deleting it needs. */
struct rleft {
	struct gnl_addr dst;
	uint32_t table, priority, oif;
	uint8_t family, protocol, type, scope;
};

/* A desired route found as someone else's route. */
struct fgn {
	size_t j;
	uint8_t protocol;
};

/* A VPC table found holding someone else's route (the pass is planned again without it). */
struct busy {
	uint32_t table;
	char msg[320];
};

typedef VEC(struct busy) busy_vec;

/*
 * What a desired route found in the dump (struct pass, wst). The dump is
 * compared with the desired routes as it arrives and not kept: at 100,000
 * remote routes a copy of it, or of the desired routes, is 25 MB.
 */
enum {
	W_NONE,         /* not (yet) seen: add */
	W_EQUAL,        /* seen, ours and equal */
	W_DIFF,         /* seen, ours, different: replace */
	W_FOREIGN,      /* seen, not ours: refused */
	W_DUP,          /* a second desired route with the same key: refused */
	W_PROT,         /* the key of an invalid remote: whatever is there stays */
	W_SKIP,         /* its object failed: left as it is */
};

/* One reconcile pass: the model, the dump, the plan, the results. */
struct pass {
	struct kb *k;
	const struct gdp_state *d;
	struct gdp_results *res;
	struct gdp_result *node_res;
	struct snap s;
	struct plan p;
	struct gdp_result **vres, **ares;         /* results by model index */
	bool *vok;                                /* VPCs that passed their checks */
	uint32_t upidx;
	struct khash names;                       /* dumped links by name */
	struct gdp_result *eres;                  /* the egress shard's result (NULL: no shard) */
	unsigned *vegress;                        /* per VPC: families routed toward the shard */
	struct gde_vpc *evpcs;                    /* the shard's VPCs (nftables) */
	size_t n_evpcs;
	struct gde_shard shard;
	/* Desired routes: j < n_wr are p.wroutes, n_wr + i is remote i's route,
	 * built on demand from the model (remote_route) and never copied. */
	size_t n_wr, n_des;
	uint8_t *wst;                             /* per desired route: W_* */
	struct rhash wh;                          /* desired routes by key */
	uint32_t *rvpc;                           /* remote -> its VPC's index + 1 (0: no such VPC) */
	/* Remotes' results exist only for the remotes that failed (the others
	 * are counted in res->remotes_ok): at 100,000 remotes 40 MB otherwise. */
	struct gdp_result **rres;                 /* remote -> its result (allocated on the first failure) */
	size_t n_rres;
	VEC(struct rleft) left;                   /* dumped routes of ours nobody wants */
	VEC(struct fgn) foreign;                  /* desired routes found as someone else's (W_FOREIGN) */
	uint32_t *vtab;                           /* tables of the VPCs that passed their checks, sorted */
	size_t n_vtab;
	busy_vec *busy;                           /* VPC tables used by something else (kept across plans) */
	bool busy_new;                            /* the dump found a table not in busy before */
	int err;                                  /* allocation failure inside the dump callback */
	struct gdp_locals locals;                 /* the attachments' addresses, for the remotes' checks */
};

static uint64_t name_hash(const char *name)
{
	return fnv(1469598103934665603ULL, name, strnlen(name, IFNAMSIZ));
}

/* The dumped link called name (by hash: one lookup per attachment). */
static const struct gnl_link *pass_link(const struct pass *ps, const char *name)
{
	size_t j;

	KH_FOREACH(&ps->names, name_hash(name), j)
		if (!strcmp(ps->s.links.v[j].name, name))
			return &ps->s.links.v[j];
	return NULL;
}

/* The route of remote i (its VPC exists). */
static void remote_route(const struct pass *ps, size_t i, struct gnl_route *r)
{
	const struct gdp_remote *rm = &ps->d->remotes[i];

	base_route(ps->k, r, rm->prefix.family, ps->d->vpcs[ps->rvpc[i] - 1].table);
	to_gaddr(&rm->prefix, &r->dst);
	r->oif = ps->upidx;
	if (r->family == AF_INET)
		r->scope = RT_SCOPE_LINK;
	r->encap = GNL_ENCAP_SEG6;
	r->seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
	r->seg6.nsegs = 1;
	r->seg6.segs[0] = rm->sid;
}

static const struct gnl_route *des_route(const struct pass *ps, size_t j, struct gnl_route *tmp)
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
static struct gdp_result *des_res(struct pass *ps, size_t j)
{
	struct gdp_result *r = j < ps->n_wr ? ps->p.wroute_res.v[j] : remote_res(ps, j - ps->n_wr);

	return r ? r : ps->node_res;
}

static bool des_failed(const struct pass *ps, size_t j)
{
	if (j < ps->n_wr)
		return ps->p.wroute_res.v[j] && ps->p.wroute_res.v[j]->err;
	return remote_failed(ps, j - ps->n_wr);
}

/* Inserts desired route j; returns the desired route with the same key, or -1. */
static long dhash_insert(struct pass *ps, size_t j)
{
	struct gnl_route t1, t2;
	const struct gnl_route *r = des_route(ps, j, &t1);
	size_t i = (size_t)route_key_hash(r) & ps->wh.mask;

	for (; ps->wh.slot[i]; i = (i + 1) & ps->wh.mask)
		if (gnl_route_same_key(des_route(ps, (size_t)ps->wh.slot[i] - 1, &t2), r))
			return ps->wh.slot[i] - 1;
	ps->wh.slot[i] = (int32_t)j + 1;
	return -1;
}

static long dhash_find(const struct pass *ps, const struct gnl_route *r, struct gnl_route *tmp)
{
	size_t i = (size_t)route_key_hash(r) & ps->wh.mask;

	for (; ps->wh.slot[i]; i = (i + 1) & ps->wh.mask)
		if (gnl_route_same_key(des_route(ps, (size_t)ps->wh.slot[i] - 1, tmp), r))
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
static const struct gnl_route *op_route(const struct pass *ps, const struct op *o, struct gnl_route *tmp)
{
	if (o->src == S_DESIRED)
		return des_route(ps, o->w, tmp);
	if (o->src == S_LEFT) {
		left_route(&ps->left.v[o->w], tmp);
		return tmp;
	}
	return o->obj;
}

/* The result an op's failure goes to. */
static struct gdp_result *op_res(struct pass *ps, const struct op *o, struct gdp_result *node_res)
{
	if (o->src == S_DESIRED)
		return des_res(ps, o->w);
	return o->res ? o->res : node_res;
}

/* ------------------------------------------------------------ execution */

static const char *verb_str(enum verb v)
{
	return v == V_ADD ? "add" : v == V_REPLACE ? "replace" : v == V_DEL ? "delete" : "set";
}

static void describe(const struct pass *ps, const struct op *o, char *buf, size_t n)
{
	switch (o->k) {
	case O_ROUTE: {
		char t[200];
		struct gnl_route tmp;

		snprintf(buf, n, "route %s", gnl_route_str(op_route(ps, o, &tmp), t, sizeof(t)));
		break;
	}
	case O_RULE:
		gnl_rule_str(o->obj, buf, n);
		break;
	case O_NEIGH:
		gnl_neigh_str(o->obj, buf, n);
		break;
	case O_ADDR:
		gnl_ifaddr_str(o->obj, buf, n);
		break;
	case O_LINK: {
		const struct gnl_link *l = o->obj;

		snprintf(buf, n, "link ifindex %u up mtu %u", l->ifindex, l->mtu);
		break;
	}
	}
}

static int op_msg(const struct pass *ps, const struct op *o, struct nl_msg **m)
{
	int cr = o->verb == V_ADD ? NLM_F_CREATE | NLM_F_EXCL :
		 o->verb == V_REPLACE ? NLM_F_CREATE | NLM_F_REPLACE : 0;
	bool del = o->verb == V_DEL;
	struct gnl_route tmp;

	switch (o->k) {
	case O_ROUTE:
		return gnl_route_msg(m, del ? RTM_DELROUTE : RTM_NEWROUTE, cr, op_route(ps, o, &tmp));
	case O_RULE:
		return gnl_rule_msg(m, del ? RTM_DELRULE : RTM_NEWRULE, cr, o->obj);
	case O_NEIGH:
		return gnl_neigh_msg(m, del ? RTM_DELNEIGH : RTM_NEWNEIGH, cr, o->obj);
	case O_ADDR:
		return gnl_ifaddr_msg(m, del ? RTM_DELADDR : RTM_NEWADDR,
				      o->verb == V_ADD ? NLM_F_CREATE | NLM_F_REPLACE : cr, o->obj);
	case O_LINK:
		return gnl_link_msg(m, RTM_NEWLINK, 0, o->obj);
	}
	return -EINVAL;
}

static const struct { enum okind k; bool del; } phases[] = {
	{ O_LINK, false }, { O_ADDR, false }, { O_NEIGH, false }, { O_ROUTE, false },
	{ O_RULE, false }, { O_RULE, true }, { O_ROUTE, true }, { O_NEIGH, true },
	{ O_ADDR, true },
};
#define N_PHASES (sizeof(phases) / sizeof(phases[0]))

static bool phase_match(const struct op *o, size_t phase)
{
	return o->k == phases[phase].k && (o->verb == V_DEL) == phases[phase].del;
}

/* The steering transaction of p (one nftables transaction: all of it or nothing). */
static void execute_steer(struct kb *k, struct plan *p, struct gdp_results *res, struct gdp_result *node_res)
{
	char err[512];
	int e = k->nft ? gds_nft_run(k->nft, p->steer_text, err, sizeof(err)) : -ENOTSUP;

	if (!e) {
		res->added += p->steer_added;
		res->removed += p->steer_removed;
		return;
	}
	if (!k->nft)
		snprintf(err, sizeof(err), "pod steering: no libnftables context");
	if (!p->steer_res.n) {
		gdp_result_fail(node_res, e, "%s", err);
		res->failed++;
	}
	for (size_t i = 0; i < p->steer_res.n; i++) {
		gdp_result_fail(p->steer_res.v[i] ? p->steer_res.v[i] : node_res, e, "%s", err);
		res->failed++;
	}
}

/*
 * Requests go to the kernel in bounded chunks (a full pass that adds
 * 100,000 routes holds 1,024 encoded requests at a time, not all of them),
 * the batch's buffers reused from one chunk to the next.
 */
#define CHUNK 1024

struct exec {
	struct kb *k;
	struct pass *ps;                /* NULL: a delta (every op is S_OBJ) */
	struct gdp_results *res;
	struct gdp_result *node_res;
	struct gnl_batch b;
	struct op tmp[CHUNK];           /* the chunk's ops built on the fly (desired, leftover routes) */
	size_t n_tmp;
	int rc;
};

static void exec_flush(struct exec *x)
{
	struct gnl_batch *b = &x->b;
	int rc;

	if (!b->n || x->rc)
		goto out;
	rc = gnl_batch_run(x->k->nl, b);
	x->res->retries += b->retries;
	if (rc) {
		gdp_result_fail(x->node_res, rc, "netlink exchange failed: %s", strerror(-rc));
		x->rc = rc;
		goto out;
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct op *o = b->v[i].tag;
		int e = b->v[i].err;
		char d[256];

		if (o->verb == V_DEL && (e == -ESRCH || e == -ENOENT || e == -EADDRNOTAVAIL))
			e = 0; /* already gone: the goal is reached */
		if (!e) {
			if (o->verb == V_DEL)
				x->res->removed++;
			else
				x->res->added++;
			continue;
		}
		x->res->failed++;
		describe(x->ps, o, d, sizeof(d));
		gdp_result_fail(op_res(x->ps, o, x->node_res), e, "%s %s: %s%s%s%s", verb_str(o->verb), d,
				strerror(-e), b->v[i].ext[0] ? " (" : "", b->v[i].ext, b->v[i].ext[0] ? ")" : "");
	}
out:
	gnl_batch_clear(b);
	x->n_tmp = 0;
}

/* Queues one op (o stays valid until the chunk is flushed). */
static void exec_op(struct exec *x, const struct op *o)
{
	struct nl_msg *m;
	int e;

	if (x->rc)
		return;
	e = op_msg(x->ps, o, &m);
	if (e) {
		char d[256];

		describe(x->ps, o, d, sizeof(d));
		gdp_result_fail(op_res(x->ps, o, x->node_res), e, "%s %s: %s", verb_str(o->verb), d,
				strerror(-e));
		x->res->failed++;
		return;
	}
	e = gnl_batch_add(&x->b, m, (void *)o);
	nlmsg_free(m);
	if (e) {
		gdp_result_fail(x->node_res, e, "netlink batch: %s", strerror(-e));
		x->rc = e;
		return;
	}
	if (x->b.n >= CHUNK)
		exec_flush(x);
}

/* Queues a route op built on the fly (desired route or leftover w). */
static void exec_tmp(struct exec *x, enum verb v, uint8_t src, size_t w)
{
	if (x->n_tmp == CHUNK)
		exec_flush(x); /* (the batch holds at most CHUNK: flushed with it) */
	x->tmp[x->n_tmp] = (struct op){ .verb = v, .k = O_ROUTE, .src = src, .w = w };
	exec_op(x, &x->tmp[x->n_tmp++]);
}

/*
 * Sends p's ops (and, for a full pass, the desired routes to add or replace
 * and the leftovers to delete) in phases: links, addresses, neighbours,
 * routes, the pod steering transaction (nftables), rules, then deletions
 * in reverse order. Every request is
 * acknowledged; a failure goes to its object's result.
 */
static int execute(struct kb *k, struct plan *p, struct pass *ps, struct gdp_results *res,
		   struct gdp_result *node_res)
{
	struct exec *x = calloc(1, sizeof(*x));
	int rc;

	if (!x) {
		gdp_result_fail(node_res, -ENOMEM, "reconcile: out of memory");
		return -ENOMEM;
	}
	x->k = k, x->ps = ps, x->res = res, x->node_res = node_res;
	gnl_batch_init(&x->b);
	if (k->batch)
		x->b.per_trip = k->batch;
	if (k->max_retries)
		x->b.max_retries = k->max_retries;
	for (size_t phase = 0; phase < N_PHASES && !x->rc; phase++) {
		/* Pod steering before the rules: a node upgraded from per-attachment
		 * iif rules has its pods marked and the VPC rules in place before
		 * the old rules go (the rule deletions' phase). */
		if (phases[phase].k == O_RULE && !phases[phase].del && p->steer_text)
			execute_steer(k, p, res, node_res);
		for (size_t i = 0; i < p->ops.n; i++)
			if (phase_match(&p->ops.v[i], phase))
				exec_op(x, &p->ops.v[i]);
		if (ps && phases[phase].k == O_ROUTE && !phases[phase].del) {
			for (size_t j = 0; j < ps->n_des; j++)
				if (ps->wst[j] == W_NONE || ps->wst[j] == W_DIFF)
					exec_tmp(x, ps->wst[j] == W_NONE ? V_ADD : V_REPLACE, S_DESIRED, j);
		}
		if (ps && phases[phase].k == O_ROUTE && phases[phase].del)
			for (size_t j = 0; j < ps->left.n; j++)
				exec_tmp(x, V_DEL, S_LEFT, j);
		exec_flush(x);
	}
	rc = x->rc;
	gnl_batch_free(&x->b);
	free(x);
	return rc;
}

/* ------------------------------------------------------------ reconcile */

static int add_op(struct plan *p, enum verb v, enum okind k, struct gdp_result *res, const void *obj)
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

/* ------------------------------------------------------------ egress shard */

static int write_sysctl(const char *path, const char *val);

/* Runs fn's nftables work inside the backend's netns (libnftables uses the thread's namespace). */
static int in_netns(const char *netns, int (*fn)(void *), void *arg, char *err, size_t errlen)
{
	int orig = -1, ns = -1, rc;
	char path[512];

	if (!netns)
		return fn(arg);
	snprintf(path, sizeof(path), strchr(netns, '/') ? "%s" : "/run/netns/%s", netns);
	orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (orig < 0 || ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
		rc = -errno;
		snprintf(err, errlen, "enter netns %s: %s", netns, strerror(errno));
		goto out;
	}
	rc = fn(arg);
	if (setns(orig, CLONE_NEWNET) < 0)
		abort(); /* a thread left in the wrong namespace would program the wrong node */
out:
	if (orig >= 0)
		close(orig);
	if (ns >= 0)
		close(ns);
	return rc;
}

struct nft_job {
	const char *text;       /* program to run; NULL: list the table into listing */
	char *listing;          /* malloc'd: the table as the kernel holds it */
	char err[512];
};

static int nft_job_run(void *arg)
{
	struct nft_job *j = arg;

	if (j->text)
		return gde_nft_apply(j->text, j->err, sizeof(j->err));
	free(j->listing);
	return gde_nft_list(&j->listing, j->err, sizeof(j->err));
}

static int sysctl_job(void *arg)
{
	(void)arg;
	/* seg6local's decapsulated packets pass netfilter only with this (global static key). */
	return write_sysctl("/proc/sys/net/netfilter/nf_hooks_lwtunnel", "1");
}

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
	ol = pass_link(ps, sh->oif);
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
			base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
			v6_addr(&sid, 128, &r.dst);
			r.oif = ol->ifindex;
			r.encap = GNL_ENCAP_SEG6LOCAL;
			r.s6l.action = af == AF_INET ? SEG6_LOCAL_ACTION_END_DX4 : SEG6_LOCAL_ACTION_END_DX6;
			rc |= want_route(p, eres, &r);
			if (d->egress.shard_only)
				continue; /* the bpf trie routes the VPC toward the shard */
			/* default route of the VPC toward its shard SID */
			base_route(k, &r, af, v->table);
			r.oif = upidx;
			if (af == AF_INET)
				r.scope = RT_SCOPE_LINK;
			r.encap = GNL_ENCAP_SEG6;
			r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
			r.seg6.nsegs = 1;
			r.seg6.segs[0] = sid;
			rc |= want_route(p, vres[i], &r);
			/* the encapsulated packet (iif still the pod's veth) goes on to the main table */
			base_route(k, &r, AF_INET6, v->table);
			v6_addr(&sid, 128, &r.dst);
			r.type = RTN_THROW;
			rc |= want_route(p, vres[i], &r);
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
		v6_addr(&sh->addr6, 128, &ad.addr);
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

/* The translator's nftables table: applied (or checked, dry) as one program; removed when no shard. */
static void egress_nft(struct kb *k, struct gdp_result *eres, const struct gde_shard *sh,
		       const struct gde_vpc *v, size_t n, bool dry, int *pending)
{
	struct nft_job j = { 0 };
	char *text = NULL;
	int rc;

	if (!eres) {
		if (dry || k->egress_clean)
			return;
		j.text = gde_render_remove();
		/* a failure is retried on the next pass (egress_clean stays false) */
		if (!in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err))) {
			k->egress_clean = true;
			free(k->egress_text);
			k->egress_text = NULL;
			free(k->egress_listing);
			k->egress_listing = NULL;
		}
		return;
	}
	if (eres->err)
		return;
	rc = gde_render(sh, v, n, &text, j.err, sizeof(j.err));
	if (rc) {
		gdp_result_fail(eres, rc, "egress shard: %s", j.err);
		return;
	}
	/*
	 * Read back: the program last applied is the one desired, and the table
	 * the kernel holds lists exactly as it did right after that apply (every
	 * rule, chain, map element and counter object; counter values aside).
	 */
	rc = in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err));
	if (!rc && k->egress_text && !strcmp(k->egress_text, text) && k->egress_listing &&
	    !strcmp(k->egress_listing, j.listing)) {
		free(j.listing);
		free(text);
		return;
	}
	if (dry) {
		gdp_result_fail(eres, -ENOENT, "%s: nftables table inet %s",
				rc ? "missing" : k->egress_text && !strcmp(k->egress_text, text) &&
						 k->egress_listing ? "rules differ from the program applied (drift)"
								   : "not the desired program",
				GDE_TABLE);
		(*pending)++;
		free(j.listing);
		free(text);
		return;
	}
	free(j.listing);
	j.listing = NULL;
	j.text = NULL;
	rc = in_netns(k->netns, sysctl_job, NULL, j.err, sizeof(j.err));
	if (rc) {
		gdp_result_fail(eres, rc, "egress shard: sysctl net.netfilter.nf_hooks_lwtunnel=1: %s",
				strerror(-rc));
		free(text);
		return;
	}
	j.text = text;
	rc = in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err));
	if (rc) {
		gdp_result_fail(eres, rc, "egress shard: %s", j.err);
		free(text);
		return;
	}
	/* what this apply left, the reference of the next read-back */
	j.text = NULL;
	free(k->egress_listing);
	k->egress_listing = NULL;
	if (!in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err)))
		k->egress_listing = j.listing;
	else
		free(j.listing);
	free(k->egress_text);
	k->egress_text = text;
	k->egress_clean = false;
}

/*
 * Plan: the kernel objects the valid model objects need (desired routes,
 * rules, neighbours, addresses, links), each tied to its object's result;
 * invalid objects fail alone and what they have in the kernel is protected.
 */
static int plan(struct pass *ps)
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
	qsort(ps->vtab, ps->n_vtab, sizeof(*ps->vtab), u32_cmp);

	if (ps->eres && plan_egress(ps))
		return -ENOMEM;

	for (i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *v = &d->vpcs[i];
		struct gnl_route r;
		struct in6_addr sid;

		if (!vok[i])
			continue;
		base_route(k, &r, AF_INET6, RT_TABLE_MAIN);
		gdp_sid(&d->node, GDP_FN_DECAP, v->arg, &sid);
		v6_addr(&sid, 128, &r.dst);
		r.oif = upidx;
		r.encap = GNL_ENCAP_SEG6LOCAL;
		/* Tables + iif rules on every kernel; a VRF mode (End.DT46 vrftable
		 * into a VRF device per VPC) is not implemented (docs/dataplane-kernel.md). */
		r.s6l.action = SEG6_LOCAL_ACTION_END_DT6;
		r.s6l.table = v->table;
		if (want_route(&ps->p, vres[i], &r))
			return -ENOMEM;
		/* The table ends in unreachable, unless the family egresses through the shard. */
		base_route(k, &r, AF_INET6, v->table);
		r.type = RTN_UNREACHABLE;
		if ((!(ps->vegress[i] & GDP_FAM_V6) || d->egress.shard_only) &&
		    want_route(&ps->p, vres[i], &r))
			return -ENOMEM;
		base_route(k, &r, AF_INET, v->table);
		r.type = RTN_UNREACHABLE;
		if ((!(ps->vegress[i] & GDP_FAM_V4) || d->egress.shard_only) &&
		    want_route(&ps->p, vres[i], &r))
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
		const struct gnl_link *hl = pass_link(ps, a->host_ifname);
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
		if (plan_attachment(k, &ps->p, d, a, v, hl, ares[i]))
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
			base_route(k, &r, AF_INET6, d->vpcs[ps->rvpc[i] - 1].table);
			v6_addr(&d->remotes[i].sid, 128, &r.dst);
			r.type = RTN_THROW;
			if ((th.n + 1) * 2 > (th.slot ? th.mask + 1 : 0)) {
				size_t nc = th.slot ? (th.mask + 1) * 2 : 64;
				int32_t *ns = calloc(nc, sizeof(*ns));

				if (!ns) {
					free(th.slot);
					return -ENOMEM;
				}
				for (size_t x = from; x < ps->p.wroutes.n; x++) {
					for (h = (size_t)route_key_hash(&ps->p.wroutes.v[x]) & (nc - 1); ns[h];
					     h = (h + 1) & (nc - 1))
						;
					ns[h] = (int32_t)x + 1;
				}
				free(th.slot);
				th.slot = ns;
				th.mask = nc - 1;
			}
			for (h = (size_t)route_key_hash(&r) & th.mask; th.slot[h]; h = (h + 1) & th.mask)
				if (gnl_route_same_key(&ps->p.wroutes.v[th.slot[h] - 1], &r))
					break;
			if (th.slot[h])
				continue;
			if (want_route(&ps->p, vres[ps->rvpc[i] - 1], &r)) {
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

/* Is t the table of a VPC that passed its checks? */
static bool ok_vpc_table(const struct pass *ps, uint32_t t)
{
	return ps->n_vtab && bsearch(&t, ps->vtab, ps->n_vtab, sizeof(t), u32_cmp);
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
	j = dhash_find(ps, &r, &tmp);
	if (j >= 0 && ps->wst[j] == W_NONE) {
		if (r.protocol != k->proto) {
			struct fgn f = { (size_t)j, r.protocol };

			ps->wst[j] = W_FOREIGN;
			if (VEC_PUSH(ps->foreign, f))
				ps->err = -ENOMEM;
		} else
			ps->wst[j] = gnl_route_equal(&r, des_route(ps, (size_t)j, &tmp)) ? W_EQUAL : W_DIFF;
		return 0;
	}
	if (j >= 0 && (ps->wst[j] == W_PROT || ps->wst[j] == W_SKIP))
		return 0;
	/* Leftovers: ours (by protocol), nobody's desired key (or a second route with one), not protected. */
	if (r.protocol != k->proto || u32_in(ps->p.prot_tables.v, ps->p.prot_tables.n, r.table) ||
	    (r.oif && u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, r.oif)))
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
 * execute() then writes straight from ps->wst and ps->left. The rest fills
 * ps->p.ops. Returns -EAGAIN when the dump found a VPC table used by
 * someone else that the plan took for ours: planned again without it.
 */
static int diff(struct pass *ps)
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
	if (rhash_init(&ps->wh, ps->n_des))
		goto nomem;
	/* (the keys invalid remotes protect last: a desired route is never their duplicate) */
	for (size_t round = 0; round < 2; round++)
	for (i = 0; i < ps->n_des; i++) {
		long dup;

		if ((ps->wst[i] == W_PROT) != (round == 1))
			continue;
		if (i >= ps->n_wr && !ps->rvpc[i - ps->n_wr])
			continue; /* a remote without a VPC: no route, nothing to protect */
		dup = dhash_insert(ps, i);
		if (dup >= 0 && ps->wst[i] != W_PROT) {
			char t[200];
			struct gnl_route tmp;

			gdp_result_fail(des_res(ps, i), -EEXIST, "route %s: duplicate of another object's route",
					gnl_route_str(des_route(ps, i, &tmp), t, sizeof(t)));
			ps->wst[i] = W_DUP;
		}
	}
	/* Its object already failed (e.g. an invalid remote, a refused VPC): leave it alone. */
	for (i = 0; i < ps->n_des; i++)
		if (ps->wst[i] == W_NONE && des_failed(ps, i))
			ps->wst[i] = W_SKIP;
	rc = dump_routes(ps);
	if (rc) {
		dump_failed(k, res, ps->node_res, "dump kernel routes", rc);
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
			gdp_result_fail(des_res(ps, i), -EEXIST, "add route %s: exists and is not galactic's (protocol %u)",
					gnl_route_str(des_route(ps, i, &tmp), t, sizeof(t)), proto);
			ps->wst[i] = W_SKIP;
			break;
		}
		case W_NONE:
		case W_DIFF:
			/* its object failed on another of its routes: none of it is written */
			if (des_failed(ps, i))
				ps->wst[i] = W_SKIP;
			break;
		}
	}

	ruclaimed = calloc(ps->s.rules.n + 1, 1);
	nclaimed = calloc(ps->s.neighs.n + 1, 1);
	aclaimed = calloc(ps->s.addrs.n + 1, 1);
	if (!ruclaimed || !nclaimed || !aclaimed || kh_init(&hru, ps->s.rules.n) ||
	    kh_init(&hn, ps->s.neighs.n) || kh_init(&ha, ps->s.addrs.n) || kh_init(&hlk, ps->s.links.n))
		goto nomem;
	for (i = 0; i < ps->s.rules.n; i++)
		kh_put(&hru, rule_hash(&ps->s.rules.v[i]), i);
	for (i = 0; i < ps->s.neighs.n; i++)
		kh_put(&hn, neigh_hash(&ps->s.neighs.v[i]), i);
	for (i = 0; i < ps->s.addrs.n; i++)
		kh_put(&ha, ifaddr_hash(&ps->s.addrs.v[i]), i);
	for (i = 0; i < ps->s.links.n; i++)
		kh_put(&hlk, link_hash(ps->s.links.v[i].ifindex), i);

	for (i = 0; i < ps->p.wants.n; i++) {
		struct want *w = &ps->p.wants.v[i];
		bool found = false;

		switch (w->k) {
		case O_RULE:
			KH_FOREACH(&hru, rule_hash(&w->o.ru), j)
				if (!found && ps->s.rules.v[j].protocol == k->proto && gnl_rule_equal(&ps->s.rules.v[j], &w->o.ru))
					found = true, ruclaimed[j] = 1;
			if (!found && add_op(&ps->p, V_ADD, O_RULE, w->res, &w->o.ru))
				goto nomem;
			break;
		case O_NEIGH:
			KH_FOREACH(&hn, neigh_hash(&w->o.n), j)
				if (!found && neigh_key_eq(&ps->s.neighs.v[j], &w->o.n)) {
					const struct gnl_neigh *kn = &ps->s.neighs.v[j];

					found = true;
					nclaimed[j] = 1;
					if (kn->protocol != k->proto || kn->state != NUD_PERMANENT ||
					    !kn->has_lladdr || memcmp(kn->lladdr, w->o.n.lladdr, 6)) {
						if (add_op(&ps->p, V_REPLACE, O_NEIGH, w->res, &w->o.n))
							goto nomem;
					} else {
						res->unchanged++;
					}
				}
			if (!found && add_op(&ps->p, V_ADD, O_NEIGH, w->res, &w->o.n))
				goto nomem;
			break;
		case O_ADDR:
			KH_FOREACH(&ha, ifaddr_hash(&w->o.a), j)
				if (!found && addr_key_eq(&ps->s.addrs.v[j], &w->o.a))
					found = true, aclaimed[j] = 1;
			if (!found && add_op(&ps->p, V_ADD, O_ADDR, w->res, &w->o.a))
				goto nomem;
			break;
		case O_LINK:
			KH_FOREACH(&hlk, link_hash(w->o.l.ifindex), j)
				if (ps->s.links.v[j].ifindex == w->o.l.ifindex) {
					const struct gnl_link *kl = &ps->s.links.v[j];

					if (!(kl->flags & IFF_UP) || (w->o.l.mtu && kl->mtu != w->o.l.mtu)) {
						if (add_op(&ps->p, V_SET, O_LINK, w->res, &w->o.l))
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
		prot = prot || u32_in(ps->p.prot_tables.v, ps->p.prot_tables.n, r->table);
		if (!prot && add_op(&ps->p, V_DEL, O_RULE, NULL, r))
			goto nomem;
	}
	for (i = 0; i < ps->s.neighs.n; i++)
		if (!nclaimed[i] && ps->s.neighs.v[i].protocol == k->proto &&
		    !u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, ps->s.neighs.v[i].ifindex) &&
		    add_op(&ps->p, V_DEL, O_NEIGH, NULL, &ps->s.neighs.v[i]))
			goto nomem;
	for (i = 0; i < ps->s.addrs.n; i++)
		if (!aclaimed[i] && ps->s.addrs.v[i].protocol == k->proto &&
		    !u32_in(ps->p.prot_ifindex.v, ps->p.prot_ifindex.n, ps->s.addrs.v[i].ifindex) &&
		    add_op(&ps->p, V_DEL, O_ADDR, NULL, &ps->s.addrs.v[i]))
			goto nomem;
	goto done;
nomem:
	rc = -ENOMEM;
done:
	free(ruclaimed);
	free(nclaimed);
	free(aclaimed);
	kh_free(&hru);
	kh_free(&hn);
	kh_free(&ha);
	kh_free(&hlk);
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
static int steer_diff(struct pass *ps, bool dry)
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
	if (!add || !del || !claimed || kh_init(&hg, ngot))
		goto nomem;
	for (i = 0; i < ngot; i++)
		kh_put(&hg, name_hash(got[i].ifname), i);
	for (i = 0; i < p->steer.n; i++) {
		struct steer_want *w = &p->steer.v[i];
		bool found = false, same = false;

		if (w->res && w->res->err)
			continue; /* its attachment already failed */
		KH_FOREACH(&hg, name_hash(w->pod.ifname), j)
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
	kh_free(&hg);
	free(got);
	free(add);
	free(del);
	free(claimed);
	return rc;
}

/* What a full apply checked, so a delta apply can trust it until the next one. */
static int remember_verified(struct kb *k, const struct gdp_state *d, const bool *vok, uint32_t upidx,
			     const char *upname)
{
	uint32_t *t = calloc(d->n_vpcs + 1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_vpcs; i++)
		if (vok[i])
			t[n++] = d->vpcs[i].table;
	free(k->ok_tables);
	k->ok_tables = t;
	k->n_ok_tables = n;
	k->upidx = upidx;
	snprintf(k->upname, sizeof(k->upname), "%s", upname);
	k->full_ok = true;
	return 0;
}

/* A dry pass's difference on an object: not programmed, with what differs. */
static void dry_mark(struct pass *ps, const struct op *o, struct gdp_result *r)
{
	r->programmed = false;
	r->err = r->err ? r->err : -ENOENT;
	if (!r->msg[0]) {
		char dsc[256];

		describe(ps, o, dsc, sizeof(dsc));
		snprintf(r->msg, sizeof(r->msg), "missing or different: %s", dsc);
	}
}

static void pass_free(struct pass *ps)
{
	free(ps->vres);
	free(ps->ares);
	free(ps->vok);
	free(ps->vegress);
	free(ps->evpcs);
	free(ps->vtab);
	free(ps->rvpc);
	free(ps->wst);
	free(ps->wh.slot);
	free(ps->left.v);
	free(ps->foreign.v);
	if (ps->rres)
		for (size_t i = 0; i < ps->d->n_remotes; i++)
			free(ps->rres[i]);
	free(ps->rres);
	kh_free(&ps->names);
	gdp_locals_free(&ps->locals);
	plan_free(&ps->p);
	snap_free(&ps->s);
}

/*
 * One plan of a pass: validate, dump, plan, diff, then execute (or, dry,
 * only mark what differs). -EAGAIN (nothing written): the route dump found
 * a VPC table used by someone else; busy has it now, plan again.
 */
static int reconcile_once(struct kb *k, const struct gdp_state *d, struct gdp_results *res, bool dry,
			  busy_vec *busy)
{
	struct pass ps = { 0 };
	struct gdp_result *node_res;
	const struct gnl_link *up;
	char err[320];
	size_t i, nfix;
	int rc = 0, pending = 0, steer_pending = 0;

	gdp_results_reset(res);
	node_res = gdp_results_get(res, GDP_OBJ_NODE, "", "");
	if (!node_res)
		return -ENOMEM;
	if (gdp_validate_node(&d->node, err, sizeof(err))) {
		gdp_result_fail(node_res, -EINVAL, "%s", err);
		return -EINVAL;
	}
	ps.k = k, ps.d = d, ps.res = res, ps.busy = busy;
	/* Results are looked up by index from here on: n can be large. */
	ps.vres = calloc(d->n_vpcs + 1, sizeof(*ps.vres));
	ps.ares = calloc(d->n_atts + 1, sizeof(*ps.ares));
	ps.vok = calloc(d->n_vpcs + 1, sizeof(*ps.vok));
	ps.vegress = calloc(d->n_vpcs + 1, sizeof(*ps.vegress));
	ps.evpcs = calloc(d->n_vpcs + 1, sizeof(*ps.evpcs));
	if (!ps.vres || !ps.ares || !ps.vok || !ps.vegress || !ps.evpcs) {
		rc = -ENOMEM;
		goto out;
	}
	/* Room for every result but the remotes' first: the plan points into v. */
	nfix = 2 + d->n_vpcs + d->n_atts;
	if (res->cap < nfix) {
		struct gdp_result *nv = realloc(res->v, nfix * sizeof(*nv));

		if (!nv) {
			rc = -ENOMEM;
			goto out;
		}
		res->v = nv;
		res->cap = nfix;
		node_res = &res->v[0];
	}
	ps.node_res = node_res;
	for (i = 0; i < d->n_vpcs; i++) {
		ps.vres[i] = &res->v[res->n++];
		memset(ps.vres[i], 0, sizeof(**ps.vres));
		ps.vres[i]->kind = GDP_OBJ_VPC;
		snprintf(ps.vres[i]->vpc, sizeof(ps.vres[i]->vpc), "%s", d->vpcs[i].id);
	}
	for (i = 0; i < d->n_atts; i++) {
		ps.ares[i] = &res->v[res->n++];
		memset(ps.ares[i], 0, sizeof(**ps.ares));
		ps.ares[i]->kind = GDP_OBJ_ATTACHMENT;
		snprintf(ps.ares[i]->vpc, sizeof(ps.ares[i]->vpc), "%s", d->atts[i].vpc);
		snprintf(ps.ares[i]->key, sizeof(ps.ares[i]->key), "%s", d->atts[i].id);
	}
	if (d->egress.have) {
		ps.eres = &res->v[res->n++];
		memset(ps.eres, 0, sizeof(*ps.eres));
		ps.eres->kind = GDP_OBJ_EGRESS;
	}

	rc = snapshot(k, &ps.s);
	if (rc) {
		dump_failed(k, res, node_res, "dump kernel state", rc);
		goto out;
	}
	if (kh_init(&ps.names, ps.s.links.n))
		goto nomem;
	for (i = 0; i < ps.s.links.n; i++)
		kh_put(&ps.names, name_hash(ps.s.links.v[i].name), i);
	up = pass_link(&ps, d->node.uplink[0] ? d->node.uplink : "lo");
	if (!up) {
		rc = -ENODEV;
		gdp_result_fail(node_res, rc, "node: uplink %s not found", d->node.uplink);
		goto out;
	}
	ps.upidx = up->ifindex;
	if (plan(&ps))
		goto nomem;
	rc = diff(&ps);
	if (rc == -EAGAIN && ps.busy_new)
		goto out; /* planned again by the caller */
	if (rc == -ENOMEM)
		goto nomem;
	if (rc)
		goto out;
	steer_pending = steer_diff(&ps, dry);
	if (steer_pending < 0)
		goto nomem;
	if (!dry && remember_verified(k, d, ps.vok, ps.upidx, up->name))
		goto nomem;

	if (dry) {
		/* Objects that already failed (invalid, refused, host interface
		 * missing) are differences too: a dry run must not say "in sync"
		 * while one of them cannot be programmed. */
		for (i = 0; i < res->n; i++)
			if (res->v[i].err)
				res->failed++;
		res->failed += ps.n_rres; /* the remotes that failed so far */
		for (i = 0; i < ps.p.ops.n; i++)
			if (ps.p.ops.v[i].res)
				dry_mark(&ps, &ps.p.ops.v[i], ps.p.ops.v[i].res);
		pending = (int)ps.p.ops.n + steer_pending;
		for (i = 0; i < ps.n_des; i++)
			if (ps.wst[i] == W_NONE || ps.wst[i] == W_DIFF) {
				struct op o = { .verb = ps.wst[i] == W_NONE ? V_ADD : V_REPLACE, .k = O_ROUTE,
						.src = S_DESIRED, .w = i };

				dry_mark(&ps, &o, des_res(&ps, i));
				pending++;
			}
		pending += (int)ps.left.n;
	} else {
		rc = execute(k, &ps.p, &ps, res, node_res);
	}
	if (rc != -ENOMEM)
		egress_nft(k, ps.eres, &ps.shard, ps.evpcs, ps.n_evpcs, dry, &pending);
	for (i = 0; i < res->n; i++) {
		if (!res->v[i].err)
			res->v[i].programmed = true;
		else if (!rc && !dry)
			rc = res->v[i].err;
	}
	/* The remotes: an entry for each one that failed, a count of the rest. */
	if (ps.n_rres) {
		struct gdp_result *nv = realloc(res->v, (res->n + ps.n_rres) * sizeof(*nv));

		if (!nv)
			goto nomem;
		res->v = nv;
		res->cap = res->n + ps.n_rres;
		node_res = &res->v[0];
		for (i = 0; i < d->n_remotes; i++)
			if (ps.rres[i]) {
				ps.rres[i]->programmed = false;
				if (!ps.rres[i]->err)
					ps.rres[i]->err = -EIO; /* (a result is made only to fail) */
				if (!rc && !dry)
					rc = ps.rres[i]->err;
				res->v[res->n++] = *ps.rres[i];
			}
	}
	res->remotes_ok = d->n_remotes - ps.n_rres;
	if (dry && !rc)
		rc = pending + (int)res->failed;
	goto out;
nomem:
	rc = -ENOMEM;
	gdp_result_fail(res->v ? &res->v[0] : node_res, rc, "reconcile: out of memory");
out:
	pass_free(&ps);
	return rc;
}

/*
 * A full reconcile. The VPC tables someone else uses are found while the
 * routes stream past (nothing of the dump is kept); when one was taken for
 * ours, the pass is planned again without it before anything is written.
 */
static int reconcile(struct kb *k, const struct gdp_state *d, struct gdp_results *res, bool dry)
{
	busy_vec busy = { 0 };
	int rc;

	for (size_t tries = 0;; tries++) {
		rc = reconcile_once(k, d, res, dry, &busy);
		if (rc != -EAGAIN || tries > d->n_vpcs || !busy.n || res->v[0].err)
			break;
	}
	free(busy.v);
	return rc;
}

/* ------------------------------------------------------------ backend ops */

static int write_sysctl(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Node-wide switches the datapath needs, written inside the backend's netns. */
static int node_sysctls(const char *netns, char *err, size_t errlen)
{
	static const char *const knobs[] = {
		"/proc/sys/net/ipv6/conf/all/forwarding",
		"/proc/sys/net/ipv4/ip_forward",
		"/proc/sys/net/ipv6/conf/all/seg6_enabled",
		"/proc/sys/net/ipv6/conf/default/seg6_enabled",
	};
	int orig = -1, ns = -1, rc = 0;
	size_t i;

	if (netns) {
		char path[512];

		snprintf(path, sizeof(path), strchr(netns, '/') ? "%s" : "/run/netns/%s", netns);
		orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		ns = open(path, O_RDONLY | O_CLOEXEC);
		if (orig < 0 || ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
			rc = -errno;
			snprintf(err, errlen, "enter netns %s: %s", netns, strerror(errno));
			goto out;
		}
	}
	/* /proc/sys/net follows the opener's namespace. */
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]) && !rc; i++) {
		rc = write_sysctl(knobs[i], "1");
		if (rc)
			snprintf(err, errlen, "sysctl %s=1: %s", knobs[i], strerror(-rc));
	}
	if (netns && setns(orig, CLONE_NEWNET) < 0 && !rc) {
		rc = -errno;
		snprintf(err, errlen, "leave netns %s: %s", netns, strerror(errno));
	}
out:
	if (orig >= 0)
		close(orig);
	if (ns >= 0)
		close(ns);
	return rc;
}

static void probe_caps(struct kb *k)
{
	char name[IFNAMSIZ], ext[128];
	int rc;

	memset(&k->caps, 0, sizeof(k->caps));
	snprintf(name, sizeof(name), "gvrfp%d", (int)(getpid() % 100000));
	rc = gnl_vrf_add(k->nl, name, k->tmax, ext, sizeof(ext));
	if (!rc) {
		k->caps.vrf = true;
		gnl_link_del(k->nl, name, NULL, 0);
	}
	k->caps.seg6 = k->caps.seg6local = access("/proc/sys/net/ipv6/conf/all/seg6_enabled", F_OK) == 0;
	k->caps.dt46 = k->caps.vrf;
	snprintf(k->caps.detail, sizeof(k->caps.detail), "vrf: %s; seg6: %s; End.DT4/DT46: %s",
		 k->caps.vrf ? "yes" : rc == -EOPNOTSUPP ? "no (Unknown device type)" : strerror(-rc),
		 k->caps.seg6 ? "yes" : "no", k->caps.dt46 ? "yes" : "no (needs VRF)");
}

/* The steering context, opened inside the backend's netns (its socket stays bound there). */
static int steer_open(void *arg)
{
	struct kb *k = arg;
	char err[128];

	return gds_nft_open(&k->nft, err, sizeof(err));
}

static int kb_open(struct gdp_backend **out, const struct gdp_backend_opts *o, char *err, size_t errlen)
{
	struct kb *k = calloc(1, sizeof(*k));
	int rc;

	*out = NULL;
	if (!k) {
		snprintf(err, errlen, "kernel backend: out of memory");
		return -ENOMEM;
	}
	k->base.ops = &gdp_kernel_backend;
	k->proto = o && o->rtproto ? o->rtproto : GDP_RTPROT_DEFAULT;
	k->tmin = o && o->table_min ? o->table_min : GDP_TABLE_MIN_DEFAULT;
	k->tmax = o && o->table_max ? o->table_max : GDP_TABLE_MAX_DEFAULT;
	k->rule_prio = o && o->rule_prio ? o->rule_prio : GDP_RULE_PRIO_DEFAULT;
	k->batch = o ? o->batch : 0;
	k->max_retries = o ? o->max_retries : 0;
	if (o && o->netns && !(k->netns = strdup(o->netns))) {
		free(k);
		return -ENOMEM;
	}
	if (k->tmin > k->tmax || k->proto <= RTPROT_STATIC) {
		snprintf(err, errlen, "kernel backend: invalid table range %u-%u or protocol %u", k->tmin,
			 k->tmax, k->proto);
		rc = -EINVAL;
		goto fail;
	}
	rc = gnl_open(&k->nl, k->netns, err, errlen);
	if (rc)
		goto fail;
	rc = node_sysctls(k->netns, err, errlen);
	if (rc)
		goto fail;
	rc = in_netns(k->netns, steer_open, k, err, errlen);
	if (rc) {
		snprintf(err, errlen, "kernel backend: pod steering needs libnftables in the node's namespace");
		goto fail;
	}
	probe_caps(k);
	*out = &k->base;
	return 0;
fail:
	gnl_close(k->nl);
	gds_nft_close(k->nft);
	free(k->egress_text);
	free(k->egress_listing);
	free(k->netns);
	free(k);
	return rc;
}

static int kb_caps(struct gdp_backend *b, struct gdp_caps *caps)
{
	*caps = ((struct kb *)b)->caps;
	return 0;
}

/*
 * The uplink gets its clsact qdisc at the first apply, whatever the backend:
 * a later switch to the bpf backend then attaches to it without creating a
 * qdisc under live traffic. Best effort (the kernel datapath does not use it).
 */
static void uplink_clsact(struct kb *k, const char *uplink)
{
	struct gnl_link l;
	char ext[256];

	if (!uplink[0] || !strcmp(k->clsact_on, uplink) || gnl_link_get(k->nl, uplink, &l))
		return;
	if (gnl_clsact_add(k->nl, l.ifindex, ext, sizeof(ext)) == 0)
		snprintf(k->clsact_on, sizeof(k->clsact_on), "%s", uplink);
}

/*
 * Programmed means confirmed by the kernel in this pass: each kernel object
 * of the model object was either found equal in the dump before the diff,
 * or written and acknowledged by the kernel (NLM_F_ACK on every request,
 * each answer matched to its request by sequence; ENOMEM retried). There
 * is no second dump after the writes (docs/dataplane-kernel.md, "What
 * proves the kernel holds the routes"): an object changed by someone else
 * afterwards is a netlink notification the agent acts on (drift), and the
 * verify ticks read the whole datapath back (observe).
 */
static int kb_apply(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	uplink_clsact((struct kb *)b, d->node.uplink);
	((struct kb *)b)->n_full++;
	return reconcile((struct kb *)b, d, res, false);
}

static int kb_observe(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	return reconcile((struct kb *)b, d, res, true);
}

static void kb_close(struct gdp_backend *b)
{
	struct kb *k = (struct kb *)b;

	if (!k)
		return;
	gnl_close(k->nl);
	gds_nft_close(k->nft);
	free(k->egress_text);
	free(k->egress_listing);
	free(k->netns);
	free(k->ok_tables);
	free(k);
}

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
	return u32_in(k->ok_tables, k->n_ok_tables, t);
}

/* Ops for every planned object of p (routes, then the rest): verb by kind. */
static int delta_ops(struct kb *k, struct plan *out, struct plan *p, bool del)
{
	for (size_t i = 0; i < p->wroutes.n; i++) {
		const struct gnl_route *r = &p->wroutes.v[i];
		enum verb v = del ? V_DEL : r->table != RT_TABLE_MAIN && table_ok(k, r->table) ? V_REPLACE : V_ADD;

		if (add_op(out, v, O_ROUTE, p->wroute_res.v[i], r))
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
		if (add_op(out, v, w->k, w->res, &w->o))
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

	base_route(k, &r, AF_INET6, table);
	v6_addr(sid, 128, &r.dst);
	r.type = RTN_THROW;
	for (size_t i = 0; i < p->wroutes.n; i++)
		if (gnl_route_same_key(&p->wroutes.v[i], &r))
			return 0;
	return want_route(p, NULL, &r);
}

static int kb_apply_delta(struct gdp_backend *b, const struct gdp_state *d, const struct gdp_delta *dl,
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
		if (plan_attachment(k, &padd, d, a, v, &hl, ar))
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
		if (plan_attachment(k, &pdel, d, a, v, &hl, NULL))
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
		base_route(k, &r, rm->prefix.family, v->table);
		to_gaddr(&rm->prefix, &r.dst);
		r.oif = k->upidx;
		if (r.family == AF_INET)
			r.scope = RT_SCOPE_LINK;
		r.encap = GNL_ENCAP_SEG6;
		r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
		r.seg6.nsegs = 1;
		r.seg6.segs[0] = rm->sid;
		if (want_route(&padd, rr, &r) || delta_throw(k, &padd, v->table, &rm->sid))
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
			base_route(k, &r, rm->prefix.family, v->table);
			to_gaddr(&rm->prefix, &r.dst);
			if (want_route(&pdel, NULL, &r))
				goto thfail;
			base_route(k, &r, AF_INET6, v->table);
			v6_addr(&rm->sid, 128, &r.dst);
			r.type = RTN_THROW;
			if (VEC_PUSH(th, r))
				goto thfail;
		}
		if (rhash_init(&hh, th.n) || !(used = calloc(th.n + 1, 1)))
			goto thfail;
		for (i = 0; i < th.n; i++)
			if (rhash_insert(&hh, th.v, i) >= 0)
				used[i] = true; /* a repeat: counted once */
		for (i = 0; i < d->n_remotes; i++) {
			const struct gdp_vpc *v = gdp_state_find_vpc(d, gdp_remote_vpc(&d->remotes[i]));
			struct gnl_route r;
			long x;

			if (!v)
				continue;
			base_route(k, &r, AF_INET6, v->table);
			v6_addr(&d->remotes[i].sid, 128, &r.dst);
			if ((x = rhash_find(&hh, th.v, &r)) >= 0)
				used[x] = true;
		}
		for (i = 0; i < th.n; i++)
			if (!used[i] && want_route(&pdel, NULL, &th.v[i]))
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
		int e = execute(k, &ops, NULL, res, node_res);

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
	plan_free(&padd);
	plan_free(&pdel);
	plan_free(&ops);
	return rc;
}

void gdp_kernel_counters(const struct gdp_backend *b, struct gdp_kernel_counters *c)
{
	const struct kb *k = (const struct kb *)b;

	c->full_passes = k->n_full;
	c->delta_passes = k->n_delta;
	c->dumps = k->n_dumps;
	c->dumps_interrupted = k->n_dump_intr;
	c->delta_ops = k->n_delta_ops;
}

/* Adoption at start (backend.h): what the previous agent's last pass
 * verified stands for a full apply of this one until the next: the uplink
 * looked up again, the VPC tables it programmed (res) taken as checked. */
static int kb_adopt(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res)
{
	struct kb *k = (struct kb *)b;
	const char *up = d->node.uplink[0] ? d->node.uplink : "lo";
	int idx = gnl_ifindex(k->nl, up), rc;
	bool *vok;

	if (idx <= 0)
		return idx < 0 ? idx : -ENODEV;
	vok = calloc(d->n_vpcs + 1, sizeof(*vok));
	if (!vok)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_vpcs; i++) {
		const struct gdp_result *v = gdp_results_find(res, GDP_OBJ_VPC, d->vpcs[i].id, "");

		vok[i] = v && v->programmed && !v->err;
	}
	rc = remember_verified(k, d, vok, (uint32_t)idx, up);
	free(vok);
	return rc;
}

/*
 * An observer (backend.h): the settings and what the last passes left (the
 * egress program and its listing, the verified tables) copied, a netlink
 * socket and a libnftables context of its own in the node's namespace.
 */
static int kb_observer_open(struct gdp_backend *b, struct gdp_backend **out)
{
	struct kb *k = (struct kb *)b, *o = malloc(sizeof(*o));
	char err[256];
	int rc = -ENOMEM;

	*out = NULL;
	if (!o)
		return -ENOMEM;
	*o = *k;
	o->nl = NULL;
	o->nft = NULL;
	o->netns = o->egress_text = o->egress_listing = NULL;
	o->ok_tables = NULL;
	o->n_full = o->n_delta = o->n_dumps = o->n_delta_ops = o->n_dump_intr = 0;
	if ((k->netns && !(o->netns = strdup(k->netns))) ||
	    (k->egress_text && !(o->egress_text = strdup(k->egress_text))) ||
	    (k->egress_listing && !(o->egress_listing = strdup(k->egress_listing))) ||
	    (k->n_ok_tables && !(o->ok_tables = malloc(k->n_ok_tables * sizeof(*o->ok_tables)))))
		goto fail;
	if (k->n_ok_tables)
		memcpy(o->ok_tables, k->ok_tables, k->n_ok_tables * sizeof(*o->ok_tables));
	if ((rc = gnl_open(&o->nl, o->netns, err, sizeof(err))) || (rc = in_netns(o->netns, steer_open, o, err, sizeof(err))))
		goto fail;
	*out = &o->base;
	return 0;
fail:
	kb_close(&o->base);
	return rc;
}

static void kb_observer_close(struct gdp_backend *b, struct gdp_backend *observer)
{
	struct kb *k = (struct kb *)b, *o = (struct kb *)observer;

	if (!o)
		return;
	k->n_dumps += o->n_dumps;
	k->n_dump_intr += o->n_dump_intr;
	kb_close(observer);
}

/* A string copy kept equal to src (NULL: none). 0 or -ENOMEM. */
static int same_str(char **dst, const char *src)
{
	char *c;

	if ((!*dst && !src) || (*dst && src && !strcmp(*dst, src)))
		return 0;
	c = src ? strdup(src) : NULL;
	if (src && !c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/*
 * An observer kept open (backend.h): the settings and what the applies left
 * copied again, its socket, libnftables context and copies kept (a read-back
 * every few seconds no longer opens a netlink socket and an nftables
 * context in the node's namespace).
 */
static int kb_observer_sync(struct gdp_backend *b, struct gdp_backend *observer)
{
	struct kb *k = (struct kb *)b, *o = (struct kb *)observer, keep = *o;

	k->n_dumps += o->n_dumps;
	k->n_dump_intr += o->n_dump_intr;
	*o = *k;
	o->nl = keep.nl;
	o->nft = keep.nft;
	o->netns = keep.netns;
	o->egress_text = keep.egress_text;
	o->egress_listing = keep.egress_listing;
	o->ok_tables = keep.ok_tables;
	o->n_ok_tables = keep.n_ok_tables;
	o->n_full = o->n_delta = o->n_dumps = o->n_delta_ops = o->n_dump_intr = 0;
	if (same_str(&o->egress_text, k->egress_text) || same_str(&o->egress_listing, k->egress_listing))
		return -ENOMEM;
	if (o->n_ok_tables != k->n_ok_tables ||
	    (k->n_ok_tables && memcmp(o->ok_tables, k->ok_tables, k->n_ok_tables * sizeof(*k->ok_tables)))) {
		uint32_t *t = k->n_ok_tables ? malloc(k->n_ok_tables * sizeof(*t)) : NULL;

		if (k->n_ok_tables && !t)
			return -ENOMEM;
		if (k->n_ok_tables)
			memcpy(t, k->ok_tables, k->n_ok_tables * sizeof(*t));
		free(o->ok_tables);
		o->ok_tables = t;
		o->n_ok_tables = k->n_ok_tables;
	}
	return 0;
}

const struct gdp_backend_ops gdp_kernel_backend = {
	.name = "kernel",
	.open = kb_open,
	.caps = kb_caps,
	.apply = kb_apply,
	.observe = kb_observe,
	.close = kb_close,
	.apply_delta = kb_apply_delta,
	.adopt = kb_adopt,
	.observer_open = kb_observer_open,
	.observer_close = kb_observer_close,
	.observer_sync = kb_observer_sync,
};
