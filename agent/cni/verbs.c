/* The CNI verbs on the agent side (agent/cni/verbs.h). */
#include "agent/cni/verbs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/cni/pod.h"
#include "agent/cni/result.h"
#include "agent/record_index.h"
#include "common/log.h"
#include "common/grow.h"

#define COMP "cni"

struct gcni_verbs {
	struct gcni_verbs_opts o;
	pthread_mutex_t mu;      /* busy keys and setup slots; taken after the record's lock, never before */
	pthread_cond_t cv;       /* a busy key released */
	pthread_cond_t slot_cv;  /* a setup slot freed: wakes one waiter, not all of them */
	char (*busy)[300];       /* attachment keys a request works on */
	size_t nbusy, capbusy;
	unsigned setups, max_setups;
	int uplink_mtu_cache;
};

void gcni_host_ifname(const char *vpc, const char *att, char out[16])
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[3] = { vpc, "/", att };

	for (int i = 0; i < 3; i++)
		for (const char *p = parts[i]; *p; p++) {
			h ^= (uint8_t)*p;
			h *= 0x100000001b3ull;
		}
	snprintf(out, 16, "gc%013llx", (unsigned long long)(h & 0xfffffffffffffull));
}

/* ---- per-key exclusion ------------------------------------------------------ */

static void key_of(const char *net, const char *cid, const char *ifn, char out[300])
{
	snprintf(out, 300, "%s\x1f%s\x1f%s", net, cid, ifn);
}

static bool busy_locked(struct gcni_verbs *v, const char *k)
{
	for (size_t i = 0; i < v->nbusy; i++)
		if (!strcmp(v->busy[i], k))
			return true;
	return false;
}

static int mark_locked(struct gcni_verbs *v, const char *k)
{
	int rc = G_GROW(v->busy, v->capbusy, v->nbusy, 64);

	if (rc)
		return rc;
	snprintf(v->busy[v->nbusy++], 300, "%s", k);
	return 0;
}

static int claim(struct gcni_verbs *v, const char *k)
{
	int rc;

	pthread_mutex_lock(&v->mu);
	while (busy_locked(v, k))
		pthread_cond_wait(&v->cv, &v->mu);
	rc = mark_locked(v, k);
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* The request's attachment key, claimed: 0, or -1 with e. */
static int claim_req(struct gcni_verbs *v, const struct cni_req *q, char key[300], struct cni_err *e)
{
	key_of(q->conf.name, q->env.container_id, q->env.ifname, key);
	if (claim(v, key)) {
		cni_err_set(e, CNI_ERR_IO, "out of memory", "claiming the attachment key");
		return -1;
	}
	return 0;
}

static void release(struct gcni_verbs *v, const char *k)
{
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->nbusy; i++)
		if (!strcmp(v->busy[i], k)) {
			memcpy(v->busy[i], v->busy[--v->nbusy], sizeof(v->busy[i]));
			break;
		}
	pthread_cond_broadcast(&v->cv);
	pthread_mutex_unlock(&v->mu);
}

/* ---- helpers ------------------------------------------------------------------- */

/* The node-side prefix of a pod address: the host address, or the whole
 * delegated block (network address) routed to the pod. */
static void cni_prefix(const struct cni_addr *a, struct gdp_prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = a->ip.family;
	p->len = a->block ? (uint8_t)a->plen : a->ip.family == AF_INET ? 32 : 128;
	memcpy(p->addr.raw, a->ip.addr, a->ip.family == AF_INET ? 4 : 16);
	for (int b = p->len; b < (a->ip.family == AF_INET ? 32 : 128); b++)
		p->addr.raw[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
}

static int conf_same(const struct cni_conf *a, const struct cni_conf *b)
{
	/* What the kernel state depends on; dns/timeouts/prevResult do not matter. */
	if (strcmp(a->vpc_s, b->vpc_s) || strcmp(a->att_s, b->att_s) || a->naddrs != b->naddrs ||
	    a->nroutes != b->nroutes || a->mtu != b->mtu || a->families != b->families)
		return 0;
	for (int i = 0; i < a->naddrs; i++)
		if (memcmp(&a->addrs[i], &b->addrs[i], sizeof(a->addrs[i])))
			return 0;
	for (int i = 0; i < a->nroutes; i++)
		if (memcmp(&a->routes[i], &b->routes[i], sizeof(a->routes[i])))
			return 0;
	return 1;
}

/* The stored configuration of an attachment (under the record's lock). */
static int att_conf(const struct rec_att *a, struct cni_conf *c)
{
	struct cni_err ce;

	memset(c, 0, sizeof(*c));
	return a->config ? cni_conf_parse_json(a->config, CNI_CMD_UNKNOWN, c, &ce) : -1;
}

static void att_link(const struct rec_att *a, struct pod_link *l)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->host_ifname, sizeof(l->host_ifname), "%s", a->m.host_ifname);
	snprintf(l->ifname, sizeof(l->ifname), "%s", a->ifname);
	l->mtu = (int)a->m.mtu;
	memcpy(l->host_mac, a->host_mac, 6);
	memcpy(l->mac, a->m.pod_mac, 6);
}

static json_t *result_json(const struct pod_link *l, const struct cni_conf *c, const struct cni_req *q,
			   const char *netns)
{
	struct cni_result res;

	memset(&res, 0, sizeof(res));
	snprintf(res.host_ifname, sizeof(res.host_ifname), "%s", l->host_ifname);
	memcpy(res.host_mac, l->host_mac, 6);
	snprintf(res.ifname, sizeof(res.ifname), "%s", l->ifname);
	memcpy(res.mac, l->mac, 6);
	snprintf(res.sandbox, sizeof(res.sandbox), "%s", q->env.netns[0] ? q->env.netns : netns ? netns : "");
	res.mtu = l->mtu;
	return cni_result_json(&res, c, q->conf.ver != CNI_V_UNKNOWN ? q->conf.ver : c->ver);
}

static int default_mtu(struct gcni_verbs *v)
{
	struct gdp_node n;
	int up = 0;

	if (v->o.default_mtu)
		return v->o.default_mtu;
	if (record_node_identity(v->o.rec, &n, &up) && up <= 0) {
		pthread_mutex_lock(&v->mu);
		up = v->uplink_mtu_cache;
		pthread_mutex_unlock(&v->mu);
		if (!up && (up = pod_link_mtu(v->o.netns, n.uplink)) > 0) {
			pthread_mutex_lock(&v->mu);
			v->uplink_mtu_cache = up;
			pthread_mutex_unlock(&v->mu);
		}
	}
	/* Reduced encap adds one IPv6 header (40 bytes) and no SRH. */
	return up > CNI_MTU_MIN_V6 + 40 ? up - 40 : 1460;
}

/*
 * After the pass that included gen: did it program the attachment? 0, or
 * -errno with msg naming what failed (node, VPC, attachment).
 */
static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int outcome(struct gcni_verbs *v, unsigned long gen, const char *vpc, const char *att, char *msg,
		   size_t n, struct gcni_spans *sp)
{
	struct gdp_result x;
	double t0 = mono_ms(), bms = 0;
	int rc = v->o.wait_applied(v->o.ctx, gen, &bms);

	if (sp) {
		sp->apply_ms = mono_ms() - t0;
		sp->backend_ms = bms;
	}

	if (rc)
		return snprintf(msg, n, "the agent is stopping"), rc;
	if (!v->o.result(v->o.ctx, GDP_OBJ_NODE, "", "", &x) && x.err)
		return snprintf(msg, n, "node: %s", x.msg), x.err;
	if (!v->o.result(v->o.ctx, GDP_OBJ_VPC, vpc, "", &x) && x.err)
		return snprintf(msg, n, "vpc %s: %s", vpc, x.msg), x.err;
	if (v->o.result(v->o.ctx, GDP_OBJ_ATTACHMENT, vpc, att, &x))
		return snprintf(msg, n, "the backend did not program the attachment"), -EIO;
	if (x.err)
		return snprintf(msg, n, "%s", x.msg), x.err;
	return 0;
}

/*
 * The verb's change made durable on its own thread, before it waits for the
 * pass, unless a commit is running (record_commit_ahead): one journal append
 * and fdatasync for what the verbs finished so far, while the backend
 * programs the group before; the pass that applies them finds it written
 * instead of making them wait for the disk between two groups. Best effort:
 * the pass commits before it applies anything (the durability the apply
 * depends on is the pass's), and a disk that fails fails there, with its
 * error, for every verb of the group.
 */
/* The calling thread's CPU time (ms): what of a span was its own work. */
static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void commit_ahead(struct gcni_verbs *v)
{
	char err[256];

	(void)record_commit_ahead(v->o.rec, err, sizeof(err));
}

static bool held(struct gcni_verbs *v, struct cni_err *e)
{
	char why[512];

	if (!record_held(v->o.rec, why, sizeof(why)))
		return false;
	cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "the agent's record is damaged",
		    "%s; nothing is changed until it is repaired", why);
	return true;
}

/* An address of c already held in its VPC on this node (the record's index: O(1)). */
static int addr_conflict(struct record *rec, const struct cni_conf *c, char *who, size_t wl, char *what,
			 size_t whl)
{
	for (int j = 0; j < c->naddrs; j++) {
		const struct rec_att *o;
		struct gdp_prefix p;

		cni_prefix(&c->addrs[j], &p);
		if ((o = record_find_addr(rec, c->vpc_s, &p))) {
			snprintf(who, wl, "%s", o->m.id);
			cni_ip_str(&c->addrs[j].ip, what, whl);
			return 1;
		}
	}
	return 0;
}

/* ---- ADD ------------------------------------------------------------------------ */

/* Same key attached again: verify, repair the pod side if it drifted. */
static json_t *add_again(struct gcni_verbs *v, struct cni_req *q, int nsfd, struct rec_att *r,
			 struct cni_err *e)
{
	struct cni_conf have;
	struct pod_link link;
	char err[512] = "", vpc[GDP_ID_MAX + 1], att[GDP_ID_MAX + 1], *netns;
	unsigned long gen;
	int rc, clash = 0;
	json_t *out;

	if (att_conf(r, &have) || !conf_same(&have, &q->conf)) {
		cni_conf_free(&have);
		cni_err_set(e, CNI_ERR_CONFLICT, "attachment exists with another configuration",
			    "container %s interface %s on network %s is attached to vpc %s attachment %s with other settings; DEL it first",
			    r->m.container_id, r->ifname, r->network, r->m.vpc, r->m.id);
		record_unlock(v->o.rec);
		return NULL;
	}
	att_link(r, &link);
	snprintf(vpc, sizeof(vpc), "%s", r->m.vpc);
	snprintf(att, sizeof(att), "%s", r->m.id);
	netns = r->netns ? strdup(r->netns) : NULL;
	record_unlock(v->o.rec);

	rc = pod_check(v->o.netns, nsfd, &have, &link, err, sizeof(err));
	if (rc)
		rc = pod_repair(v->o.netns, nsfd, &have, &link, err, sizeof(err));
	if (rc == -ENODEV)
		rc = pod_setup(v->o.netns, nsfd, &have, &link, &clash, err, sizeof(err));
	if (rc) {
		cni_err_set(e, clash ? CNI_ERR_INVALID_ENV : CNI_ERR_PROGRAMMING,
			    clash ? "CNI_IFNAME already exists in the container" : "repairing the attachment failed",
			    "%s", err);
		out = NULL;
		goto done;
	}
	/* A re-created pair has new MACs: the record (and the neighbours) follow. */
	record_lock(v->o.rec);
	record_set_macs(v->o.rec, r, link.mac, link.host_mac);
	gen = record_activate(v->o.rec, r);
	record_unlock(v->o.rec);
	commit_ahead(v);
	if ((rc = outcome(v, gen, vpc, att, err, sizeof(err), NULL))) {
		cni_err_set(e, CNI_ERR_PROGRAMMING, "programming the node failed", "vpc %s attachment %s: %s",
			    vpc, att, err);
		out = NULL;
		goto done;
	}
	out = result_json(&link, &have, q, netns);
done:
	free(netns);
	cni_conf_free(&have);
	return out;
}

static json_t *add_locked(struct gcni_verbs *v, struct cni_req *q, int nsfd, int dflt_mtu,
			  struct cni_err *e, struct gcni_spans *sp)
{
	struct record *rec = v->o.rec;
	const struct cni_conf *c = &q->conf;
	char err[512] = "", host[16], who[GDP_ID_MAX + 1], what[64];
	struct rec_att t, *r, *o;
	const struct rec_vpc *kv;
	struct pod_link link;
	unsigned long gen;
	int clash = 0, rc;
	double t_setup, t_commit, cpu;
	json_t *out;

	gcni_host_ifname(c->vpc_s, c->att_s, host);
	r = record_find_key(rec, c->name, q->env.container_id, q->env.ifname);
	if (r)
		return add_again(v, q, nsfd, r, e);
	if ((o = record_find_att(rec, c->vpc_s, c->att_s))) {
		cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "VPC attachment is held by another container",
			    "vpc %s attachment %s is attached to container %s interface %s; retry after its DEL",
			    c->vpc_s, c->att_s, o->m.container_id, o->ifname[0] ? o->ifname : "-");
		goto unlock_fail;
	}
	if (addr_conflict(rec, c, who, sizeof(who), what, sizeof(what))) {
		cni_err_set(e, CNI_ERR_CONFLICT, "address already in use in this VPC",
			    "vpc %s: address %s is already used by attachment %s on this node", c->vpc_s, what, who);
		goto unlock_fail;
	}
	if ((o = record_find_host(rec, host))) {
		cni_err_set(e, CNI_ERR_CONFLICT, "host interface name collision",
			    "%s for vpc %s attachment %s is already used by attachment %s/%s", host, c->vpc_s,
			    c->att_s, o->m.vpc, o->m.id);
		goto unlock_fail;
	}
	/* The VPC's address ranges, where the record has them: refused here,
	 * before anything is created. */
	kv = record_find_vpc(rec, c->vpc_s);
	for (int i = 0; kv && kv->m.n_prefixes && i < c->naddrs; i++) {
		struct gdp_prefix p;
		int inside = 0;
		char b[64];

		cni_prefix(&c->addrs[i], &p);
		for (size_t k = 0; k < kv->m.n_prefixes && !inside; k++)
			inside = gdp_prefix_contains(&kv->m.prefixes[k], &p);
		if (!inside) {
			cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
				    "field 'addresses[%d]': %s is outside the address ranges of vpc %s", i,
				    cni_ip_str(&c->addrs[i].ip, b, sizeof(b)), c->vpc_s);
			goto unlock_fail;
		}
	}
	memset(&t, 0, sizeof(t));
	t.src = REC_SRC_CNI;
	snprintf(t.m.vpc, sizeof(t.m.vpc), "%s", c->vpc_s);
	snprintf(t.m.id, sizeof(t.m.id), "%s", c->att_s);
	snprintf(t.m.container_id, sizeof(t.m.container_id), "%s", q->env.container_id);
	snprintf(t.m.host_ifname, sizeof(t.m.host_ifname), "%s", host);
	for (int k = 0; k < c->naddrs; k++)
		cni_prefix(&c->addrs[k], &t.m.addrs[k]);
	t.m.n_addrs = (size_t)c->naddrs;
	t.m.guest_addressed = c->naddrs == 0; /* no ipam: the node learns them (agent/cni/learn.h) */
	t.m.mtu = (uint32_t)(c->mtu ? c->mtu : dflt_mtu);
	snprintf(t.network, sizeof(t.network), "%s", c->name);
	snprintf(t.ifname, sizeof(t.ifname), "%s", q->env.ifname);
	snprintf(t.pod_ns, sizeof(t.pod_ns), "%s", q->env.pod_namespace);
	snprintf(t.pod_name, sizeof(t.pod_name), "%s", q->env.pod_name);
	snprintf(t.pod_uid, sizeof(t.pod_uid), "%s", q->env.pod_uid);
	t.egress = c->egress;
	t.netns = q->env.netns[0] ? strdup(q->env.netns) : NULL;
	t.config = cni_conf_to_json(c);
	r = record_reserve(rec, &t, err, sizeof(err));
	if (!r) {
		rec_att_clear(&t);
		cni_err_set(e, CNI_ERR_PROGRAMMING, "cannot allocate the attachment on this node", "%s", err);
		goto unlock_fail;
	}
	att_link(r, &link);
	record_unlock(rec);

	/* The slow, parallel part: nothing shared is touched here. */
	pthread_mutex_lock(&v->mu);
	while (v->setups >= v->max_setups)
		pthread_cond_wait(&v->slot_cv, &v->mu);
	v->setups++;
	pthread_mutex_unlock(&v->mu);
	t_setup = mono_ms();
	rc = pod_setup(v->o.netns, nsfd, c, &link, &clash, err, sizeof(err));
	if (sp)
		sp->setup_ms = mono_ms() - t_setup;
	pthread_mutex_lock(&v->mu);
	v->setups--;
	/* one slot, one waiter: a broadcast woke every queued ADD (200 in a burst) per setup */
	pthread_cond_signal(&v->slot_cv);
	pthread_mutex_unlock(&v->mu);

	record_lock(rec);
	if (rc) {
		if (clash)
			cni_err_set(e, CNI_ERR_INVALID_ENV, "CNI_IFNAME already exists in the container",
				    "CNI_IFNAME %s: %s", q->env.ifname, err);
		else
			cni_err_set(e, CNI_ERR_PROGRAMMING, "attaching the pod failed", "vpc %s attachment %s: %s",
				    c->vpc_s, c->att_s, err);
		record_remove(rec, r);
		goto unlock_fail;
	}
	record_set_macs(rec, r, link.mac, link.host_mac);
	gen = record_activate(rec, r);
	record_unlock(rec);
	t_commit = mono_ms();
	cpu = thread_cpu_ms();
	commit_ahead(v);
	if (sp) {
		sp->commit_ms = mono_ms() - t_commit;
		sp->commit_cpu_ms = thread_cpu_ms() - cpu;
		sp->commit_sync_ms = record_ahead_sync_ms();
	}

	if ((rc = outcome(v, gen, c->vpc_s, c->att_s, err, sizeof(err), sp))) {
		char e2[512];

		cni_err_set(e, CNI_ERR_PROGRAMMING, "programming the node failed", "vpc %s attachment %s: %s",
			    c->vpc_s, c->att_s, err);
		/* Take back what the failed pass did program, then the pod side. */
		record_lock(rec);
		gen = record_deactivate(rec, r);
		record_unlock(rec);
		v->o.wait_applied(v->o.ctx, gen, NULL);
		pod_teardown(v->o.netns, link.host_ifname, e2, sizeof(e2));
		record_lock(rec);
		record_remove(rec, r);
		record_unlock(rec);
		return NULL;
	}
	out = result_json(&link, c, q, NULL);
	return out;
unlock_fail:
	record_unlock(rec);
	return NULL;
}

json_t *gcni_verb_add(struct gcni_verbs *v, struct cni_req *q, int nsfd, struct cni_err *e,
		      struct gcni_spans *sp)
{
	char key[300];
	json_t *out;
	int dflt_mtu;

	if (held(v, e))
		return NULL;
	if (claim_req(v, q, key, e))
		return NULL;
	/* Before the record lock: default_mtu reads the record (its own lock)
	 * and may ask the kernel for the uplink's MTU. */
	dflt_mtu = q->conf.mtu ? 0 : default_mtu(v);
	record_lock(v->o.rec);
	if (sp)
		memset(sp, 0, sizeof(*sp));
	out = add_locked(v, q, nsfd, dflt_mtu, e, sp); /* unlocks */
	release(v, key);
	return out;
}

/* ---- DEL / GC ------------------------------------------------------------------- */

int gcni_verb_del(struct gcni_verbs *v, struct cni_req *q, struct cni_err *e, struct gcni_spans *sp)
{
	const struct cni_conf *c = &q->conf;
	char key[300], host[16], err[512];
	struct rec_att *r;
	unsigned long gen;
	double t;
	int rc = 0;

	if (sp)
		memset(sp, 0, sizeof(*sp));
	if (held(v, e))
		return -1;
	if (claim_req(v, q, key, e))
		return -1;
	record_lock(v->o.rec);
	r = record_find_key(v->o.rec, c->name, q->env.container_id, q->env.ifname);
	if (!r) {
		/* Unknown: success. A veth left by an ADD that died before its
		 * commit has the derived name and no record: remove it. */
		gcni_host_ifname(c->vpc_s, c->att_s, host);
		r = record_find_att(v->o.rec, c->vpc_s, c->att_s);
		record_unlock(v->o.rec);
		if (!r && pod_teardown(v->o.netns, host, err, sizeof(err))) {
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing a leftover interface failed", "%s", err);
			rc = -1;
		}
		release(v, key);
		return rc;
	}
	snprintf(host, sizeof(host), "%s", r->m.host_ifname);
	gen = record_remove(v->o.rec, r);
	record_unlock(v->o.rec);
	t = mono_ms();
	commit_ahead(v);
	if (sp)
		sp->commit_ms = mono_ms() - t;
	/* The node side first (the backend removes rules, routes, SIDs), then the veth. */
	t = mono_ms();
	v->o.wait_applied(v->o.ctx, gen, sp ? &sp->backend_ms : NULL);
	if (sp)
		sp->apply_ms = mono_ms() - t;
	t = mono_ms();
	if (pod_teardown(v->o.netns, host, err, sizeof(err))) {
		cni_err_set(e, CNI_ERR_PROGRAMMING, "removing the attachment failed", "%s", err);
		rc = -1;
	}
	if (sp)
		sp->setup_ms = mono_ms() - t;
	release(v, key);
	return rc;
}

/* The valid set's key: (container id, interface). */
static uint64_t valid_hash(const char *cid, const char *ifname)
{
	return rec_index_hash(7, (const char *const[]){ cid, ifname }, 2);
}

/* Whether the runtime's valid set (indexed in x) names (cid, ifname): O(1). */
static bool valid_has(const struct cni_conf *c, const struct rec_index *x, const char *cid, const char *ifname)
{
	uint64_t h = valid_hash(cid, ifname);

	for (size_t s = rec_index_first(x, h); s != REC_INDEX_END; s = rec_index_next(x, h, s)) {
		const struct cni_valid_att *va = &c->valid[x->s[s].tag];

		if (!strcmp(va->container_id, cid) && !strcmp(va->ifname, ifname))
			return true;
	}
	return false;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * GC costs the attachments plus the valid set, not their product: the
 * valid set is indexed once (by container id and interface), each of the
 * network's attachments is looked up in it and removed by its place
 * (record_remove), and the host ends to keep are sorted for the sweep.
 */
int gcni_verb_gc(struct gcni_verbs *v, struct cni_req *q, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	struct record *rec = v->o.rec;
	char (*keys)[300] = NULL, (*hosts)[16] = NULL, (*keep)[CNI_IFNAME_MAX + 1] = NULL, err[512];
	struct rec_index vx = { 0 };
	size_t n = 0, nk = 0, cap;
	unsigned long gen = 0;
	unsigned gone = 0;
	int rc = 0;

	if (held(v, e))
		return -1;
	for (size_t j = 0; c->has_valid && j < c->nvalid && !rc; j++)
		rc = rec_index_put(&vx, valid_hash(c->valid[j].container_id, c->valid[j].ifname), c->valid,
				   (uint32_t)j);
	record_lock(rec);
	cap = record_n_atts(rec) + 1;
	keys = rc ? NULL : calloc(cap, sizeof(*keys));
	hosts = rc ? NULL : calloc(cap, sizeof(*hosts));
	if (!keys || !hosts) {
		record_unlock(rec);
		free(keys);
		free(hosts);
		rec_index_free(&vx);
		cni_err_set(e, CNI_ERR_IO, "out of memory", "GC of %zu attachments", cap - 1);
		return -1;
	}
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < record_n_atts(rec);) {
		struct rec_att *r = record_att(rec, i);
		bool valid = false;
		char k[300];

		key_of(r->network, r->m.container_id, r->ifname, k);
		/* Only this network's attachments; in-flight ones are not stale;
		 * and none at all when the runtime named no valid set. */
		if (!c->has_valid || r->src != REC_SRC_CNI || strcmp(r->network, c->name) || !r->active ||
		    busy_locked(v, k)) {
			i++;
			continue;
		}
		valid = valid_has(c, &vx, r->m.container_id, r->ifname);
		if (valid) {
			i++;
			continue;
		}
		snprintf(keys[n], sizeof(keys[n]), "%s", k);
		snprintf(hosts[n], sizeof(hosts[n]), "%s", r->m.host_ifname);
		mark_locked(v, k);
		n++;
		gen = record_remove(rec, r); /* the array shrank: same i again */
	}
	pthread_mutex_unlock(&v->mu);
	record_unlock(rec);
	if (n)
		v->o.wait_applied(v->o.ctx, gen, NULL);
	for (size_t i = 0; i < n; i++)
		if (pod_teardown(v->o.netns, hosts[i], err, sizeof(err)) && !rc) {
			rc = -1;
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing the attachment failed", "%s", err);
		}
	if (!rc) {
		/* Host ends no attachment owns (an ADD died before its commit and was
		 * never retried). Under the record's lock: an ADD reserves its name
		 * in the record before it creates the veth, so it cannot be swept. */
		record_lock(rec);
		nk = record_n_atts(rec);
		keep = calloc(nk + 1, sizeof(*keep));
		for (size_t i = 0; keep && i < nk; i++)
			snprintf(keep[i], sizeof(keep[i]), "%s", record_att(rec, i)->m.host_ifname);
		if (keep)
			qsort(keep, nk, sizeof(*keep), cmp_name); /* pod_sweep looks names up by bsearch */
		if (!keep || pod_sweep(v->o.netns, keep, nk, &gone, err, sizeof(err))) {
			rc = -1;
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing leftover interfaces failed", "%s",
				    keep ? err : "out of memory");
		}
		record_unlock(rec);
		if (gone)
			glogf(GLOG_INFO, COMP, "GC: removed %u host interfaces no attachment owns", gone);
	}
	for (size_t i = 0; i < n; i++)
		release(v, keys[i]);
	rec_index_free(&vx);
	free(keep);
	free(keys);
	free(hosts);
	return rc;
}

/* ---- CHECK ------------------------------------------------------------------------ */

static int prev_matches(const struct cni_conf *c, char *err, size_t errlen)
{
	json_t *ips = json_object_get(c->prev_result, "ips"), *x;
	unsigned found = 0;
	size_t i;

	json_array_foreach(ips, i, x) {
		const char *a = json_string_value(json_object_get(x, "address"));
		struct cni_ip ip;
		int plen, ok = 0;

		if (!a || cni_cidr_parse(a, &ip, &plen)) {
			snprintf(err, errlen, "prevResult.ips[%zu] has no valid address", i);
			return -1;
		}
		for (int k = 0; k < c->naddrs; k++)
			if (c->addrs[k].ip.family == ip.family && c->addrs[k].plen == plen &&
			    !memcmp(c->addrs[k].ip.addr, ip.addr, 16)) {
				ok = 1;
				found |= 1u << k;
			}
		if (!ok) {
			snprintf(err, errlen, "prevResult address %s is not in the configuration", a);
			return -1;
		}
	}
	for (int k = 0; k < c->naddrs; k++)
		if (!(found & (1u << k))) {
			char b[64];

			snprintf(err, errlen, "configured address %s/%d is missing from prevResult",
				 cni_ip_str(&c->addrs[k].ip, b, sizeof(b)), c->addrs[k].plen);
			return -1;
		}
	return 0;
}

int gcni_verb_check(struct gcni_verbs *v, struct cni_req *q, int nsfd, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	char key[300], err[512] = "", vpc[GDP_ID_MAX + 1], att[GDP_ID_MAX + 1];
	struct cni_conf have;
	struct pod_link link;
	struct gdp_result x;
	struct rec_att *r;
	int rc;

	if (claim_req(v, q, key, e))
		return -1;
	record_lock(v->o.rec);
	r = record_find_key(v->o.rec, c->name, q->env.container_id, q->env.ifname);
	if (!r || !r->active) {
		record_unlock(v->o.rec);
		release(v, key);
		cni_err_set(e, CNI_ERR_UNKNOWN_CONTAINER, "no such attachment",
			    "galactic-agent has no attachment for container %s interface %s on network %s",
			    q->env.container_id, q->env.ifname, c->name);
		return -1;
	}
	if (att_conf(r, &have) || !conf_same(&have, c)) {
		cni_conf_free(&have);
		record_unlock(v->o.rec);
		release(v, key);
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "attachment differs from the configuration",
			    "container %s interface %s is attached to vpc %s attachment %s with other settings",
			    q->env.container_id, q->env.ifname, r->m.vpc, r->m.id);
		return -1;
	}
	att_link(r, &link);
	snprintf(vpc, sizeof(vpc), "%s", r->m.vpc);
	snprintf(att, sizeof(att), "%s", r->m.id);
	record_unlock(v->o.rec);
	if (prev_matches(c, err, sizeof(err))) {
		cni_conf_free(&have);
		release(v, key);
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "prevResult differs from the attachment", "%s", err);
		return -1;
	}
	rc = pod_check(v->o.netns, nsfd, &have, &link, err, sizeof(err));
	/* The node side as the last pass verified it in the kernel (passes run on
	 * every kernel change, so this is at most ~100 ms old). */
	if (!rc) {
		if (v->o.result(v->o.ctx, GDP_OBJ_ATTACHMENT, vpc, att, &x))
			rc = -1, snprintf(err, sizeof(err), "node side: not applied yet");
		else if (!x.programmed)
			rc = -1, snprintf(err, sizeof(err), "node side: %s", x.err ? x.msg : "not verified in the kernel");
	}
	cni_conf_free(&have);
	release(v, key);
	if (rc)
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "attachment check failed", "container %s interface %s: %s",
			    q->env.container_id, q->env.ifname, err);
	return rc ? -1 : 0;
}

/* ---- lifecycle ----------------------------------------------------------------------- */

int gcni_verbs_new(struct gcni_verbs **out, const struct gcni_verbs_opts *o, char *err, size_t errlen)
{
	struct gcni_verbs *v;

	*out = NULL;
	if (!o->rec || !o->wait_applied || !o->result) {
		snprintf(err, errlen, "cni verbs: need the record and the apply pipeline");
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "cni verbs: out of memory");
		return -ENOMEM;
	}
	v->o = *o;
	v->max_setups = o->max_setups ? o->max_setups : 4 * (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_mutex_init(&v->mu, NULL);
	pthread_cond_init(&v->cv, NULL);
	pthread_cond_init(&v->slot_cv, NULL);
	*out = v;
	return 0;
}

void gcni_verbs_free(struct gcni_verbs *v)
{
	if (!v)
		return;
	free(v->busy);
	pthread_mutex_destroy(&v->mu);
	pthread_cond_destroy(&v->cv);
	pthread_cond_destroy(&v->slot_cv);
	free(v);
}
