/*
 * The kernel backend's execution: the ops sent in bounded chunks with ENOMEM
 * retries, each answer matched to its op's result; the steering transaction;
 * the egress shard's nftables program and sysctls inside the backend's netns.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/kernel_int.h"

/* ------------------------------------------------------------ execution */

static const char *verb_str(enum verb v)
{
	return v == V_ADD ? "add" : v == V_REPLACE ? "replace" : v == V_DEL ? "delete" : "set";
}

void kb_describe(const struct pass *ps, const struct op *o, char *buf, size_t n)
{
	switch (o->k) {
	case O_ROUTE: {
		char t[200];
		struct gnl_route tmp;

		snprintf(buf, n, "route %s", gnl_route_str(kb_op_route(ps, o, &tmp), t, sizeof(t)));
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
		return gnl_route_msg(m, del ? RTM_DELROUTE : RTM_NEWROUTE, cr, kb_op_route(ps, o, &tmp));
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
		kb_describe(x->ps, o, d, sizeof(d));
		gdp_result_fail(kb_op_res(x->ps, o, x->node_res), e, "%s %s: %s%s%s%s", verb_str(o->verb), d,
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

		kb_describe(x->ps, o, d, sizeof(d));
		gdp_result_fail(kb_op_res(x->ps, o, x->node_res), e, "%s %s: %s", verb_str(o->verb), d,
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
int kb_execute(struct kb *k, struct plan *p, struct pass *ps, struct gdp_results *res,
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

/* ------------------------------------------------------------ egress shard */

int kb_write_sysctl(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}


/* Runs fn's nftables work inside the backend's netns (libnftables uses the thread's namespace). */
int kb_in_netns(const char *netns, int (*fn)(void *), void *arg, char *err, size_t errlen)
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
	return kb_write_sysctl("/proc/sys/net/netfilter/nf_hooks_lwtunnel", "1");
}

/* The translator's nftables table: applied (or checked, dry) as one program; removed when no shard. */
void kb_egress_nft(struct kb *k, struct gdp_result *eres, const struct gde_shard *sh,
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
		if (!kb_in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err))) {
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
	rc = kb_in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err));
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
	rc = kb_in_netns(k->netns, sysctl_job, NULL, j.err, sizeof(j.err));
	if (rc) {
		gdp_result_fail(eres, rc, "egress shard: sysctl net.netfilter.nf_hooks_lwtunnel=1: %s",
				strerror(-rc));
		free(text);
		return;
	}
	j.text = text;
	rc = kb_in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err));
	if (rc) {
		gdp_result_fail(eres, rc, "egress shard: %s", j.err);
		free(text);
		return;
	}
	/* what this apply left, the reference of the next read-back */
	j.text = NULL;
	free(k->egress_listing);
	k->egress_listing = NULL;
	if (!kb_in_netns(k->netns, nft_job_run, &j, j.err, sizeof(j.err)))
		k->egress_listing = j.listing;
	else
		free(j.listing);
	free(k->egress_text);
	k->egress_text = text;
	k->egress_clean = false;
}
