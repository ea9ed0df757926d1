/*
 * galactic-agent: owns the node's SRv6 data plane.
 *
 *   galactic-agent --state-dir DIR [--backend kernel|bpf|auto [--fallback]]
 *                  [--bpffs DIR] [--netns NAME]
 *                  [--interval SEC] [--once] [--rtproto N] [--tables MIN-MAX]
 *                  [--cni-socket PATH] [--kubeconfig F --node N --report-namespace NS
 *                  [--learn-unlabelled-reports]]
 *                  [--metrics-addr HOST:PORT] [--verify-interval SEC]
 *
 * Wiring only (docs/architecture.md, "The agent"): inputs (CNI verbs, the
 * route learner, legacy drop-in files) write the record (agent/record.h);
 * one apply pipeline (agent/pipeline.h) snapshots it, applies it through the
 * backend and hands the results to the reports, the health endpoints and the
 * identity thread (agent/identity/identity.h), which writes the node identity
 * it gets from the API into the record. This thread turns kernel
 * notifications and signals into pipeline kicks. SIGHUP imports drop-in
 * files (state.json, remotes.json) and reconciles; SIGTERM/SIGINT stop the
 * agent and leave the kernel state in place, so a restart does not
 * interrupt traffic.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cni/learn.h"
#include "agent/cni/listener.h"
#include "agent/cni/verbs.h"
#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/dp/steer.h"
#include "agent/egress/egress.h"
#include "agent/health/drift.h"
#include "agent/health/health.h"
#include "agent/identity/identity.h"
#include "agent/nl/objects.h"
#include "agent/pipeline.h"
#include "agent/record.h"
#include "agent/report/report.h"
#include "common/log.h"
#include "common/version.h"
#include "common/grow.h"

#define COMP "agent"

static volatile sig_atomic_t got_hup, got_term;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct agent {
	struct record *rec;
	struct pipeline *pl;
	struct rpt *rpt;               /* reports + learned routes (--node), or NULL */
	struct ghealth *health;        /* --metrics-addr, or NULL */
	struct gid_daemon *ident;      /* node identity from the API (--node), or NULL */
	struct ges_daemon *egress;     /* the node's EgressShard (--node), or NULL */
	const char *backend;           /* the backend in use ("kernel", "bpf") */
	int fails;                     /* consecutive verify ticks that found failures (no drift) */
	/* Drift (agent/health/drift.h): found after a verified pass, repaired, read back. */
	struct gdrift drift;
	bool drift_seen;               /* the last read-back found drift: the next one repairs */
	double recheck_at;             /* a read-back due then (ms, monotonic; 0: none) */
	unsigned long repair_full;     /* full passes when a repair was asked (ULONG_MAX: none) */
};

/* The identity the API decided goes into the record (in process); a pass applies it. */
static void on_identity(void *ctx, const struct gid_result *r)
{
	struct agent *ag = ctx;
	struct gdp_node cur, n = { 0 };
	int mtu = 0;
	bool have = record_node_identity(ag->rec, &cur, &mtu);

	memcpy(n.block, r->spec.block, 6);
	n.node_id = r->id;
	/* the model has one uplink: the first listed; none listed keeps the record's */
	snprintf(n.uplink, sizeof(n.uplink), "%s", r->spec.n_uplinks ? r->spec.uplinks[0] : have ? cur.uplink : "");
	if (have && !memcmp(cur.block, n.block, 6) && cur.node_id == n.node_id && !strcmp(cur.uplink, n.uplink))
		return;
	glogf(GLOG_INFO, COMP, "node identity from the API: %s", r->message);
	if (record_set_node_identity(ag->rec, &n, mtu) == 0) {
		if (ag->pl)
			pipeline_kick(ag->pl);
	}
	else
		glogf(GLOG_ERROR, COMP, "node identity not recorded (out of memory)");
}

/* What a pass or a verify tick saw goes to /readyz and the NodeDataplane status.
 * t (a pass's tally, NULL for a read-back): nothing failed, no walk of res. */
static void health_report(struct agent *ag, const struct rec_snap *snap, const struct gdp_results *res,
			  const struct pipeline_tally *t, bool verify_only, bool in_sync, double secs)
{
	char why[300] = "";
	size_t prog = res->n + res->remotes_ok;
	bool ok = (t && !t->bad) || ghealth_verdict(res, &prog, why, sizeof(why));

	ok = ok && in_sync;

	if (ok)
		snprintf(why, sizeof(why), "datapath read back as desired"); /* no counts: the status must not change with every ADD */
	else if (!why[0])
		snprintf(why, sizeof(why), "owned leftovers in the datapath");
	ghealth_pass(ag->health, &(struct ghealth_pass){ .verify_only = verify_only, .verified = ok,
							 .objects = res->n + res->remotes_ok,
							 .programmed = prog, .failed = res->n + res->remotes_ok - prog,
							 .added = res->added, .removed = res->removed,
							 .seconds = secs, .why = why });
	ghealth_identity(ag->health, snap->have_node ? snap->st.node.node_id : 0,
			 ag->ident ? "none in the record and none from the API yet (NodeDataplane)"
				   : "none in the record (no --node: no NodeDataplane)");
	gid_daemon_datapath(ag->ident, snap->have_node ? snap->st.node.node_id : 0, snap->st.node.block, ok,
			    ok ? "Verified" : snap->have_node ? "NotVerified" : "NoIdentity", why);
}

/* The node's egress shard from the API goes into the record (in process); a pass applies it. */
static void on_shard(void *ctx, const struct gdp_egress *e)
{
	struct agent *ag = ctx;

	if (record_set_egress(ag->rec, e) == 0 && ag->pl)
		pipeline_kick(ag->pl);
}

/* What the pass did with the shard (its result: the tally's lookup) goes to the EgressShard status. */
static void egress_report(struct agent *ag, const struct rec_snap *snap, const struct pipeline_tally *t)
{
	const struct gdp_result *er = t->egress;
	char why[160];

	/* only the kernel backend programs a shard today (docs/dataplane-egress.md, "Planned") */
	snprintf(why, sizeof(why), "the %s backend does not program egress shards (planned)",
		 ag->backend ? ag->backend : "node's");
	if (ag->egress)
		ges_daemon_datapath(ag->egress, &snap->st.egress, er && er->programmed && !er->err,
				    er ? er->msg : snap->st.egress.have ? why : "");
}

/* The route learner's output goes into the record (in process). */
static int learned_remotes(void *ctx, const struct gdp_remote *v, size_t n)
{
	struct agent *ag = ctx;
	int rc = record_set_remotes(ag->rec, v, n);

	if (!rc && ag->pl)
		pipeline_kick(ag->pl);
	return rc; /* 1: the same set as before */
}

/* After every pass: the reports get the snapshot and its results. */
static void on_pass(void *ctx, const struct rec_snap *snap, const struct gdp_results *res,
		    const struct pipeline_tally *t)
{
	struct agent *ag = ctx;
	struct rpt_pod *pods;

	/* an adopted state is not verified until the first full pass read it back */
	health_report(ag, snap, res, t, false, !pipeline_adopting(ag->pl), 0);
	egress_report(ag, snap, t);
	if (!ag->rpt)
		return;
	pods = calloc(snap->st.n_atts + 1, sizeof(*pods));
	if (!pods)
		return;
	for (size_t i = 0; i < snap->st.n_atts; i++) {
		snprintf(pods[i].ns, sizeof(pods[i].ns), "%s", snap->pods[i].ns);
		snprintf(pods[i].name, sizeof(pods[i].name), "%s", snap->pods[i].name);
		snprintf(pods[i].guest_ifname, sizeof(pods[i].guest_ifname), "%s", snap->pods[i].guest_ifname);
	}
	rpt_update(ag->rpt, &snap->st, pods, res);
	free(pods);
}

static int wait_applied(void *ctx, unsigned long gen, double *backend_ms)
{
	return pipeline_wait_spans(((struct agent *)ctx)->pl, gen, backend_ms);
}

static int result_of(void *ctx, enum gdp_obj_kind kind, const char *vpc, const char *key,
		     struct gdp_result *out)
{
	return pipeline_result(((struct agent *)ctx)->pl, kind, vpc, key, out);
}

/* SIGHUP: a damaged record is read again; drop-in files are imported. */
static void on_hup(struct agent *ag)
{
	char err[512];

	if (record_retry_load(ag->rec, err, sizeof(err)))
		glogf(GLOG_ERROR, COMP, "record still damaged: %s", err);
	if (record_import_legacy(ag->rec, err, sizeof(err)) < 0)
		glogf(GLOG_ERROR, COMP, "drop-in files not imported: %s", err);
}

/*
 * Which kernel events can mean drift of what we own. A node's primary CNI
 * (Cilium, Calico, ptp...) creates and deletes a veth for every pod of
 * its own: notifications about links that are not ours (not an
 * attachment's host veth, not the uplink or the egress interface, not a
 * link the bpf backend filters) cause no pass and no read-back; which
 * links are ours is decided by the record's names and the ifindexes seen
 * for them, never by a name pattern (docs/dataplane-kernel.md, "Kernel
 * notifications").
 */
struct watch {
	uint8_t proto;
	uint32_t tmin, tmax;
	bool dirty;
	bool learned;           /* a guest's address was recorded: a pass applies it */
	bool tc;                 /* a TC filter, chain or qdisc was deleted: on tc_if[] */
	bool steer_seen;         /* nftables: the transaction being read touched the steering table */
	bool steer;              /* ... and it was someone else's: drift, read back at once */
	bool host_gone;          /* a host veth the record still has was deleted: read back (drift), repair */
	bool host_back;          /* a host veth came back whose attachment the last pass failed: read back, repair */
	char comm[16];           /* our task name (NFTA_GEN_PROC_NAME of our own transactions) */
	int tc_if[16];           /* its links (ifindex); n_tc_if > 16: too many to say */
	size_t n_tc_if;
	struct gdp_backend *bpf; /* the bpf backend (next hops' neighbours), or NULL */
	struct record *rec;
	struct pipeline *pl;     /* the last pass's results (a host veth's attachment) */
	struct glearn *learn;   /* NULL without the CNI socket */
	/* The node's own links by name, from the record (watch_names, before
	 * each batch of notifications): the uplink ("lo" when none is named:
	 * the SIDs' device) and the egress shard's internet interface. */
	char uplink[IFNAMSIZ], eoif[IFNAMSIZ];
	bool uplinks_by_addr;    /* bpf, no uplink named: a link with a global IPv6 address is one */
	unsigned long foreign;   /* notifications about other links, dropped (debug log) */
	/* Links seen as an attachment's host veth (ifindex -> name; node:
	 * the uplink or the egress interface). Once the record no longer has
	 * a host veth's name, the deletions on that link are a CNI DEL's own
	 * (its pass removed what it owned, then the veth went), not drift,
	 * and ask for no full pass. */
	struct watch_veth { uint32_t ifindex; char name[IFNAMSIZ]; bool node; } *veths;
	size_t nveths, capveths;
	/* Links of a kind an unnamed uplink can be (gdp_bpf_uplink_kind: a NIC,
	 * a bond, a team, a VLAN), by ifindex, from the start's dump and the
	 * link notifications: only their addresses can make a bpf uplink. */
	uint32_t *cands;
	size_t ncands, capcands;
	bool cands_lost;         /* one could not be noted: every address counts */
};

/* A link the record knows as an attachment's host veth (reserved or desired);
 * vpc and id (may be NULL) get its attachment's. */
static bool host_veth_of(struct record *rec, const char *name, char *vpc, char *id)
{
	bool found = false;

	if (!rec || !name[0])
		return false;
	record_lock(rec);
	{
		const struct rec_att *a = record_find_host(rec, name);

		if ((found = a != NULL) && vpc && id) {
			snprintf(vpc, GDP_ID_MAX + 1, "%s", a->m.vpc);
			snprintf(id, GDP_ID_MAX + 1, "%s", a->m.id);
		}
	}
	record_unlock(rec);
	return found;
}

static bool host_veth(struct record *rec, const char *name)
{
	return host_veth_of(rec, name, NULL, NULL);
}

static struct watch_veth *veth_find(struct watch *w, uint32_t ifindex, const char *name)
{
	for (size_t i = 0; i < w->nveths; i++)
		if (ifindex ? w->veths[i].ifindex == ifindex : name && !strcmp(w->veths[i].name, name))
			return &w->veths[i];
	return NULL;
}

static void veth_note(struct watch *w, uint32_t ifindex, const char *name, bool node)
{
	struct watch_veth *v = veth_find(w, ifindex, NULL);

	if (!v && G_GROW(w->veths, w->capveths, w->nveths, 64))
		return; /* unknown later: its deletions count as drift (a full pass) */
	if (!v)
		v = &w->veths[w->nveths++];
	v->ifindex = ifindex;
	v->node = node;
	snprintf(v->name, sizeof(v->name), "%s", name);
}

static bool cand_has(const struct watch *w, uint32_t ifindex)
{
	for (size_t i = 0; i < w->ncands; i++)
		if (w->cands[i] == ifindex)
			return true;
	return w->cands_lost;
}

/* A link notification (or the start's dump): note or forget it as an uplink candidate. */
static void cand_link(struct watch *w, const struct gnl_link *l, bool gone)
{
	size_t i;

	for (i = 0; i < w->ncands && w->cands[i] != l->ifindex; i++)
		;
	if (gone || (l->flags & IFF_LOOPBACK) || !gdp_bpf_uplink_kind(l->kind)) {
		if (i < w->ncands)
			w->cands[i] = w->cands[--w->ncands];
		return;
	}
	if (i < w->ncands)
		return;
	if (G_GROW(w->cands, w->capcands, w->ncands, 8)) {
		w->cands_lost = true;
		return;
	}
	w->cands[w->ncands++] = l->ifindex;
}

/* A host veth whose attachment the record no longer has (by ifindex, or by
 * name when ifindex is 0): what goes with it is a DEL's doing. */
static bool departed(struct watch *w, uint32_t ifindex, const char *name)
{
	struct watch_veth *v = (ifindex || (name && name[0])) ? veth_find(w, ifindex, name) : NULL;

	return v && !v->node && !host_veth(w->rec, v->name);
}

static void veth_forget(struct watch *w, uint32_t ifindex)
{
	struct watch_veth *v = veth_find(w, ifindex, NULL);

	if (v)
		*v = w->veths[--w->nveths];
}

/* The node's own links as the record names them now (before each batch). */
static void watch_names(struct watch *w)
{
	struct gdp_node n;
	struct gdp_egress e;
	int mtu;
	bool named;

	if (!record_node_identity(w->rec, &n, &mtu))
		n.uplink[0] = 0;
	named = n.uplink[0] && strcmp(n.uplink, "lo");
	snprintf(w->uplink, sizeof(w->uplink), "%s", n.uplink[0] ? n.uplink : "lo");
	w->uplinks_by_addr = w->bpf && !named;
	w->eoif[0] = 0;
	if (record_egress(w->rec, &e) && e.have)
		snprintf(w->eoif, sizeof(w->eoif), "%s", e.oif[0] ? e.oif : w->uplink);
}

/* Whose link a link notification is about (the record's names, the
 * ifindexes seen for them, the links the bpf backend filters). */
enum link_whose { LINK_OTHER, LINK_HOST, LINK_NODE };

static enum link_whose link_whose(struct watch *w, const struct gnl_link *l)
{
	struct watch_veth *v = veth_find(w, l->ifindex, NULL);

	if (host_veth(w->rec, l->name))
		return LINK_HOST;
	if (!strcmp(l->name, w->uplink) || (w->eoif[0] && !strcmp(l->name, w->eoif)))
		return LINK_NODE;
	if (v)
		return v->node ? LINK_NODE : LINK_HOST; /* renamed, or a DEL's veth going */
	if (w->bpf && gdp_bpf_link_ours(w->bpf, l->ifindex))
		return LINK_NODE; /* an uplink the bpf backend chose by its address */
	return LINK_OTHER;
}

/* A TC notification's link: ours (a host veth or node link seen, or one the bpf backend filters)? */
static bool tc_link_ours(struct watch *w, uint32_t ifindex)
{
	return veth_find(w, ifindex, NULL) || (w->bpf && gdp_bpf_link_ours(w->bpf, ifindex));
}

/* At start: the host veths already there (their DELs must not ask for a full pass either). */
static int seed_cb(const struct nlmsghdr *h, void *arg)
{
	struct watch *w = arg;
	struct gnl_link l;

	if (gnl_link_parse(h, &l) == 0 && host_veth(w->rec, l.name))
		veth_note(w, l.ifindex, l.name, false);
	if (gnl_link_parse(h, &l) == 0)
		cand_link(w, &l, false);
	return 0;
}

static void watch_seed(struct watch *w, const char *netns)
{
	struct gnl_sock *s = NULL;
	struct nl_msg *m = NULL;
	char err[256];

	if (gnl_open(&s, netns, err, sizeof(err)) == 0 && gnl_link_dump_msg(&m) == 0)
		gnl_dump(s, m, seed_cb, w);
	if (m)
		nlmsg_free(m);
	gnl_close(s);
}

/* A host veth (re)appeared: one the last pass failed (its veth was missing) is worth a repair. */
static void host_link_seen(struct watch *w, const struct gnl_link *l)
{
	char vpc[GDP_ID_MAX + 1] = "", id[GDP_ID_MAX + 1] = "";
	struct gdp_result r;
	bool known = veth_find(w, l->ifindex, NULL) != NULL;

	if (!known && w->pl && host_veth_of(w->rec, l->name, vpc, id) &&
	    pipeline_result(w->pl, GDP_OBJ_ATTACHMENT, vpc, id, &r) == 0 && (!r.programmed || r.err))
		w->host_back = true;
	veth_note(w, l->ifindex, l->name, false);
}

static int watch_cb(const struct nlmsghdr *h, void *arg)
{
	struct watch *w = arg;
	struct gnl_route r;
	struct gnl_rule ru;
	struct gnl_neigh n;
	struct gnl_ifaddr a;
	struct gnl_link l;

	switch (h->nlmsg_type) {
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		/* ours: our protocol in a table we write (main, the VPC range);
		 * or anyone's in a VPC table (refuses that VPC) */
		if (gnl_route_parse(h, &r) == 0 &&
		    ((h->nlmsg_type == RTM_DELROUTE && r.protocol == w->proto &&
		      (r.table == RT_TABLE_MAIN || (r.table >= w->tmin && r.table <= w->tmax)) && !departed(w, r.oif, NULL)) ||
		     (r.protocol != w->proto && r.table >= w->tmin && r.table <= w->tmax)))
			w->dirty = true;
		break;
	case RTM_NEWRULE:
	case RTM_DELRULE:
		if (gnl_rule_parse(h, &ru) == 0 &&
		    ((h->nlmsg_type == RTM_DELRULE && ru.protocol == w->proto &&
		      !(ru.iifname[0] && departed(w, 0, ru.iifname))) ||
		     (ru.protocol != w->proto && ru.table >= w->tmin && ru.table <= w->tmax)))
			w->dirty = true;
		break;
	case RTM_NEWNEIGH:
		/* A self-addressed guest's first packets (learn.h: by the guest's
		 * MAC, no system call for another device's neighbours). */
		if (w->learn && gnl_neigh_parse(h, &n) == 0 && glearn_neigh(w->learn, &n))
			w->learned = true;
		/* An underlay next hop of the bpf routes (re)resolved elsewhere: refresh their L2. */
		if (w->bpf && gnl_neigh_parse(h, &n) == 0 && gdp_bpf_nexthop_event(w->bpf, &n, false))
			w->dirty = true;
		break;
	case RTM_DELNEIGH:
		if (gnl_neigh_parse(h, &n) == 0 && n.protocol == w->proto && !departed(w, n.ifindex, NULL))
			w->dirty = true;
		else if (w->bpf && gnl_neigh_parse(h, &n) == 0 && gdp_bpf_nexthop_event(w->bpf, &n, true))
			w->dirty = true;
		break;
	case RTM_NEWADDR:
		/* bpf without a named uplink: a link of an uplink's kind that
		 * gets a global IPv6 address becomes one (decap); another CNI's
		 * veth, bridge or tunnel does not (gdp_bpf_uplink_kind) */
		if (w->uplinks_by_addr && gnl_ifaddr_parse(h, &a) == 0 && a.family == AF_INET6 &&
		    a.scope == RT_SCOPE_UNIVERSE && !veth_find(w, a.ifindex, NULL) && !gdp_bpf_link_ours(w->bpf, a.ifindex) &&
		    cand_has(w, a.ifindex))
			w->dirty = true;
		break;
	case RTM_DELADDR:
		if (gnl_ifaddr_parse(h, &a) == 0 && a.protocol == w->proto && !departed(w, a.ifindex, NULL))
			w->dirty = true;
		break;
	case RTM_NEWLINK:
		if (gnl_link_parse(h, &l))
			break;
		cand_link(w, &l, false);
		switch (link_whose(w, &l)) {
		case LINK_OTHER:
			w->foreign++; /* another CNI's veth, a bridge...: nothing of ours */
			break;
		case LINK_HOST:
			/* An attachment's own veth coming and going up is the CNI
			 * verbs' doing, applied by an incremental pass: not a reason
			 * for a full one (every ADD would be followed by one). Its
			 * deletion is seen (DELLINK, and the routes that go with
			 * it); a host veth set down by someone else is repaired by
			 * the next full pass. */
			if (host_veth(w->rec, l.name))
				host_link_seen(w, &l);
			else if (!departed(w, l.ifindex, NULL))
				w->dirty = true; /* a host veth renamed away */
			break; /* (departed: a DEL's veth going down on its way out) */
		case LINK_NODE:
			veth_note(w, l.ifindex, l.name, true);
			w->dirty = true; /* the uplink appeared or changed */
			break;
		}
		break;
	case RTM_DELLINK:
		if (gnl_link_parse(h, &l))
			break;
		cand_link(w, &l, true);
		switch (link_whose(w, &l)) {
		case LINK_OTHER:
			w->foreign++;
			break;
		case LINK_HOST:
			/* A DEL's veth (its attachment left the record first) is
			 * not drift; one the record still has is: read back */
			if (!departed(w, l.ifindex, NULL) && host_veth(w->rec, l.name))
				w->host_gone = true;
			else if (!departed(w, l.ifindex, NULL))
				w->dirty = true;
			veth_forget(w, l.ifindex);
			break;
		case LINK_NODE:
			veth_forget(w, l.ifindex);
			w->dirty = true;
			break;
		}
		break;
	case RTM_DELTFILTER:
	case RTM_DELCHAIN:
	case RTM_DELQDISC: {
		const struct tcmsg *t = NLMSG_DATA(h);

		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*t)) || t->tcm_ifindex <= 0)
			break;
		/* A DEL's veth going takes its qdisc and filters with it: not drift
		 * (a read-back holds the passes, ~1 s per DEL at 1,000 attachments). */
		if (departed(w, (uint32_t)t->tcm_ifindex, NULL))
			break;
		/* Another CNI's link (its own programs on its own veths): not ours. */
		if (!tc_link_ours(w, (uint32_t)t->tcm_ifindex)) {
			w->foreign++;
			break;
		}
		/* A filter (or its qdisc) went: ours? a read-back says (bpf backend),
		 * when the link is still there without our filter (main loop). */
		{
			size_t i;

			for (i = 0; i < w->n_tc_if && i < 16 && w->tc_if[i] != t->tcm_ifindex; i++)
				;
			if (i == w->n_tc_if) {
				if (i < 16)
					w->tc_if[i] = t->tcm_ifindex;
				w->n_tc_if++;
			}
			w->tc = true;
		}
		break;
	}
	}
	return 0;
}

/*
 * nftables notifications: a transaction that changed the pod steering
 * table (dp/steer.h) and was not ours (its NEWGEN, which ends it, names
 * the committing task) is drift. Our own (every ADD and DEL) is not.
 */
static int nft_watch_cb(const struct nlmsghdr *h, void *arg)
{
	struct watch *w = arg;
	char proc[32];

	switch (gds_notification(h, proc, sizeof(proc))) {
	case GDS_EV_OURS:
		w->steer_seen = true;
		break;
	case GDS_EV_GEN:
		if (w->steer_seen && strcmp(proc, w->comm))
			w->steer = true;
		w->steer_seen = false;
		break;
	case GDS_EV_OTHER:
		break;
	}
	return 0;
}

/*
 * An object the last pass had programmed (drift is a change from there).
 * The read-back covers what the last pass applied (pipeline_verify), whose
 * programmed remotes the results keep only as a count (folded): a remote
 * without an entry was programmed.
 */
static bool was_programmed(void *ctx, const struct gdp_result *r)
{
	struct agent *ag = ctx;
	struct gdp_result last;

	if (pipeline_result(ag->pl, r->kind, r->vpc, r->key, &last))
		return r->kind == GDP_OBJ_REMOTE;
	return last.programmed && !last.err;
}

/* Repairs read back: counted (metric, NodeDataplane status) and logged. */
static void count_repairs(struct agent *ag, const unsigned long got[GDRIFT_KINDS])
{
	const char *kinds[GDRIFT_KINDS];
	bool any = false;

	for (int k = 0; k < GDRIFT_KINDS; k++) {
		kinds[k] = gdrift_kind_str((enum gdrift_kind)k);
		if (!got[k])
			continue;
		any = true;
		ghealth_drift_repaired(ag->health, kinds[k], got[k]);
		glogf(GLOG_INFO, COMP, "drift repaired and read back: %lu %s (%lu so far)", got[k], kinds[k],
		      ag->drift.repaired[k]);
	}
	if (any)
		gid_daemon_drift(ag->ident, kinds, ag->drift.repaired, GDRIFT_KINDS);
}

/*
 * The datapath read back without a pass (verify ticks, TC notifications,
 * after a repair). Any difference makes the node not ready at once. Drift
 * (what the last pass had programmed, now missing or different) is
 * repaired at once when the trigger says for sure that something of ours
 * went (definitive: a TC filter deleted), else when a second read 250 ms
 * later still sees it, so a change caught mid-way does not rewrite the
 * kernel. Failures that are no drift (an object that never got programmed)
 * ask for a full pass when two verify ticks in a row see them, and so does
 * drift a repair pass did not bring back. true when it asked for a repair
 * (a full pass).
 */
static bool read_back(struct agent *ag, bool definitive, bool tick, const char *why)
{
	unsigned long got[GDRIFT_KINDS] = { 0 }, full, delta;
	struct gdp_results res;
	struct rec_snap snap;
	double t0 = now_ms();
	int n, pending = 0;
	size_t unasked;
	bool repairing = false;

	gdp_results_init(&res);
	n = pipeline_verify(ag->pl, &res, &snap); /* snap: the state it read back (no second copy) */
	if (n >= 0) {
		health_report(ag, &snap, &res, NULL, true, n == 0, (now_ms() - t0) / 1e3);
		/* remotes read back programmed are only counted: the state says which are still ours */
		pending = gdrift_read_back(&ag->drift, &res, was_programmed, ag, &snap.st, got);
		count_repairs(ag, got);
	}
	record_snap_free(&snap);
	/* drift a repair pass did not bring back (a host veth gone) asks for no
	 * second one: it stays pending (counted when it returns), a failure */
	unasked = pending > 0 ? gdrift_unasked(&ag->drift) : 0;
	if (n > 0 && unasked > 0 && (definitive || ag->drift_seen)) {
		glogf(GLOG_WARN, COMP, "%s: drift of %d objects (%d differences): repairing", why, pending, n);
		ag->drift_seen = false;
		ag->recheck_at = 0;
		pipeline_counters(ag->pl, &full, &delta);
		ag->repair_full = full;
		gdrift_repair_asked(&ag->drift);
		pipeline_kick_full(ag->pl);
		repairing = true;
	} else if (n > 0 && unasked > 0) {
		glogf(GLOG_WARN, COMP, "%s: drift of %d objects (%d differences): not ready, reading again", why,
		      pending, n);
		ag->drift_seen = true;
		ag->recheck_at = now_ms() + 250;
	} else if (n > 0 && tick && ++ag->fails >= 2) {
		glogf(GLOG_WARN, COMP, "verify: %d differences on two reads: reconciling", n);
		ag->fails = 0;
		pipeline_kick_full(ag->pl);
	} else if (n > 0 && tick) {
		glogf(GLOG_WARN, COMP, "verify: %d differences in the datapath: not ready", n);
	} else if (n == 0) {
		ag->fails = 0;
		ag->drift_seen = false;
	}
	gdp_results_free(&res);
	return repairing;
}

static void usage(void)
{
	fprintf(stderr, "usage: galactic-agent --state-dir DIR [--backend kernel|bpf|auto] [--fallback]\n"
			"       [--bpffs DIR] [--netns NAME]\n"
			"       [--interval SEC] [--once] [--rtproto N] [--tables MIN-MAX] [--batch N]\n"
			"       [--cni-socket PATH] [--kubeconfig PATH --node NAME --report-namespace NS\n"
			"        [--learn-unlabelled-reports]]\n"
			"       [--metrics-addr HOST:PORT] [--verify-interval SEC]\n"
			"       [--egress-namespace NS (galactic-system)] [--egress-interface DEV (the uplink)]\n"
			"       galactic-agent --version | --help\n");
}

/*
 * The allocator's settings for a daemon that holds 100,000 remotes: every
 * allocation of 128 KiB or more is its own mapping, given back to the
 * kernel when freed. glibc otherwise raises that threshold to the largest
 * block freed so far (a pass's 40 MB of results), after which a full
 * pass's arrays come from the heap and stay resident between passes
 * (bench_rss: 37-40 MiB at rest instead of 28-29 MiB).
 */
static void malloc_setup(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* Two malloc arenas, not one per thread that ever allocated (8 per
	 * core): each CNI and pipeline thread's arena kept its own freed pages
	 * (bench_rss, kernel backend, 1,000 ADDs 8 at a time: ten arenas of
	 * 0.3-0.7 MiB; bpf backend, before the restart: peak 35.2-35.6 MiB with
	 * the default, 30.8 with MALLOC_ARENA_MAX=2). */
	mallopt(M_ARENA_MAX, 2);
#endif
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "state-dir", required_argument, 0, 's' }, { "backend", required_argument, 0, 'b' },
		{ "netns", required_argument, 0, 'n' },     { "interval", required_argument, 0, 'i' },
		{ "once", no_argument, 0, 'o' },            { "rtproto", required_argument, 0, 'p' },
		{ "tables", required_argument, 0, 't' },    { "batch", required_argument, 0, 'B' },
		{ "cni-socket", required_argument, 0, 'c' },
		{ "kubeconfig", required_argument, 0, 'K' }, { "node", required_argument, 0, 'N' },
		{ "report-namespace", required_argument, 0, 'R' },
		{ "learn-unlabelled-reports", no_argument, 0, 'U' },
		{ "bpffs", required_argument, 0, 'F' },     { "fallback", no_argument, 0, 'f' },
		{ "metrics-addr", required_argument, 0, 'M' }, { "verify-interval", required_argument, 0, 'V' },
		{ "egress-namespace", required_argument, 0, 'E' }, { "egress-interface", required_argument, 0, 'I' },
		{ "version", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },            { 0, 0, 0, 0 },
	};
	struct gdp_backend_opts bo = { 0 };
	struct rpt_opts ro = { 0 };
	struct agent ag = { 0 };
	struct gdp_backend *be = NULL;
	const char *backend = "kernel", *state_dir = NULL;
	const char *cni_socket = NULL;
	struct gcni_verbs *verbs = NULL;
	struct gcni_listener *cni = NULL;
	char status_path[4200];
	int status = 1;
	const struct gdp_backend_ops *ops;
	struct sigaction sa = { .sa_handler = on_signal };
	double interval = 30, verify_s = 5, last_verify = 0, last_size = 0;
	struct gid_daemon_opts io = { 0 };
	struct ges_daemon_opts eo = { 0 };
	const char *capv[5];
	const char *metrics_addr = NULL;
	bool once = false, fallback = false;
	char err[512];
	static const unsigned groups[] = { RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
					   RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE, RTNLGRP_NEIGH,
					   RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_TC };
	struct gnl_sock *mon = NULL, *nftmon = NULL;
	struct watch w = { 0 };
	double dirty_at = 0;
	int c, rc;

	malloc_setup();
	while ((c = getopt_long(argc, argv, "s:b:n:i:op:t:B:c:fvh", lo, NULL)) != -1) {
		switch (c) {
		case 's': state_dir = optarg; break;
		case 'b': backend = optarg; break;
		case 'n': bo.netns = optarg; break;
		case 'i': interval = atof(optarg); break;
		case 'o': once = true; break;
		case 'p': bo.rtproto = (uint8_t)atoi(optarg); break;
		case 't':
			if (sscanf(optarg, "%" SCNu32 "-%" SCNu32, &bo.table_min, &bo.table_max) != 2) {
				usage();
				return 2;
			}
			break;
		case 'B': bo.batch = (unsigned)atoi(optarg); break;
		case 'c': cni_socket = optarg; break;
		case 'K': ro.kubeconfig = optarg; break;
		case 'N': ro.node = optarg; break;
		case 'R': ro.ns = optarg; break;
		case 'U': ro.learn_unlabelled = true; break;
		case 'F': bo.bpffs_dir = optarg; break;
		case 'f': fallback = true; break;
		case 'M': metrics_addr = optarg; break;
		case 'V': verify_s = atof(optarg); break;
		case 'E': eo.ns = optarg; break;
		case 'I': eo.oif = optarg; break;
		case 'v': printf("galactic-agent %s\n", GALACTIC_VERSION); return 0;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (!state_dir || interval <= 0 || verify_s < 0) {
		usage();
		return 2;
	}
	if (strcmp(backend, "kernel") && strcmp(backend, "bpf") && strcmp(backend, "auto")) {
		glogf(GLOG_ERROR, COMP, "unknown backend '%s' (kernel, bpf, auto)", backend);
		return 2;
	}
	/* bpf and auto run the bpf preflight: refuse with its reason, or fall
	 * back to the kernel backend when allowed (auto always may). */
	ops = gdp_bpf_choose(backend, fallback, bo.bpffs_dir, err, sizeof(err));
	if (!ops) {
		glogf(GLOG_ERROR, COMP, "backend %s refused: %s", backend, err);
		return 1;
	}
	if (strcmp(backend, ops->name))
		glogf(GLOG_WARN, COMP, "backend %s unavailable (%s): using %s", backend, err, ops->name);
	backend = ops->name;
	ag.backend = backend;
	gdrift_init(&ag.drift);
	ag.repair_full = ULONG_MAX;
	/*
	 * The backend opens before the record loads (opening applies
	 * nothing): the bpf backend's program load parses the kernel's BTF
	 * (~10 MiB for a moment), which would otherwise come on top of
	 * 100,000 loaded remotes (bench_rss: the restart's peak).
	 */
	rc = ops->open(&be, &bo, err, sizeof(err));
	if (rc) {
		glogf(GLOG_ERROR, COMP, "open %s backend: %s", backend, err);
		return 1;
	}
	/* The record before anything applies: it migrates the old files. */
	if (record_open(&ag.rec, &(struct record_opts){ .dir = state_dir, .table_min = bo.table_min }, err,
			sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		ops->close(be);
		return 1;
	}
	{
		struct gdp_caps caps;
		const char *cv[5];
		size_t nc = 0;
		struct gdp_node rn = { 0 };
		int mtu;
		bool have;

		if (ops->caps(be, &caps) == 0) {
			glogf(GLOG_INFO, COMP, "backend %s: %s", backend, caps.detail);
			if (caps.seg6)
				cv[nc++] = "seg6";
			if (caps.seg6local)
				cv[nc++] = "seg6local";
			if (caps.vrf)
				cv[nc++] = "vrf";
			if (caps.dt46)
				cv[nc++] = "dt46";
			if (!strcmp(backend, "bpf"))
				cv[nc++] = "bpf-tc";
		}
		if (metrics_addr) {
			char host[256];
			int port;

			if (ghealth_parse_addr(metrics_addr, host, sizeof(host), &port) ||
			    ghealth_start(&ag.health, &(struct ghealth_opts){ .addr = host, .port = port, .datapath = backend,
									      .version = RPT_VERSION,
									      .stall_s = 3 * interval + 60 },
					  err, sizeof(err))) {
				glogf(GLOG_ERROR, COMP, "--metrics-addr %s: %s", metrics_addr,
					ag.health ? err : "want HOST:PORT, free to bind");
				goto fail;
			}
			glogf(GLOG_INFO, COMP, "serving /metrics, /healthz, /readyz on %s:%d", host, ghealth_port(ag.health));
		}
		/* The node's identity from the API: the record's is kept until it answers. */
		have = record_node_identity(ag.rec, &rn, &mtu);
		io = (struct gid_daemon_opts){ .kubeconfig = ro.kubeconfig, .node = ro.node, .datapath = backend,
					       .version = RPT_VERSION, .n_caps = nc, .record_id = have ? rn.node_id : 0,
					       .on_identity = on_identity, .ud = &ag };
		memcpy(capv, cv, sizeof(cv));
		io.caps = capv;
		memcpy(io.record_block, rn.block, 6);
		if (!have)
			glogf(GLOG_WARN, COMP, "no node identity in the record: %s",
			      ro.node ? "waiting for the API (NodeDataplane); nothing is programmed meanwhile"
				      : "nothing is programmed until one is given (state.json, or --node with a NodeDataplane)");
	}
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(status_path, sizeof(status_path), "%s/status.json", state_dir);
	if (pipeline_new(&ag.pl, &(struct pipeline_opts){ .rec = ag.rec, .be = be, .status_path = status_path,
							  .interval_s = interval, .on_pass = on_pass, .ctx = &ag },
			 err, sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		goto fail;
	}

	/* Before the first pass, so that pass is reported too. */
	ro.datapath = backend, ro.set_remotes = learned_remotes, ro.ctx = &ag;
	/* the API clients' galactic_kube_requests_total{verb,code} on /metrics */
	ro.metrics = io.metrics = eo.metrics = ag.health ? ghealth_metrics(ag.health) : NULL;
	if ((ro.node || ro.ns || ro.kubeconfig) && rpt_start(&ag.rpt, &ro, err, sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		goto fail;
	}
	/* After the pipeline (it kicks it) and before the first pass (which it reads). */
	if (ro.node && gid_daemon_start(&ag.ident, &io, err, sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		goto fail;
	}
	eo.kubeconfig = ro.kubeconfig, eo.node = ro.node, eo.on_shard = on_shard, eo.ud = &ag;
	if (ro.node && ges_daemon_start(&ag.egress, &eo, err, sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		goto fail;
	}
	/* The socket answers at once: an ADD waits for the pass that includes it,
	 * the first one adopts what the record says is in the kernel. */
	if (cni_socket) {
		struct gcni_verbs_opts vo = { .rec = ag.rec, .netns = bo.netns, .wait_applied = wait_applied,
					      .result = result_of, .ctx = &ag };

		if (gcni_verbs_new(&verbs, &vo, err, sizeof(err)) ||
		    gcni_listener_start(&cni, &(struct gcni_listener_opts){ .socket_path = cni_socket, .verbs = verbs },
					err, sizeof(err))) {
			glogf(GLOG_ERROR, COMP, "%s", err);
			goto fail;
		}
		glogf(GLOG_INFO, COMP, "CNI server listening on %s", cni_socket);
	}
	{
		const char *pins = bo.bpffs_dir ? bo.bpffs_dir : GBPF_PIN_ROOT_DEFAULT;
		bool leaving_bpf = !strcmp(ops->name, "kernel") && access(pins, F_OK) == 0;
		char why[512];

		/* A restart adopts what the last pass left (the CNI socket is
		 * answered from it at once; the read-back follows), unless it
		 * cannot say so: then the first pass reconciles everything first. */
		if (once || leaving_bpf || pipeline_adopt(ag.pl, why, sizeof(why))) {
			if (!once)
				glogf(GLOG_INFO, COMP, "first pass reconciles in full: %s",
				      leaving_bpf ? "leaving the bpf backend" : why);
			rc = pipeline_pass(ag.pl);
		} else {
			rc = 0;
		}
		/* A node that ran the bpf backend before (its pins are there): once the
		 * kernel backend's routes are in, the TC filters may go (not before:
		 * they carry the traffic until then). */
		if (leaving_bpf && rc == 0 && gdp_bpf_teardown(bo.netns, pins, err, sizeof(err)))
			glogf(GLOG_WARN, COMP, "leaving the bpf backend: %s", err);
	}
	/* Kernel events wake the loop early; the periodic pass stays the safety net. */
	w.proto = bo.rtproto ? bo.rtproto : GDP_RTPROT_DEFAULT;
	w.rec = ag.rec;
	w.pl = ag.pl;
	w.bpf = !strcmp(ops->name, "bpf") ? be : NULL;
	w.tmin = bo.table_min ? bo.table_min : GDP_TABLE_MIN_DEFAULT;
	w.tmax = bo.table_max ? bo.table_max : GDP_TABLE_MAX_DEFAULT;
	if (!once && gnl_open_monitor(&mon, bo.netns, groups, sizeof(groups) / sizeof(groups[0]), err,
				      sizeof(err)))
		glogf(GLOG_WARN, COMP, "netlink notifications unavailable (%s): periodic checks only", err);
	else if (!once)
		watch_names(&w), watch_seed(&w, bo.netns); /* after the monitor: a veth made in between is seen by both */
	if (!once) {
		static const unsigned nftgroups[] = { NFNLGRP_NFTABLES };
		FILE *cf = fopen("/proc/thread-self/comm", "r");

		if (!cf || !fgets(w.comm, sizeof(w.comm), cf))
			snprintf(w.comm, sizeof(w.comm), "galactic-agent");
		w.comm[strcspn(w.comm, "\n")] = 0;
		if (cf)
			fclose(cf);
		if (gnl_open_monitor_proto(&nftmon, bo.netns, NETLINK_NETFILTER, nftgroups, 1, err, sizeof(err)))
			glogf(GLOG_WARN, COMP, "nftables notifications unavailable (%s): steering drift found by read-backs only",
			      err);
	}
	/* Guests that address themselves: their addresses from the neighbour
	 * tables (the monitor's events, and what is there already). */
	if (!once && cni_socket) {
		struct metric *gm = ag.health ? metrics_counter(ghealth_metrics(ag.health), "galactic_agent_guest_addresses_total",
								"Addresses of self-addressed guests seen on their host ends, by result (learned, refused)",
								"result")
					      : NULL;

		if (glearn_new(&w.learn, &(struct glearn_opts){ .rec = ag.rec, .netns = bo.netns, .proto = w.proto, .counter = gm },
			       err, sizeof(err)))
			glogf(GLOG_WARN, COMP, "guest address learning unavailable: %s", err);
		else if (glearn_scan(w.learn) > 0)
			pipeline_kick(ag.pl);
	}
	if (!once && pipeline_start(ag.pl, err, sizeof(err))) {
		glogf(GLOG_ERROR, COMP, "%s", err);
		goto fail;
	}
	while (!once && !got_term) {
		struct pollfd pfds[2] = { { .fd = mon ? gnl_fd(mon) : -1, .events = POLLIN },
					  { .fd = nftmon ? gnl_fd(nftmon) : -1, .events = POLLIN } }, pfd;

		double wait = ag.recheck_at ? ag.recheck_at - now_ms() : 200;

		poll(pfds, 2, wait < 0 ? 0 : wait > 200 ? 200 : (int)wait);
		pfd = pfds[0];
		if (nftmon && (pfds[1].revents & POLLIN) && gnl_read_notifications(nftmon, nft_watch_cb, &w) < 0)
			w.steer = true; /* events were lost: read back */
		if (w.steer) {
			w.steer = false;
			read_back(&ag, true, false, "pod steering table changed by someone else");
		}
		if (mon && (pfd.revents & POLLIN)) {
			int n;

			watch_names(&w);
			n = gnl_read_notifications(mon, watch_cb, &w);

			if (n < 0) {
				w.dirty = true; /* events were lost: resync */
				if (w.learn && glearn_scan(w.learn) > 0)
					w.learned = true;
			}
			if (w.learned) {
				w.learned = false;
				pipeline_kick(ag.pl);
			}
			if (w.dirty && !dirty_at)
				dirty_at = now_ms();
		}
		/* A host veth deleted by someone else: its attachment drifted
		 * (read back, counted once repaired); one that came back while
		 * its attachment stands failed: repaired now. A full pass either
		 * way, as a kernel change of ours. */
		if (w.host_gone || w.host_back) {
			bool gone = w.host_gone;

			w.host_gone = w.host_back = false;
			if (!gone || !read_back(&ag, true, false, "host veth deleted")) {
				unsigned long full, delta;

				pipeline_counters(ag.pl, &full, &delta);
				ag.repair_full = full; /* read back after it: a returned veth's repair is counted */
				pipeline_kick_full(ag.pl);
			}
		}
		if (w.foreign) {
			glogf(GLOG_DEBUG, COMP, "%lu notifications about links that are not ours: ignored", w.foreign);
			w.foreign = 0;
		}
		/* Debounced: one pass for a burst of events (including our own). */
		if (dirty_at && now_ms() - dirty_at >= 100) {
			glogf(GLOG_DEBUG, COMP, "kernel change seen: full reconcile asked for");
			w.dirty = false;
			dirty_at = 0;
			pipeline_kick_full(ag.pl);
		}
		/* TC filters are the bpf backend's: one deleted is drift until read back. */
		if (w.tc) {
			bool check = w.n_tc_if > 16;

			/* a deleted veth's chain going (every CNI DEL) is no reason
			 * for a read-back: only a link left without our filter is */
			for (size_t i = 0; i < w.n_tc_if && i < 16 && !check && w.bpf; i++)
				check = gdp_bpf_filter_gone(w.bpf, w.tc_if[i]) != 0;
			w.tc = false;
			w.n_tc_if = 0;
			if (check && w.bpf)
				read_back(&ag, true, false, "TC filter or qdisc deleted");
		}
		if (ag.repair_full != ULONG_MAX) {
			unsigned long full, delta;

			pipeline_counters(ag.pl, &full, &delta);
			if (full > ag.repair_full) {
				ag.repair_full = ULONG_MAX;
				read_back(&ag, false, false, "after the repair");
			}
		}
		if (ag.recheck_at && now_ms() >= ag.recheck_at) {
			ag.recheck_at = 0;
			read_back(&ag, false, false, "read again");
		}
		/*
		 * bpf map entries change without a notification: the routes
		 * map's size, every 200 ms (microseconds), asks for a read-back
		 * when it changed behind our back (a deleted entry is then
		 * repaired within ~1 s, not at the next verify tick).
		 */
		if (ops->size_changed && now_ms() - last_size >= 200) {
			last_size = now_ms();
			if (ops->size_changed(be) > 0)
				read_back(&ag, false, false, "bpf routes map changed size");
		}
		/* Read-backs between passes feed /readyz (only served with --metrics-addr). */
		if (ag.health && verify_s > 0 && now_ms() - last_verify >= verify_s * 1000) {
			last_verify = now_ms();
			read_back(&ag, false, true, "verify");
		}
		if (got_hup) {
			got_hup = 0;
			glogf(GLOG_INFO, COMP, "SIGHUP: reconciling");
			on_hup(&ag);
			pipeline_kick_full(ag.pl);
		}
	}
	glogf(GLOG_INFO, COMP, "exiting; kernel state left in place");
	status = once && rc ? 1 : 0;
fail:
	gnl_close(mon);
	gnl_close(nftmon);
	glearn_free(w.learn);
	free(w.veths);
	free(w.cands);
	/* Requests in progress finish (their passes still run), then the rest. */
	gcni_listener_stop(cni);
	/* No identity callback (which kicks the pipeline) from here on; the
	 * daemon itself stays until the pipeline's last pass has reported the
	 * datapath to it (gid_daemon_datapath: ASan saw it freed there). */
	gid_daemon_quiesce(ag.ident);
	ges_daemon_stop(ag.egress);
	ag.egress = NULL;
	pipeline_free(ag.pl);
	gid_daemon_stop(ag.ident);
	gcni_verbs_free(verbs);
	rpt_stop(ag.rpt);
	ghealth_stop(ag.health);
	ops->close(be);
	record_close(ag.rec);
	gdrift_free(&ag.drift);
	return status;
}
