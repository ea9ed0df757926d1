/*
 * What changed between two desired states (backend.h, struct gdp_delta):
 * the scope of a delta apply. gdp_delta_compute is linear in what the
 * states hold (hashes by key); gdp_delta_compute_changes (the pipeline's)
 * looks only at the attachments the record's view says changed. Remotes
 * are compared only when the two states hold different remote arrays, so
 * an ADD on a node with 100k remotes costs nothing here for them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/backend.h"
#include "common/grow.h"

void gdp_delta_init(struct gdp_delta *d)
{
	memset(d, 0, sizeof(*d));
}

void gdp_delta_free(struct gdp_delta *d)
{
	free(d->atts);
	free(d->gone_atts);
	free(d->remotes);
	free(d->gone_remotes);
	gdp_delta_init(d);
}

bool gdp_delta_empty(const struct gdp_delta *d)
{
	return !d->full && !d->n_atts && !d->n_gone_atts && !d->n_remotes && !d->n_gone_remotes;
}

static int push_idx(size_t **v, size_t *n, size_t *cap, size_t x)
{
	int rc = G_GROW(*v, *cap, *n, 8);

	if (rc)
		return rc;
	(*v)[(*n)++] = x;
	return 0;
}

int gdp_delta_add_att(struct gdp_delta *d, size_t i)
{
	for (size_t j = 0; j < d->n_atts; j++)
		if (d->atts[j] == i)
			return 0;
	return push_idx(&d->atts, &d->n_atts, &d->cap_atts, i);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

#define FNV0 1469598103934665603ULL

static uint64_t att_hash(const struct gdp_attachment *a)
{
	return fnv(fnv(FNV0, a->vpc, strlen(a->vpc) + 1), a->id, strlen(a->id));
}

static uint64_t prefix_hash(uint64_t h, const struct gdp_prefix *p)
{
	h = fnv(h, &p->family, sizeof(p->family));
	h = fnv(h, &p->len, sizeof(p->len));
	return fnv(h, p->addr.raw, p->family == AF_INET ? 4 : 16);
}

static uint64_t remote_hash(const struct gdp_remote *r)
{
	return prefix_hash(fnv(FNV0, &r->vpc_ix, sizeof(r->vpc_ix)), &r->prefix);
}

/* Open addressing over indexes (+1; 0 = empty), at most half full. */
struct ixh {
	size_t *slot, mask;
};

static int ixh_init(struct ixh *h, size_t n)
{
	size_t sz = 64;

	while (sz < n * 2)
		sz *= 2;
	h->slot = calloc(sz, sizeof(*h->slot));
	h->mask = sz - 1;
	return h->slot ? 0 : -ENOMEM;
}

static bool prefix_same(const struct gdp_prefix *a, const struct gdp_prefix *b)
{
	return a->family == b->family && a->len == b->len &&
	       !memcmp(a->addr.raw, b->addr.raw, a->family == AF_INET ? 4 : 16);
}

static bool att_key_eq(const struct gdp_attachment *a, const struct gdp_attachment *b)
{
	return !strcmp(a->vpc, b->vpc) && !strcmp(a->id, b->id);
}

static bool att_equal(const struct gdp_attachment *a, const struct gdp_attachment *b)
{
	if (!att_key_eq(a, b) || strcmp(a->container_id, b->container_id) ||
	    strcmp(a->host_ifname, b->host_ifname) || a->arg != b->arg || a->n_addrs != b->n_addrs ||
	    a->nh4.s_addr != b->nh4.s_addr || memcmp(a->pod_mac, b->pod_mac, 6) || a->mtu != b->mtu ||
	    a->egress != b->egress || a->guest_addressed != b->guest_addressed)
		return false;
	for (size_t i = 0; i < a->n_addrs; i++)
		if (!prefix_same(&a->addrs[i], &b->addrs[i]))
			return false;
	return true;
}

static bool vpc_equal(const struct gdp_vpc *a, const struct gdp_vpc *b)
{
	if (strcmp(a->id, b->id) || a->arg != b->arg || a->table != b->table || a->n_prefixes != b->n_prefixes)
		return false;
	for (size_t i = 0; i < a->n_prefixes; i++)
		if (!prefix_same(&a->prefixes[i], &b->prefixes[i]))
			return false;
	return true;
}

static bool remote_key_eq(const struct gdp_remote *a, const struct gdp_remote *b)
{
	return a->vpc_ix == b->vpc_ix && prefix_same(&a->prefix, &b->prefix);
}

static void check_shared(const struct gdp_state *cur, struct gdp_delta *d);

static int diff_atts(const struct gdp_state *prev, const struct gdp_state *cur, struct gdp_delta *d)
{
	struct ixh h = { 0 };
	bool *seen = calloc(prev->n_atts + 1, 1);
	size_t i, s;
	int rc = 0;

	if (!seen || ixh_init(&h, prev->n_atts)) {
		free(seen);
		return -ENOMEM;
	}
	for (i = 0; i < prev->n_atts; i++) {
		for (s = att_hash(&prev->atts[i]) & h.mask; h.slot[s]; s = (s + 1) & h.mask)
			if (att_key_eq(&prev->atts[h.slot[s] - 1], &prev->atts[i]))
				d->full = true; /* named twice: not for a delta */
		h.slot[s] = i + 1;
	}
	for (i = 0; i < cur->n_atts && !rc; i++) {
		const struct gdp_attachment *a = &cur->atts[i];
		size_t found = 0;

		for (s = att_hash(a) & h.mask; h.slot[s] && !found; s = (s + 1) & h.mask)
			if (att_key_eq(&prev->atts[h.slot[s] - 1], a))
				found = h.slot[s];
		if (!found) {
			rc = push_idx(&d->atts, &d->n_atts, &d->cap_atts, i);
			continue;
		}
		if (seen[found - 1] || !att_equal(&prev->atts[found - 1], a))
			d->full = true; /* changed in place (or twice): remove-then-add is not ordered here */
		seen[found - 1] = true;
	}
	for (i = 0; i < prev->n_atts && !rc; i++) {
		if (seen[i])
			continue;
		if ((rc = G_GROW(d->gone_atts, d->cap_gone_atts, d->n_gone_atts, 8)))
			break;
		d->gone_atts[d->n_gone_atts++] = prev->atts[i];
	}
	if (!rc)
		check_shared(cur, d);
	free(seen);
	free(h.slot);
	return rc;
}

static int diff_remotes(const struct gdp_state *prev, const struct gdp_state *cur, struct gdp_delta *d)
{
	struct ixh h = { 0 }, hc = { 0 };
	bool *seen;
	size_t i, s;
	int rc = 0;

	if (prev->remotes == cur->remotes && prev->n_remotes == cur->n_remotes)
		return 0; /* the same shared set */
	seen = calloc(prev->n_remotes + 1, 1);
	if (!seen || ixh_init(&h, prev->n_remotes) || ixh_init(&hc, cur->n_remotes)) {
		free(seen);
		free(h.slot);
		return -ENOMEM;
	}
	for (i = 0; i < prev->n_remotes; i++) {
		for (s = remote_hash(&prev->remotes[i]) & h.mask; h.slot[s]; s = (s + 1) & h.mask)
			if (remote_key_eq(&prev->remotes[h.slot[s] - 1], &prev->remotes[i]))
				d->full = true;
		h.slot[s] = i + 1;
	}
	for (i = 0; i < cur->n_remotes && !rc && !d->full; i++) {
		const struct gdp_remote *r = &cur->remotes[i];
		uint64_t hv = remote_hash(r);
		size_t found = 0;

		/* the same key twice in cur: the full pass fails the later one */
		for (s = hv & hc.mask; hc.slot[s]; s = (s + 1) & hc.mask)
			if (remote_key_eq(&cur->remotes[hc.slot[s] - 1], r))
				d->full = true;
		hc.slot[s] = i + 1;
		for (s = hv & h.mask; h.slot[s] && !found; s = (s + 1) & h.mask)
			if (remote_key_eq(&prev->remotes[h.slot[s] - 1], r))
				found = h.slot[s];
		if (found)
			seen[found - 1] = true;
		if (!found || memcmp(&prev->remotes[found - 1].sid, &r->sid, sizeof(r->sid)))
			rc = push_idx(&d->remotes, &d->n_remotes, &d->cap_remotes, i);
	}
	for (i = 0; i < prev->n_remotes && !rc && !d->full; i++) {
		if (seen[i])
			continue;
		if ((rc = G_GROW(d->gone_remotes, d->cap_gone_remotes, d->n_gone_remotes, 8)))
			break;
		d->gone_remotes[d->n_gone_remotes++] = prev->remotes[i];
	}
	free(seen);
	free(h.slot);
	free(hc.slot);
	return rc;
}

static bool egress_differs(const struct gdp_egress *a, const struct gdp_egress *b)
{
	if (a->have != b->have)
		return true;
	if (!a->have)
		return false;
	return memcmp(&a->sid, &b->sid, sizeof(a->sid)) || memcmp(&a->addr6, &b->addr6, sizeof(a->addr6)) ||
	       a->have_v4 != b->have_v4 || (a->have_v4 && a->addr4.s_addr != b->addr4.s_addr) ||
	       strcmp(a->oif, b->oif);
}

/* What a delta cannot express: the node, the VPC list, the egress shard. */
static bool frame_differs(const struct gdp_state *prev, const struct gdp_state *cur)
{
	if (memcmp(prev->node.block, cur->node.block, 6) || prev->node.node_id != cur->node.node_id ||
	    strcmp(prev->node.uplink, cur->node.uplink) || prev->n_vpcs != cur->n_vpcs)
		return true;
	for (size_t i = 0; i < cur->n_vpcs; i++) {
		const struct gdp_vpc *v = gdp_state_find_vpc(prev, cur->vpcs[i].id);

		if (!v || !vpc_equal(v, &cur->vpcs[i]))
			return true; /* a VPC added, removed or renumbered: its table is checked whole */
	}
	/* the shard: its routes, SIDs and translator are checked whole */
	return egress_differs(&prev->egress, &cur->egress);
}

/* Writes go before deletes: an added and a removed attachment must not
 * share a device or an address (a pod re-added under a new id in one
 * pass), or the delete would undo the add. O(added x removed). */
static void check_shared(const struct gdp_state *cur, struct gdp_delta *d)
{
	for (size_t i = 0; i < d->n_gone_atts && !d->full; i++)
		for (size_t s = 0; s < d->n_atts && !d->full; s++) {
			const struct gdp_attachment *g = &d->gone_atts[i], *a = &cur->atts[d->atts[s]];

			d->full = !strcmp(g->host_ifname, a->host_ifname);
			for (size_t x = 0; x < g->n_addrs && !d->full; x++)
				for (size_t y = 0; y < a->n_addrs && !d->full; y++)
					d->full = !strcmp(g->vpc, a->vpc) && prefix_same(&g->addrs[x], &a->addrs[y]);
		}
}

/* An attachment declaring egress changes its VPC's default route (and the
 * translator) when the node has a shard: a VPC-wide change. */
static void check_egress(const struct gdp_state *cur, struct gdp_delta *d)
{
	for (size_t i = 0; cur->egress.have && i < d->n_atts && !d->full; i++)
		d->full = cur->atts[d->atts[i]].egress != 0;
	for (size_t i = 0; cur->egress.have && i < d->n_gone_atts && !d->full; i++)
		d->full = d->gone_atts[i].egress != 0;
}

int gdp_delta_compute(const struct gdp_state *prev, const struct gdp_state *cur, struct gdp_delta *d)
{
	int rc;

	gdp_delta_free(d);
	if (frame_differs(prev, cur)) {
		d->full = true;
		return 0;
	}
	if ((rc = diff_atts(prev, cur, d)) || d->full)
		return rc;
	check_egress(cur, d);
	if (d->full)
		return 0;
	return diff_remotes(prev, cur, d);
}

int gdp_delta_compute_changes(const struct gdp_state *prev, const struct gdp_state *cur,
			      const struct gdp_att_change *ch, size_t n, struct gdp_delta *d)
{
	int rc = 0;

	gdp_delta_free(d);
	if (frame_differs(prev, cur)) {
		d->full = true;
		return 0;
	}
	for (size_t i = 0; i < n && !rc && !d->full; i++) {
		const struct gdp_att_change *c = &ch[i];

		if (c->cur != SIZE_MAX && c->cur >= cur->n_atts)
			return -EINVAL;
		if (c->had && c->cur != SIZE_MAX) {
			/* changed in place: remove-then-add is not ordered here */
			d->full = !att_equal(&c->prev, &cur->atts[c->cur]);
		} else if (c->had) {
			if ((rc = G_GROW(d->gone_atts, d->cap_gone_atts, d->n_gone_atts, 8)))
				return rc;
			d->gone_atts[d->n_gone_atts++] = c->prev;
		} else if (c->cur != SIZE_MAX) {
			rc = gdp_delta_add_att(d, c->cur);
		}
	}
	if (rc || d->full)
		return rc;
	check_shared(cur, d);
	check_egress(cur, d);
	if (d->full)
		return 0;
	return diff_remotes(prev, cur, d);
}
