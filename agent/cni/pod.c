#include "agent/cni/pod.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cni/result.h"
#include "agent/nl/nl.h"
#include "agent/nl/objects.h"
#include "common/grow.h"
#include "common/mac.h"

static void to_gnl(const struct cni_ip *ip, int plen, struct gnl_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = ip->family;
	a->len = (uint8_t)plen;
	memcpy(a->a.raw, ip->addr, ip->family == AF_INET ? 4 : 16);
}

static int ns_open(struct gnl_sock **s, int nsfd, char *err, size_t errlen)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", nsfd);
	return gnl_open(s, path, err, errlen);
}

/*
 * Whether a gateway is reachable without a route of its own: only fe80::/64,
 * which the kernel routes on every IPv6 link. Every pod address is added
 * without a prefix route, so a gateway inside the pod's own prefix (a
 * delegated block's first address, a legacy /24's .1) needs one too.
 */
static int gw_on_link(const struct cni_ip *gw)
{
	return gw->family == AF_INET6 && gw->addr[0] == 0xfe && (gw->addr[1] & 0xc0) == 0x80;
}

/* The attachment's MTU for a link request (0: leave the link's own). */
static uint32_t link_mtu(const struct pod_link *l)
{
	return l->mtu > 0 ? (uint32_t)l->mtu : 0;
}

/*
 * Requests sent together: one sendmsg for all of them (gnl_batch), each
 * with its own ack, and for each what it was, to name the first that
 * failed. The kernel handles them one after another in that one call, so
 * the order is kept, and the thread that holds the RTNL lock for one of
 * them usually still holds the CPU for the next: one wait for the lock
 * for the batch, not one per request, when a burst's setups queue for it.
 */
struct reqs {
	struct gnl_batch b;
	char (*what)[160];
	size_t cap;
	int rc;        /* a request that could not be built, */
	char bad[160]; /* and which */
};

static void reqs_init(struct reqs *q, char (*what)[160], size_t cap)
{
	gnl_batch_init(&q->b);
	q->b.max_retries = 50; /* as one gnl_talk */
	q->what = what;
	q->cap = cap;
	q->rc = 0;
}

/* Queues m (built with rc; freed here) as "what". */
static void __attribute__((format(printf, 4, 5))) reqs_add(struct reqs *q, struct nl_msg *m, int rc,
							   const char *fmt, ...)
{
	char what[sizeof(q->what[0])];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!rc && q->b.n >= q->cap)
		rc = -E2BIG;
	if (!rc)
		rc = gnl_batch_add(&q->b, m, NULL);
	if (!rc) {
		memcpy(q->what[q->b.n - 1], what, sizeof(what));
	} else if (!q->rc) {
		q->rc = rc;
		memcpy(q->bad, what, sizeof(what));
	}
	if (m)
		nlmsg_free(m);
}

/* Sends them; 0, or the first failure named in err. */
static int reqs_run(struct reqs *q, struct gnl_sock *s, char *err, size_t errlen)
{
	int rc = q->rc;

	if (rc)
		snprintf(err, errlen, "%s: %s", q->bad, strerror(-rc));
	else if ((rc = gnl_batch_run(s, &q->b)))
		snprintf(err, errlen, "sending the pod's requests: %s", strerror(-rc));
	for (size_t i = 0; !rc && i < q->b.n; i++)
		if ((rc = q->b.v[i].err))
			snprintf(err, errlen, "%s: %s %s", q->what[i], strerror(-rc), q->b.v[i].ext);
	gnl_batch_free(&q->b);
	return rc;
}

/* The pod's half: up, addresses, gateway neighbours, routes (one batch). */
static int pod_configure(struct gnl_sock *ps, const struct cni_conf *c, struct pod_link *l,
			 char *err, size_t errlen)
{
	struct cni_route rts[CNI_MAX_ROUTES + 2];
	char what[1 + 2 * CNI_MAX_ADDRS + 3 * (CNI_MAX_ROUTES + 2)][160];
	struct gnl_link gl;
	struct nl_msg *m;
	struct reqs q;
	char b[64], g[64];
	int rc, idx, n;

	rc = gnl_link_get(ps, l->ifname, &gl);
	if (rc) {
		snprintf(err, errlen, "find %s in the pod namespace: %s", l->ifname, strerror(-rc));
		return rc;
	}
	idx = (int)gl.ifindex;
	memcpy(l->mac, gl.addr, 6);
	reqs_init(&q, what, sizeof(what) / sizeof(what[0]));
	rc = gnl_link_up_msg(&m, (uint32_t)idx, link_mtu(l));
	reqs_add(&q, m, rc, "set %s up, mtu %d in the pod", l->ifname, l->mtu);
	for (int i = 0; i < c->naddrs; i++) {
		struct gnl_ifaddr ia = { .family = c->addrs[i].ip.family, .ifindex = (uint32_t)idx };

		to_gnl(&c->addrs[i].ip, c->addrs[i].plen, &ia.addr);
		/* No DAD: the address is ours by allocation, and DAD would hold
		 * the pod's traffic for a second or more. No prefix route: the
		 * node routes (there is no L2 segment to ARP/ND across), so the
		 * prefix goes via the gateway below. */
		ia.flags = IFA_F_NOPREFIXROUTE | (ia.family == AF_INET6 ? IFA_F_NODAD : 0);
		rc = gnl_ifaddr_msg(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &ia);
		reqs_add(&q, m, rc, "add address %s/%d to %s in the pod", cni_ip_str(&c->addrs[i].ip, b, sizeof(b)),
			 c->addrs[i].plen, l->ifname);
	}
	n = cni_pod_routes(c, rts, (int)(sizeof(rts) / sizeof(rts[0])));
	for (int i = 0; i < n; i++) {
		struct gnl_neigh ne = { .family = rts[i].gw.family, .ifindex = (uint32_t)idx,
					.has_lladdr = true, .state = NUD_PERMANENT };
		struct gnl_route hr = { .family = rts[i].gw.family, .oif = (uint32_t)idx,
					.scope = RT_SCOPE_LINK, .protocol = RTPROT_STATIC };
		struct gnl_route r = { .family = rts[i].dst.family, .oif = (uint32_t)idx,
				       .protocol = RTPROT_STATIC };

		cni_ip_str(&rts[i].gw, g, sizeof(g));
		/* The gateway answers from the host end's MAC: a permanent entry
		 * saves ARP/ND (the host end has no address to answer with). */
		to_gnl(&rts[i].gw, rts[i].gw.family == AF_INET ? 32 : 128, &ne.dst);
		memcpy(ne.lladdr, l->host_mac, 6);
		rc = gnl_neigh_msg(&m, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &ne);
		reqs_add(&q, m, rc, "add neighbour %s on %s in the pod", g, l->ifname);
		if (!gw_on_link(&rts[i].gw)) {
			to_gnl(&rts[i].gw, rts[i].gw.family == AF_INET ? 32 : 128, &hr.dst);
			rc = gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &hr);
			reqs_add(&q, m, rc, "add route to gateway %s dev %s in the pod", g, l->ifname);
		}
		if (rts[i].plen)
			to_gnl(&rts[i].dst, rts[i].plen, &r.dst);
		to_gnl(&rts[i].gw, 0, &r.gw);
		rc = gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &r);
		reqs_add(&q, m, rc, "add route %s/%d via %s dev %s in the pod",
			 rts[i].plen ? cni_ip_str(&rts[i].dst, b, sizeof(b)) : "default", rts[i].plen, g, l->ifname);
	}
	/* Each address's own prefix (other pods of the VPC) via its gateway. */
	for (int i = 0; i < c->naddrs; i++) {
		const struct cni_addr *a = &c->addrs[i];
		struct gnl_route r = { .family = a->ip.family, .oif = (uint32_t)idx,
				       .protocol = RTPROT_STATIC };
		struct cni_ip net = a->ip;
		const struct cni_ip *gw = NULL;

		/* A delegated block belongs to the pod: no route back out for it. */
		if (a->plen == (a->ip.family == AF_INET ? 32 : 128) || a->block)
			continue;
		for (int k = 0; k < n && !gw; k++)
			if (rts[k].gw.family == a->ip.family)
				gw = &rts[k].gw;
		if (!gw)
			continue; /* no gateway: nothing beyond the pod itself is reachable */
		for (int bit = a->plen; bit < (a->ip.family == AF_INET ? 32 : 128); bit++)
			net.addr[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
		to_gnl(&net, a->plen, &r.dst);
		to_gnl(gw, 0, &r.gw);
		rc = gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &r);
		reqs_add(&q, m, rc, "add route %s/%d via the gateway dev %s in the pod", cni_ip_str(&net, b, sizeof(b)),
			 a->plen, l->ifname);
	}
	return reqs_run(&q, ps, err, errlen);
}

int pod_setup(const char *host_netns, int nsfd, const struct cni_conf *c, struct pod_link *l,
	      int *clash, char *err, size_t errlen)
{
	struct gnl_sock *hs = NULL, *ps = NULL;
	struct gnl_link gl;
	char ext[128] = "", e2[256];
	int rc;

	*clash = 0;
	rc = gnl_open(&hs, host_netns, err, errlen);
	if (rc)
		return rc;
	/* at its MTU from the start: changing it later walks the node's whole
	 * IPv6 FIB (rt6_mtu_change), linear in what the node holds */
	rc = gnl_veth_add_mtu(hs, l->host_ifname, l->ifname, nsfd, link_mtu(l), ext,
			      sizeof(ext));
	/* A host end left by an earlier, interrupted ADD of this attachment:
	 * its name is derived from the ids, so it is ours to replace. Looked
	 * for only when the name is taken (one request less per ADD). */
	if (rc == -EEXIST && !gnl_link_get(hs, l->host_ifname, &gl)) {
		rc = gnl_link_del(hs, l->host_ifname, ext, sizeof(ext));
		if (rc && rc != -ENODEV) {
			snprintf(err, errlen, "remove stale %s: %s %s", l->host_ifname, strerror(-rc), ext);
			goto out;
		}
		rc = gnl_veth_add_mtu(hs, l->host_ifname, l->ifname, nsfd, link_mtu(l), ext, sizeof(ext));
	}
	if (rc == -EEXIST) {
		*clash = 1;
		snprintf(err, errlen, "create veth %s: interface %s already exists in the pod namespace",
			 l->host_ifname, l->ifname);
		goto out;
	}
	if (rc) {
		snprintf(err, errlen, "create veth %s with peer %s in the pod namespace: %s %s",
			 l->host_ifname, l->ifname, strerror(-rc), ext);
		goto out;
	}
	rc = gnl_link_get(hs, l->host_ifname, &gl);
	if (rc) {
		snprintf(err, errlen, "read back %s: %s", l->host_ifname, strerror(-rc));
		goto undo;
	}
	memcpy(l->host_mac, gl.addr, 6);
	/* clsact now, before the first packet, whatever the backend: attaching
	 * TC programs later (bpf) must never create a qdisc under live traffic. */
	rc = gnl_clsact_add(hs, gl.ifindex, ext, sizeof(ext));
	if (rc) {
		snprintf(err, errlen, "add clsact on %s: %s %s", l->host_ifname, strerror(-rc), ext);
		goto undo;
	}
	{
		uint32_t idx = gl.ifindex;

		gnl_link_init(&gl);
		gl.ifindex = idx;
	}
	/* No link-local of its own (the backend gives it fe80::1 without DAD
	 * where the pod routes IPv6 through it): the DAD of an autoconfigured
	 * one ends in a walk of the node's whole IPv6 FIB (fib6_flush_trees)
	 * a second later, in the middle of another ADD. Its own request,
	 * before the end goes up: in the one that brings it up the kernel
	 * would apply it after the link became ready and got its address. */
	gl.addrgen_none = true;
	rc = gnl_link_set(hs, &gl, ext, sizeof(ext));
	if (rc) {
		snprintf(err, errlen, "set %s addrgenmode none: %s %s", l->host_ifname, strerror(-rc), ext);
		goto undo;
	}
	/* The pod's half while the host end is down (no carrier: routes are
	 * added as linkdown, nothing is ready yet), the host end up last:
	 * only then is the pair ready, and the kernel walks the node's whole
	 * IPv6 FIB once for it (rt6_sync_up, in linkwatch, under the RTNL
	 * lock). Last, that walk no longer holds up the pod's requests; it
	 * overlaps the commit that follows. */
	rc = ns_open(&ps, nsfd, err, errlen);
	if (rc)
		goto undo;
	rc = pod_configure(ps, c, l, err, errlen);
	if (rc)
		goto undo;
	rc = gnl_link_up(hs, gl.ifindex, link_mtu(l), ext, sizeof(ext));
	if (rc) {
		snprintf(err, errlen, "set %s up, mtu %d: %s %s", l->host_ifname, l->mtu,
			 strerror(-rc), ext);
		goto undo;
	}
	goto out;
undo:
	if (gnl_link_del(hs, l->host_ifname, ext, sizeof(ext)) && errlen > 1) {
		snprintf(e2, sizeof(e2), "%s", err);
		snprintf(err, errlen, "%s (and removing %s failed)", e2, l->host_ifname);
	}
out:
	if (ps)
		gnl_close(ps);
	gnl_close(hs);
	return rc;
}

int pod_repair(const char *host_netns, int nsfd, const struct cni_conf *c, struct pod_link *l,
	       char *err, size_t errlen)
{
	struct gnl_sock *hs = NULL, *ps = NULL;
	struct gnl_link hl, gl;
	char ext[128] = "";
	int rc;

	rc = gnl_open(&hs, host_netns, err, errlen);
	if (rc)
		return rc;
	rc = ns_open(&ps, nsfd, err, errlen);
	if (rc)
		goto out;
	if (gnl_link_get(hs, l->host_ifname, &hl) || memcmp(hl.addr, l->host_mac, 6) ||
	    gnl_link_get(ps, l->ifname, &gl) || memcmp(gl.addr, l->mac, 6)) {
		rc = -ENODEV;
		snprintf(err, errlen, "veth %s / %s is gone or was replaced", l->host_ifname, l->ifname);
		goto out;
	}
	rc = gnl_link_up(hs, hl.ifindex, link_mtu(l), ext, sizeof(ext));
	if (rc) {
		snprintf(err, errlen, "set %s up, mtu %d: %s %s", l->host_ifname, l->mtu, strerror(-rc), ext);
		goto out;
	}
	rc = pod_configure(ps, c, l, err, errlen);
out:
	if (ps)
		gnl_close(ps);
	gnl_close(hs);
	return rc;
}

int pod_teardown(const char *host_netns, const char *host_ifname, char *err, size_t errlen)
{
	struct gnl_sock *hs;
	char ext[128] = "";
	int rc = gnl_open(&hs, host_netns, err, errlen);

	if (rc)
		return rc;
	rc = gnl_link_del(hs, host_ifname, ext, sizeof(ext));
	if (rc == -ENODEV)
		rc = 0;
	if (rc)
		snprintf(err, errlen, "delete %s: %s %s", host_ifname, strerror(-rc), ext);
	gnl_close(hs);
	return rc;
}

struct addr_scan {
	int ifindex;
	const struct cni_conf *c;
	unsigned found; /* bit per config address */
};

static int addr_cb(const struct nlmsghdr *h, void *arg)
{
	struct addr_scan *sc = arg;
	struct gnl_ifaddr a;

	if (gnl_ifaddr_parse(h, &a) || (int)a.ifindex != sc->ifindex)
		return 0;
	for (int i = 0; i < sc->c->naddrs; i++) {
		struct gnl_addr want;

		to_gnl(&sc->c->addrs[i].ip, sc->c->addrs[i].plen, &want);
		if (gnl_addr_eq(&want, &a.addr) && a.addr.len == want.len)
			sc->found |= 1u << i;
	}
	return 0;
}

struct route_scan {
	int ifindex;
	struct cni_route *want;
	int n;
	unsigned long long found;
};

static int route_cb(const struct nlmsghdr *h, void *arg)
{
	struct route_scan *sc = arg;
	struct gnl_route r;

	if (gnl_route_parse(h, &r) || (int)r.oif != sc->ifindex)
		return 0;
	for (int i = 0; i < sc->n; i++) {
		struct gnl_addr d, g;

		to_gnl(&sc->want[i].dst, sc->want[i].plen, &d);
		to_gnl(&sc->want[i].gw, 0, &g);
		if (r.family != d.family || r.dst.len != d.len)
			continue;
		if (d.len && !gnl_addr_eq(&r.dst, &d))
			continue;
		if (r.gw.family != g.family || memcmp(r.gw.a.raw, g.a.raw, gnl_addr_bytes(g.family)))
			continue;
		sc->found |= 1ull << i;
	}
	return 0;
}

int pod_check(const char *host_netns, int nsfd, const struct cni_conf *c,
	      const struct pod_link *l, char *err, size_t errlen)
{
	struct cni_route rts[CNI_MAX_ROUTES + 2];
	struct gnl_sock *ps = NULL, *hs = NULL;
	struct gnl_link gl;
	struct nl_msg *m;
	char b[64], mac[GMAC_STRLEN];
	int rc;

	rc = gnl_open(&hs, host_netns, err, errlen);
	if (rc)
		return -1;
	rc = gnl_link_get(hs, l->host_ifname, &gl);
	gnl_close(hs);
	if (rc) {
		snprintf(err, errlen, "host interface %s: %s", l->host_ifname, strerror(-rc));
		return -1;
	}
	if (!(gl.flags & IFF_UP)) {
		snprintf(err, errlen, "host interface %s is down", l->host_ifname);
		return -1;
	}
	if (ns_open(&ps, nsfd, err, errlen))
		return -1;
	rc = gnl_link_get(ps, l->ifname, &gl);
	if (rc) {
		snprintf(err, errlen, "%s in the pod namespace: %s", l->ifname, strerror(-rc));
		goto fail;
	}
	if (memcmp(gl.addr, l->mac, 6)) {
		snprintf(err, errlen, "%s in the pod has MAC %s, the attachment made %s", l->ifname,
			 gmac_str(gl.addr, mac), gmac_str(l->mac, b));
		goto fail;
	}
	if (!(gl.flags & IFF_UP) || (l->mtu && gl.mtu != (uint32_t)l->mtu)) {
		snprintf(err, errlen, "%s in the pod is %s with mtu %u (want up, mtu %d)", l->ifname,
			 gl.flags & IFF_UP ? "up" : "down", gl.mtu, l->mtu);
		goto fail;
	}
	{
		struct addr_scan sc = { .ifindex = (int)gl.ifindex, .c = c };

		if ((rc = gnl_ifaddr_dump_msg(&m, AF_UNSPEC)) == 0) {
			rc = gnl_dump(ps, m, addr_cb, &sc);
			nlmsg_free(m);
		}
		if (rc) {
			snprintf(err, errlen, "dump addresses in the pod: %s", strerror(-rc));
			goto fail;
		}
		for (int i = 0; i < c->naddrs; i++)
			if (!(sc.found & (1u << i))) {
				snprintf(err, errlen, "address %s/%d is missing from %s in the pod",
					 cni_ip_str(&c->addrs[i].ip, b, sizeof(b)), c->addrs[i].plen, l->ifname);
				goto fail;
			}
	}
	{
		struct route_scan sc = { .ifindex = (int)gl.ifindex, .want = rts };

		sc.n = cni_pod_routes(c, rts, (int)(sizeof(rts) / sizeof(rts[0])));
		if ((rc = gnl_route_dump_msg(&m, AF_UNSPEC, RT_TABLE_MAIN)) == 0) {
			rc = gnl_dump(ps, m, route_cb, &sc);
			nlmsg_free(m);
		}
		if (rc) {
			snprintf(err, errlen, "dump routes in the pod: %s", strerror(-rc));
			goto fail;
		}
		for (int i = 0; i < sc.n; i++)
			if (!(sc.found & (1ull << i))) {
				char g[64];

				snprintf(err, errlen, "route %s/%d via %s is missing in the pod",
					 rts[i].plen ? cni_ip_str(&rts[i].dst, b, sizeof(b)) : "default",
					 rts[i].plen, cni_ip_str(&rts[i].gw, g, sizeof(g)));
				goto fail;
			}
	}
	gnl_close(ps);
	return 0;
fail:
	gnl_close(ps);
	return -1;
}

struct sweep {
	char (*names)[CNI_IFNAME_MAX + 1];
	size_t n, cap;
};

static int ours(const char *name)
{
	if (strlen(name) != 15 || strncmp(name, "gc", 2))
		return 0;
	for (int i = 2; i < 15; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return 0;
	return 1;
}

static int sweep_cb(const struct nlmsghdr *h, void *arg)
{
	struct sweep *sw = arg;
	struct gnl_link l;

	if (gnl_link_parse(h, &l) || strcmp(l.kind, "veth") || !ours(l.name))
		return 0;
	if (G_GROW(sw->names, sw->cap, sw->n, 16))
		return -ENOMEM;
	snprintf(sw->names[sw->n++], CNI_IFNAME_MAX + 1, "%s", l.name);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int pod_sweep(const char *host_netns, char (*keep)[CNI_IFNAME_MAX + 1], size_t n,
	      unsigned *removed, char *err, size_t errlen)
{
	struct sweep sw = { 0 };
	struct gnl_sock *hs;
	struct nl_msg *m;
	char ext[128] = "";
	int rc;

	*removed = 0;
	rc = gnl_open(&hs, host_netns, err, errlen);
	if (rc)
		return rc;
	rc = gnl_link_dump_msg(&m);
	if (!rc) {
		rc = gnl_dump(hs, m, sweep_cb, &sw);
		nlmsg_free(m);
	}
	if (rc)
		snprintf(err, errlen, "dump links: %s", strerror(-rc));
	for (size_t i = 0; !rc && i < sw.n; i++) {
		if (n && bsearch(sw.names[i], keep, n, sizeof(*keep), cmp_name))
			continue;
		rc = gnl_link_del(hs, sw.names[i], ext, sizeof(ext));
		if (rc == -ENODEV)
			rc = 0;
		else if (rc)
			snprintf(err, errlen, "delete leftover %s: %s %s", sw.names[i], strerror(-rc), ext);
		else
			(*removed)++;
	}
	free(sw.names);
	gnl_close(hs);
	return rc;
}

int pod_link_mtu(const char *host_netns, const char *name)
{
	struct gnl_sock *hs;
	struct gnl_link gl;
	char err[128];
	int mtu = 0;

	if (!name || !*name || gnl_open(&hs, host_netns, err, sizeof(err)))
		return 0;
	if (!gnl_link_get(hs, name, &gl))
		mtu = (int)gl.mtu;
	gnl_close(hs);
	return mtu;
}
