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
 *
 * The backend is split by job (agent/dp/kernel_int.h: the structs they share):
 *   kernel.c        the full reconcile pass (snapshot -> plan -> diff -> execute),
 *                   the backend ops (open, apply, observe, close, adopt) and the observer
 *   kernel_snap.c   the dump of links, rules, neighbours, addresses; the key hashes
 *   kernel_plan.c   the wanted kernel objects of the model (plan), a pass's desired routes
 *   kernel_diff.c   the route dump streamed against the plan; the ops of the difference
 *   kernel_exec.c   the ops sent in chunked batches, the steering and egress programs
 *   kernel_delta.c  a delta apply: the ops of what changed, without a dump
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/kernel_int.h"

/* ------------------------------------------------------------ reconcile */

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

		kb_describe(ps, o, dsc, sizeof(dsc));
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
	kb_kh_free(&ps->names);
	gdp_locals_free(&ps->locals);
	kb_plan_free(&ps->p);
	kb_snap_free(&ps->s);
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

	rc = kb_snapshot(k, &ps.s);
	if (rc) {
		kb_dump_failed(k, res, node_res, "dump kernel state", rc);
		goto out;
	}
	if (kb_kh_init(&ps.names, ps.s.links.n))
		goto nomem;
	for (i = 0; i < ps.s.links.n; i++)
		kb_kh_put(&ps.names, kb_name_hash(ps.s.links.v[i].name), i);
	up = kb_pass_link(&ps, d->node.uplink[0] ? d->node.uplink : "lo");
	if (!up) {
		rc = -ENODEV;
		gdp_result_fail(node_res, rc, "node: uplink %s not found", d->node.uplink);
		goto out;
	}
	ps.upidx = up->ifindex;
	if (kb_plan(&ps))
		goto nomem;
	rc = kb_diff(&ps);
	if (rc == -EAGAIN && ps.busy_new)
		goto out; /* planned again by the caller */
	if (rc == -ENOMEM)
		goto nomem;
	if (rc)
		goto out;
	steer_pending = kb_steer_diff(&ps, dry);
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

				dry_mark(&ps, &o, kb_des_res(&ps, i));
				pending++;
			}
		pending += (int)ps.left.n;
	} else {
		rc = kb_execute(k, &ps.p, &ps, res, node_res);
	}
	if (rc != -ENOMEM)
		kb_egress_nft(k, ps.eres, &ps.shard, ps.evpcs, ps.n_evpcs, dry, &pending);
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
		rc = kb_write_sysctl(knobs[i], "1");
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
	rc = kb_in_netns(k->netns, steer_open, k, err, errlen);
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
	if ((rc = gnl_open(&o->nl, o->netns, err, sizeof(err))) || (rc = kb_in_netns(o->netns, steer_open, o, err, sizeof(err))))
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
