/*
 * galactic-agent: owns the node's SRv6 data plane.
 *
 *   galactic-agent --state-dir DIR [--backend kernel|bpf|auto [--fallback]]
 *                  [--bpffs DIR] [--netns NAME]
 *                  [--interval SEC] [--once] [--rtproto N] [--tables MIN-MAX]
 *
 * Level-triggered: at start, on SIGHUP, when a file of the state directory
 * changes and every --interval seconds it loads the desired state and lets
 * the backend make the node match it (adopting what is already right).
 * SIGTERM/SIGINT stop the agent and leave the kernel state in place, so a
 * restart does not interrupt traffic. Every failed object is logged with the
 * object it concerns and written to DIR/status.json.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
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

#include "agent/cni/server.h"
#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/nl/objects.h"
#include "agent/report/report.h"
#include "agent/state.h"

struct agent {
	const char *state_dir;
	struct gdp_backend *be;
	pthread_mutex_t mu;             /* one apply at a time (main loop, CNI committer) */
	struct gdp_state cni_local;     /* last desired state handed in by the CNI server */
	bool have_cni;
	struct rpt *rpt;                /* reports + learned routes (--node), or NULL */
	unsigned long reconciles;
};

static volatile sig_atomic_t got_hup, got_term;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld galactic-agent: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Objects of b not already in a (by identity) are appended to a. */
static int merge(struct gdp_state *a, const struct gdp_state *b)
{
	size_t i;

	/* No node in the record (no state.json yet): the CNI server's is the node. */
	if (!a->node.node_id)
		a->node = b->node;
	for (i = 0; i < b->n_vpcs; i++)
		if (!gdp_state_find_vpc(a, b->vpcs[i].id) && gdp_state_add_vpc(a, &b->vpcs[i]))
			return -ENOMEM;
	for (i = 0; i < b->n_atts; i++)
		if (!gdp_state_find_attachment(a, b->atts[i].vpc, b->atts[i].id) &&
		    gdp_state_add_attachment(a, &b->atts[i]))
			return -ENOMEM;
	for (i = 0; i < b->n_remotes; i++)
		if (gdp_state_add_remote(a, &b->remotes[i]))
			return -ENOMEM;
	return 0;
}

static void write_status(struct agent *ag, const struct gdp_results *res, int rc, double ms)
{
	json_t *j = json_object(), *errs = json_array();
	char path[4096], *s;
	size_t i, prog = 0;

	for (i = 0; i < res->n; i++) {
		const struct gdp_result *r = &res->v[i];

		if (r->programmed) {
			prog++;
			continue;
		}
		json_array_append_new(errs, json_pack("{s:s, s:s, s:s, s:i, s:s}", "kind",
						      gdp_obj_kind_str(r->kind), "vpc", r->vpc, "key",
						      r->key, "errno", -r->err, "message", r->msg));
	}
	json_object_set_new(j, "reconciles", json_integer((json_int_t)ag->reconciles));
	json_object_set_new(j, "rc", json_integer(rc));
	json_object_set_new(j, "objects", json_integer((json_int_t)res->n));
	json_object_set_new(j, "programmed", json_integer((json_int_t)prog));
	json_object_set_new(j, "added", json_integer((json_int_t)res->added));
	json_object_set_new(j, "removed", json_integer((json_int_t)res->removed));
	json_object_set_new(j, "unchanged", json_integer((json_int_t)res->unchanged));
	json_object_set_new(j, "retries", json_integer((json_int_t)res->retries));
	json_object_set_new(j, "ms", json_real(ms));
	json_object_set_new(j, "errors", errs);
	s = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	snprintf(path, sizeof(path), "%s/status.json", ag->state_dir);
	if (s && gst_write_atomic(path, s, strlen(s)))
		logf_("write %s failed", path);
	free(s);
}

/* Loads the record, adds the CNI server's state, applies. Caller holds ag->mu. */
static int reconcile_locked(struct agent *ag, const struct gdp_state *extra, struct gdp_results *out)
{
	struct gdp_state st;
	struct gdp_results bad, res;
	char err[512];
	double t0 = now_ms();
	size_t i;
	int rc;

	gdp_results_init(&bad);
	gdp_results_init(&res);
	rc = gst_load(ag->state_dir, &st, &bad, err, sizeof(err));
	if (rc) {
		/* A broken record must not wipe the node: keep the kernel as it is. */
		logf_("error: load state: %s (kernel left unchanged)", err);
		gdp_results_free(&bad);
		return rc;
	}
	if (extra)
		rc = merge(&st, extra);
	if (!rc)
		rc = ag->be->ops->apply(ag->be, &st, &res);
	ag->reconciles++;
	for (i = 0; i < bad.n; i++)
		logf_("error: %s", bad.v[i].msg);
	for (i = 0; i < res.n; i++)
		if (res.v[i].err)
			logf_("error: %s %s%s%s: %s", gdp_obj_kind_str(res.v[i].kind), res.v[i].vpc,
			      res.v[i].key[0] ? "/" : "", res.v[i].key, res.v[i].msg);
	logf_("reconcile #%lu: %zu objects, added/replaced %lu, removed %lu, unchanged %lu, ENOMEM retries %lu, failed %lu (%.1f ms)",
	      ag->reconciles, res.n, res.added, res.removed, res.unchanged, res.retries,
	      res.failed + bad.n, now_ms() - t0);
	/* Objects the loader rejected are failures too. */
	for (i = 0; i < bad.n; i++) {
		struct gdp_result *r = gdp_results_get(&res, bad.v[i].kind, bad.v[i].vpc, bad.v[i].key);

		if (r)
			*r = bad.v[i];
	}
	rpt_update(ag->rpt, &st, &res);
	write_status(ag, &res, rc, now_ms() - t0);
	if (out) {
		gdp_results_free(out);
		*out = res;
	} else {
		gdp_results_free(&res);
	}
	gdp_results_free(&bad);
	gdp_state_free(&st);
	return rc;
}

/*
 * For the CNI server (gcni_server_opts.apply): applies its local state plus
 * the agent's record and remotes, serialized with the main loop.
 */
int agent_apply_cb(void *ctx, const struct gdp_state *local, struct gdp_results *res)
{
	struct agent *ag = ctx;
	int rc;

	pthread_mutex_lock(&ag->mu);
	gdp_state_free(&ag->cni_local);
	rc = gdp_state_copy(&ag->cni_local, local);
	ag->have_cni = !rc;
	if (!rc)
		rc = reconcile_locked(ag, &ag->cni_local, res);
	pthread_mutex_unlock(&ag->mu);
	return rc;
}

static int reconcile(struct agent *ag)
{
	int rc;

	pthread_mutex_lock(&ag->mu);
	rc = reconcile_locked(ag, ag->have_cni ? &ag->cni_local : NULL, NULL);
	pthread_mutex_unlock(&ag->mu);
	return rc;
}

static time_t files_mtime(const char *dir)
{
	static const char *const names[] = { GST_STATE_FILE, GST_REMOTES_FILE };
	char path[4096];
	struct stat st;
	time_t m = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		/* nanoseconds matter: two writes in one second must both be seen */
		if (stat(path, &st) == 0)
			m ^= st.st_mtim.tv_sec * 1000000007L + st.st_mtim.tv_nsec + (time_t)st.st_ino;
	}
	return m;
}

/* Which kernel events can mean drift of what we own (a resync is cheap). */
struct watch {
	uint8_t proto;
	uint32_t tmin, tmax;
	bool dirty;
};

static int watch_cb(const struct nlmsghdr *h, void *arg)
{
	struct watch *w = arg;
	struct gnl_route r;
	struct gnl_rule ru;
	struct gnl_neigh n;
	struct gnl_ifaddr a;

	switch (h->nlmsg_type) {
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		if (gnl_route_parse(h, &r) == 0 &&
		    ((h->nlmsg_type == RTM_DELROUTE && r.protocol == w->proto) ||
		     (r.protocol != w->proto && r.table >= w->tmin && r.table <= w->tmax)))
			w->dirty = true;
		break;
	case RTM_NEWRULE:
	case RTM_DELRULE:
		if (gnl_rule_parse(h, &ru) == 0 &&
		    ((h->nlmsg_type == RTM_DELRULE && ru.protocol == w->proto) ||
		     (ru.protocol != w->proto && ru.table >= w->tmin && ru.table <= w->tmax)))
			w->dirty = true;
		break;
	case RTM_DELNEIGH:
		if (gnl_neigh_parse(h, &n) == 0 && n.protocol == w->proto)
			w->dirty = true;
		break;
	case RTM_DELADDR:
		if (gnl_ifaddr_parse(h, &a) == 0 && a.protocol == w->proto)
			w->dirty = true;
		break;
	case RTM_NEWLINK:
	case RTM_DELLINK:
		w->dirty = true; /* a host veth appeared, went away or down */
		break;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: galactic-agent --state-dir DIR [--backend kernel|bpf|auto] [--fallback]\n"
			"       [--bpffs DIR] [--netns NAME]\n"
			"       [--interval SEC] [--once] [--rtproto N] [--tables MIN-MAX] [--batch N]\n"
			"       [--cni-socket PATH] [--kubeconfig PATH --node NAME --report-namespace NS]\n");
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
		{ "bpffs", required_argument, 0, 'F' },     { "fallback", no_argument, 0, 'f' },
		{ "help", no_argument, 0, 'h' },            { 0, 0, 0, 0 },
	};
	struct gdp_backend_opts bo = { 0 };
	struct rpt_opts ro = { 0 };
	struct agent ag = { 0 };
	const char *backend = "kernel";
	const char *cni_socket = NULL;
	struct gcni_server *cni = NULL;
	const struct gdp_backend_ops *ops;
	struct sigaction sa = { .sa_handler = on_signal };
	double interval = 30, last;
	bool once = false, fallback = false;
	time_t mt;
	char err[512];
	static const unsigned groups[] = { RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
					   RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE, RTNLGRP_NEIGH,
					   RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR };
	struct gnl_sock *mon = NULL;
	struct watch w = { 0 };
	double dirty_at = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "s:b:n:i:op:t:B:c:fh", lo, NULL)) != -1) {
		switch (c) {
		case 's': ag.state_dir = optarg; break;
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
		case 'F': bo.bpffs_dir = optarg; break;
		case 'f': fallback = true; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (!ag.state_dir || interval <= 0) {
		usage();
		return 2;
	}
	if (strcmp(backend, "kernel") && strcmp(backend, "bpf") && strcmp(backend, "auto")) {
		fprintf(stderr, "galactic-agent: unknown backend '%s' (kernel, bpf, auto)\n", backend);
		return 2;
	}
	/* bpf and auto run the bpf preflight: refuse with its reason, or fall
	 * back to the kernel backend when allowed (auto always may). */
	ops = gdp_bpf_choose(backend, fallback, bo.bpffs_dir, err, sizeof(err));
	if (!ops) {
		fprintf(stderr, "galactic-agent: backend %s refused: %s\n", backend, err);
		return 1;
	}
	if (strcmp(backend, ops->name))
		logf_("backend %s unavailable (%s): using %s", backend, err, ops->name);
	backend = ops->name;
	rc = ops->open(&ag.be, &bo, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "galactic-agent: open %s backend: %s\n", backend, err);
		return 1;
	}
	pthread_mutex_init(&ag.mu, NULL);
	gdp_state_init(&ag.cni_local);
	{
		struct gdp_caps caps;

		if (ops->caps(ag.be, &caps) == 0)
			logf_("backend %s: %s", backend, caps.detail);
	}
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	mt = files_mtime(ag.state_dir);
	/* Before the CNI server's first apply, so that apply is reported too. */
	ro.state_dir = ag.state_dir, ro.datapath = backend;
	if ((ro.node || ro.ns || ro.kubeconfig) && rpt_start(&ag.rpt, &ro, err, sizeof(err))) {
		fprintf(stderr, "galactic-agent: %s\n", err);
		ops->close(ag.be);
		return 1;
	}
	/* The CNI server starts before the first reconcile, so that reconcile
	 * already includes the attachments of its record (no gap on restart). */
	if (cni_socket) {
		struct gcni_server_opts co = {
			.socket_path = cni_socket, .state_dir = ag.state_dir, .netns = bo.netns,
			.backend = ag.be, .apply = agent_apply_cb, .apply_ctx = &ag,
			.table_min = bo.table_min,
		};

		if (gcni_server_start(&cni, &co, err, sizeof(err))) {
			fprintf(stderr, "galactic-agent: %s\n", err);
			ops->close(ag.be);
			return 1;
		}
		logf_("CNI server listening on %s", cni_socket);
	}
	rc = reconcile(&ag);
	last = now_ms();
	/* A node that ran the bpf backend before (its pins are there): once the
	 * kernel backend's routes are in, the TC filters may go (not before:
	 * they carry the traffic until then). */
	if (!strcmp(ops->name, "kernel") && rc == 0) {
		const char *pins = bo.bpffs_dir ? bo.bpffs_dir : GBPF_PIN_ROOT_DEFAULT;

		if (access(pins, F_OK) == 0 && gdp_bpf_teardown(bo.netns, pins, err, sizeof(err)))
			logf_("leaving the bpf backend: %s", err);
	}
	/* Kernel events wake the loop early; the periodic pass stays the safety net. */
	w.proto = bo.rtproto ? bo.rtproto : GDP_RTPROT_DEFAULT;
	w.tmin = bo.table_min ? bo.table_min : GDP_TABLE_MIN_DEFAULT;
	w.tmax = bo.table_max ? bo.table_max : GDP_TABLE_MAX_DEFAULT;
	if (!once && gnl_open_monitor(&mon, bo.netns, groups, sizeof(groups) / sizeof(groups[0]), err,
				      sizeof(err)))
		logf_("netlink notifications unavailable (%s): periodic checks only", err);
	while (!once && !got_term) {
		struct pollfd pfd = { .fd = mon ? gnl_fd(mon) : -1, .events = POLLIN };
		time_t m;

		poll(&pfd, 1, 200);
		if (mon && (pfd.revents & POLLIN)) {
			int n = gnl_read_notifications(mon, watch_cb, &w);

			if (n < 0)
				w.dirty = true; /* events were lost: resync */
			if (w.dirty && !dirty_at)
				dirty_at = now_ms();
		}
		m = files_mtime(ag.state_dir);
		/* Debounced: one reconcile for a burst of events (including our own). */
		bool changed = dirty_at && now_ms() - dirty_at >= 100;

		if (changed)
			logf_("kernel change seen: reconciling");
		if (changed || got_hup || m != mt || now_ms() - last >= interval * 1000) {
			if (got_hup)
				logf_("SIGHUP: reconciling");
			got_hup = 0;
			w.dirty = false;
			dirty_at = 0;
			mt = m;
			rc = reconcile(&ag);
			last = now_ms();
		}
	}
	gnl_close(mon);
	logf_("exiting; kernel state left in place");
	gcni_server_stop(cni);
	rpt_stop(ag.rpt);
	ops->close(ag.be);
	gdp_state_free(&ag.cni_local);
	pthread_mutex_destroy(&ag.mu);
	return once && rc ? 1 : 0;
}
