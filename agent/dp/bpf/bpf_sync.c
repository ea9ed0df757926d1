/* Desired state -> bpf maps, level-triggered (see bpf_sync.h). */
#include "agent/dp/bpf/bpf_sync.h"
#include "agent/dp/egress.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
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
 * The wanted trie entries as parallel arrays (keys, values, origin), so the
 * batch update takes them as they are: origin is the remote's index, -1 for
 * a local pod address, -2 for an entry not to write (duplicate).
 */
struct wants {
	struct gbpf_route_key *k;
	struct gbpf_route *v;
	long *remote;
	size_t n;
};

/*
 * Open-addressing set of entries of the wanted keys, keyed by route key: finds
 * duplicates and answers "is this map key wanted" in O(1) (a sort of 100k
 * entries costs more than the checks around it).
 */
_Static_assert(sizeof(struct gbpf_route_key) == 24, "route key hashed as three words");
struct kset {
	uint64_t *slot;          /* hash tag << 32 | (index + 1); 0 = empty */
	size_t mask;
};

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
	return mix(mix(mix(x[0]) ^ x[1]) ^ x[2]);
}

static int kset_init(struct kset *s, size_t n)
{
	size_t sz = 16;

	while (sz < n * 2)
		sz <<= 1;
	s->slot = calloc(sz, sizeof(*s->slot));
	s->mask = sz - 1;
	return s->slot ? 0 : -ENOMEM;
}

/*
 * Index of the entry with key k, or -1; with add, inserts idx when absent.
 * The tag spares most probes a look at the (cache-cold) wanted key.
 */
static long kset_probe(struct kset *s, const struct gbpf_route_key *wk, const struct gbpf_route_key *k,
		       bool add, size_t idx)
{
	uint64_t h = key_hash(k), tag = h >> 32;

	for (size_t i = h & s->mask;; i = (i + 1) & s->mask) {
		uint64_t v = s->slot[i];
		uint32_t at = (uint32_t)v;

		if (!v) {
			if (add)
				s->slot[i] = tag << 32 | ((uint32_t)idx + 1);
			return -1;
		}
		if ((v >> 32) == tag && !memcmp(&wk[at - 1], k, sizeof(*k)))
			return (long)at - 1;
	}
}

/*
 * Results for 100k remotes: appended without gdp_results_get's search (each
 * remote key is unique once duplicates are failed), which would be quadratic.
 */
struct gdp_result *gbpf_result_remote(struct gdp_results *res, const struct gdp_remote *rm)
{
	struct gdp_result *x;

	if (res->n == res->cap) {
		size_t nc = res->cap ? res->cap * 2 : 64;
		struct gdp_result *nv = realloc(res->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		res->v = nv;
		res->cap = nc;
	}
	x = &res->v[res->n++];
	/* Field by field: zeroing all 400 bytes (msg) of 100k results costs more than the rest. */
	size_t vl = strnlen(rm->vpc, sizeof(x->vpc) - 1);

	x->kind = GDP_OBJ_REMOTE;
	x->err = 0;
	x->programmed = false;
	x->msg[0] = 0;
	memcpy(x->vpc, rm->vpc, vl);
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
	for (unsigned i = r->prefix.len; i < bits; i++)
		if (r->prefix.addr.raw[i / 8] & (0x80 >> (i % 8)))
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

int gbpf_sync_routes(struct gbpf *g, const struct gdp_state *d, gbpf_l2_fn l2, void *l2ctx,
		     struct gdp_results *res, struct gbpf_sync_stats *st)
{
	int fd = gbpf_map_fd(g, GBPF_MAP_ROUTES), first = 0, e;
	size_t cap = d->n_remotes + 1, nupd = 0, base = res ? res->n : 0;
	struct gbpf_route_key *stale = NULL, cur, next;
	size_t nstale = 0, capstale = 0;
	struct kset set = { 0 };
	struct wants w = { 0 };
	bool *failed, *same = NULL;
	char err[512];
	void *prev;

	for (size_t i = 0; i < d->n_atts; i++)
		cap += d->atts[i].n_addrs;
	cap += gbpf_shard_routes(d, NULL, NULL, 0);
	w.k = malloc(cap * sizeof(*w.k));
	w.v = malloc(cap * sizeof(*w.v));
	w.remote = malloc(cap * sizeof(*w.remote));
	failed = calloc(d->n_remotes + 1, sizeof(*failed));
	if (!w.k || !w.v || !w.remote || !failed) {
		e = -ENOMEM;
		goto out;
	}
	if (res && d->n_remotes && res->cap < res->n + d->n_remotes) {
		struct gdp_result *nv = realloc(res->v, (res->n + d->n_remotes) * sizeof(*nv));

		if (!nv) {
			e = -ENOMEM;
			goto out;
		}
		res->v = nv;
		res->cap = res->n + d->n_remotes;
	}
	/* Local pod addresses first: they win over any remote with the same key. */
	for (size_t i = 0; i < d->n_atts; i++) {
		const struct gdp_vpc *v = gdp_state_find_vpc(d, d->atts[i].vpc);

		for (size_t j = 0; v && j < d->atts[i].n_addrs; j++) {
			want_key(&w.k[w.n], v->arg, &d->atts[i].addrs[j]);
			memset(&w.v[w.n], 0, sizeof(w.v[w.n]));
			w.v[w.n].flags = GBPF_RT_LOCAL;
			w.remote[w.n++] = -1;
		}
	}
	/* The egress defaults next: a remote /0 in an egressing VPC loses to them. */
	{
		size_t ns = gbpf_shard_routes(d, w.k + w.n, w.v + w.n, cap - w.n);

		for (size_t i = 0; i < ns; i++)
			w.remote[w.n++] = -3;
	}
	for (size_t i = 0; i < d->n_remotes; i++) {
		const struct gdp_remote *rm = &d->remotes[i];
		const struct gdp_vpc *v = gdp_state_find_vpc(d, rm->vpc);
		struct gdp_result *r = res ? gbpf_result_remote(res, rm) : NULL;
		const struct gbpf_route *t = NULL;

		if (!remote_surely_valid(v, rm) && (e = gdp_validate_remote(d, i, err, sizeof(err)))) {
			gdp_result_fail(r, e, "%s", err);
			failed[i] = true;
			continue;
		}
		want_key(&w.k[w.n], v->arg, &rm->prefix);
		if (l2)
			t = l2(l2ctx, rm->sid.s6_addr);
		if (t)
			w.v[w.n] = *t;
		else
			memset(&w.v[w.n], 0, sizeof(w.v[w.n]));
		memcpy(w.v[w.n].sid, rm->sid.s6_addr, 16);
		w.remote[w.n++] = (long)i;
	}
	if ((e = kset_init(&set, w.n)))
		goto out;
	for (size_t i = 0; i < w.n; i++) {
		long dup = kset_probe(&set, w.k, &w.k[i], true, i);
		const struct gdp_remote *rm;
		char pb[64];

		if (dup < 0)
			continue;
		if (w.remote[i] >= 0) {
			rm = &d->remotes[w.remote[i]];
			failed[w.remote[i]] = true;
			if (res)
				gdp_result_fail(&res->v[base + (size_t)w.remote[i]], -EEXIST,
						"remote %s in vpc %s: %s",
						gdp_prefix_str(&rm->prefix, pb, sizeof(pb)), rm->vpc,
						w.remote[dup] == -3 ? "the VPC's egress default toward the shard has it"
						: w.remote[dup] < 0 ? "a local attachment has it"
								    : "duplicate of an earlier remote");
		}
		w.remote[i] = -2; /* not written */
	}

	/* What the trie holds now: stale keys go, equal entries stay untouched. */
	same = calloc(w.n + 1, sizeof(*same));
	if (!same) {
		e = -ENOMEM;
		goto out;
	}
	prev = NULL;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		long at = kset_probe(&set, w.k, &next, false, 0);
		struct gbpf_route have;

		cur = next;
		prev = &cur;
		if (at >= 0) {
			/* Present: untouched when equal, rewritten below when not. */
			if (!bpf_map_lookup_elem(fd, &cur, &have) && !memcmp(&have, &w.v[at], sizeof(have)))
				same[at] = true;
			continue;
		}
		if (nstale == capstale) {
			size_t nc = capstale ? capstale * 2 : 256;
			struct gbpf_route_key *ns = realloc(stale, nc * sizeof(*ns));

			if (!ns) {
				e = -ENOMEM;
				goto out;
			}
			stale = ns;
			capstale = nc;
		}
		stale[nstale++] = cur;
	}
	for (size_t i = 0; i < nstale; i++) {
		if ((e = gbpf_del_route(g, &stale[i], err, sizeof(err)))) {
			st->failed++;
			first = first ? first : e;
			continue;
		}
		st->removed++;
	}
	/* Compact in place to what must be written; the arrays go to the kernel as they are. */
	for (size_t i = 0; i < w.n; i++) {
		if (w.remote[i] == -2)
			continue;
		if (same[i]) {
			st->unchanged++;
			continue;
		}
		if (nupd != i) {
			w.k[nupd] = w.k[i];
			w.v[nupd] = w.v[i];
			w.remote[nupd] = w.remote[i];
		}
		nupd++;
	}
	if (nupd && gbpf_set_routes(g, w.k, w.v, nupd, err, sizeof(err))) {
		/* Find who failed: one by one, each error to its own object. */
		for (size_t i = 0; i < nupd; i++) {
			struct gbpf_route have;

			if (!bpf_map_lookup_elem(fd, &w.k[i], &have) && !memcmp(&have, &w.v[i], sizeof(have)))
				continue;
			if ((e = gbpf_set_route(g, &w.k[i], &w.v[i], err, sizeof(err)))) {
				first = first ? first : e;
				if (w.remote[i] == -3 && res)
					gdp_result_fail(gdp_results_find(res, GDP_OBJ_EGRESS, "", ""), e,
							"egress shard: bpf default route: %s", err);
				if (w.remote[i] >= 0) {
					failed[w.remote[i]] = true;
					if (res)
						gdp_result_fail(&res->v[base + (size_t)w.remote[i]], e,
								"%s", err);
				}
			}
		}
	}
	st->added += nupd;
	e = 0;
out:
	for (size_t i = 0; i < d->n_remotes; i++) {
		if (failed && failed[i]) {
			st->failed++;
			first = first ? first : -EINVAL;
		} else if (res && !e) {
			res->v[base + i].programmed = true;
		}
	}
	free(set.slot);
	free(same);
	free(w.k);
	free(w.v);
	free(w.remote);
	free(failed);
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
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, rm->vpc);
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_REMOTE, rm->vpc,
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
		const struct gdp_vpc *vp = gdp_state_find_vpc(d, rm->vpc);

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
