/* Desired state -> bpf maps, level-triggered (see bpf_sync.h). */
#include "agent/dp/bpf/bpf_sync.h"
#include "agent/dp/egress.h"
#include "common/grow.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *put_dec(char *o, unsigned v)
{
	char t[4];
	int n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*o++ = t[--n];
	return o;
}

char *gbpf_prefix_str(const struct gdp_prefix *p, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	static const uint8_t zero10[10];
	const uint8_t *a = p->addr.raw;
	char tmp[64], *o = tmp;
	int best = -1, bestlen = 0;

	/* Anything unusual (IPv4-mapped/compatible forms, other families): the original. */
	if (len < 64 || (p->family != AF_INET && p->family != AF_INET6) ||
	    (p->family == AF_INET6 && !memcmp(a, zero10, 10)))
		return gdp_prefix_str(p, buf, len);
	if (p->family == AF_INET) {
		for (int i = 0; i < 4; i++) {
			o = put_dec(o, a[i]);
			*o++ = i < 3 ? '.' : '/';
		}
	} else {
		uint16_t w[8];

		for (int i = 0; i < 8; i++)
			w[i] = (uint16_t)(a[2 * i] << 8 | a[2 * i + 1]);
		/* RFC 5952 as glibc does it: the first longest run of 2+ zero words. */
		for (int i = 0; i < 8;) {
			int j = i;

			while (j < 8 && !w[j])
				j++;
			if (j - i > bestlen && j - i >= 2) {
				best = i;
				bestlen = j - i;
			}
			i = j > i ? j : i + 1;
		}
		for (int i = 0; i < 8; i++) {
			if (i == best) {
				*o++ = ':';
				if (i == 0)
					*o++ = ':';
				i += bestlen - 1;
				continue;
			}
			for (int sh = 12, lead = 1; sh >= 0; sh -= 4) {
				unsigned nib = (w[i] >> sh) & 0xf;

				if (nib || !lead || !sh) {
					*o++ = hex[nib];
					lead = 0;
				}
			}
			if (i < 7)
				*o++ = ':';
		}
		*o++ = '/';
	}
	o = put_dec(o, p->len);
	*o = 0;
	memcpy(buf, tmp, (size_t)(o - tmp) + 1);
	return buf;
}

void gbpf_node_src(const struct gdp_node *n, uint8_t out[16])
{
	memset(out, 0, 16);
	memcpy(out, n->block, 6);
	out[6] = (uint8_t)(n->node_id >> 8);
	out[7] = (uint8_t)(n->node_id & 0xff);
}

int gbpf_sync_node(struct gbpf *g, const struct gdp_state *d, struct gdp_results *res)
{
	struct gdp_result *r = res ? gdp_results_get(res, GDP_OBJ_NODE, "", "") : NULL;
	struct gbpf_cfg want = { .flags = GBPF_CFG_VALID }, have;
	char err[512];
	int e;

	if ((e = gdp_validate_node(&d->node, err, sizeof(err)))) {
		gdp_result_fail(r, e, "%s", err);
		return e;
	}
	memcpy(want.block, d->node.block, 6);
	want.node_id[0] = (uint8_t)(d->node.node_id >> 8);
	want.node_id[1] = (uint8_t)(d->node.node_id & 0xff);
	gbpf_node_src(&d->node, want.src);
	if (!gbpf_get_cfg(g, &have) && !memcmp(&have, &want, sizeof(want))) {
		if (r)
			r->programmed = !r->err;
		return 0;
	}
	if ((e = gbpf_set_cfg(g, &want, err, sizeof(err)))) {
		gdp_result_fail(r, e, "%s", err);
		return e;
	}
	if (r)
		r->programmed = !r->err;
	return 0;
}

int gbpf_sync_vpcs(struct gbpf *g, const struct gdp_state *d, struct gdp_results *res,
		   struct gbpf_sync_stats *st)
{
	uint32_t want[GBPF_MAX_ARG] = { 0 }; /* arg -> table, 0 = none */
	char err[512];
	int first = 0, e;

	for (size_t i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *v = &d->vpcs[i];
		struct gdp_result *r = res ? gdp_results_get(res, GDP_OBJ_VPC, v->id, "") : NULL;

		if ((e = gdp_validate_vpc(d, i, err, sizeof(err)))) {
			gdp_result_fail(r, e, "%s", err);
			first = first ? first : e;
			continue;
		}
		want[v->arg] = v->table;
	}
	/* All 4096 entries in one call rather than 4096 lookups. */
	static __thread __u32 keys[GBPF_MAX_ARG];
	static __thread struct gbpf_vpc vals[GBPF_MAX_ARG];
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	__u32 count = GBPF_MAX_ARG, token;

	if (bpf_map_lookup_batch(gbpf_map_fd(g, GBPF_MAP_VPCS), NULL, &token, keys, vals, &count, &bo) &&
	    errno != ENOENT)
		count = 0; /* no batch op here: per entry below */
	for (uint16_t arg = 1; arg < GBPF_MAX_ARG; arg++) {
		struct gbpf_vpc have = { 0 };
		bool valid;

		if (count == GBPF_MAX_ARG && keys[arg] == arg)
			have = vals[arg];
		else if ((e = gbpf_get_vpc(g, arg, &have)))
			return e;
		valid = have.flags & GBPF_VPC_VALID;
		if (want[arg] && valid && have.table == want[arg]) {
			st->unchanged++;
			continue;
		}
		if (!want[arg] && !valid)
			continue;
		e = want[arg] ? gbpf_set_vpc(g, arg, want[arg], err, sizeof(err))
			      : gbpf_del_vpc(g, arg, err, sizeof(err));
		if (e) {
			for (size_t i = 0; res && i < d->n_vpcs; i++)
				if (d->vpcs[i].arg == arg)
					gdp_result_fail(gdp_results_get(res, GDP_OBJ_VPC, d->vpcs[i].id, ""),
							e, "%s", err);
			st->failed++;
			first = first ? first : e;
			continue;
		}
		if (want[arg])
			st->added++;
		else
			st->removed++;
	}
	for (size_t i = 0; res && i < d->n_vpcs; i++) {
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_VPC, d->vpcs[i].id, "");

		if (r && !r->err)
			r->programmed = true;
	}
	return first;
}

/*
 * The entries a full sync wants, by index: [0, nf) the fixed ones (local pod
 * addresses first, then the egress defaults) kept as keys and values, then
 * one per remote, whose key and value are derived again when needed (from
 * the prefix, the VPC argument found in the first pass and the SID's next
 * hop) rather than kept: at 100,000 remotes that is 6.4 MB not held.
 */
struct plan {
	const struct gdp_state *d;
	gbpf_l2_fn l2;
	void *l2ctx;
	struct gbpf_route_key *fk;
	struct gbpf_route *fv;
	long *fsrc;              /* per fixed entry: -1 local pod address, -3 egress default */
	size_t nf, n;            /* n = nf + d->n_remotes */
	uint16_t *arg;           /* per remote: VPC argument; 0 = not written (invalid, duplicate) */
	uint64_t *same;          /* bit per entry: the map holds it as wanted */
};

static void plan_key(const struct plan *p, size_t i, struct gbpf_route_key *k)
{
	const struct gdp_remote *rm;

	if (i < p->nf) {
		*k = p->fk[i];
		return;
	}
	rm = &p->d->remotes[i - p->nf];
	gbpf_route_key(k, p->arg[i - p->nf], rm->prefix.family, rm->prefix.addr.raw, rm->prefix.len);
}

static void plan_val(const struct plan *p, size_t i, struct gbpf_route *v)
{
	const struct gbpf_route *t = NULL;
	const struct gdp_remote *rm;

	if (i < p->nf) {
		*v = p->fv[i];
		return;
	}
	rm = &p->d->remotes[i - p->nf];
	if (p->l2)
		t = p->l2(p->l2ctx, rm->sid.s6_addr);
	if (t)
		*v = *t;
	else
		memset(v, 0, sizeof(*v));
	memcpy(v->sid, rm->sid.s6_addr, 16);
}

/*
 * Open-addressing set of the wanted entries, keyed by route key: finds
 * duplicates and answers "is this map key wanted" in O(1) (a sort of 100k
 * entries costs more than the checks around it). Slots hold an entry index,
 * not the key: the key is derived again on a tag match.
 */
_Static_assert(sizeof(struct gbpf_route_key) == 24, "route key hashed as three words");
struct kset {
	uint32_t *slot;          /* hash tag << 24 | (index + 1); 0 = empty (4 B a slot: 1 MiB at 100,000) */
	size_t mask;
};
#define KSET_MAX_ENTRIES ((1u << 24) - 1)

static uint64_t mix(uint64_t h)
{
	/* splitmix64's finalizer: every input bit reaches the low (masked) bits. */
	h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
	h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
	return h ^ (h >> 31);
}

static uint64_t key_hash(const struct gbpf_route_key *k)
{
	uint64_t x[3];

	memcpy(x, k, sizeof(x));
	return mix(x[0] * 0x9E3779B97F4A7C15ull ^ x[1] * 0xC2B2AE3D27D4EB4Full ^ x[2]);
}

static int kset_init(struct kset *s, size_t n)
{
	size_t sz = 16;

	if (n >= KSET_MAX_ENTRIES)
		return -E2BIG; /* far beyond the routes map (GBPF_MAX_ROUTES) */
	while (sz < n * 2)
		sz <<= 1;
	s->slot = calloc(sz, sizeof(*s->slot));
	s->mask = sz - 1;
	return s->slot ? 0 : -ENOMEM;
}

/*
 * Index of the entry with key k (hash h = key_hash(k)), or -1; with add,
 * inserts idx when absent. The tag spares most probes a look at the wanted key.
 */
static long kset_probe_h(struct kset *s, const struct plan *p, const struct gbpf_route_key *k, uint64_t h,
			 bool add, size_t idx)
{
	uint32_t tag = (uint32_t)(h >> 56);

	for (size_t i = h & s->mask;; i = (i + 1) & s->mask) {
		uint32_t v = s->slot[i], at = v & KSET_MAX_ENTRIES;
		struct gbpf_route_key have;

		if (!v) {
			if (add)
				s->slot[i] = tag << 24 | ((uint32_t)idx + 1);
			return -1;
		}
		if ((v >> 24) != tag)
			continue;
		plan_key(p, at - 1, &have);
		if (!memcmp(&have, k, sizeof(*k)))
			return (long)at - 1;
	}
}

static long kset_probe(struct kset *s, const struct plan *p, const struct gbpf_route_key *k, bool add,
		       size_t idx)
{
	return kset_probe_h(s, p, k, key_hash(k), add, idx);
}

/*
 * Results for 100k remotes: appended without gdp_results_get's search (each
 * remote key is unique once duplicates are failed), which would be quadratic.
 */
struct gdp_result *gbpf_result_remote(struct gdp_results *res, const struct gdp_remote *rm)
{
	struct gdp_result *x;

	if (G_GROW(res->v, res->cap, res->n, 64))
		return NULL;
	x = &res->v[res->n++];
	/* Field by field: zeroing all 400 bytes (msg) of 100k results costs more than the rest. */
	const char *vpc = gdp_remote_vpc(rm);
	size_t vl = strnlen(vpc, sizeof(x->vpc) - 1);

	x->kind = GDP_OBJ_REMOTE;
	x->err = 0;
	x->programmed = false;
	x->msg[0] = 0;
	memcpy(x->vpc, vpc, vl);
	x->vpc[vl] = 0;
	gbpf_prefix_str(&rm->prefix, x->key, sizeof(x->key));
	return x;
}

/*
 * gdp_validate_remote's checks without its string formatting (which costs
 * more than the map update at 100k remotes). Only says "certainly valid";
 * anything else goes to gdp_validate_remote for the verdict and message.
 * Collisions with local pod addresses are caught by the sorted dedupe.
 */
static bool remote_surely_valid(const struct gdp_vpc *v, const struct gdp_remote *r)
{
	const struct in6_addr *a = &r->sid;
	unsigned bits = r->prefix.family == AF_INET ? 32 : 128;
	bool in = !v || !v->n_prefixes;

	if (!v || (r->prefix.family != AF_INET && r->prefix.family != AF_INET6) ||
	    r->prefix.len > bits)
		return false;
	/* host bits zero, byte by byte */
	for (unsigned i = r->prefix.len / 8; i < bits / 8; i++)
		if (r->prefix.addr.raw[i] & (i == r->prefix.len / 8 ? 0xffu >> (r->prefix.len % 8) : 0xffu))
			return false;
	for (size_t i = 0; !in && i < v->n_prefixes; i++)
		in = gdp_prefix_contains(&v->prefixes[i], &r->prefix);
	return in && !IN6_IS_ADDR_UNSPECIFIED(a) && !IN6_IS_ADDR_LOOPBACK(a) &&
	       !IN6_IS_ADDR_MULTICAST(a) && !IN6_IS_ADDR_LINKLOCAL(a) && !IN6_IS_ADDR_V4MAPPED(a) &&
	       !IN6_IS_ADDR_V4COMPAT(a) && !gdp_sid_parse(a, NULL, NULL, NULL, NULL);
}

static void want_key(struct gbpf_route_key *k, uint16_t arg, const struct gdp_prefix *p)
{
	gbpf_route_key(k, arg, p->family, p->addr.raw, p->len);
}

_Static_assert(GBPF_MARK_SHARD == GDE_MARK_OUT && GBPF_MARK_MASK == GDE_MARK_MASK,
	       "the bpf shard mark is the nftables translator's");

size_t gbpf_shard_routes(const struct gdp_state *d, struct gbpf_route_key *k, struct gbpf_route *v,
			 size_t cap)
{
	struct gde_shard sh = { 0 };
	char err[256];
	size_t n = 0;

	if (!d->egress.have)
		return 0;
	sh.sid = d->egress.sid;
	sh.addr6 = d->egress.addr6;
	sh.have_v4 = d->egress.have_v4;
	sh.addr4 = d->egress.addr4;
	snprintf(sh.oif, sizeof(sh.oif), "%s", "lo"); /* the device is the kernel side's to check */
	if (gde_validate_shard(&sh, err, sizeof(err)))
		return 0; /* the egress result says why (kernel backend) */
	for (size_t i = 0; i < d->n_vpcs; i++) {
		const struct gdp_vpc *vp = &d->vpcs[i];
		unsigned fam = 0;

		if (!vp->arg || vp->arg >= GBPF_MAX_ARG)
			continue;
		for (size_t j = 0; j < d->n_atts; j++)
			if (!strcmp(d->atts[j].vpc, vp->id))
				fam |= d->atts[j].egress;
		fam &= GDP_FAM_V6 | (sh.have_v4 ? GDP_FAM_V4 : 0);
		for (int f = 0; f < 2; f++) {
			int af = f ? AF_INET : AF_INET6;
			static const uint8_t any[16];
			struct in6_addr sid;

			if (!(fam & (f ? GDP_FAM_V4 : GDP_FAM_V6)))
				continue;
			if (n < cap) {
				gbpf_route_key(&k[n], vp->arg, af, any, 0);
				memset(&v[n], 0, sizeof(v[n]));
				gde_vpc_sid(&sh.sid, af, vp->arg, &sid);
				memcpy(v[n].sid, sid.s6_addr, 16);
				v[n].flags = GBPF_RT_SHARD;
			}
			n++;
		}
	}
	return n;
}

/* A remote that fails: its own result (the programmed ones are only counted). */
static void fail_remote(struct gdp_results *res, const struct gdp_remote *rm, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fail_remote(struct gdp_results *res, const struct gdp_remote *rm, int e, const char *fmt, ...)
{
	struct gdp_result *r = res ? gbpf_result_remote(res, rm) : NULL;
	char msg[sizeof(r->msg)];
	va_list ap;

	if (!r)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gdp_result_fail(r, e, "%s", msg);
}

/*
 * Batches of this many entries: the arrays handed to the kernel (and those
 * the map is read into) stay small and warm whatever the number of remotes.
 */
#define SYNC_CHUNK 2048
/* Remotes whose hash slots are fetched ahead of their probes. */
#define PROBE_BLOCK 32

struct chunk {
	struct gbpf_route_key k[SYNC_CHUNK];
	struct gbpf_route v[SYNC_CHUNK];
	size_t at[SYNC_CHUNK];   /* entry index */
	size_t n;
};

static void note_failed(const struct plan *p, size_t i, struct gdp_results *res, int e, const char *err,
			unsigned long *nfailed)
{
	if (i < p->nf) {
		if (p->fsrc[i] == -3 && res)
			gdp_result_fail(gdp_results_find(res, GDP_OBJ_EGRESS, "", ""), e,
					"egress shard: bpf default route: %s", err);
		return;
	}
	fail_remote(res, &p->d->remotes[i - p->nf], e, "%s", err);
	p->arg[i - p->nf] = 0;
	(*nfailed)++;
}

/* Writes one chunk; on a failure, entry by entry so each error goes to its own object. */
static int flush_chunk(struct gbpf *g, const struct plan *p, struct chunk *c, struct gdp_results *res,
		       struct gbpf_sync_stats *st, unsigned long *nfailed)
{
	int fd = gbpf_map_fd(g, GBPF_MAP_ROUTES), first = 0, e;
	char err[512];

	if (!c->n)
		return 0;
	if (!gbpf_set_routes(g, c->k, c->v, c->n, err, sizeof(err))) {
		st->added += c->n;
		c->n = 0;
		return 0;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct gbpf_route have;

		if (!bpf_map_lookup_elem(fd, &c->k[i], &have) && !memcmp(&have, &c->v[i], sizeof(have))) {
			st->added++;
			continue;
		}
		if ((e = gbpf_set_route(g, &c->k[i], &c->v[i], err, sizeof(err)))) {
			first = first ? first : e;
			note_failed(p, c->at[i], res, e, err, nfailed);
			continue;
		}
		st->added++;
	}
	c->n = 0;
	return first;
}

/* One entry of the map as read: wanted and equal (same), wanted and different, or stale. */
static int walk_one(struct kset *set, struct plan *p, const struct gbpf_route_key *k, const struct gbpf_route *v,
		    struct gbpf_route_key **stale, size_t *nstale, size_t *capstale)
{
	long at = kset_probe(set, p, k, false, 0);
	int rc;

	if (at >= 0) {
		struct gbpf_route want;

		plan_val(p, (size_t)at, &want);
		if (!memcmp(v, &want, sizeof(want)))
			p->same[(size_t)at / 64] |= 1ull << ((size_t)at % 64);
		return 0;
	}
	if ((rc = G_GROW(*stale, *capstale, *nstale, 256)))
		return rc;
	(*stale)[(*nstale)++] = *k;
	return 0;
}

/*
 * What the trie holds now, read in batches (one walk in the kernel per
 * SYNC_CHUNK entries; one lookup per entry where the kernel has no batch
 * lookup for the trie): equal entries are marked same, keys nobody wants
 * are collected in stale.
 */
static int walk_map(int fd, struct kset *set, struct plan *p, struct chunk *c, struct gbpf_route_key **stale,
		    size_t *nstale, size_t *capstale)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	struct gbpf_route_key tin, tout, cur, next;
	void *in = NULL, *prev = NULL;
	int e;

	for (;;) {
		__u32 cnt = SYNC_CHUNK;
		int rc = bpf_map_lookup_batch(fd, in, &tout, c->k, c->v, &cnt, &bo);
		int why = rc ? errno : 0;

		if (rc && why != ENOENT && !in && (why == EINVAL || why == ENOTSUP || why == EOPNOTSUPP))
			break; /* no batch lookup here: the walk below */
		if (rc && why != ENOENT)
			return -why;
		for (__u32 i = 0; i < cnt; i++)
			if ((e = walk_one(set, p, &c->k[i], &c->v[i], stale, nstale, capstale)))
				return e;
		if (rc)
			return 0; /* ENOENT: the walk is complete */
		tin = tout;
		in = &tin;
	}
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct gbpf_route have;

		cur = next;
		prev = &cur;
		if (bpf_map_lookup_elem(fd, &cur, &have))
			continue;
		if ((e = walk_one(set, p, &cur, &have, stale, nstale, capstale)))
			return e;
	}
	return 0;
}

int gbpf_sync_routes(struct gbpf *g, const struct gdp_state *d, gbpf_l2_fn l2, void *l2ctx,
		     struct gdp_results *res, struct gbpf_sync_stats *st)
{
	int fd = gbpf_map_fd(g, GBPF_MAP_ROUTES), first = 0, e;
	struct plan p = { .d = d, .l2 = l2, .l2ctx = l2ctx };
	struct gdp_locals locals = { 0 };
	struct gbpf_route_key *stale = NULL;
	size_t nstale = 0, capstale = 0, capf = 1;
	unsigned long nfailed = 0;
	const struct gdp_vpc *last = NULL;
	uint32_t last_ix = 0;
	struct kset set = { 0 };
	struct chunk *c = NULL;
	char err[512];

	for (size_t i = 0; i < d->n_atts; i++)
		capf += d->atts[i].n_addrs;
	capf += gbpf_shard_routes(d, NULL, NULL, 0);
	p.fk = malloc(capf * sizeof(*p.fk));
	p.fv = malloc(capf * sizeof(*p.fv));
	p.fsrc = malloc(capf * sizeof(*p.fsrc));
	p.arg = calloc(d->n_remotes + 1, sizeof(*p.arg));
	c = malloc(sizeof(*c));
	if (!p.fk || !p.fv || !p.fsrc || !p.arg || !c) {
		e = -ENOMEM;
		goto out;
	}
	/* Local pod addresses first: they win over any remote with the same key. */
	for (size_t i = 0; i < d->n_atts; i++) {
		const struct gdp_vpc *v = gdp_state_find_vpc(d, d->atts[i].vpc);

		for (size_t j = 0; v && j < d->atts[i].n_addrs; j++) {
			want_key(&p.fk[p.nf], v->arg, &d->atts[i].addrs[j]);
			memset(&p.fv[p.nf], 0, sizeof(p.fv[p.nf]));
			p.fv[p.nf].flags = GBPF_RT_LOCAL;
			p.fsrc[p.nf++] = -1;
		}
	}
	/* The egress defaults next: a remote /0 in an egressing VPC loses to them. */
	{
		size_t ns = gbpf_shard_routes(d, p.fk + p.nf, p.fv + p.nf, capf - p.nf);

		for (size_t i = 0; i < ns; i++)
			p.fsrc[p.nf++] = -3;
	}
	p.n = p.nf + d->n_remotes;
	if ((e = kset_init(&set, p.n)))
		goto out;
	for (size_t i = 0; i < p.nf; i++)
		kset_probe(&set, &p, &p.fk[i], true, i); /* a local address twice: written once */
	/*
	 * Each remote: valid, and its key not taken by a local, an egress
	 * default or an earlier remote. In blocks: keys and hashes first, their
	 * slots fetched ahead, then the probes (in model order).
	 */
	for (size_t i0 = 0; i0 < d->n_remotes; i0 += PROBE_BLOCK) {
		size_t nb = d->n_remotes - i0 < PROBE_BLOCK ? d->n_remotes - i0 : PROBE_BLOCK;
		struct gbpf_route_key bk[PROBE_BLOCK];
		uint64_t bh[PROBE_BLOCK];

		for (size_t j = 0; j < nb; j++) {
			const struct gdp_remote *rm = &d->remotes[i0 + j];

			if (!last || last_ix != rm->vpc_ix)
				last = gdp_state_find_vpc(d, gdp_remote_vpc(rm)), last_ix = rm->vpc_ix;
			if (!remote_surely_valid(last, rm) &&
			    (e = gdp_validate_remote_in(d, &locals, i0 + j, err, sizeof(err)))) {
				fail_remote(res, rm, e, "%s", err);
				nfailed++;
				continue;
			}
			p.arg[i0 + j] = last->arg;
			want_key(&bk[j], last->arg, &rm->prefix);
			bh[j] = key_hash(&bk[j]);
			__builtin_prefetch(&set.slot[bh[j] & set.mask], 1);
		}
		for (size_t j = 0; j < nb; j++) {
			size_t i = i0 + j;
			const struct gdp_remote *rm = &d->remotes[i];
			long dup;

			if (!p.arg[i] || (dup = kset_probe_h(&set, &p, &bk[j], bh[j], true, p.nf + i)) < 0)
				continue;
			p.arg[i] = 0; /* not written */
			nfailed++;
			if (res) {
				char pb[64];

				fail_remote(res, rm, -EEXIST, "remote %s in vpc %s: %s",
					    gdp_prefix_str(&rm->prefix, pb, sizeof(pb)), gdp_remote_vpc(rm),
					    (size_t)dup < p.nf && p.fsrc[dup] == -3
						    ? "the VPC's egress default toward the shard has it"
					    : (size_t)dup < p.nf ? "a local attachment has it"
								 : "duplicate of an earlier remote");
			}
		}
	}

	/* What the trie holds now: stale keys go, equal entries stay untouched. */
	p.same = calloc(p.n / 64 + 1, sizeof(*p.same));
	if (!p.same) {
		e = -ENOMEM;
		goto out;
	}
	if ((e = walk_map(fd, &set, &p, c, &stale, &nstale, &capstale)))
		goto out;
	for (size_t i = 0; i < nstale; i++) {
		if ((e = gbpf_del_route(g, &stale[i], err, sizeof(err)))) {
			st->failed++;
			first = first ? first : e;
			continue;
		}
		st->removed++;
	}
	/* What must be written, SYNC_CHUNK entries per batch. */
	c->n = 0;
	for (size_t i = 0; i < p.n; i++) {
		bool dup;

		if (p.same[i / 64] & (1ull << (i % 64))) {
			st->unchanged++;
			continue;
		}
		if (i >= p.nf) {
			if (!p.arg[i - p.nf])
				continue;
		} else {
			/* a fixed entry is written once: the first with its key */
			dup = kset_probe(&set, &p, &p.fk[i], false, 0) != (long)i;
			if (dup)
				continue;
		}
		plan_key(&p, i, &c->k[c->n]);
		plan_val(&p, i, &c->v[c->n]);
		c->at[c->n++] = i;
		if (c->n == SYNC_CHUNK && (e = flush_chunk(g, &p, c, res, st, &nfailed)))
			first = first ? first : e;
	}
	if ((e = flush_chunk(g, &p, c, res, st, &nfailed)))
		first = first ? first : e;
	e = 0;
out:
	st->failed += nfailed;
	if (nfailed)
		first = first ? first : -EINVAL;
	if (!e && res)
		res->remotes_ok += d->n_remotes - nfailed; /* programmed: counted, no entry each */
	gdp_locals_free(&locals);
	free(set.slot);
	free(p.same);
	free(p.fk);
	free(p.fv);
	free(p.fsrc);
	free(p.arg);
	free(c);
	free(stale);
	return e ? e : first;
}

int gbpf_sync_routes_delta(struct gbpf *g, const struct gdp_state *d, const struct gdp_delta *dl,
			   gbpf_l2_fn l2, void *l2ctx, struct gdp_results *res, struct gbpf_sync_stats *st)
{
	size_t cap = dl->n_remotes + 1, n = 0;
	struct gbpf_route_key *k, gk;
	struct gbpf_route *v;
	struct gdp_result **who;
	struct gdp_locals locals = { 0 };
	char err[512], pb[64];
	int first = 0, e;

	for (size_t i = 0; i < dl->n_atts; i++)
		cap += d->atts[dl->atts[i]].n_addrs;
	k = malloc(cap * sizeof(*k));
	v = malloc(cap * sizeof(*v));
	who = calloc(cap, sizeof(*who));
	if (!k || !v || !who) {
		first = -ENOMEM;
		goto out;
	}
	/* the added attachments' pod addresses, marked local */
	for (size_t i = 0; i < dl->n_atts; i++) {
		const struct gdp_attachment *a = &d->atts[dl->atts[i]];
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, a->vpc);

		for (size_t j = 0; vp && j < a->n_addrs; j++) {
			want_key(&k[n], vp->arg, &a->addrs[j]);
			memset(&v[n], 0, sizeof(v[n]));
			v[n].flags = GBPF_RT_LOCAL;
			who[n++] = gdp_results_find(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);
		}
	}
	/* the remotes added or changed */
	for (size_t i = 0; i < dl->n_remotes; i++) {
		const struct gdp_remote *rm = &d->remotes[dl->remotes[i]];
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, gdp_remote_vpc(rm));
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_REMOTE, gdp_remote_vpc(rm),
							 gbpf_prefix_str(&rm->prefix, pb, sizeof(pb)));
		const struct gbpf_route *t = NULL;

		if (!r) {
			first = -ENOMEM;
			goto out;
		}
		/* the full check: a local pod address with this key fails it */
		if ((e = gdp_validate_remote_in(d, &locals, dl->remotes[i], err, sizeof(err)))) {
			gdp_result_fail(r, e, "%s", err);
			st->failed++;
			first = first ? first : e;
			continue;
		}
		want_key(&k[n], vp->arg, &rm->prefix);
		if (l2)
			t = l2(l2ctx, rm->sid.s6_addr);
		if (t)
			v[n] = *t;
		else
			memset(&v[n], 0, sizeof(v[n]));
		memcpy(v[n].sid, rm->sid.s6_addr, 16);
		who[n++] = r;
	}
	if (n && gbpf_set_routes(g, k, v, n, err, sizeof(err))) {
		for (size_t i = 0; i < n; i++)
			if ((e = gbpf_set_route(g, &k[i], &v[i], err, sizeof(err)))) {
				if (who[i])
					gdp_result_fail(who[i], e, "%s", err);
				st->failed++;
				first = first ? first : e;
			} else {
				st->added++;
			}
	} else {
		st->added += n;
	}
	/* what went: the removed attachments' addresses and the forgotten remotes */
	for (size_t i = 0; i < dl->n_gone_atts; i++) {
		const struct gdp_attachment *a = &dl->gone_atts[i];
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, a->vpc);

		for (size_t j = 0; vp && j < a->n_addrs; j++) {
			want_key(&gk, vp->arg, &a->addrs[j]);
			if ((e = gbpf_del_route(g, &gk, err, sizeof(err))))
				first = first ? first : e, st->failed++;
			else
				st->removed++;
		}
	}
	for (size_t i = 0; i < dl->n_gone_remotes; i++) {
		const struct gdp_remote *rm = &dl->gone_remotes[i];
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, gdp_remote_vpc(rm));

		if (!vp)
			continue;
		want_key(&gk, vp->arg, &rm->prefix);
		if ((e = gbpf_del_route(g, &gk, err, sizeof(err))))
			first = first ? first : e, st->failed++;
		else
			st->removed++;
	}
out:
	gdp_locals_free(&locals);
	free(k);
	free(v);
	free(who);
	return first;
}
