/* The addresses of a guest that addresses itself (learn.h). */
#include "agent/cni/learn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/grow.h"

#define COMP "learn"
#define REFUSED_MEMORY 64 /* (interface, address) pairs logged once */

struct glearn {
	struct glearn_opts o;
	struct gnl_sock *s;
	struct seen {
		char ifname[GDP_IFNAME_MAX + 1];
		struct gdp_prefix p;
	} said[REFUSED_MEMORY];
	size_t n_said, next_said;
};

/* Addresses no guest is routed by: every guest has them (fe80::), or they
 * are not one host's (multicast, loopback, unspecified, IPv4-mapped). */
static bool not_a_guest_address(const struct gdp_prefix *p)
{
	const uint8_t *b = p->addr.raw;

	if (p->family == AF_INET)
		return b[0] == 0 || b[0] == 127 || (b[0] == 169 && b[1] == 254) || b[0] >= 224;
	if (b[0] == 0xff || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80))
		return true;
	for (int i = 0; i < 10; i++)
		if (b[i])
			return false;
	/* ::, ::1, ::ffff:a.b.c.d and the old IPv4-compatible ::a.b.c.d */
	return true;
}

static bool overlaps(const struct gdp_prefix *x, const struct gdp_prefix *y)
{
	return x->family == y->family && (gdp_prefix_contains(x, y) || gdp_prefix_contains(y, x));
}

enum glearn_verdict glearn_offer_locked(struct record *r, struct rec_att *a, const struct gdp_prefix *p,
					unsigned long *gen, char *why, size_t whylen)
{
	const struct rec_vpc *v;
	char pb[64];
	bool inside;

	*gen = 0;
	if (!a->active || !a->m.guest_addressed || (p->family != AF_INET && p->family != AF_INET6) ||
	    p->len != (p->family == AF_INET ? 32 : 128) || not_a_guest_address(p))
		return GLEARN_NOTHING;
	for (size_t i = 0; i < a->m.n_addrs; i++)
		if (overlaps(&a->m.addrs[i], p))
			return GLEARN_NOTHING;
	gdp_prefix_str(p, pb, sizeof(pb));
	v = record_find_vpc(r, a->m.vpc);
	inside = !v || !v->m.n_prefixes;
	for (size_t k = 0; v && k < v->m.n_prefixes && !inside; k++)
		inside = gdp_prefix_contains(&v->m.prefixes[k], p);
	if (!inside) {
		snprintf(why, whylen, "%s is outside the address ranges of vpc %s", pb, a->m.vpc);
		return GLEARN_REFUSED;
	}
	for (size_t i = 0; i < record_n_atts(r); i++) {
		const struct rec_att *o = record_att(r, i);

		if (o == a || strcmp(o->m.vpc, a->m.vpc))
			continue;
		for (size_t k = 0; k < o->m.n_addrs; k++)
			if (overlaps(&o->m.addrs[k], p)) {
				snprintf(why, whylen, "%s is already used by attachment %s of vpc %s on this node", pb,
					 o->m.id, a->m.vpc);
				return GLEARN_REFUSED;
			}
	}
	if (record_remote_overlaps(r, a->m.vpc, p)) {
		snprintf(why, whylen, "%s is already used by a pod of vpc %s on another node", pb, a->m.vpc);
		return GLEARN_REFUSED;
	}
	if (a->m.n_addrs >= GDP_ADDRS_MAX) {
		snprintf(why, whylen, "%s: the attachment already has %d addresses", pb, GDP_ADDRS_MAX);
		return GLEARN_REFUSED;
	}
	*gen = record_add_addr(r, a, p);
	return GLEARN_NEW;
}

int glearn_new(struct glearn **out, const struct glearn_opts *o, char *err, size_t errlen)
{
	struct glearn *l = calloc(1, sizeof(*l));
	int rc;

	*out = NULL;
	if (!l) {
		snprintf(err, errlen, "guest address learner: out of memory");
		return -ENOMEM;
	}
	l->o = *o;
	if ((rc = gnl_open(&l->s, o->netns, err, errlen))) {
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

void glearn_free(struct glearn *l)
{
	if (!l)
		return;
	gnl_close(l->s);
	free(l);
}

/* Refusals are logged once per interface and address (the same entry is
 * notified on every state change). */
static bool said_before(struct glearn *l, const char *ifname, const struct gdp_prefix *p)
{
	for (size_t i = 0; i < l->n_said; i++)
		if (!strcmp(l->said[i].ifname, ifname) && gdp_prefix_equal(&l->said[i].p, p))
			return true;
	snprintf(l->said[l->next_said].ifname, sizeof(l->said[0].ifname), "%s", ifname);
	l->said[l->next_said].p = *p;
	l->next_said = (l->next_said + 1) % REFUSED_MEMORY;
	if (l->n_said < REFUSED_MEMORY)
		l->n_said++;
	return false;
}

bool glearn_neigh(struct glearn *l, const struct gnl_neigh *n)
{
	static const uint8_t zero[6];
	struct gdp_prefix p;
	struct gnl_link hl;
	char host[GDP_IFNAME_MAX + 1] = "", vpc[GDP_ID_MAX + 1] = "", att[GDP_ID_MAX + 1] = "";
	char why[256] = "";
	enum glearn_verdict vd = GLEARN_NOTHING;
	unsigned long gen = 0;
	struct rec_att *a = NULL;
	const struct rec_att *x;

	if (!l || (n->family != AF_INET && n->family != AF_INET6) || n->dst.family != n->family ||
	    !n->has_lladdr || !memcmp(n->lladdr, zero, 6) || n->protocol == l->o.proto ||
	    (n->state & (NUD_INCOMPLETE | NUD_FAILED | NUD_NOARP)))
		return false;
	memset(&p, 0, sizeof(p));
	p.family = n->family;
	p.len = n->family == AF_INET ? 32 : 128;
	memcpy(p.addr.raw, n->dst.a.raw, gnl_addr_bytes(n->family));
	if (not_a_guest_address(&p))
		return false;
	/* The guest's MAC first (no system call for the uplink's neighbours),
	 * then its host end's index. */
	record_lock(l->o.rec);
	if ((x = record_find_guest(l->o.rec, n->lladdr)))
		snprintf(host, sizeof(host), "%s", x->m.host_ifname);
	record_unlock(l->o.rec);
	if (!host[0] || gnl_link_get(l->s, host, &hl) || hl.ifindex != n->ifindex)
		return false;
	record_lock(l->o.rec);
	a = record_find_host(l->o.rec, host);
	if (a && !memcmp(a->m.pod_mac, n->lladdr, 6)) {
		vd = glearn_offer_locked(l->o.rec, a, &p, &gen, why, sizeof(why));
		snprintf(vpc, sizeof(vpc), "%s", a->m.vpc);
		snprintf(att, sizeof(att), "%s", a->m.id);
	}
	record_unlock(l->o.rec);
	if (vd == GLEARN_NEW) {
		char pb[64];

		if (l->o.counter)
			metric_add(l->o.counter, "learned", 1);
		glogf(GLOG_INFO, COMP, "vpc %s attachment %s (%s): learned the guest's address %s", vpc, att, host,
		      gdp_prefix_str(&p, pb, sizeof(pb)));
		return gen != 0;
	}
	if (vd == GLEARN_REFUSED) {
		if (l->o.counter)
			metric_add(l->o.counter, "refused", 1);
		if (!said_before(l, host, &p))
			glogf(GLOG_WARN, COMP, "vpc %s attachment %s (%s): the guest's address not learned: %s", vpc,
			      att, host, why);
	}
	return false;
}

/* A dump is read whole before anything is offered: offering asks the same
 * socket for a link. */
struct scan_ctx {
	struct gnl_neigh *v;
	size_t n, cap;
	int err;
};

static int scan_cb(const struct nlmsghdr *h, void *arg)
{
	struct scan_ctx *c = arg;
	struct gnl_neigh n;

	if (gnl_neigh_parse(h, &n) || !n.has_lladdr)
		return 0;
	if (G_GROW(c->v, c->cap, c->n, 64))
		return c->err = -ENOMEM;
	c->v[c->n++] = n;
	return 0;
}

int glearn_scan(struct glearn *l)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	struct scan_ctx c = { 0 };
	int rc = 0, learned = 0;

	for (size_t i = 0; i < 2 && !rc; i++) {
		struct nl_msg *m;

		if ((rc = gnl_neigh_dump_msg(&m, fams[i])))
			break;
		rc = gnl_dump(l->s, m, scan_cb, &c);
		nlmsg_free(m);
	}
	for (size_t i = 0; !rc && i < c.n; i++)
		learned += glearn_neigh(l, &c.v[i]);
	free(c.v);
	return rc ? rc : learned;
}
