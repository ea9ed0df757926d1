/*
 * The kernel backend's snapshot: one pass's dump of links, rules, neighbours
 * and addresses (read again while the kernel interrupts it), and the hashes
 * that index routes and dumped objects by key.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/kernel_int.h"

void kb_snap_free(struct snap *s)
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
void kb_dump_failed(struct kb *k, struct gdp_results *res, struct gdp_result *node_res, const char *what,
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
int kb_snapshot(struct kb *k, struct snap *s)
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

uint64_t kb_route_key_hash(const struct gnl_route *r)
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

int kb_rhash_init(struct rhash *h, size_t n)
{
	size_t sz = hash_cap(n);

	h->slot = calloc(sz, sizeof(*h->slot));
	h->mask = sz - 1;
	return h->slot ? 0 : -ENOMEM;
}

/* Returns the index of a route with the same key, or -1 after inserting idx. */
long kb_rhash_insert(struct rhash *h, const struct gnl_route *base, size_t idx)
{
	size_t i = (size_t)kb_route_key_hash(&base[idx]) & h->mask;

	for (; h->slot[i]; i = (i + 1) & h->mask)
		if (gnl_route_same_key(&base[h->slot[i] - 1], &base[idx]))
			return h->slot[i] - 1;
	h->slot[i] = (int32_t)idx + 1;
	return -1;
}

long kb_rhash_find(const struct rhash *h, const struct gnl_route *base, const struct gnl_route *r)
{
	size_t i = (size_t)kb_route_key_hash(r) & h->mask;

	for (; h->slot[i]; i = (i + 1) & h->mask)
		if (gnl_route_same_key(&base[h->slot[i] - 1], r))
			return h->slot[i] - 1;
	return -1;
}

uint64_t kb_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

int kb_kh_init(struct khash *t, size_t n)
{
	size_t sz = hash_cap(n);

	t->h = calloc(sz, sizeof(*t->h));
	t->ix = calloc(sz, sizeof(*t->ix));
	t->mask = sz - 1;
	return t->h && t->ix ? 0 : -ENOMEM;
}

void kb_kh_put(struct khash *t, uint64_t hv, size_t idx)
{
	size_t i = (size_t)hv & t->mask;

	while (t->ix[i])
		i = (i + 1) & t->mask;
	t->h[i] = hv;
	t->ix[i] = (int32_t)idx + 1;
}

void kb_kh_free(struct khash *t)
{
	free(t->h);
	free(t->ix);
}

static uint64_t addr_hash(uint64_t h, const struct gnl_addr *a)
{
	h = kb_fnv(h, &a->family, sizeof(a->family));
	h = kb_fnv(h, &a->len, sizeof(a->len));
	return kb_fnv(h, a->a.raw, gnl_addr_bytes(a->family)); /* as gnl_addr_eq compares */
}

uint64_t kb_rule_hash(const struct gnl_rule *r)
{
	uint64_t h = 1469598103934665603ULL;

	h = kb_fnv(h, &r->family, sizeof(r->family));
	h = kb_fnv(h, &r->priority, sizeof(r->priority));
	h = kb_fnv(h, &r->table, sizeof(r->table));
	h = kb_fnv(h, r->iifname, strnlen(r->iifname, sizeof(r->iifname)));
	h = kb_fnv(h, &r->fwmark, sizeof(r->fwmark));
	h = kb_fnv(h, &r->fwmask, sizeof(r->fwmask));
	if (r->dst.family)
		h = addr_hash(h, &r->dst);
	return kb_fnv(h, r->oifname, strnlen(r->oifname, sizeof(r->oifname)));
}

uint64_t kb_neigh_hash(const struct gnl_neigh *n)
{
	uint64_t h = kb_fnv(1469598103934665603ULL, &n->ifindex, sizeof(n->ifindex));

	return addr_hash(kb_fnv(h, &n->family, sizeof(n->family)), &n->dst);
}

uint64_t kb_ifaddr_hash(const struct gnl_ifaddr *a)
{
	uint64_t h = kb_fnv(1469598103934665603ULL, &a->ifindex, sizeof(a->ifindex));

	return addr_hash(kb_fnv(h, &a->family, sizeof(a->family)), &a->addr);
}

uint64_t kb_link_hash(uint32_t ifindex)
{
	return kb_fnv(1469598103934665603ULL, &ifindex, sizeof(ifindex));
}
