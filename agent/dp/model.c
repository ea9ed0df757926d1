/* Desired node state: containers, SIDs, validation. */
#include "agent/dp/model.h"
#include "agent/nl/nl.h"
#include "common/grow.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gdp_state_init(struct gdp_state *s)
{
	memset(s, 0, sizeof(*s));
}

void gdp_state_free(struct gdp_state *s)
{
	free(s->vpcs);
	free(s->atts);
	free(s->remotes);
	gdp_state_init(s);
}


int gdp_state_add_vpc(struct gdp_state *s, const struct gdp_vpc *v)
{
	if (G_GROW(s->vpcs, s->cap_vpcs, s->n_vpcs, 8))
		return -ENOMEM;
	s->vpcs[s->n_vpcs++] = *v;
	return 0;
}

int gdp_state_add_attachment(struct gdp_state *s, const struct gdp_attachment *a)
{
	if (G_GROW(s->atts, s->cap_atts, s->n_atts, 8))
		return -ENOMEM;
	s->atts[s->n_atts++] = *a;
	return 0;
}

int gdp_state_add_remote(struct gdp_state *s, const struct gdp_remote *r)
{
	if (G_GROW(s->remotes, s->cap_remotes, s->n_remotes, 8))
		return -ENOMEM;
	s->remotes[s->n_remotes++] = *r;
	return 0;
}

int gdp_state_reserve_remotes(struct gdp_state *s, size_t cap)
{
	return G_RESERVE(s->remotes, s->cap_remotes, cap, 0);
}

static void *dup(const void *p, size_t n, size_t sz)
{
	void *d;

	if (!n)
		return NULL;
	d = malloc(n * sz);
	if (d)
		memcpy(d, p, n * sz);
	return d;
}

int gdp_state_copy(struct gdp_state *dst, const struct gdp_state *src)
{
	gdp_state_init(dst);
	dst->node = src->node;
	dst->egress = src->egress;
	dst->vpcs = dup(src->vpcs, src->n_vpcs, sizeof(*src->vpcs));
	dst->atts = dup(src->atts, src->n_atts, sizeof(*src->atts));
	dst->remotes = dup(src->remotes, src->n_remotes, sizeof(*src->remotes));
	if ((src->n_vpcs && !dst->vpcs) || (src->n_atts && !dst->atts) ||
	    (src->n_remotes && !dst->remotes)) {
		gdp_state_free(dst);
		return -ENOMEM;
	}
	dst->n_vpcs = dst->cap_vpcs = src->n_vpcs;
	dst->n_atts = dst->cap_atts = src->n_atts;
	dst->n_remotes = dst->cap_remotes = src->n_remotes;
	return 0;
}

const struct gdp_vpc *gdp_state_find_vpc(const struct gdp_state *s, const char *vpc_id)
{
	size_t i;

	for (i = 0; i < s->n_vpcs; i++)
		if (!strcmp(s->vpcs[i].id, vpc_id))
			return &s->vpcs[i];
	return NULL;
}

const struct gdp_attachment *gdp_state_find_attachment(const struct gdp_state *s,
						       const char *vpc_id, const char *att_id)
{
	size_t i;

	for (i = 0; i < s->n_atts; i++)
		if (!strcmp(s->atts[i].vpc, vpc_id) && !strcmp(s->atts[i].id, att_id))
			return &s->atts[i];
	return NULL;
}

void gdp_sid(const struct gdp_node *n, unsigned fn, uint16_t arg, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->s6_addr, n->block, 6);
	out->s6_addr[6] = (uint8_t)(n->node_id >> 8);
	out->s6_addr[7] = (uint8_t)n->node_id;
	out->s6_addr[8] = (uint8_t)((fn & 0xf) << 4 | ((arg >> 8) & 0xf));
	out->s6_addr[9] = (uint8_t)arg;
}

int gdp_sid_parse(const struct in6_addr *sid, uint8_t block[6], uint16_t *node_id,
		  unsigned *fn, uint16_t *arg)
{
	static const uint8_t zero[6];
	uint16_t node = (uint16_t)(sid->s6_addr[6] << 8 | sid->s6_addr[7]);

	if (memcmp(sid->s6_addr + 10, zero, 6) || !node || node > 0xDFFF)
		return -EINVAL;
	if (block)
		memcpy(block, sid->s6_addr, 6);
	if (node_id)
		*node_id = node;
	if (fn)
		*fn = sid->s6_addr[8] >> 4;
	if (arg)
		*arg = (uint16_t)((sid->s6_addr[8] & 0xf) << 8 | sid->s6_addr[9]);
	return 0;
}

struct in_addr gdp_default_nh4(uint16_t arg)
{
	struct in_addr a;

	a.s_addr = htonl(0xA9FE0000u | (uint32_t)(16 + ((arg >> 8) & 0xf)) << 8 | (arg & 0xff));
	return a;
}

int gdp_prefix_parse(const char *s, struct gdp_prefix *p)
{
	struct gnl_addr a;
	int rc = gnl_addr_parse(s, &a); /* one parser for "addr[/len]" in the tree */

	memset(p, 0, sizeof(*p));
	if (rc)
		return rc;
	p->family = a.family;
	p->len = a.len;
	memcpy(p->addr.raw, a.a.raw, sizeof(p->addr.raw));
	return 0;
}

char *gdp_prefix_str(const struct gdp_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (p->family != AF_INET && p->family != AF_INET6)
		snprintf(buf, len, "(none)");
	else
		snprintf(buf, len, "%s/%u", inet_ntop(p->family, p->addr.raw, a, sizeof(a)), p->len);
	return buf;
}

static bool bits_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full))
		return false;
	if (!rest)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

bool gdp_prefix_contains(const struct gdp_prefix *outer, const struct gdp_prefix *inner)
{
	return outer->family == inner->family && outer->len <= inner->len &&
	       bits_equal(outer->addr.raw, inner->addr.raw, outer->len);
}

bool gdp_prefix_equal(const struct gdp_prefix *a, const struct gdp_prefix *b)
{
	return a->family == b->family && a->len == b->len &&
	       !memcmp(a->addr.raw, b->addr.raw, a->family == AF_INET ? 4 : 16);
}

/* Host bits beyond len must be zero (the kernel would reject or silently mask them). */
static bool prefix_canonical(const struct gdp_prefix *p)
{
	unsigned bytes = p->family == AF_INET ? 4 : 16, i = p->len / 8;

	if (p->len >= bytes * 8)
		return true;
	if (p->addr.raw[i++] & (0xff >> (p->len % 8)))
		return false; /* host bits in the byte the length ends in */
	for (; i < bytes; i++)
		if (p->addr.raw[i])
			return false;
	return true;
}

static bool valid_id(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > GDP_ID_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]))
			return false;
	return true;
}

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	return n && n <= GDP_IFNAME_MAX && !strpbrk(s, "/ \t\n:") && strcmp(s, ".") && strcmp(s, "..");
}

int gdp_validate_node(const struct gdp_node *n, char *err, size_t errlen)
{
	static const uint8_t zero[6];

	if (!memcmp(n->block, zero, 6) || n->block[0] == 0xff || (n->block[0] == 0xfe && (n->block[1] & 0xc0) == 0x80)) {
		snprintf(err, errlen, "node: SID block must be a unicast /48, not zero, multicast or link-local");
		return -EINVAL;
	}
	if (!n->node_id || n->node_id > 0xDFFF) {
		snprintf(err, errlen, "node: node id 0x%x outside 0x0001-0xDFFF", n->node_id);
		return -EINVAL;
	}
	if (n->uplink[0] && !valid_ifname(n->uplink)) {
		snprintf(err, errlen, "node: invalid uplink name '%s'", n->uplink);
		return -EINVAL;
	}
	return 0;
}

int gdp_validate_vpc(const struct gdp_state *s, size_t idx, char *err, size_t errlen)
{
	const struct gdp_vpc *v = &s->vpcs[idx];
	char pb[64];
	size_t i;

	if (!valid_id(v->id)) {
		snprintf(err, errlen, "vpc '%s': id must be 1-%d base62 characters", v->id, GDP_ID_MAX);
		return -EINVAL;
	}
	if (!v->arg || v->arg > GDP_ARG_MAX) {
		snprintf(err, errlen, "vpc %s: argument %u outside 1-%u", v->id, v->arg, (unsigned)GDP_ARG_MAX);
		return -EINVAL;
	}
	if (!v->table || v->table == 253 || v->table == 254 || v->table == 255) {
		snprintf(err, errlen, "vpc %s: table %u is reserved", v->id, v->table);
		return -EINVAL;
	}
	if (v->n_prefixes > GDP_VPC_PREFIXES_MAX) {
		snprintf(err, errlen, "vpc %s: too many prefixes", v->id);
		return -EINVAL;
	}
	for (i = 0; i < v->n_prefixes; i++)
		if ((v->prefixes[i].family != AF_INET && v->prefixes[i].family != AF_INET6) ||
		    !prefix_canonical(&v->prefixes[i])) {
			snprintf(err, errlen, "vpc %s: invalid prefix %s", v->id,
				 gdp_prefix_str(&v->prefixes[i], pb, sizeof(pb)));
			return -EINVAL;
		}
	/* Earlier objects win: a later duplicate is the one reported. */
	for (i = 0; i < idx; i++) {
		if (!strcmp(s->vpcs[i].id, v->id)) {
			snprintf(err, errlen, "vpc %s: duplicate VPC", v->id);
			return -EEXIST;
		}
		if (s->vpcs[i].arg == v->arg) {
			snprintf(err, errlen, "vpc %s: argument %u already used by vpc %s", v->id,
				 v->arg, s->vpcs[i].id);
			return -EEXIST;
		}
		if (s->vpcs[i].table == v->table) {
			snprintf(err, errlen, "vpc %s: table %u already used by vpc %s", v->id,
				 v->table, s->vpcs[i].id);
			return -EEXIST;
		}
	}
	return 0;
}

static bool in_vpc(const struct gdp_vpc *v, const struct gdp_prefix *p)
{
	size_t i;

	if (!v->n_prefixes)
		return true;
	for (i = 0; i < v->n_prefixes; i++)
		if (gdp_prefix_contains(&v->prefixes[i], p))
			return true;
	return false;
}

int gdp_validate_attachment(const struct gdp_state *s, size_t idx, char *err, size_t errlen)
{
	const struct gdp_attachment *a = &s->atts[idx];
	const struct gdp_vpc *v;
	char pb[64];
	size_t i, j, k;

	if (!valid_id(a->id)) {
		snprintf(err, errlen, "attachment '%s' in vpc %s: invalid id", a->id, a->vpc);
		return -EINVAL;
	}
	v = gdp_state_find_vpc(s, a->vpc);
	if (!v) {
		snprintf(err, errlen, "attachment %s: unknown vpc '%s'", a->id, a->vpc);
		return -ENOENT;
	}
	if (!valid_ifname(a->host_ifname)) {
		snprintf(err, errlen, "attachment %s/%s: invalid host interface name '%s'", a->vpc,
			 a->id, a->host_ifname);
		return -EINVAL;
	}
	if (!a->arg || a->arg > GDP_ARG_MAX) {
		snprintf(err, errlen, "attachment %s/%s: argument %u outside 1-%u", a->vpc, a->id,
			 a->arg, (unsigned)GDP_ARG_MAX);
		return -EINVAL;
	}
	/* No addresses: the guest addresses itself (rules only). */
	if (a->n_addrs > GDP_ADDRS_MAX) {
		snprintf(err, errlen, "attachment %s/%s: at most %d addresses", a->vpc, a->id,
			 GDP_ADDRS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < a->n_addrs; i++) {
		const struct gdp_prefix *p = &a->addrs[i];

		/* IPv4: a host address; IPv6: a host address or a delegated
		 * block (network address, routed to the pod as a whole). */
		if ((p->family != AF_INET && p->family != AF_INET6) ||
		    (p->family == AF_INET && p->len != 32) ||
		    (p->family == AF_INET6 && (p->len == 0 || !prefix_canonical(p)))) {
			snprintf(err, errlen, "attachment %s/%s: address %s must be a host address (or an IPv6 block without host bits)",
				 a->vpc, a->id, gdp_prefix_str(p, pb, sizeof(pb)));
			return -EINVAL;
		}
		if (!in_vpc(v, p)) {
			snprintf(err, errlen, "attachment %s/%s: address %s outside the VPC's prefixes",
				 a->vpc, a->id, gdp_prefix_str(p, pb, sizeof(pb)));
			return -EINVAL;
		}
	}
	if (a->nh4.s_addr && (ntohl(a->nh4.s_addr) >> 16) != 0xA9FE) {
		snprintf(err, errlen, "attachment %s/%s: nh4 must be link-local (169.254/16)", a->vpc, a->id);
		return -EINVAL;
	}
	for (i = 0; i < idx; i++) {
		const struct gdp_attachment *o = &s->atts[i];

		if (!strcmp(o->vpc, a->vpc) && !strcmp(o->id, a->id)) {
			snprintf(err, errlen, "attachment %s/%s: duplicate attachment", a->vpc, a->id);
			return -EEXIST;
		}
		if (!strcmp(o->host_ifname, a->host_ifname)) {
			snprintf(err, errlen, "attachment %s/%s: host interface %s already used by attachment %s/%s",
				 a->vpc, a->id, a->host_ifname, o->vpc, o->id);
			return -EEXIST;
		}
		if (o->arg == a->arg) {
			snprintf(err, errlen, "attachment %s/%s: argument %u already used by attachment %s/%s",
				 a->vpc, a->id, a->arg, o->vpc, o->id);
			return -EEXIST;
		}
		if (a->nh4.s_addr && o->nh4.s_addr == a->nh4.s_addr) {
			snprintf(err, errlen, "attachment %s/%s: nh4 already used by attachment %s/%s",
				 a->vpc, a->id, o->vpc, o->id);
			return -EEXIST;
		}
		if (strcmp(o->vpc, a->vpc))
			continue;
		for (j = 0; j < a->n_addrs; j++)
			for (k = 0; k < o->n_addrs; k++)
				if (gdp_prefix_equal(&a->addrs[j], &o->addrs[k])) {
					snprintf(err, errlen, "attachment %s/%s: address %s already used by attachment %s",
						 a->vpc, a->id, gdp_prefix_str(&a->addrs[j], pb, sizeof(pb)), o->id);
					return -EEXIST;
				}
	}
	return 0;
}

struct gdp_local_addr {
	const char *vpc;
	const struct gdp_prefix *p;
	size_t att; /* index in s->atts */
};

static size_t prefix_bytes(const struct gdp_prefix *p) { return p->family == AF_INET ? 4 : 16; }

/* (vpc, family, len, address): gdp_prefix_equal's notion of equal within a VPC. */
static int local_key_cmp(const char *vpc, const struct gdp_prefix *p, const struct gdp_local_addr *b)
{
	int c = strcmp(vpc, b->vpc);

	if (c)
		return c;
	if (p->family != b->p->family)
		return p->family < b->p->family ? -1 : 1;
	if (p->len != b->p->len)
		return p->len < b->p->len ? -1 : 1;
	return memcmp(p->addr.raw, b->p->addr.raw, prefix_bytes(p));
}

static int local_cmp(const void *x, const void *y)
{
	const struct gdp_local_addr *a = x, *b = y;
	int c = local_key_cmp(a->vpc, a->p, b);

	return c ? c : a->att < b->att ? -1 : a->att > b->att;
}

static int locals_build(const struct gdp_state *s, struct gdp_locals *lx)
{
	size_t n = 0, i, j;

	for (i = 0; i < s->n_atts; i++)
		n += s->atts[i].n_addrs;
	if (n && !(lx->v = malloc(n * sizeof(*lx->v))))
		return -ENOMEM;
	for (i = 0; i < s->n_atts; i++)
		for (j = 0; j < s->atts[i].n_addrs; j++)
			lx->v[lx->n++] = (struct gdp_local_addr){ s->atts[i].vpc, &s->atts[i].addrs[j], i };
	if (lx->n > 1)
		qsort(lx->v, lx->n, sizeof(*lx->v), local_cmp);
	return 0;
}

/* The first attachment (in s->atts) of vpc with address p, or NULL. */
static const struct gdp_attachment *local_owner(const struct gdp_state *s, struct gdp_locals *lx,
						const char *vpc, const struct gdp_prefix *p)
{
	size_t i, j, lo = 0, hi;

	if (lx && !lx->built)
		lx->built = locals_build(s, lx) ? -1 : 1;
	if (!lx || lx->built < 0) {
		for (i = 0; i < s->n_atts; i++) {
			if (strcmp(s->atts[i].vpc, vpc))
				continue;
			for (j = 0; j < s->atts[i].n_addrs; j++)
				if (gdp_prefix_equal(&s->atts[i].addrs[j], p))
					return &s->atts[i];
		}
		return NULL;
	}
	for (hi = lx->n; lo < hi;) { /* the first element >= the key: the lowest attachment index */
		size_t mid = lo + (hi - lo) / 2;

		if (local_key_cmp(vpc, p, &lx->v[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < lx->n && !local_key_cmp(vpc, p, &lx->v[lo]) ? &s->atts[lx->v[lo].att] : NULL;
}

void gdp_locals_free(struct gdp_locals *lx)
{
	free(lx->v);
	*lx = (struct gdp_locals){ 0 };
}

int gdp_validate_remote(const struct gdp_state *s, size_t idx, char *err, size_t errlen)
{
	return gdp_validate_remote_in(s, NULL, idx, err, errlen);
}

int gdp_validate_remote_in(const struct gdp_state *s, struct gdp_locals *lx, size_t idx, char *err,
			   size_t errlen)
{
	const struct gdp_remote *r = &s->remotes[idx];
	const char *vpc = gdp_remote_vpc(r);
	const struct gdp_vpc *v = gdp_state_find_vpc(s, vpc);
	const struct gdp_attachment *at;
	char pb[64], sb[INET6_ADDRSTRLEN];
	const struct in6_addr *a = &r->sid;

	/* the texts only for a message: this runs for each of 100,000 remotes */
	if (!v) {
		snprintf(err, errlen, "remote %s: unknown vpc '%s'", gdp_prefix_str(&r->prefix, pb, sizeof(pb)), vpc);
		return -ENOENT;
	}
	if ((r->prefix.family != AF_INET && r->prefix.family != AF_INET6) ||
	    !prefix_canonical(&r->prefix)) {
		snprintf(err, errlen, "remote %s in vpc %s: invalid prefix", gdp_prefix_str(&r->prefix, pb, sizeof(pb)),
			 vpc);
		return -EINVAL;
	}
	if (!in_vpc(v, &r->prefix)) {
		snprintf(err, errlen, "remote %s in vpc %s: prefix outside the VPC's prefixes",
			 gdp_prefix_str(&r->prefix, pb, sizeof(pb)), vpc);
		return -EINVAL;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_MULTICAST(a) ||
	    IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a) ||
	    gdp_sid_parse(a, NULL, NULL, NULL, NULL) < 0) {
		inet_ntop(AF_INET6, a, sb, sizeof(sb));
		snprintf(err, errlen, "remote %s in vpc %s: invalid SID %s", gdp_prefix_str(&r->prefix, pb, sizeof(pb)),
			 vpc, sb);
		return -EINVAL;
	}
	/* A prefix served by a local attachment must not be sent away. */
	if ((at = local_owner(s, lx, vpc, &r->prefix))) {
		snprintf(err, errlen, "remote %s in vpc %s: address is local (attachment %s)",
			 gdp_prefix_str(&r->prefix, pb, sizeof(pb)), vpc, at->id);
		return -EEXIST;
	}
	/* Duplicates among remotes are found by the backend with a hash (n can be 100k). */
	return 0;
}
