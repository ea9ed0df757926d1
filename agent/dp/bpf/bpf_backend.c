/* The bpf backend: kernel backend for pod plumbing, TC programs for SRv6. */
#include "agent/dp/bpf/bpf_backend.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/neighbour.h>
#include <netlink/msg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/bpf/bpf_sync.h"
#include "agent/nl/nl.h"
#include "agent/nl/objects.h"
#include "common/grow.h"

/* A neighbour state with a usable address (the kernel's NUD_VALID). */
#define NH_VALID (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY)

/* Next hops (underlay neighbours) the routes' precomputed L2 points at. */
#define NH_MAX 64
struct nh_use {
	uint32_t ifindex;
	uint8_t addr[16];
	uint8_t dmac[6];
	bool l2;            /* resolved: the routes toward it carry dmac */
};

struct bpf_backend {
	struct gdp_backend base;
	struct gdp_backend *kernel;
	struct gbpf *g;
	int nsfd;                    /* the node's netns; -1 = the caller's */
	char pin_root[256];
	bool applied;                /* a first apply happened on this handle */
	pthread_mutex_t nh_mu;       /* guards nh, n_nh (passes write, netlink events read) */
	struct nh_use nh[NH_MAX];
	size_t n_nh;
	unsigned long managed_failed; /* neighbours we could not make managed (old kernel) */
	/* The links a filter of ours belongs on as the last sync and the
	 * deltas since left them (uplinks: decap; host veths: encap), guarded
	 * by nh_mu: the agent's netlink watch asks (gdp_bpf_link_ours) which
	 * link notifications are about the datapath and which are another
	 * CNI's. */
	uint32_t *links;
	size_t n_links, cap_links;
	/* Size check between passes (size_changed): odd while a pass writes;
	 * the routes map's accounted memory after the last write (or as last
	 * reported changed). */
	_Atomic unsigned long wgen;
	_Atomic uint64_t routes_size;
};

/* A pass writes the maps: size checks meanwhile say nothing. */
static void writes_begin(struct bpf_backend *b)
{
	atomic_fetch_add(&b->wgen, 1);
}

static void writes_end(struct bpf_backend *b)
{
	uint64_t m;

	if (!gbpf_map_memlock(b->g, GBPF_MAP_ROUTES, &m))
		atomic_store(&b->routes_size, m);
	atomic_fetch_add(&b->wgen, 1);
}

static struct bpf_backend *of(struct gdp_backend *b)
{
	return b && b->ops == &gdp_bpf_backend ? (struct bpf_backend *)b : NULL;
}

/* TC and ifindexes belong to the node's netns: enter it around those calls. */
static int enter(const struct bpf_backend *b, int *saved)
{
	*saved = -1;
	if (b->nsfd < 0)
		return 0;
	*saved = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*saved < 0)
		return -errno;
	if (setns(b->nsfd, CLONE_NEWNET)) {
		int e = -errno;

		close(*saved);
		*saved = -1;
		return e;
	}
	return 0;
}

static void leave(int saved)
{
	if (saved < 0)
		return;
	/* Failing to return would leave the thread elsewhere: nothing sane to do but stop. */
	if (setns(saved, CLONE_NEWNET))
		abort();
	close(saved);
}

static void bpf_close(struct gdp_backend *base)
{
	struct bpf_backend *b = of(base);

	if (!b)
		return;
	if (b->kernel)
		b->kernel->ops->close(b->kernel);
	gbpf_close(b->g); /* pins and filters stay: a restart loses nothing */
	if (b->nsfd >= 0)
		close(b->nsfd);
	pthread_mutex_destroy(&b->nh_mu);
	free(b->links);
	free(b);
}

/* The link set (under nh_mu): add or drop one ifindex. */
static void links_put(struct bpf_backend *b, uint32_t ifindex, bool ours)
{
	size_t i;

	pthread_mutex_lock(&b->nh_mu);
	for (i = 0; i < b->n_links && b->links[i] != ifindex; i++)
		;
	if (!ours && i < b->n_links) {
		b->links[i] = b->links[--b->n_links];
	} else if (ours && i == b->n_links) {
		/* on failure unknown to the watch: its notifications wait for the periodic pass */
		if (!G_GROW(b->links, b->cap_links, b->n_links, 64))
			b->links[b->n_links++] = ifindex;
	}
	pthread_mutex_unlock(&b->nh_mu);
}

/* The whole set, as one sync found it (v is taken over). */
static void links_set(struct bpf_backend *b, uint32_t *v, size_t n, size_t cap)
{
	pthread_mutex_lock(&b->nh_mu);
	free(b->links);
	b->links = v;
	b->n_links = n;
	b->cap_links = cap;
	pthread_mutex_unlock(&b->nh_mu);
}

static int bpf_open(struct gdp_backend **out, const struct gdp_backend_opts *opts, char *err,
		    size_t errlen)
{
	struct gdp_backend_opts none = { 0 };
	struct bpf_backend *b;
	struct gbpf_opts go;
	char why[512];
	int e;

	*out = NULL;
	opts = opts ? opts : &none;
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "bpf backend: out of memory");
		return -ENOMEM;
	}
	b->base.ops = &gdp_bpf_backend;
	b->nsfd = -1;
	pthread_mutex_init(&b->nh_mu, NULL);
	snprintf(b->pin_root, sizeof(b->pin_root), "%s",
		 opts->bpffs_dir ? opts->bpffs_dir : GBPF_PIN_ROOT_DEFAULT);
	if (opts->netns) {
		char path[300];

		snprintf(path, sizeof(path), strchr(opts->netns, '/') ? "%s" : "/run/netns/%s",
			 opts->netns);
		b->nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (b->nsfd < 0) {
			e = -errno;
			snprintf(err, errlen, "bpf backend: open netns %s: %s", path, strerror(errno));
			goto fail;
		}
	}
	go.pin_root = b->pin_root;
	if ((e = gbpf_open(&b->g, &go, why, sizeof(why)))) {
		snprintf(err, errlen, "bpf backend: %s", why);
		goto fail;
	}
	if ((e = gdp_kernel_backend.open(&b->kernel, opts, why, sizeof(why)))) {
		snprintf(err, errlen, "bpf backend: pod plumbing (kernel backend): %s", why);
		goto fail;
	}
	*out = &b->base;
	return 0;
fail:
	bpf_close(&b->base);
	return e;
}

static int bpf_caps(struct gdp_backend *base, struct gdp_caps *caps)
{
	struct bpf_backend *b = of(base);
	int e = b->kernel->ops->caps(b->kernel, caps);

	if (!e) {
		size_t n = strlen(caps->detail);

		snprintf(caps->detail + n, sizeof(caps->detail) - n,
			 "%sbpf: tc decap/encap, maps v%d in %s", n ? "; " : "", GBPF_BPF_LAYOUT,
			 b->pin_root);
	}
	return e;
}

/* The desired state without remotes: the kernel backend must not program seg6 routes. */
static struct gdp_state no_remotes(const struct gdp_state *d)
{
	struct gdp_state k = *d;

	k.remotes = NULL;
	k.n_remotes = k.cap_remotes = 0;
	k.egress.shard_only = true; /* the trie routes VPCs toward the shard */
	return k;
}

bool gdp_bpf_uplink_kind(const char *kind)
{
	static const char *const kinds[] = { "", "bond", "team", "vlan" };

	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return true;
	return false;
}

/* Whether name (the node's netns: the caller is in it) is of a kind an
 * unnamed uplink can be; *nl is opened on first use, the caller closes it. */
static bool uplink_candidate(const char *name, struct gnl_sock **nl)
{
	struct gnl_link l;
	char err[128];

	if (!*nl && gnl_open(nl, NULL, err, sizeof(err)))
		return false; /* unknown: no decap there this pass (the next one asks again) */
	return gnl_link_get(*nl, name, &l) == 0 && gdp_bpf_uplink_kind(l.kind);
}

/* Uplinks: the node's named uplink, else every link with a global IPv6
 * address that is of an uplink's kind (gdp_bpf_uplink_kind) and not an
 * attachment's. */
static bool is_uplink(const struct gdp_state *d, const char *name, struct ifaddrs *ifa, struct gnl_sock **nl)
{
	const char *up = d->node.uplink;

	if (up[0] && strcmp(up, "lo"))
		return !strcmp(name, up);
	for (size_t i = 0; i < d->n_atts; i++)
		if (!strcmp(d->atts[i].host_ifname, name))
			return false;
	for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
		const struct sockaddr_in6 *s6 = (const void *)a->ifa_addr;

		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET6 || strcmp(a->ifa_name, name) ||
		    (a->ifa_flags & IFF_LOOPBACK))
			continue;
		if (!IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return uplink_candidate(name, nl);
	}
	return false;
}

/*
 * Result slots of the node and of each attachment, found before the 100k
 * remote results are appended (gdp_results_get searches from the end).
 */
struct slots {
	struct gdp_results *res;
	size_t node;
	size_t *att;   /* per d->atts index */
};

static int slots_init(struct slots *sl, struct gdp_results *res, const struct gdp_state *d)
{
	struct gdp_result *r = gdp_results_get(res, GDP_OBJ_NODE, "", "");

	sl->res = res;
	sl->att = calloc(d->n_atts + 1, sizeof(*sl->att));
	if (!r || !sl->att) {
		free(sl->att);
		return -ENOMEM;
	}
	sl->node = (size_t)(r - res->v);
	for (size_t i = 0; i < d->n_atts; i++) {
		r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, d->atts[i].vpc, d->atts[i].id);
		if (!r) {
			free(sl->att);
			return -ENOMEM;
		}
		sl->att[i] = (size_t)(r - res->v);
	}
	return 0;
}

static struct gdp_result *slot_node(const struct slots *sl)
{
	return &sl->res->v[sl->node];
}

static struct gdp_result *slot_att(const struct slots *sl, const struct gdp_state *d,
				   const struct gdp_attachment *a)
{
	return &sl->res->v[sl->att[a - d->atts]];
}

static const struct gdp_attachment *att_of(const struct gdp_state *d, const char *ifname)
{
	for (size_t i = 0; i < d->n_atts; i++)
		if (!strcmp(d->atts[i].host_ifname, ifname))
			return &d->atts[i];
	return NULL;
}

/*
 * Interfaces, filters and next hops, inside the node's netns: every link gets
 * the filter it should have (decap on uplinks, encap on attachments) and
 * loses ours otherwise; the ifaces map follows. What it writes is counted
 * in st (filters attached and ifaces entries set: added; detached and
 * deleted: removed), when fixing.
 */
static int sync_links(struct bpf_backend *b, const struct gdp_state *d, const struct slots *sl,
		      bool fix, int *bad, struct gbpf_sync_stats *st)
{
	struct if_nameindex *links = if_nameindex(), *l;
	struct ifaddrs *ifa = NULL;
	struct gnl_sock *nl = NULL; /* the links' kinds, when no uplink is named */
	char err[512];
	int first = 0, e;
	__u32 key, next, *prev = NULL, *want_if = NULL, *filtered = NULL;
	size_t nwant = 0, nlinks = 0, nfiltered = 0;

	if (!links)
		return -errno;
	for (l = links; l->if_index; l++)
		nlinks++;
	want_if = calloc(nlinks + 1, sizeof(*want_if));
	filtered = calloc(nlinks + 1, sizeof(*filtered));
	if (!want_if || !filtered) {
		free(want_if);
		free(filtered);
		if_freenameindex(links);
		return -ENOMEM;
	}
	if (getifaddrs(&ifa))
		ifa = NULL;
	for (l = links; l->if_index; l++) {
		const struct gdp_attachment *a = att_of(d, l->if_name);
		const struct gdp_vpc *v = a ? gdp_state_find_vpc(d, a->vpc) : NULL;
		struct gdp_result *r = a ? slot_att(sl, d, a) : NULL;
		enum gbpf_prog want;
		int have;

		if (a && v) {
			struct gbpf_iface hv;

			want = GBPF_PROG_ENCAP;
			want_if[nwant++] = l->if_index;
			key = l->if_index;
			if (bpf_map_lookup_elem(gbpf_map_fd(b->g, GBPF_MAP_IFACES), &key, &hv) ||
			    hv.arg != v->arg || !(hv.flags & GBPF_IFACE_VALID)) {
				e = fix ? gbpf_set_iface(b->g, l->if_index, v->arg, err, sizeof(err))
					: -ENOENT;
				if (!e)
					st->added++;
				if (e) {
					if (!fix)
						snprintf(err, sizeof(err), "ifaces map lacks %s", l->if_name);
					gdp_result_fail_what(r, GDP_WHAT_MAP, e, "%s", err);
					(*bad)++;
					first = first ? first : e;
				}
			}
		} else if (is_uplink(d, l->if_name, ifa, &nl)) {
			want = GBPF_PROG_DECAP;
		} else {
			bool ours = gbpf_attached(b->g, (int)l->if_index, GBPF_PROG_DECAP) > 0 ||
				    gbpf_attached(b->g, (int)l->if_index, GBPF_PROG_ENCAP) > 0;

			if (ours && fix && (e = gbpf_detach((int)l->if_index, err, sizeof(err))))
				first = first ? first : e;
			else if (ours && fix)
				st->removed++;
			else if (ours && !fix)
				(*bad)++; /* an owned leftover */
			continue;
		}
		filtered[nfiltered++] = l->if_index;
		have = gbpf_attached(b->g, (int)l->if_index, want);
		if (have == 2)
			continue;
		/* 1: a previous load; REPLACE swaps it in place, no packet sees no filter. */
		e = fix ? gbpf_attach(b->g, (int)l->if_index, want, err, sizeof(err)) : -ENOENT;
		if (!e)
			st->added++;
		if (e) {
			if (!fix)
				snprintf(err, sizeof(err), "%s: %s filter not attached", l->if_name,
					 want == GBPF_PROG_DECAP ? "decap" : "encap");
			gdp_result_fail_what(r ? r : slot_node(sl), GDP_WHAT_FILTER, e, "%s", err);
			(*bad)++;
			first = first ? first : e;
		}
	}
	/* ifaces entries for links that are gone or no longer attachments. */
	while (!bpf_map_get_next_key(gbpf_map_fd(b->g, GBPF_MAP_IFACES), prev, &next)) {
		key = next;
		prev = &key;
		bool wanted = false;

		for (size_t i = 0; i < nwant && !wanted; i++)
			wanted = want_if[i] == key;
		if (wanted)
			continue;
		if (!fix) {
			(*bad)++;
			continue;
		}
		if ((e = gbpf_del_iface(b->g, key, err, sizeof(err)))) {
			first = first ? first : e;
		} else {
			st->removed++;
			prev = NULL; /* restart the walk: the key we stood on is gone */
		}
	}
	for (size_t i = 0; i < d->n_atts; i++) {
		struct gdp_result *r = slot_att(sl, d, &d->atts[i]);

		if (!if_nametoindex(d->atts[i].host_ifname)) {
			gdp_result_fail(r, -ENODEV, "attachment %s: host interface %s not found",
					d->atts[i].id, d->atts[i].host_ifname);
			(*bad)++;
		}
	}
	if (ifa)
		freeifaddrs(ifa);
	if (nl)
		gnl_close(nl);
	if_freenameindex(links);
	free(want_if);
	links_set(b, filtered, nfiltered, nlinks + 1);
	return first;
}

/*
 * Precomputed L2 per distinct SID (few next hops, many prefixes): resolved
 * once per SID, found again by a hash of the SID (100,000 remotes over
 * thousands of SIDs).
 */
struct l2_cache {
	struct bpf_backend *b;
	uint8_t src[16];
	struct { uint8_t sid[16]; struct gbpf_route r; int e; struct gbpf_nexthop nh; } *v;
	size_t n, cap, last;
	uint32_t *slot;          /* index + 1 into v; 0 = empty */
	size_t mask;             /* slots - 1; slots >= 2 * cap */
};

static size_t sid_hash(const uint8_t sid[16])
{
	uint64_t a, b;

	memcpy(&a, sid, 8);
	memcpy(&b, sid + 8, 8);
	a ^= b * 0x9E3779B97F4A7C15ull;
	a ^= a >> 29;
	a *= 0xBF58476D1CE4E5B9ull;
	return (size_t)(a ^ (a >> 32));
}

static int neigh_cb(const struct nlmsghdr *h, void *arg)
{
	return gnl_neigh_parse(h, arg) ? 0 : 0;
}

/*
 * The routes' precomputed L2 bypasses the kernel's neighbour table: nothing
 * confirms a learned underlay neighbour, so it goes stale and, once the
 * table is past gc_thresh1, is garbage collected; the next apply would then
 * find no neighbour and drop the L2 of every route toward it. So each next
 * hop in use is made a managed neighbour (NTF_EXT_MANAGED, kernel >= 5.16:
 * the kernel keeps it resolved and never collects it), keeping the address
 * it has. Inside the node's netns. 0, or -errno (the kernel refused).
 */
static int keep_managed(uint32_t ifindex, const uint8_t addr[16])
{
	struct ndmsg nd = { .ndm_family = AF_INET6, .ndm_ifindex = (int)ifindex };
	struct gnl_neigh have = { 0 }, want = { .family = AF_INET6, .ifindex = ifindex,
					       .flags_ext = NTF_EXT_MANAGED };
	struct gnl_sock *s = NULL;
	struct nl_msg *m = NULL;
	char err[256];
	int e;

	if ((e = gnl_open(&s, NULL, err, sizeof(err))))
		return e;
	m = nlmsg_alloc_simple(RTM_GETNEIGH, 0);
	if (!m || nlmsg_append(m, &nd, sizeof(nd), NLMSG_ALIGNTO) < 0 || nla_put(m, NDA_DST, 16, addr) < 0) {
		e = -ENOMEM;
		goto out;
	}
	e = gnl_get(s, m, neigh_cb, &have);
	nlmsg_free(m);
	m = NULL;
	/* already managed, or never collected: permanent (an operator's), or
	 * another daemon's (extern_learn): left as they are */
	if (!e && ((have.flags_ext & NTF_EXT_MANAGED) || (have.state & (NUD_PERMANENT | NUD_NOARP)) ||
		   (have.flags & NTF_EXT_LEARNED)))
		goto out;
	want.dst.family = AF_INET6;
	want.dst.len = 128;
	memcpy(want.dst.a.raw, addr, 16);
	if (!e && have.has_lladdr && (have.state & NH_VALID)) {
		/* keep its address; the kernel confirms it (probes) from here */
		memcpy(want.lladdr, have.lladdr, 6);
		want.has_lladdr = true;
		want.state = NUD_STALE;
	}
	if ((e = gnl_neigh_msg(&m, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &want)))
		goto out;
	e = gnl_talk(s, m, NULL, 0);
out:
	nlmsg_free(m);
	gnl_close(s);
	return e;
}

static const struct gbpf_route *l2_for(void *ctx, const uint8_t sid[16])
{
	struct l2_cache *c = ctx;
	size_t i, h;

	/* Remotes often come grouped by node: the last answer is usually the one. */
	if (c->n && !memcmp(c->v[c->last].sid, sid, 16))
		return c->v[c->last].e ? NULL : &c->v[c->last].r;
	for (h = c->slot ? sid_hash(sid) & c->mask : 0; c->slot && c->slot[h]; h = (h + 1) & c->mask) {
		i = c->slot[h] - 1;
		if (!memcmp(c->v[i].sid, sid, 16))
			goto found;
	}
	if (c->n == c->cap) {
		/* the slot table is sized from the new capacity: made first, so that
		 * a failure leaves both as they were */
		size_t nc = g_grow_cap(c->cap, c->n + 1, sizeof(*c->v), 64), mask = 2 * nc - 1;
		uint32_t *ns = nc ? calloc(mask + 1, sizeof(*ns)) : NULL;

		if (!ns || G_RESERVE(c->v, c->cap, nc, 64)) {
			free(ns);
			return NULL;
		}
		for (size_t j = 0; j < c->n; j++) {
			size_t k = sid_hash(c->v[j].sid) & mask;

			while (ns[k])
				k = (k + 1) & mask;
			ns[k] = (uint32_t)j + 1;
		}
		free(c->slot);
		c->slot = ns;
		c->mask = mask;
		for (h = sid_hash(sid) & mask; ns[h]; h = (h + 1) & mask)
			;
	}
	i = c->n;
	memcpy(c->v[i].sid, sid, 16);
	memset(&c->v[i].r, 0, sizeof(c->v[i].r));
	memset(&c->v[i].nh, 0, sizeof(c->v[i].nh));
	/* No neighbour yet or no route: the program resolves per packet instead. */
	c->v[i].e = gbpf_resolve_nh(c->b->g, c->src, sid, &c->v[i].r, &c->v[i].nh);
	c->slot[h] = (uint32_t)i + 1;
	c->n++;
found:
	c->last = i;
	return c->v[i].e ? NULL : &c->v[i].r;
}

/*
 * After a sync: the distinct next hops the routes point at (whole: a full
 * sync; merged: a delta's), each made a managed neighbour. Inside the netns.
 */
static void publish_nexthops(struct bpf_backend *b, const struct l2_cache *c, bool whole)
{
	struct nh_use v[NH_MAX];
	size_t n = 0;

	pthread_mutex_lock(&b->nh_mu);
	if (!whole) {
		memcpy(v, b->nh, b->n_nh * sizeof(*v));
		n = b->n_nh;
	}
	pthread_mutex_unlock(&b->nh_mu);
	for (size_t i = 0; i < c->n; i++) {
		const struct gbpf_nexthop *h = &c->v[i].nh;
		size_t j;

		if (!h->ifindex)
			continue;
		for (j = 0; j < n && (v[j].ifindex != h->ifindex || memcmp(v[j].addr, h->addr, 16)); j++)
			;
		if (j == n) {
			if (n == NH_MAX)
				continue; /* more next hops than we follow: the periodic pass refreshes them */
			n++;
			if (keep_managed(h->ifindex, h->addr))
				b->managed_failed++;
		}
		v[j].ifindex = h->ifindex;
		memcpy(v[j].addr, h->addr, 16);
		v[j].l2 = !c->v[i].e;
		memcpy(v[j].dmac, c->v[i].r.dmac, 6);
	}
	pthread_mutex_lock(&b->nh_mu);
	memcpy(b->nh, v, n * sizeof(*v));
	b->n_nh = n;
	pthread_mutex_unlock(&b->nh_mu);
}

static int sync_routes(struct bpf_backend *b, const struct gdp_state *d, struct gdp_results *res,
		       struct gbpf_sync_stats *st)
{
	struct l2_cache c = { .b = b };
	int e;

	gbpf_node_src(&d->node, c.src);
	e = gbpf_sync_routes(b->g, d, l2_for, &c, res, st);
	publish_nexthops(b, &c, true);
	free(c.v);
	free(c.slot);
	return e;
}

/*
 * Before the first kernel apply of this handle: put maps and filters in place
 * first, so seg6 encap routes a kernel-mode agent left are removed only once
 * the programs carry the traffic (a backend switch without a gap). Results go
 * to a scratch set; the regular pass that follows reports. What it wrote
 * goes to *wrote (the regular pass then finds it unchanged).
 */
static void pre_sync(struct bpf_backend *b, const struct gdp_state *d, struct gbpf_sync_stats *wrote,
		     unsigned long *map_adds)
{
	struct gbpf_sync_stats st = { 0 };
	struct gdp_results scratch;
	struct slots sl;
	int saved, bad = 0;

	gdp_results_init(&scratch);
	gbpf_sync_node(b->g, d, &scratch);
	gbpf_sync_vpcs(b->g, d, &scratch, &st);
	*map_adds = st.added;
	if (!slots_init(&sl, &scratch, d)) {
		if (!enter(b, &saved)) {
			sync_routes(b, d, NULL, &st);
			*map_adds = st.added; /* vpcs and routes: the regular pass finds them unchanged */
			sync_links(b, d, &sl, true, &bad, &st);
			leave(saved);
		}
		free(sl.att);
	}
	gdp_results_free(&scratch);
	*wrote = st;
}

static int apply_locked(struct bpf_backend *b, const struct gdp_state *desired, struct gdp_results *res);

static int bpf_apply(struct gdp_backend *base, const struct gdp_state *desired,
		     struct gdp_results *res)
{
	struct bpf_backend *b = of(base);
	int first;

	writes_begin(b);
	first = apply_locked(b, desired, res);
	writes_end(b);
	return first;
}

static int apply_locked(struct bpf_backend *b, const struct gdp_state *desired, struct gdp_results *res)
{
	struct gdp_state k = no_remotes(desired);
	struct gbpf_sync_stats st = { 0 }, pre = { 0 };
	unsigned long pre_maps = 0;
	struct slots sl;
	char err[512];
	int first, e, saved, bad = 0;

	if (!b->applied)
		pre_sync(b, desired, &pre, &pre_maps);
	b->applied = true;
	first = b->kernel->ops->apply(b->kernel, &k, res);
	if ((e = gbpf_sync_node(b->g, desired, res)))
		first = first ? first : e;
	if ((e = gbpf_sync_vpcs(b->g, desired, res, &st)))
		first = first ? first : e;
	if ((e = slots_init(&sl, res, desired)))
		return e;
	if ((e = enter(b, &saved))) {
		gdp_result_fail(slot_node(&sl), e, "bpf backend: enter netns: %s", strerror(-e));
		free(sl.att);
		return first ? first : e;
	}
	/* Routes before filters: a fresh encap filter finds its prefixes. */
	if ((e = sync_routes(b, desired, res, &st)))
		first = first ? first : e;
	if ((e = sync_links(b, desired, &sl, true, &bad, &st)))
		first = first ? first : e;
	leave(saved);
	/* Only once the new programs hold every link may an old layout's maps go. */
	if (!first && gbpf_stale_layouts(b->g) && (e = gbpf_prune_layouts(b->g, err, sizeof(err))))
		gdp_result_fail(slot_node(&sl), e, "%s", err);
	free(sl.att);
	/* The first apply's writes happened in pre_sync: the pass found them unchanged. */
	st.unchanged -= pre_maps < st.unchanged ? pre_maps : st.unchanged;
	res->added += st.added + pre.added;
	res->removed += st.removed + pre.removed;
	res->unchanged += st.unchanged;
	res->failed += st.failed;
	return first;
}

/*
 * Only what changed: the kernel backend's delta for the pod plumbing, the
 * delta's trie entries, and for each added attachment its ifaces entry and
 * the encap filter on its host veth, read back (gbpf_attached) before it
 * counts as programmed; a removed attachment whose veth is still there
 * loses both. What is out of scope (leftovers) waits for the next apply.
 */
static int apply_delta_locked(struct bpf_backend *b, const struct gdp_state *desired,
			      const struct gdp_delta *dl, struct gdp_results *res);

static int bpf_apply_delta(struct gdp_backend *base, const struct gdp_state *desired,
			   const struct gdp_delta *dl, struct gdp_results *res)
{
	struct bpf_backend *b = of(base);
	int first;

	writes_begin(b);
	first = apply_delta_locked(b, desired, dl, res);
	writes_end(b);
	return first;
}

static int apply_delta_locked(struct bpf_backend *b, const struct gdp_state *desired,
			      const struct gdp_delta *dl, struct gdp_results *res)
{
	struct gdp_state k = no_remotes(desired);
	struct gdp_delta kd = *dl;
	struct gbpf_sync_stats st = { 0 };
	struct l2_cache c = { .b = b };
	char err[512];
	int first, e, saved;

	if (!b->applied || dl->full || !b->kernel->ops->apply_delta) {
		gdp_results_reset(res);
		gdp_result_fail(gdp_results_get(res, GDP_OBJ_NODE, "", ""), -EAGAIN,
				"delta apply: needs a full reconcile first");
		return -EAGAIN;
	}
	kd.remotes = NULL, kd.n_remotes = 0, kd.gone_remotes = NULL, kd.n_gone_remotes = 0;
	first = b->kernel->ops->apply_delta(b->kernel, &k, &kd, res);
	if (first == -EAGAIN || first == -ENOMEM)
		return first;
	if ((e = enter(b, &saved))) {
		gdp_result_fail(gdp_results_get(res, GDP_OBJ_NODE, "", ""), e, "bpf backend: enter netns: %s",
				strerror(-e));
		return first ? first : e;
	}
	gbpf_node_src(&desired->node, c.src);
	/* routes before filters: a fresh encap filter finds its prefixes */
	if ((e = gbpf_sync_routes_delta(b->g, desired, dl, l2_for, &c, res, &st)))
		first = first ? first : e;
	for (size_t i = 0; i < dl->n_atts; i++) {
		const struct gdp_attachment *a = &desired->atts[dl->atts[i]];
		const struct gdp_vpc *v = gdp_state_find_vpc(desired, a->vpc);
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);
		unsigned ifx = if_nametoindex(a->host_ifname);

		if (!r || !v)
			continue;
		if (!ifx) {
			gdp_result_fail(r, -ENODEV, "attachment %s: host interface %s not found", a->id, a->host_ifname);
			e = -ENODEV;
		} else if (!(e = gbpf_set_iface(b->g, ifx, v->arg, err, sizeof(err))) &&
			   gbpf_attached(b->g, (int)ifx, GBPF_PROG_ENCAP) != 2 &&
			   !(e = gbpf_attach(b->g, (int)ifx, GBPF_PROG_ENCAP, err, sizeof(err))) &&
			   gbpf_attached(b->g, (int)ifx, GBPF_PROG_ENCAP) != 2) {
			snprintf(err, sizeof(err), "%s: encap filter not attached after attaching it", a->host_ifname);
			e = -EIO;
		}
		if (ifx)
			links_put(b, ifx, true); /* wanted there, attached or not */
		if (e) {
			if (!r->err)
				gdp_result_fail(r, e, "%s", err);
			first = first ? first : e;
		} else if (!r->err) {
			st.added++;
		}
	}
	for (size_t i = 0; i < dl->n_gone_atts; i++) {
		unsigned ifx = if_nametoindex(dl->gone_atts[i].host_ifname);

		if (!ifx)
			continue; /* the veth went: its filter with it; a stale ifaces entry waits for the next apply */
		links_put(b, ifx, false);
		if ((e = gbpf_detach((int)ifx, err, sizeof(err))) || (e = gbpf_del_iface(b->g, ifx, err, sizeof(err)))) {
			gdp_result_fail(gdp_results_get(res, GDP_OBJ_NODE, "", ""), e, "%s", err);
			first = first ? first : e;
		} else {
			st.removed++;
		}
	}
	publish_nexthops(b, &c, false);
	leave(saved);
	free(c.v);
	free(c.slot);
	for (size_t i = 0; i < res->n; i++) {
		if (res->v[i].err)
			res->v[i].programmed = false, first = first ? first : res->v[i].err;
		else
			res->v[i].programmed = true;
	}
	res->added += st.added;
	res->removed += st.removed;
	res->failed += st.failed;
	return first;
}

static int bpf_observe(struct gdp_backend *base, const struct gdp_state *desired,
		       struct gdp_results *res)
{
	struct bpf_backend *b = of(base);
	struct gdp_state k = no_remotes(desired);
	int n, e, saved, bad = 0, fd = gbpf_map_fd(b->g, GBPF_MAP_ROUTES);
	const struct gdp_vpc *last = NULL;
	uint32_t last_ix = 0;
	struct gbpf_cfg cfg;
	uint8_t src[16];
	struct slots sl;

	n = b->kernel->ops->observe(b->kernel, &k, res);
	if (n < 0)
		return n;
	for (size_t i = 0; i < desired->n_vpcs; i++) {
		const struct gdp_vpc *v = &desired->vpcs[i];
		struct gdp_result *r = gdp_results_get(res, GDP_OBJ_VPC, v->id, "");
		struct gbpf_vpc have;

		if (v->arg >= GBPF_MAX_ARG || gbpf_get_vpc(b->g, v->arg, &have) ||
		    !(have.flags & GBPF_VPC_VALID) || have.table != v->table) {
			gdp_result_fail_what(r, GDP_WHAT_MAP, -ENOENT, "vpc %s: bpf vpcs map lacks arg %u -> table %u",
					v->id, v->arg, v->table);
			bad++;
		}
	}
	if ((e = slots_init(&sl, res, desired)))
		return e;
	gbpf_node_src(&desired->node, src);
	if (gbpf_get_cfg(b->g, &cfg) || !(cfg.flags & GBPF_CFG_VALID) ||
	    memcmp(cfg.block, desired->node.block, 6) || memcmp(cfg.src, src, 16)) {
		gdp_result_fail_what(slot_node(&sl), GDP_WHAT_MAP, -ENOENT, "bpf node config missing or different");
		bad++;
	}
	{
		/* the egress defaults toward the shard (the kernel backend made the egress result) */
		size_t ns = gbpf_shard_routes(desired, NULL, NULL, 0);
		struct gbpf_route_key *sk = ns ? calloc(ns, sizeof(*sk)) : NULL;
		struct gbpf_route *sv = ns ? calloc(ns, sizeof(*sv)) : NULL, have;
		struct gdp_result *er = gdp_results_find(res, GDP_OBJ_EGRESS, "", "");

		if (ns && (!sk || !sv)) {
			free(sk);
			free(sv);
			return -ENOMEM;
		}
		gbpf_shard_routes(desired, sk, sv, ns);
		for (size_t i = 0; i < ns; i++)
			if (bpf_map_lookup_elem(fd, &sk[i], &have) || memcmp(&have, &sv[i], sizeof(have))) {
				char sid[INET6_ADDRSTRLEN];

				inet_ntop(AF_INET6, sv[i].sid, sid, sizeof(sid));
				gdp_result_fail(er, -ENOENT, "egress shard: bpf default toward %s missing or different",
						sid);
				bad++;
				break;
			}
		free(sk);
		free(sv);
	}
	/* Remotes: a result for each one missing, the others only counted (100,000 entries are 40 MB). */
	for (size_t i = 0; i < desired->n_remotes; i++) {
		const struct gdp_remote *rm = &desired->remotes[i];
		struct gbpf_route_key key;
		struct gbpf_route have;

		if (!last || last_ix != rm->vpc_ix)
			last = gdp_state_find_vpc(desired, gdp_remote_vpc(rm)), last_ix = rm->vpc_ix;
		if (last)
			gbpf_route_key(&key, last->arg, rm->prefix.family, rm->prefix.addr.raw,
				       rm->prefix.len);
		if (!last || bpf_map_lookup_elem(fd, &key, &have) ||
		    memcmp(have.sid, rm->sid.s6_addr, 16)) {
			/* The kernel backend saw no remotes: appended, no search (quadratic at 100k). */
			struct gdp_result *r = gbpf_result_remote(res, rm);

			gdp_result_fail_what(r, GDP_WHAT_MAP, -ENOENT, "remote %s in vpc %s: not in the bpf routes map",
					     r ? r->key : "?", gdp_remote_vpc(rm));
			bad++;
		} else {
			res->remotes_ok++;
		}
	}
	if ((e = enter(b, &saved))) {
		free(sl.att);
		return e;
	}
	sync_links(b, desired, &sl, false, &bad, &(struct gbpf_sync_stats){ 0 });
	leave(saved);
	free(sl.att);
	return n + bad;
}

/*
 * Map entries change without any notification. The routes trie's
 * accounted memory follows its number of entries: one deleted or added by
 * someone else changes it. Compared with what the last pass left (a
 * change is reported once); nothing while a pass writes.
 */
static int bpf_size_changed(struct gdp_backend *base)
{
	struct bpf_backend *b = of(base);
	unsigned long g1 = atomic_load(&b->wgen);
	uint64_t m, seen;
	int e;

	if (g1 & 1 || !b->applied)
		return 0;
	if ((e = gbpf_map_memlock(b->g, GBPF_MAP_ROUTES, &m)))
		return e;
	if (atomic_load(&b->wgen) != g1)
		return 0; /* a pass wrote meanwhile: its end sets the figure */
	seen = atomic_load(&b->routes_size);
	if (m == seen)
		return 0;
	/* reported once; a pass ending meanwhile wins */
	atomic_compare_exchange_strong(&b->routes_size, &seen, m);
	return 1;
}

/* Adoption at start (backend.h): the maps and filters the previous agent's
 * last pass verified are in place (no switch from the kernel backend to
 * make: that pass was this backend's), the pod plumbing is the kernel
 * backend's adoption. */
static int bpf_adopt(struct gdp_backend *base, const struct gdp_state *d, struct gdp_results *res)
{
	struct bpf_backend *b = of(base);
	struct gdp_state k = no_remotes(d);
	int rc = b->kernel->ops->adopt ? b->kernel->ops->adopt(b->kernel, &k, res) : -EOPNOTSUPP;

	if (!rc)
		b->applied = true;
	return rc;
}

const struct gdp_backend_ops gdp_bpf_backend = {
	.name = "bpf",
	.open = bpf_open,
	.caps = bpf_caps,
	.apply = bpf_apply,
	.observe = bpf_observe,
	.close = bpf_close,
	.apply_delta = bpf_apply_delta,
	.size_changed = bpf_size_changed,
	.adopt = bpf_adopt,
};

const struct gdp_backend_ops *gdp_bpf_choose(const char *mode, bool fallback, const char *pin_root,
					     char *why, size_t whylen)
{
	char pf[512];

	why[0] = 0;
	gdp_backend_register(&gdp_bpf_backend);
	if (!strcmp(mode, "kernel"))
		return &gdp_kernel_backend;
	if (strcmp(mode, "bpf") && strcmp(mode, "auto")) {
		snprintf(why, whylen, "unknown datapath mode '%s' (kernel, bpf, auto)", mode);
		return NULL;
	}
	if (!gbpf_preflight(pin_root, pf, sizeof(pf)))
		return &gdp_bpf_backend;
	if (!strcmp(mode, "bpf") && !fallback) {
		snprintf(why, whylen, "bpf backend refused: %s", pf);
		return NULL;
	}
	snprintf(why, whylen, "bpf backend unavailable (%s): using the kernel backend", pf);
	return &gdp_kernel_backend;
}

int gdp_bpf_teardown(const char *netns, const char *pin_root, char *err, size_t errlen)
{
	struct bpf_backend tmp = { .nsfd = -1 };
	struct if_nameindex *links, *l;
	int saved, e, first = 0;

	if (netns) {
		char path[300];

		snprintf(path, sizeof(path), strchr(netns, '/') ? "%s" : "/run/netns/%s", netns);
		tmp.nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (tmp.nsfd < 0) {
			e = -errno;
			snprintf(err, errlen, "bpf teardown: open netns %s: %s", path, strerror(errno));
			return e;
		}
	}
	if ((e = enter(&tmp, &saved))) {
		snprintf(err, errlen, "bpf teardown: enter netns: %s", strerror(-e));
		goto out;
	}
	links = if_nameindex();
	for (l = links; l && l->if_index; l++) {
		char name[32];

		/* Only ours: a filter at our handle/priority running a galactic_ program. */
		if (gbpf_filter_name((int)l->if_index, name, sizeof(name)) == 1 &&
		    !strncmp(name, "galactic_", 9) && (e = gbpf_detach((int)l->if_index, err, errlen)))
			first = first ? first : e;
	}
	if (links)
		if_freenameindex(links);
	leave(saved);
	if (!first)
		first = gbpf_unpin_all(pin_root ? pin_root : GBPF_PIN_ROOT_DEFAULT, err, errlen);
	e = first;
out:
	if (tmp.nsfd >= 0)
		close(tmp.nsfd);
	return e;
}

int gdp_bpf_vpc_stats(struct gdp_backend *base, uint16_t arg, struct gbpf_vpc_stats *out)
{
	struct bpf_backend *b = of(base);

	return b ? gbpf_vpc_stats(b->g, arg, out) : -EINVAL;
}

int gdp_bpf_drops(struct gdp_backend *base, uint64_t out[GBPF_DROP_MAX])
{
	struct bpf_backend *b = of(base);

	return b ? gbpf_drops(b->g, out) : -EINVAL;
}

int gdp_bpf_sync_routes(struct gdp_backend *base, const struct gdp_state *d, struct gdp_results *res,
			struct gbpf_sync_stats *st)
{
	struct bpf_backend *b = of(base);
	int e, saved;

	if (!b)
		return -EINVAL;
	if ((e = enter(b, &saved)))
		return e;
	e = sync_routes(b, d, res, st);
	leave(saved);
	return e;
}

struct gbpf *gdp_bpf_handle(struct gdp_backend *base)
{
	struct bpf_backend *b = of(base);

	return b ? b->g : NULL;
}

bool gdp_bpf_nexthop_event(struct gdp_backend *base, const struct gnl_neigh *n, bool deleted)
{
	struct bpf_backend *b = of(base);
	bool found = false, refresh = false, managed;
	int saved;

	if (!b || n->family != AF_INET6)
		return false;
	pthread_mutex_lock(&b->nh_mu);
	for (size_t i = 0; i < b->n_nh && !found; i++) {
		const struct nh_use *u = &b->nh[i];

		if (u->ifindex != n->ifindex || memcmp(u->addr, n->dst.a.raw, 16))
			continue;
		found = true;
		/* resolved now where the routes have none, or to another address */
		refresh = !deleted && (n->state & NH_VALID) && n->has_lladdr &&
			  (!u->l2 || memcmp(u->dmac, n->lladdr, 6));
	}
	pthread_mutex_unlock(&b->nh_mu);
	managed = !deleted && ((n->flags_ext & NTF_EXT_MANAGED) || (n->state & (NUD_PERMANENT | NUD_NOARP)) ||
				(n->flags & NTF_EXT_LEARNED));
	/* Gone (flushed, or collected before it was ours) or not ours yet: a
	 * managed one again; the kernel resolves it, and the routes keep their
	 * L2 meanwhile (the address rarely changes; if it does, the entry
	 * resolved to it asks for a refresh). */
	if (found && !managed && !enter(b, &saved)) {
		if (keep_managed(n->ifindex, n->dst.a.raw))
			b->managed_failed++;
		leave(saved);
	}
	return refresh;
}

bool gdp_bpf_link_ours(struct gdp_backend *base, uint32_t ifindex)
{
	struct bpf_backend *b = of(base);
	bool found = false;

	if (!b)
		return false;
	pthread_mutex_lock(&b->nh_mu);
	for (size_t i = 0; i < b->n_links && !found; i++)
		found = b->links[i] == ifindex;
	pthread_mutex_unlock(&b->nh_mu);
	return found;
}

int gdp_bpf_filter_gone(struct gdp_backend *base, int ifindex)
{
	struct bpf_backend *b = of(base);
	char name[IF_NAMESIZE], prog[32];
	int saved, e, r;

	if (!b)
		return -EINVAL;
	if ((e = enter(b, &saved)))
		return e;
	if (!if_indextoname((unsigned)ifindex, name))
		r = 0; /* the link went (a DEL): its filter with it, no drift */
	else
		r = gbpf_filter_name(ifindex, prog, sizeof(prog)) == 1 && !strncmp(prog, "galactic_", 9) ? 0 : 1;
	leave(saved);
	return r;
}
