#include "agent/cni/server.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <stdarg.h>
#include <unistd.h>

#include "agent/cni/pod.h"
#include "agent/cni/proto.h"
#include "agent/cni/result.h"
#include "agent/state.h"

/* One line per request on stderr (the agent's log), like the daemon's own. */
static void cni_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cni_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char line[1024];
	va_list ap;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld galactic-agent: cni: ", tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line); /* one write: lines from threads do not interleave */
}

#define STORE_NAME "cni-attachments.json"
#define REQ_IO_MS 10000

enum rec_state { R_PENDING, R_ACTIVE };

struct rec {
	char network[CNI_NAME_MAX + 1];
	char cid[CNI_CONTAINERID_MAX + 1];
	char ifname[CNI_IFNAME_MAX + 1];
	char netns[CNI_NETNS_MAX + 1];
	char pod_ns[64], pod_name[254], pod_uid[64];
	struct cni_conf conf;
	struct pod_link link;
	uint16_t arg;
	enum rec_state st;
	int busy;
	/* Outcome of the last commit that included this record. */
	int prog_err;
	char prog_msg[256];
};

struct vrec {
	char id[12];
	uint16_t arg;
	uint32_t table;
};

struct gcni_server {
	struct gcni_server_opts o;
	char sock_path[CNI_SOCKET_MAX + 1];
	char store_path[512];
	int lfd;
	pthread_t listener, committer;
	int stopping, committer_stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* records, commits, connection count */
	pthread_mutex_t bmu;       /* the backend is used by one thread at a time */
	struct rec **recs;
	size_t nrecs, caprecs;
	struct vrec *vpcs;
	size_t nvpcs, capvpcs;
	struct gdp_remote *remotes;
	size_t nremotes;
	unsigned long gen_want, gen_done, commits;
	unsigned nconns;
	int default_mtu;
	/* Pod-side setups running at once: more than a few only queue on the
	 * kernel's rtnl lock and starve the committer. */
	unsigned setups, max_setups;
};

/* ---- helpers ---------------------------------------------------------- */

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

static void rec_free(struct rec *r)
{
	if (r) {
		cni_conf_free(&r->conf);
		free(r);
	}
}

static struct rec *find_key(struct gcni_server *s, const char *net, const char *cid,
			    const char *ifn)
{
	for (size_t i = 0; i < s->nrecs; i++) {
		struct rec *r = s->recs[i];

		if (!strcmp(r->network, net) && !strcmp(r->cid, cid) && !strcmp(r->ifname, ifn))
			return r;
	}
	return NULL;
}

static struct rec *find_att(struct gcni_server *s, const char *vpc, const char *att)
{
	for (size_t i = 0; i < s->nrecs; i++)
		if (!strcmp(s->recs[i]->conf.vpc_s, vpc) && !strcmp(s->recs[i]->conf.att_s, att))
			return s->recs[i];
	return NULL;
}

static struct vrec *find_vpc(struct gcni_server *s, const char *id)
{
	for (size_t i = 0; i < s->nvpcs; i++)
		if (!strcmp(s->vpcs[i].id, id))
			return &s->vpcs[i];
	return NULL;
}

static int add_rec(struct gcni_server *s, struct rec *r)
{
	if (s->nrecs == s->caprecs) {
		size_t nc = s->caprecs ? s->caprecs * 2 : 64;
		struct rec **nv = realloc(s->recs, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->recs = nv;
		s->caprecs = nc;
	}
	s->recs[s->nrecs++] = r;
	return 0;
}

static void remove_rec(struct gcni_server *s, struct rec *r)
{
	for (size_t i = 0; i < s->nrecs; i++)
		if (s->recs[i] == r) {
			s->recs[i] = s->recs[--s->nrecs];
			break;
		}
}

/* Frees a VPC's number and table once no attachment uses it. */
static void drop_vpc_if_unused(struct gcni_server *s, const char *id)
{
	for (size_t i = 0; i < s->nrecs; i++)
		if (!strcmp(s->recs[i]->conf.vpc_s, id))
			return;
	for (size_t i = 0; i < s->nvpcs; i++)
		if (!strcmp(s->vpcs[i].id, id)) {
			s->vpcs[i] = s->vpcs[--s->nvpcs];
			return;
		}
}

/*
 * The agent's own record (agent/state.h) may already name VPCs and
 * attachments: reuse its number and table for a VPC it knows, and never hand
 * out a number it uses. rec may be NULL.
 */
static struct vrec *get_vpc(struct gcni_server *s, const char *id, const struct gdp_state *rec,
			    char *err, size_t errlen)
{
	const struct gdp_vpc *known = rec ? gdp_state_find_vpc(rec, id) : NULL;
	struct vrec *v = find_vpc(s, id);
	uint16_t arg = 0;

	if (v)
		return v;
	if (known) {
		arg = known->arg;
	} else {
		/* Lowest free number: the argument is node-local, we are its only allocator. */
		for (arg = 1; arg <= GDP_ARG_MAX; arg++) {
			int used = 0;

			for (size_t i = 0; i < s->nvpcs && !used; i++)
				used = s->vpcs[i].arg == arg;
			for (size_t i = 0; rec && i < rec->n_vpcs && !used; i++)
				used = rec->vpcs[i].arg == arg || rec->vpcs[i].table == s->o.table_min + arg;
			if (!used)
				break;
		}
	}
	if (arg > GDP_ARG_MAX) {
		snprintf(err, errlen, "vpc %s: all %d VPC numbers of this node are in use", id, GDP_ARG_MAX);
		return NULL;
	}
	if (s->nvpcs == s->capvpcs) {
		size_t nc = s->capvpcs ? s->capvpcs * 2 : 16;
		struct vrec *nv = realloc(s->vpcs, nc * sizeof(*nv));

		if (!nv) {
			snprintf(err, errlen, "vpc %s: out of memory", id);
			return NULL;
		}
		s->vpcs = nv;
		s->capvpcs = nc;
	}
	v = &s->vpcs[s->nvpcs++];
	memset(v, 0, sizeof(*v));
	snprintf(v->id, sizeof(v->id), "%s", id);
	v->arg = arg;
	v->table = known ? known->table : s->o.table_min + arg;
	return v;
}

static int alloc_att_arg(struct gcni_server *s, const struct gdp_state *rec, uint16_t *out)
{
	/* A bitmap keeps this linear in the number of attachments. */
	uint64_t used[(GDP_ARG_MAX + 64) / 64] = { 0 };

	for (size_t i = 0; i < s->nrecs; i++)
		used[s->recs[i]->arg / 64] |= 1ull << (s->recs[i]->arg % 64);
	for (size_t i = 0; rec && i < rec->n_atts; i++)
		if (rec->atts[i].arg <= GDP_ARG_MAX)
			used[rec->atts[i].arg / 64] |= 1ull << (rec->atts[i].arg % 64);
	for (uint16_t a = 1; a <= GDP_ARG_MAX; a++)
		if (!(used[a / 64] & (1ull << (a % 64)))) {
			*out = a;
			return 0;
		}
	return -ENOSPC;
}

/* The agent's record, or an empty state if there is none or it is unreadable
 * (the backend reports a broken record; allocation must not depend on it). */
static void load_agent_record(struct gcni_server *s, struct gdp_state *rec)
{
	struct gdp_results bad;
	char err[256];

	gdp_results_init(&bad);
	if (gst_load(s->o.state_dir, rec, &bad, err, sizeof(err)))
		gdp_state_init(rec);
	gdp_results_free(&bad);
}

/* ---- durable record ---------------------------------------------------- */

static json_t *store_json(struct gcni_server *s)
{
	json_t *o = json_object(), *vs = json_array(), *as = json_array();
	char m1[18], m2[18];

	json_object_set_new(o, "version", json_integer(1));
	for (size_t i = 0; i < s->nvpcs; i++) {
		json_t *v;
		int used = 0;

		/* Only VPCs with a committed attachment: a number reserved by an
		 * ADD that never completed must not outlive a restart. */
		for (size_t j = 0; j < s->nrecs && !used; j++)
			used = s->recs[j]->st == R_ACTIVE && !strcmp(s->recs[j]->conf.vpc_s, s->vpcs[i].id);
		if (!used)
			continue;
		v = json_object();
		json_object_set_new(v, "id", json_string(s->vpcs[i].id));
		json_object_set_new(v, "arg", json_integer(s->vpcs[i].arg));
		json_object_set_new(v, "table", json_integer(s->vpcs[i].table));
		json_array_append_new(vs, v);
	}
	for (size_t i = 0; i < s->nrecs; i++) {
		struct rec *r = s->recs[i];
		json_t *a;

		if (r->st != R_ACTIVE)
			continue;
		a = json_object();
		json_object_set_new(a, "network", json_string(r->network));
		json_object_set_new(a, "containerID", json_string(r->cid));
		json_object_set_new(a, "ifname", json_string(r->ifname));
		json_object_set_new(a, "netns", json_string(r->netns));
		json_object_set_new(a, "podNamespace", json_string(r->pod_ns));
		json_object_set_new(a, "podName", json_string(r->pod_name));
		json_object_set_new(a, "podUID", json_string(r->pod_uid));
		json_object_set_new(a, "hostIfname", json_string(r->link.host_ifname));
		json_object_set_new(a, "hostMac", json_string(cni_mac_str(r->link.host_mac, m1)));
		json_object_set_new(a, "mac", json_string(cni_mac_str(r->link.mac, m2)));
		json_object_set_new(a, "mtu", json_integer(r->link.mtu));
		json_object_set_new(a, "arg", json_integer(r->arg));
		json_object_set_new(a, "config", cni_conf_to_json(&r->conf));
		json_array_append_new(as, a);
	}
	json_object_set_new(o, "vpcs", vs);
	json_object_set_new(o, "attachments", as);
	return o;
}

/* Written to a temporary file, synced and renamed: never half a record. */
static int store_write(const char *path, const char *text, char *err, size_t errlen)
{
	char tmp[600];
	size_t n = strlen(text), off = 0;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "open %s: %s", tmp, strerror(errno));
		return -errno;
	}
	while (off < n) {
		ssize_t w = write(fd, text + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;

			snprintf(err, errlen, "write %s: %s", tmp, strerror(e));
			close(fd);
			unlink(tmp);
			return -e;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;

		snprintf(err, errlen, "sync %s: %s", tmp, strerror(e));
		unlink(tmp);
		return -e;
	}
	if (rename(tmp, path) < 0) {
		int e = errno;

		snprintf(err, errlen, "rename %s: %s", tmp, strerror(e));
		unlink(tmp);
		return -e;
	}
	return 0;
}

static int str_field(json_t *o, const char *k, char *dst, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, k));

	if (!v || strlen(v) >= cap)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int store_load(struct gcni_server *s, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o, *v;
	size_t i;

	o = json_load_file(s->store_path, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		if (access(s->store_path, F_OK) < 0 && errno == ENOENT)
			return 0; /* first start */
		snprintf(err, errlen, "read %s: line %d: %s", s->store_path, je.line, je.text);
		return -EINVAL;
	}
	if (json_integer_value(json_object_get(o, "version")) != 1) {
		snprintf(err, errlen, "%s: unknown record version", s->store_path);
		json_decref(o);
		return -EINVAL;
	}
	json_array_foreach(json_object_get(o, "vpcs"), i, v) {
		struct vrec vr = { 0 };

		if (str_field(v, "id", vr.id, sizeof(vr.id)) ||
		    !json_is_integer(json_object_get(v, "arg"))) {
			snprintf(err, errlen, "%s: vpcs[%zu] is malformed", s->store_path, i);
			json_decref(o);
			return -EINVAL;
		}
		vr.arg = (uint16_t)json_integer_value(json_object_get(v, "arg"));
		vr.table = (uint32_t)json_integer_value(json_object_get(v, "table"));
		if (!get_vpc(s, vr.id, NULL, err, errlen)) {
			json_decref(o);
			return -ENOMEM;
		}
		*find_vpc(s, vr.id) = vr;
	}
	json_array_foreach(json_object_get(o, "attachments"), i, v) {
		struct rec *r = calloc(1, sizeof(*r));
		struct cni_err ce;
		char hm[18], m[18];

		if (!r) {
			json_decref(o);
			return -ENOMEM;
		}
		if (str_field(v, "network", r->network, sizeof(r->network)) ||
		    str_field(v, "containerID", r->cid, sizeof(r->cid)) ||
		    str_field(v, "ifname", r->ifname, sizeof(r->ifname)) ||
		    str_field(v, "netns", r->netns, sizeof(r->netns)) ||
		    str_field(v, "podNamespace", r->pod_ns, sizeof(r->pod_ns)) ||
		    str_field(v, "podName", r->pod_name, sizeof(r->pod_name)) ||
		    str_field(v, "podUID", r->pod_uid, sizeof(r->pod_uid)) ||
		    str_field(v, "hostIfname", r->link.host_ifname, sizeof(r->link.host_ifname)) ||
		    str_field(v, "hostMac", hm, sizeof(hm)) || str_field(v, "mac", m, sizeof(m)) ||
		    cni_mac_parse(hm, r->link.host_mac) || cni_mac_parse(m, r->link.mac) ||
		    cni_conf_parse_json(json_object_get(v, "config"), CNI_CMD_UNKNOWN, &r->conf, &ce)) {
			snprintf(err, errlen, "%s: attachments[%zu] is malformed", s->store_path, i);
			rec_free(r);
			json_decref(o);
			return -EINVAL;
		}
		snprintf(r->link.ifname, sizeof(r->link.ifname), "%s", r->ifname);
		r->link.mtu = (int)json_integer_value(json_object_get(v, "mtu"));
		r->arg = (uint16_t)json_integer_value(json_object_get(v, "arg"));
		r->st = R_ACTIVE;
		if (!find_vpc(s, r->conf.vpc_s) || add_rec(s, r)) {
			snprintf(err, errlen, "%s: attachments[%zu] names vpc %s without a number",
				 s->store_path, i, r->conf.vpc_s);
			rec_free(r);
			json_decref(o);
			return -EINVAL;
		}
	}
	json_decref(o);
	return 0;
}

/* ---- commits: record + one backend apply per batch --------------------- */

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

/* Under mu: the desired state of what this server owns. */
static int build_state(struct gcni_server *s, struct gdp_state *st, int with_remotes)
{
	gdp_state_init(st);
	st->node = s->o.node;
	for (size_t i = 0; i < s->nvpcs; i++) {
		struct gdp_vpc v = { .arg = s->vpcs[i].arg, .table = s->vpcs[i].table };
		int used = 0;

		for (size_t j = 0; j < s->nrecs && !used; j++)
			used = s->recs[j]->st == R_ACTIVE && !strcmp(s->recs[j]->conf.vpc_s, s->vpcs[i].id);
		if (!used)
			continue; /* SID and table come with the first programmed attachment */
		snprintf(v.id, sizeof(v.id), "%s", s->vpcs[i].id);
		if (gdp_state_add_vpc(st, &v))
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->nrecs; i++) {
		struct rec *r = s->recs[i];
		struct gdp_attachment a;

		if (r->st != R_ACTIVE)
			continue;
		memset(&a, 0, sizeof(a));
		snprintf(a.vpc, sizeof(a.vpc), "%s", r->conf.vpc_s);
		snprintf(a.id, sizeof(a.id), "%s", r->conf.att_s);
		snprintf(a.container_id, sizeof(a.container_id), "%s", r->cid);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "%s", r->link.host_ifname);
		a.arg = r->arg;
		for (int k = 0; k < r->conf.naddrs; k++) {
			cni_prefix(&r->conf.addrs[k], &a.addrs[k]);
			if (r->conf.addrs[k].ip.family == AF_INET)
				a.nh4 = gdp_default_nh4(r->arg);
		}
		a.n_addrs = (size_t)r->conf.naddrs;
		memcpy(a.pod_mac, r->link.mac, 6);
		a.mtu = (uint32_t)r->link.mtu;
		if (gdp_state_add_attachment(st, &a))
			return -ENOMEM;
	}
	for (size_t i = 0; with_remotes && i < s->nremotes; i++)
		if (find_vpc(s, s->remotes[i].vpc) && gdp_state_find_vpc(st, s->remotes[i].vpc) &&
		    gdp_state_add_remote(st, &s->remotes[i]))
			return -ENOMEM;
	return 0;
}

static void *committer_main(void *arg)
{
	struct gcni_server *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct gdp_results res;
		struct gdp_state st;
		unsigned long target;
		char serr[256] = "", *text;
		json_t *js;
		int src, arc;

		while (!s->committer_stop && s->gen_done == s->gen_want)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->gen_done == s->gen_want)
			break;
		target = s->gen_want;
		js = store_json(s);
		text = json_dumps(js, JSON_INDENT(1) | JSON_SORT_KEYS);
		json_decref(js);
		src = build_state(s, &st, s->o.apply == NULL);
		pthread_mutex_unlock(&s->mu);

		/* The record first: a crash after the apply must not forget what
		 * the kernel has (the next start adopts it from the record). */
		if (!text)
			src = -ENOMEM, snprintf(serr, sizeof(serr), "encode record: out of memory");
		else if (!src)
			src = store_write(s->store_path, text, serr, sizeof(serr));
		else
			snprintf(serr, sizeof(serr), "build desired state: out of memory");
		free(text);
		gdp_results_init(&res);
		pthread_mutex_lock(&s->bmu);
		if (s->o.apply)
			arc = s->o.apply(s->o.apply_ctx, &st, &res);
		else
			arc = s->o.backend->ops->apply(s->o.backend, &st, &res);
		pthread_mutex_unlock(&s->bmu);
		gdp_state_free(&st);

		pthread_mutex_lock(&s->mu);
		s->commits++;
		for (size_t i = 0; i < s->nrecs; i++) {
			struct rec *r = s->recs[i];
			struct gdp_result *x = NULL, *vx = NULL, *nx = NULL;

			if (r->st != R_ACTIVE)
				continue;
			r->prog_err = 0;
			r->prog_msg[0] = 0;
			for (size_t k = 0; k < res.n; k++) {
				struct gdp_result *y = &res.v[k];

				if (y->kind == GDP_OBJ_ATTACHMENT && !strcmp(y->vpc, r->conf.vpc_s) &&
				    !strcmp(y->key, r->conf.att_s))
					x = y;
				else if (y->kind == GDP_OBJ_VPC && !strcmp(y->vpc, r->conf.vpc_s))
					vx = y;
				else if (y->kind == GDP_OBJ_NODE)
					nx = y;
			}
			if (src) {
				r->prog_err = src;
				snprintf(r->prog_msg, sizeof(r->prog_msg), "durable record: %s", serr);
			} else if (nx && nx->err) {
				r->prog_err = nx->err;
				snprintf(r->prog_msg, sizeof(r->prog_msg), "node: %s", nx->msg);
			} else if (vx && vx->err) {
				r->prog_err = vx->err;
				snprintf(r->prog_msg, sizeof(r->prog_msg), "vpc %s: %s", r->conf.vpc_s, vx->msg);
			} else if (x && x->err) {
				r->prog_err = x->err;
				snprintf(r->prog_msg, sizeof(r->prog_msg), "%s", x->msg);
			} else if (!x && arc) {
				r->prog_err = arc;
				snprintf(r->prog_msg, sizeof(r->prog_msg), "backend apply: %s", strerror(-arc));
			}
		}
		gdp_results_free(&res);
		s->gen_done = target;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Under mu: asks for a commit of the current records and waits for it. */
static void commit_wait(struct gcni_server *s)
{
	unsigned long gen = ++s->gen_want;

	pthread_cond_broadcast(&s->cv);
	while (s->gen_done < gen)
		pthread_cond_wait(&s->cv, &s->mu);
}

/* Under mu: waits until no other request works on r. r may be freed meanwhile,
 * so the caller looks it up again. */
static void wait_idle(struct gcni_server *s)
{
	pthread_cond_wait(&s->cv, &s->mu);
}

/* ---- handlers ------------------------------------------------------------ */

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

static json_t *rec_result(const struct rec *r, const struct cni_req *q)
{
	struct cni_result res;

	memset(&res, 0, sizeof(res));
	snprintf(res.host_ifname, sizeof(res.host_ifname), "%s", r->link.host_ifname);
	memcpy(res.host_mac, r->link.host_mac, 6);
	snprintf(res.ifname, sizeof(res.ifname), "%s", r->ifname);
	memcpy(res.mac, r->link.mac, 6);
	snprintf(res.sandbox, sizeof(res.sandbox), "%s", q->env.netns[0] ? q->env.netns : r->netns);
	res.mtu = r->link.mtu;
	return cni_result_json(&res, &r->conf, q->conf.ver);
}

static int addr_conflict(struct gcni_server *s, const struct cni_conf *c, char *who, size_t wl,
			 char *what, size_t whl)
{
	for (size_t i = 0; i < s->nrecs; i++) {
		const struct rec *o = s->recs[i];

		if (strcmp(o->conf.vpc_s, c->vpc_s))
			continue;
		for (int j = 0; j < c->naddrs; j++)
			for (int k = 0; k < o->conf.naddrs; k++)
				if (c->addrs[j].ip.family == o->conf.addrs[k].ip.family &&
				    !memcmp(c->addrs[j].ip.addr, o->conf.addrs[k].ip.addr, 16)) {
					snprintf(who, wl, "%s", o->conf.att_s);
					cni_ip_str(&c->addrs[j].ip, what, whl);
					return 1;
				}
	}
	return 0;
}

static json_t *do_add(struct gcni_server *s, struct cni_req *q, int nsfd, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	char err[512] = "", host[16];
	struct gdp_state rec;
	struct rec *r, *o;
	int clash = 0, rc;
	json_t *out;

	gcni_host_ifname(c->vpc_s, c->att_s, host);
	load_agent_record(s, &rec);
	pthread_mutex_lock(&s->mu);
	while ((r = find_key(s, c->name, q->env.container_id, q->env.ifname)) && r->busy)
		wait_idle(s);
	if (r) {
		if (!conf_same(&r->conf, c)) {
			cni_err_set(e, CNI_ERR_CONFLICT, "attachment exists with another configuration",
				    "container %s interface %s on network %s is attached to vpc %s attachment %s with other settings; DEL it first",
				    r->cid, r->ifname, r->network, r->conf.vpc_s, r->conf.att_s);
			goto unlock_fail;
		}
		/* Idempotent ADD: verify, repair the pod side if it drifted. */
		r->busy = 1;
		pthread_mutex_unlock(&s->mu);
		rc = pod_check(s->o.netns, nsfd, c, &r->link, err, sizeof(err));
		if (rc)
			rc = pod_repair(s->o.netns, nsfd, c, &r->link, err, sizeof(err));
		if (rc == -ENODEV)
			rc = pod_setup(s->o.netns, nsfd, c, &r->link, &clash, err, sizeof(err));
		pthread_mutex_lock(&s->mu);
		if (rc) {
			r->busy = 0;
			pthread_cond_broadcast(&s->cv);
			cni_err_set(e, clash ? CNI_ERR_INVALID_ENV : CNI_ERR_PROGRAMMING,
				    clash ? "CNI_IFNAME already exists in the container" : "repairing the attachment failed",
				    "%s", err);
			goto unlock_fail;
		}
		commit_wait(s);
		goto finish;
	}
	o = find_att(s, c->vpc_s, c->att_s);
	if (o) {
		cni_err_set(e, CNI_ERR_TRY_AGAIN_LATER, "VPC attachment is held by another container",
			    "vpc %s attachment %s is attached to container %s interface %s; retry after its DEL",
			    c->vpc_s, c->att_s, o->cid, o->ifname);
		goto unlock_fail;
	}
	{
		char who[16], what[64];

		if (addr_conflict(s, c, who, sizeof(who), what, sizeof(what))) {
			cni_err_set(e, CNI_ERR_CONFLICT, "address already in use in this VPC",
				    "vpc %s: address %s is already used by attachment %s on this node",
				    c->vpc_s, what, who);
			goto unlock_fail;
		}
	}
	for (size_t i = 0; i < s->nrecs; i++)
		if (!strcmp(s->recs[i]->link.host_ifname, host)) {
			cni_err_set(e, CNI_ERR_CONFLICT, "host interface name collision",
				    "%s for vpc %s attachment %s is already used by attachment %s/%s", host,
				    c->vpc_s, c->att_s, s->recs[i]->conf.vpc_s, s->recs[i]->conf.att_s);
			goto unlock_fail;
		}
	{
		/* The VPC's address ranges, where the agent's record has them:
		 * refused here, before anything is created. */
		const struct gdp_vpc *kv = gdp_state_find_vpc(&rec, c->vpc_s);

		for (int i = 0; kv && kv->n_prefixes && i < c->naddrs; i++) {
			struct gdp_prefix p;
			int inside = 0;
			char b[64];

			cni_prefix(&c->addrs[i], &p);
			for (size_t k = 0; k < kv->n_prefixes && !inside; k++)
				inside = gdp_prefix_contains(&kv->prefixes[k], &p);
			if (!inside) {
				cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
					    "field 'addresses[%d]': %s is outside the address ranges of vpc %s",
					    i, cni_ip_str(&c->addrs[i].ip, b, sizeof(b)), c->vpc_s);
				goto unlock_fail;
			}
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		cni_err_set(e, CNI_ERR_IO, "out of memory", "allocating the attachment record");
		goto unlock_fail;
	}
	if (!get_vpc(s, c->vpc_s, &rec, err, sizeof(err))) {
		cni_err_set(e, CNI_ERR_PROGRAMMING, "cannot allocate the VPC on this node", "%s", err);
		free(r);
		goto unlock_fail;
	}
	if (alloc_att_arg(s, &rec, &r->arg) || add_rec(s, r)) {
		cni_err_set(e, CNI_ERR_PROGRAMMING, "cannot allocate the attachment on this node",
			    "vpc %s attachment %s: all %d attachment numbers are in use", c->vpc_s,
			    c->att_s, GDP_ARG_MAX);
		free(r);
		drop_vpc_if_unused(s, c->vpc_s);
		goto unlock_fail;
	}
	snprintf(r->network, sizeof(r->network), "%s", c->name);
	snprintf(r->cid, sizeof(r->cid), "%s", q->env.container_id);
	snprintf(r->ifname, sizeof(r->ifname), "%s", q->env.ifname);
	snprintf(r->netns, sizeof(r->netns), "%s", q->env.netns);
	snprintf(r->pod_ns, sizeof(r->pod_ns), "%s", q->env.pod_namespace);
	snprintf(r->pod_name, sizeof(r->pod_name), "%s", q->env.pod_name);
	snprintf(r->pod_uid, sizeof(r->pod_uid), "%s", q->env.pod_uid);
	/* The record takes the configuration (and its JSON references). */
	r->conf = q->conf;
	memset(&q->conf, 0, sizeof(q->conf));
	q->conf.ver = r->conf.ver;
	c = &r->conf;
	snprintf(r->link.host_ifname, sizeof(r->link.host_ifname), "%s", host);
	snprintf(r->link.ifname, sizeof(r->link.ifname), "%s", r->ifname);
	r->link.mtu = c->mtu ? c->mtu : s->default_mtu;
	r->st = R_PENDING;
	r->busy = 1;
	pthread_mutex_unlock(&s->mu);

	/* The slow, parallel part: nothing shared is touched here. */
	pthread_mutex_lock(&s->mu);
	while (s->setups >= s->max_setups)
		pthread_cond_wait(&s->cv, &s->mu);
	s->setups++;
	pthread_mutex_unlock(&s->mu);
	rc = pod_setup(s->o.netns, nsfd, c, &r->link, &clash, err, sizeof(err));

	pthread_mutex_lock(&s->mu);
	s->setups--;
	pthread_cond_broadcast(&s->cv);
	if (rc) {
		if (clash)
			cni_err_set(e, CNI_ERR_INVALID_ENV, "CNI_IFNAME already exists in the container",
				    "CNI_IFNAME %s: %s", r->ifname, err);
		else
			cni_err_set(e, CNI_ERR_PROGRAMMING, "attaching the pod failed",
				    "vpc %s attachment %s: %s", c->vpc_s, c->att_s, err);
		goto undo_rec;
	}
	r->st = R_ACTIVE;
	commit_wait(s);
finish:
	if (r->prog_err) {
		cni_err_set(e, CNI_ERR_PROGRAMMING, "programming the node failed",
			    "vpc %s attachment %s: %s", r->conf.vpc_s, r->conf.att_s, r->prog_msg);
		r->st = R_PENDING;
		commit_wait(s); /* takes back what the failed apply did program */
		pthread_mutex_unlock(&s->mu);
		pod_teardown(s->o.netns, r->link.host_ifname, err, sizeof(err));
		pthread_mutex_lock(&s->mu);
		goto undo_rec;
	}
	q->conf.ver = q->conf.ver == CNI_V_UNKNOWN ? r->conf.ver : q->conf.ver;
	out = rec_result(r, q);
	r->busy = 0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	gdp_state_free(&rec);
	return out;
undo_rec:
	{
		char vpc[12];

		snprintf(vpc, sizeof(vpc), "%s", r->conf.vpc_s);
		remove_rec(s, r);
		rec_free(r);
		drop_vpc_if_unused(s, vpc);
		pthread_cond_broadcast(&s->cv);
	}
unlock_fail:
	pthread_mutex_unlock(&s->mu);
	gdp_state_free(&rec);
	return NULL;
}

/* Removes records (under mu, all marked busy by the caller), commits, then
 * deletes their veths. Returns 0 or the first teardown error in e. */
static int remove_recs(struct gcni_server *s, struct rec **v, size_t n, struct cni_err *e)
{
	char (*hosts)[16] = calloc(n ? n : 1, sizeof(*hosts));
	char err[512];
	int rc = 0;

	if (!hosts) {
		cni_err_set(e, CNI_ERR_IO, "out of memory", "removing %zu attachments", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char vpc[12];

		snprintf(hosts[i], 16, "%s", v[i]->link.host_ifname);
		snprintf(vpc, sizeof(vpc), "%s", v[i]->conf.vpc_s);
		remove_rec(s, v[i]);
		rec_free(v[i]);
		/* The VPC's table, rules and SID go with its last attachment. */
		drop_vpc_if_unused(s, vpc);
	}
	commit_wait(s);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++)
		if (pod_teardown(s->o.netns, hosts[i], err, sizeof(err)) && !rc) {
			rc = -1;
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing the attachment failed", "%s", err);
		}
	free(hosts);
	pthread_mutex_lock(&s->mu);
	return rc;
}

static int do_del(struct gcni_server *s, struct cni_req *q, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	struct rec *r;
	int rc;

	pthread_mutex_lock(&s->mu);
	while ((r = find_key(s, c->name, q->env.container_id, q->env.ifname)) && r->busy)
		wait_idle(s);
	if (!r) {
		char host[16], err[512];

		/* Unknown: success. A veth left by an ADD that died before its
		 * commit has the derived name and no record: remove it. */
		gcni_host_ifname(c->vpc_s, c->att_s, host);
		r = find_att(s, c->vpc_s, c->att_s);
		pthread_mutex_unlock(&s->mu);
		if (!r && pod_teardown(s->o.netns, host, err, sizeof(err))) {
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing a leftover interface failed", "%s", err);
			return -1;
		}
		return 0;
	}
	r->busy = 1;
	rc = remove_recs(s, &r, 1, e);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int do_gc(struct gcni_server *s, struct cni_req *q, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	struct rec **v;
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&s->mu);
	v = calloc(s->nrecs ? s->nrecs : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&s->mu);
		cni_err_set(e, CNI_ERR_IO, "out of memory", "GC of %zu attachments", s->nrecs);
		return -1;
	}
	for (size_t i = 0; i < s->nrecs; i++) {
		struct rec *r = s->recs[i];
		int valid = 0;

		/* Only this network's attachments; in-flight ones are not stale;
		 * and none at all when the runtime named no valid set. */
		if (!c->has_valid || strcmp(r->network, c->name) || r->busy || r->st != R_ACTIVE)
			continue;
		for (size_t k = 0; k < c->nvalid && !valid; k++)
			valid = !strcmp(c->valid[k].container_id, r->cid) &&
				!strcmp(c->valid[k].ifname, r->ifname);
		if (!valid) {
			r->busy = 1;
			v[n++] = r;
		}
	}
	rc = n ? remove_recs(s, v, n, e) : 0;
	if (!rc) {
		/* Host ends no record owns (an ADD died before its commit and was
		 * never retried). Under the lock: a new ADD reserves its name in a
		 * record before it creates the veth, so it cannot be swept. */
		char (*keep)[CNI_IFNAME_MAX + 1] = calloc(s->nrecs ? s->nrecs : 1, sizeof(*keep));
		char err[512];
		unsigned gone = 0;

		for (size_t i = 0; keep && i < s->nrecs; i++)
			snprintf(keep[i], sizeof(keep[i]), "%s", s->recs[i]->link.host_ifname);
		if (!keep || pod_sweep(s->o.netns, keep, s->nrecs, &gone, err, sizeof(err))) {
			rc = -1;
			cni_err_set(e, CNI_ERR_PROGRAMMING, "removing leftover interfaces failed", "%s",
				    keep ? err : "out of memory");
		} else if (gone) {
			cni_log("GC: removed %u host interfaces no attachment owns", gone);
		}
		free(keep);
	}
	pthread_mutex_unlock(&s->mu);
	free(v);
	return rc;
}

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

static int do_check(struct gcni_server *s, struct cni_req *q, int nsfd, struct cni_err *e)
{
	const struct cni_conf *c = &q->conf;
	char err[512] = "";
	struct pod_link link;
	uint32_t table;
	struct rec *r;
	int rc;

	pthread_mutex_lock(&s->mu);
	while ((r = find_key(s, c->name, q->env.container_id, q->env.ifname)) && r->busy)
		wait_idle(s);
	if (!r) {
		pthread_mutex_unlock(&s->mu);
		cni_err_set(e, CNI_ERR_UNKNOWN_CONTAINER, "no such attachment",
			    "galactic-agent has no attachment for container %s interface %s on network %s",
			    q->env.container_id, q->env.ifname, c->name);
		return -1;
	}
	if (!conf_same(&r->conf, c)) {
		pthread_mutex_unlock(&s->mu);
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "attachment differs from the configuration",
			    "container %s interface %s is attached to vpc %s attachment %s with other settings",
			    q->env.container_id, q->env.ifname, r->conf.vpc_s, r->conf.att_s);
		return -1;
	}
	if (prev_matches(c, err, sizeof(err))) {
		pthread_mutex_unlock(&s->mu);
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "prevResult differs from the attachment", "%s", err);
		return -1;
	}
	r->busy = 1;
	link = r->link;
	table = find_vpc(s, c->vpc_s) ? find_vpc(s, c->vpc_s)->table : 0;
	pthread_mutex_unlock(&s->mu);

	rc = pod_check(s->o.netns, nsfd, c, &link, err, sizeof(err));
	/* The node side, read-only (the backend itself belongs to the apply
	 * path, which may be running in another thread). */
	if (!rc)
		rc = pod_check_node(s->o.netns, link.host_ifname, table, c, err, sizeof(err));
	pthread_mutex_lock(&s->mu);
	r->busy = 0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (rc)
		cni_err_set(e, CNI_ERR_CHECK_FAILED, "attachment check failed", "container %s interface %s: %s",
			    q->env.container_id, q->env.ifname, err);
	return rc ? -1 : 0;
}

/* ---- connections ---------------------------------------------------------- */

struct conn {
	struct gcni_server *s;
	int fd;
};

static void reply(int fd, const char *text, int64_t deadline)
{
	struct cni_err e;

	if (text)
		cni_frame_send(fd, text, strlen(text), -1, deadline, &e);
}

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct gcni_server *s = cn->s;
	struct cni_err e = { 0 };
	struct cni_req q;
	json_t *result = NULL;
	char *buf = NULL, *text;
	size_t len;
	int nsfd = -1, ok = 0;
	int64_t t0 = cni_now_ms(), deadline = t0 + REQ_IO_MS;
	char lnet[CNI_NAME_MAX + 1] = "-", lvpc[12] = "-", latt[12] = "-";

	memset(&q, 0, sizeof(q));
	text = cni_hello_encode();
	if (!text || cni_frame_send(cn->fd, text, strlen(text), -1, deadline, &e)) {
		free(text);
		goto out;
	}
	free(text);
	if (cni_frame_recv(cn->fd, &buf, &len, &nsfd, deadline, &e))
		goto out;
	if (cni_req_decode(buf, len, &q, &e))
		goto respond;
	/* For the log line: ADD moves the configuration into its record. */
	snprintf(lnet, sizeof(lnet), "%s", q.conf.name);
	snprintf(lvpc, sizeof(lvpc), "%s", q.conf.vpc_s);
	snprintf(latt, sizeof(latt), "%s", q.conf.att_s);
	if (q.has_netns_fd != (nsfd >= 0)) {
		cni_err_set(&e, CNI_ERR_INVALID_ENV, "invalid environment",
			    "the request %s a network namespace fd but %s", q.has_netns_fd ? "announces" : "does not announce",
			    nsfd >= 0 ? "one was passed" : "none was passed");
		goto respond;
	}
	if (nsfd >= 0 && ioctl(nsfd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		cni_err_set(&e, CNI_ERR_INVALID_ENV, "CNI_NETNS is not a network namespace",
			    "CNI_NETNS %s", q.env.netns);
		goto respond;
	}
	switch (q.env.cmd) {
	case CNI_CMD_ADD:
	case CNI_CMD_CHECK:
		if (nsfd < 0) {
			cni_err_set(&e, CNI_ERR_INVALID_ENV, "invalid environment",
				    "%s needs the container's network namespace (CNI_NETNS)",
				    cni_cmd_str(q.env.cmd));
			goto respond;
		}
		if (q.env.cmd == CNI_CMD_ADD)
			ok = (result = do_add(s, &q, nsfd, &e)) != NULL;
		else
			ok = !do_check(s, &q, nsfd, &e);
		break;
	case CNI_CMD_DEL:
		ok = !do_del(s, &q, &e);
		break;
	case CNI_CMD_GC:
		ok = !do_gc(s, &q, &e);
		break;
	case CNI_CMD_STATUS:
		ok = 1;
		break;
	default:
		cni_err_set(&e, CNI_ERR_DECODE, "malformed agent request", "unsupported op");
	}
respond:
	if (ok)
		cni_log("%s container %s if %s network %s vpc %s attachment %s: ok (%lld ms)",
			cni_cmd_str(q.env.cmd), q.env.container_id, q.env.ifname,
			lnet, lvpc, latt, (long long)(cni_now_ms() - t0));
	else
		cni_log("%s container %s if %s: error %d: %s: %s (%lld ms)", cni_cmd_str(q.env.cmd),
			q.env.container_id[0] ? q.env.container_id : "-", q.env.ifname[0] ? q.env.ifname : "-",
			e.code, e.msg, e.details, (long long)(cni_now_ms() - t0));
	text = ok ? cni_resp_encode_ok(result) : cni_resp_encode_err(&e);
	/* Answering gets its own deadline: the work may have taken long. */
	reply(cn->fd, text, cni_now_ms() + REQ_IO_MS);
	free(text);
out:
	json_decref(result);
	cni_req_free(&q);
	free(buf);
	if (nsfd >= 0)
		close(nsfd);
	close(cn->fd);
	pthread_mutex_lock(&s->mu);
	s->nconns--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	free(cn);
	return NULL;
}

static void *listener_main(void *arg)
{
	struct gcni_server *s = arg;

	for (;;) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		struct conn *cn;
		pthread_attr_t at;
		pthread_t t;
		int fd, busy;

		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		pthread_mutex_unlock(&s->mu);
		if (!(p.revents & POLLIN))
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		/* Only root (the runtime) and our own user may drive the agent. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
		    (cr.uid != 0 && cr.uid != getuid())) {
			close(fd);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		busy = s->nconns >= s->o.max_conns;
		if (!busy)
			s->nconns++;
		pthread_mutex_unlock(&s->mu);
		if (busy) {
			struct cni_err e;
			char *text;

			cni_err_set(&e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent is busy",
				    "%u requests in progress; retry", s->o.max_conns);
			/* Greeting first: the plugin reads nothing else before it. */
			text = cni_hello_encode();
			reply(fd, text, cni_now_ms() + 1000);
			free(text);
			text = cni_resp_encode_err(&e);
			reply(fd, text, cni_now_ms() + 1000);
			free(text);
			close(fd);
			continue;
		}
		cn = malloc(sizeof(*cn));
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 256 * 1024);
		if (!cn || (cn->s = s, cn->fd = fd, pthread_create(&t, &at, conn_main, cn))) {
			free(cn);
			close(fd);
			pthread_mutex_lock(&s->mu);
			s->nconns--;
			pthread_mutex_unlock(&s->mu);
		}
		pthread_attr_destroy(&at);
	}
	return NULL;
}

/* ---- lifecycle -------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int gcni_server_start(struct gcni_server **out, const struct gcni_server_opts *opts, char *err,
		      size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct gcni_server *s;
	char dir[sizeof(sa.sun_path)], *slash;
	int rc;

	*out = NULL;
	if (!opts->state_dir || (!opts->backend && !opts->apply)) {
		snprintf(err, errlen, "cni server: needs a state directory and a backend or apply callback");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "cni server: out of memory");
		return -ENOMEM;
	}
	s->o = *opts;
	s->lfd = -1;
	if (!s->o.table_min)
		s->o.table_min = GDP_TABLE_MIN_DEFAULT;
	if (!s->o.max_conns)
		s->o.max_conns = 512;
	s->max_setups = opts->max_setups ? opts->max_setups : 4 * (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(s->sock_path, sizeof(s->sock_path), "%s",
		 opts->socket_path ? opts->socket_path : CNI_DEFAULT_SOCKET);
	snprintf(s->store_path, sizeof(s->store_path), "%s/%s", opts->state_dir, STORE_NAME);
	if (!s->o.node.node_id) {
		struct gdp_state rec;

		/* The node (block, id, uplink) as the agent's record has it. */
		load_agent_record(s, &rec);
		s->o.node = rec.node;
		gdp_state_free(&rec);
	}
	s->default_mtu = opts->default_mtu;
	if (!s->default_mtu) {
		int up = pod_link_mtu(opts->netns, s->o.node.uplink);

		/* Reduced encap adds one IPv6 header (40 bytes) and no SRH. */
		s->default_mtu = up > CNI_MTU_MIN_V6 + 40 ? up - 40 : 1460;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->bmu, NULL);
	pthread_cond_init(&s->cv, NULL);

	rc = mkdir_p(opts->state_dir);
	if (rc) {
		snprintf(err, errlen, "cni server: create %s: %s", opts->state_dir, strerror(-rc));
		goto fail;
	}
	rc = store_load(s, err, errlen);
	if (rc)
		goto fail;
	if (pthread_create(&s->committer, NULL, committer_main, s)) {
		rc = -EAGAIN;
		snprintf(err, errlen, "cni server: start committer thread failed");
		goto fail;
	}
	/* Adopt what the record says before taking requests. */
	pthread_mutex_lock(&s->mu);
	commit_wait(s);
	pthread_mutex_unlock(&s->mu);

	snprintf(dir, sizeof(dir), "%s", s->sock_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir_p(dir);
	}
	if (strlen(s->sock_path) >= sizeof(sa.sun_path)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "cni server: socket path %s is too long", s->sock_path);
		goto fail_committer;
	}
	strcpy(sa.sun_path, s->sock_path);
	unlink(s->sock_path); /* a socket left by a previous run */
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(s->sock_path, 0600) < 0 || listen(s->lfd, 1024) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cni server: listen on %s: %s", s->sock_path, strerror(errno));
		goto fail_committer;
	}
	if (pthread_create(&s->listener, NULL, listener_main, s)) {
		rc = -EAGAIN;
		snprintf(err, errlen, "cni server: start listener thread failed");
		goto fail_committer;
	}
	*out = s;
	return 0;
fail_committer:
	pthread_mutex_lock(&s->mu);
	s->committer_stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->committer, NULL);
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	for (size_t i = 0; i < s->nrecs; i++)
		rec_free(s->recs[i]);
	free(s->recs);
	free(s->vpcs);
	free(s);
	return rc;
}

void gcni_server_stop(struct gcni_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->listener, NULL);
	close(s->lfd);
	unlink(s->sock_path);
	pthread_mutex_lock(&s->mu);
	while (s->nconns)
		pthread_cond_wait(&s->cv, &s->mu);
	s->committer_stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->committer, NULL);
	for (size_t i = 0; i < s->nrecs; i++)
		rec_free(s->recs[i]);
	free(s->recs);
	free(s->vpcs);
	free(s->remotes);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->bmu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

int gcni_server_set_remotes(struct gcni_server *s, const struct gdp_remote *v, size_t n)
{
	struct gdp_remote *nv = NULL;

	if (n) {
		nv = malloc(n * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		memcpy(nv, v, n * sizeof(*nv));
	}
	pthread_mutex_lock(&s->mu);
	free(s->remotes);
	s->remotes = nv;
	s->nremotes = n;
	commit_wait(s);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int gcni_server_snapshot(struct gcni_server *s, struct gdp_state *out)
{
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = build_state(s, out, 0);
	pthread_mutex_unlock(&s->mu);
	if (rc)
		gdp_state_free(out);
	return rc;
}

unsigned long gcni_server_commits(struct gcni_server *s)
{
	unsigned long n;

	pthread_mutex_lock(&s->mu);
	n = s->commits;
	pthread_mutex_unlock(&s->mu);
	return n;
}
