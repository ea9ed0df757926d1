/*
 * Route learning at scale (issue 13 item 4): the API holds the reports of
 * NODES (default 2,000) nodes x ATTS (50) attachments spread over VPCS
 * (1,000) VPCs, and one agent hosting 10 of those VPCs starts its report
 * module (agent/report: publisher + route learner) with the agent's own
 * record as the learner's sink (agent/record.h, record_set_remotes, as
 * galactic-agent wires it). Measured per run, in a fresh process each time
 * (tests/bench/bench.h, bench_proc_run):
 *   - time from rpt_start to converged: the record holds every route of
 *     the other nodes' reports of the 10 VPCs (the exact count, computed
 *     here from the same reports);
 *   - the process's peak RSS (report module + record; no datapath);
 *   - bytes received from the API (kube_client_rx_bytes: decoded response
 *     bodies, and bodies as sent + headers).
 * Two learners in turn, ROUNDS pairs: scoped (the default: the hosted VPCs'
 * reports by label selector, plus the reports without the label) and
 * unscoped (rpt_opts.learn_unscoped: one watch of every report, as before).
 *
 * The reports are the publisher's own (rpt_name, rpt_spec, rpt_status of a
 * synthetic per-node state: two routes each, IPv6 via the VPC's decap SID,
 * IPv4 via End.DX4), created through a few HTTP/2 connections with many
 * streams each (curl multi): POST of labels + spec, then merge patch of
 * /status (Programmed=True at generation 1), field manager
 * galactic-agent/<node>. Setup time is printed and kept as a fact.
 *
 * Target (make bench fails when missed): scoped converged < 2 s (median).
 * Results in build/bench-results/bench_learner.json.
 *   bench_learner [NODES [ATTS]]     BENCH_LEARNER_VPCS, BENCH_LEARNER_ROUNDS
 */
#include "agent/record.h"
#include "agent/report/report.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/log.h"
#include "tests/bench/bench.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RNS "galactic-system"
#define HOSTED 10
#define CONNS 4
#define STREAMS 64 /* in flight over the CONNS connections */
#define TARGET_S 2.0

static const struct kube_resource NSS = { "", "v1", "namespaces", false };

static struct bench *B;
static struct cp CP;
static int NODES = 2000, ATTS = 50, VPCS = 1000;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	char why[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	bench_error(B, "%s", why);
	cp_down(&CP);
	exit(bench_end(B));
}

/* ---- the cluster's shape (the same in the parent and in each learner) ---- */

static void vpc_id(int v, char *buf, size_t n) { snprintf(buf, n, "V%d", v); }
static void node_name(int i, char *buf, size_t n) { snprintf(buf, n, "ln%04d", i); }
/* Attachment j of node i (i >= 1; node 0 is the learner's). */
static int att_vpc(int i, int j) { return ((i - 1) * ATTS + j) % VPCS; }

/* Node i's state: its id (i + 1), one VPC per attachment's VPC, the attachments. */
static void node_state(int i, struct gdp_state *st)
{
	gdp_state_init(st);
	st->node.block[0] = 0xfc;
	st->node.block[1] = 0xbb;
	st->node.block[2] = 0xbb;
	st->node.block[5] = 0x01;
	st->node.node_id = (uint16_t)(i + 1);
	for (int j = 0; j < (i ? ATTS : HOSTED); j++) {
		int v = i ? att_vpc(i, j) : j, g = i * ATTS + j;
		struct gdp_vpc vp = { .arg = (uint16_t)(j + 1), .table = (uint32_t)(16384 + j + 1) };
		struct gdp_attachment a = { .arg = (uint16_t)(j + 1) };
		char ip6[64], ip4[32];

		vpc_id(v, vp.id, sizeof(vp.id));
		if (!gdp_state_find_vpc(st, vp.id))
			gdp_state_add_vpc(st, &vp);
		snprintf(a.vpc, sizeof(a.vpc), "%s", vp.id);
		snprintf(a.id, sizeof(a.id), "A%d", g);
		snprintf(a.container_id, sizeof(a.container_id), "c0ffee%08x", (unsigned)g);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "gc%011x", (unsigned)g);
		snprintf(ip6, sizeof(ip6), "fd00:a::%x:%x", (unsigned)g >> 16, (unsigned)g & 0xffff);
		snprintf(ip4, sizeof(ip4), "10.%u.%u.%u", ((unsigned)g >> 16) & 255, ((unsigned)g >> 8) & 255,
			 (unsigned)g & 255);
		gdp_prefix_parse(ip6, &a.addrs[0]);
		gdp_prefix_parse(ip4, &a.addrs[1]);
		a.n_addrs = 2;
		a.nh4 = gdp_default_nh4(a.arg);
		gdp_state_add_attachment(st, &a);
	}
}

/* Routes the learner (node 0, VPCs 0..HOSTED-1) must end with. */
static size_t expected_routes(void)
{
	size_t n = 0;
	for (int i = 1; i <= NODES; i++)
		for (int j = 0; j < ATTS; j++)
			if (att_vpc(i, j) < HOSTED)
				n += 2;
	return n;
}

static void all_ok(struct gdp_results *res, const struct gdp_state *st)
{
	gdp_results_reset(res);
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (size_t i = 0; i < st->n_vpcs; i++)
		gdp_results_get(res, GDP_OBJ_VPC, st->vpcs[i].id, "")->programmed = true;
	for (size_t i = 0; i < st->n_atts; i++)
		gdp_results_get(res, GDP_OBJ_ATTACHMENT, st->atts[i].vpc, st->atts[i].id)->programmed = true;
}

/* ---- one learner, as a whole process ---- */

struct sink {
	struct record *rec;
	size_t want;
	double t0, done_s;
	size_t last_n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static int sink_fn(void *ctx, const struct gdp_remote *v, size_t n)
{
	struct sink *s = ctx;
	int rc = record_set_remotes(s->rec, v, n);

	pthread_mutex_lock(&s->mu);
	s->last_n = n;
	if (rc >= 0 && n == s->want && s->done_s == 0)
		s->done_s = now_s() - s->t0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static double status_mib(const char *field)
{
	char line[256];
	double v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) && line[strlen(field)] == ':')
			v = strtod(line + strlen(field) + 1, NULL) / 1024.0;
	fclose(f);
	return v;
}

/* --learn scoped|unscoped KUBECONFIG NODES ATTS VPCS: prints "converged_s routes rx_body rx_wire vmhwm". */
static int learn_main(char **argv)
{
	struct sink s = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	bool unscoped = !strcmp(argv[2], "unscoped");
	char dir[] = "/tmp/bench-learner.XXXXXX", err[512], cmd[128];
	struct gdp_state st;
	struct gdp_results res;
	struct rpt_stats rs;
	struct rpt *r = NULL;
	struct timespec dl;

	NODES = atoi(argv[4]);
	ATTS = atoi(argv[5]);
	VPCS = atoi(argv[6]);
	glog_set_level(GLOG_WARN);
	if (!mkdtemp(dir) || record_open(&s.rec, &(struct record_opts){ .dir = dir }, err, sizeof(err))) {
		fprintf(stderr, "record: %s\n", err);
		return 1;
	}
	s.want = expected_routes();
	node_state(0, &st);
	gdp_results_init(&res);
	all_ok(&res, &st);
	s.t0 = now_s();
	if (rpt_start(&r, &(struct rpt_opts){ .kubeconfig = argv[3], .node = "ln0000", .ns = RNS,
					      .datapath = "kernel", .set_remotes = sink_fn, .ctx = &s,
					      .learn_unscoped = unscoped },
		      err, sizeof(err))) {
		fprintf(stderr, "rpt_start: %s\n", err);
		return 1;
	}
	rpt_update(r, &st, NULL, &res);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 300;
	pthread_mutex_lock(&s.mu);
	while (s.done_s == 0 && pthread_cond_timedwait(&s.cv, &s.mu, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s.mu);
	rpt_get_stats(r, &rs);
	printf("%.4f %zu %lu %lu %.2f\n", s.done_s, s.last_n, rs.rx_body, rs.rx_wire, status_mib("VmHWM"));
	fflush(stdout);
	rpt_stop(r);
	record_close(s.rec);
	gdp_results_free(&res);
	gdp_state_free(&st);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return s.done_s > 0 ? 0 : 3;
}

/* ---- setup: NODES x ATTS reports through a few HTTP/2 connections ---- */

struct slot {
	CURL *h;
	struct curl_slist *hdrs;
	int g, stage;     /* report g; 0 create, 1 status */
	int tries;
	char *body, *status, path[512];
	char resp[512];
	size_t rlen;
};

static size_t on_resp(char *d, size_t sz, size_t n, void *ud)
{
	struct slot *s = ud;
	size_t len = sz * n, room = sizeof(s->resp) - 1 - s->rlen;

	if (room) {
		memcpy(s->resp + s->rlen, d, len < room ? len : room);
		s->rlen += len < room ? len : room;
		s->resp[s->rlen] = 0;
	}
	return len;
}

static char auth[400];
static int cur_node = -1;
static struct gdp_state cur_st;

/* The report g as its node's publisher writes it: create body and status patch. */
static int report_bodies(int g, struct slot *s)
{
	int i = g / ATTS + 1, j = g % ATTS;
	char node[32], name[300], why[256], now[32];
	struct gdp_results res;
	struct rpt_cond c;
	struct rpt_reporter rep = { node, RPT_VERSION, "kernel" };
	const struct gdp_attachment *a;
	json_t *spec, *o, *status;

	node_name(i, node, sizeof(node));
	if (cur_node != i) {
		if (cur_node >= 0)
			gdp_state_free(&cur_st);
		node_state(i, &cur_st);
		cur_node = i;
	}
	a = &cur_st.atts[j];
	if (rpt_name(node, a->vpc, a->id, name, sizeof(name), why, sizeof(why)) ||
	    !(spec = rpt_spec(node, &cur_st, a, NULL)))
		return -1;
	o = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:o}", "apiVersion",
		      "network.datumapis.com/v1alpha1", "kind", "NodeAttachment", "metadata", "name", name,
		      "labels", RPT_NODE_LABEL, node, RPT_VPC_LABEL, a->vpc, "spec", spec);
	s->body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	gdp_results_init(&res);
	all_ok(&res, &cur_st);
	rpt_programmed(&res, a, &c);
	gdp_results_free(&res);
	gj_time_now(now, sizeof(now));
	status = rpt_status(&c, 1, NULL, &rep, now);
	o = json_pack("{s:o}", "status", status);
	s->status = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	snprintf(s->path, sizeof(s->path), "%s/apis/network.datumapis.com/v1alpha1/namespaces/" RNS
		 "/nodeattachments/%s/status?fieldManager=galactic-agent%%2F%s", CP.apiserver, name, node);
	return s->body && s->status ? 0 : -1;
}

static void slot_start(CURLM *m, struct slot *s)
{
	char url[512];
	const char *i_node = strstr(s->path, "fieldManager=");

	curl_easy_reset(s->h);
	curl_slist_free_all(s->hdrs);
	s->hdrs = curl_slist_append(NULL, auth);
	s->hdrs = curl_slist_append(s->hdrs, "Accept: application/json");
	s->rlen = 0;
	s->resp[0] = 0;
	if (s->stage == 0) {
		snprintf(url, sizeof(url), "%s/apis/network.datumapis.com/v1alpha1/namespaces/" RNS
			 "/nodeattachments?%s", CP.apiserver, i_node);
		s->hdrs = curl_slist_append(s->hdrs, "Content-Type: application/json");
		curl_easy_setopt(s->h, CURLOPT_URL, url);
		curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
	} else {
		s->hdrs = curl_slist_append(s->hdrs, "Content-Type: application/merge-patch+json");
		curl_easy_setopt(s->h, CURLOPT_URL, s->path);
		curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, "PATCH");
		curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->status);
	}
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(s->h, CURLOPT_CAINFO, CP.ca);
	curl_easy_setopt(s->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(s->h, CURLOPT_PIPEWAIT, 1L); /* a stream on an open connection, not a new one */
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_resp);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	curl_multi_add_handle(m, s->h);
}

static double fill(void)
{
	CURLM *m = curl_multi_init();
	struct slot slots[STREAMS];
	int total = NODES * ATTS, next = 0, done = 0, running = 0, active = 0;
	double t0 = now_s(), last_print = t0;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", CP.token);
	curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)CONNS);
	memset(slots, 0, sizeof(slots));
	for (int k = 0; k < STREAMS && next < total; k++) {
		slots[k].h = curl_easy_init();
		slots[k].g = next++;
		if (report_bodies(slots[k].g, &slots[k]))
			die("report %d: cannot build it", slots[k].g);
		slot_start(m, &slots[k]);
		active++;
	}
	while (active) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct slot *s;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			curl_multi_remove_handle(m, msg->easy_handle);
			if (msg->data.result != CURLE_OK || code == 429 || code >= 500) {
				/* The server catching its breath: the same step again. */
				if (++s->tries > 20)
					die("report %d: %s (HTTP %ld) %s", s->g,
					    curl_easy_strerror(msg->data.result), code, s->resp);
				usleep(20 * 1000);
				slot_start(m, s);
				continue;
			}
			if (s->stage == 0 && code != 201 && code != 409)
				die("create report %d: HTTP %ld %s", s->g, code, s->resp);
			if (s->stage == 1 && code != 200)
				die("status of report %d: HTTP %ld %s", s->g, code, s->resp);
			s->tries = 0;
			if (s->stage == 0) {
				s->stage = 1;
				slot_start(m, s);
				continue;
			}
			done++;
			free(s->body);
			free(s->status);
			s->body = s->status = NULL;
			if (next < total) {
				s->g = next++;
				s->stage = 0;
				if (report_bodies(s->g, s))
					die("report %d: cannot build it", s->g);
				slot_start(m, s);
			} else {
				active--;
			}
		}
		if (now_s() - last_print > 15) {
			last_print = now_s();
			printf("setup: %d of %d reports written (%.0f s)\n", done, total, last_print - t0);
			fflush(stdout);
		}
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (int k = 0; k < STREAMS; k++) {
		if (slots[k].h)
			curl_easy_cleanup(slots[k].h);
		curl_slist_free_all(slots[k].hdrs);
	}
	curl_multi_cleanup(m);
	if (cur_node >= 0)
		gdp_state_free(&cur_st);
	return now_s() - t0;
}

/* ---- the bench ---- */

struct run {
	double conv_s, rss_mib, rx_body_mib, rx_wire_mib, cpu_s;
	size_t routes;
};

static int run_learner(const char *self, const char *mode, struct run *out, char *why, size_t wl)
{
	char o[600], ns[16], as[16], vs[16];
	struct bench_proc p;
	unsigned long body = 0, wire = 0;
	double hwm = 0;
	FILE *f;
	int ok;

	snprintf(o, sizeof(o), "%s/learner.out", CP.dir);
	snprintf(ns, sizeof(ns), "%d", NODES);
	snprintf(as, sizeof(as), "%d", ATTS);
	snprintf(vs, sizeof(vs), "%d", VPCS);
	char *argv[] = { (char *)self, "--learn", (char *)mode, CP.kubeconfig, ns, as, vs, NULL };
	if (bench_proc_run(argv, o, &p) < 0 || p.exit_code) {
		snprintf(why, wl, "%s learner: exit %d (did not converge within 300 s?)", mode, p.exit_code);
		return -1;
	}
	f = fopen(o, "r");
	ok = f && fscanf(f, "%lf %zu %lu %lu %lf", &out->conv_s, &out->routes, &body, &wire, &hwm) == 5;
	if (f)
		fclose(f);
	if (!ok) {
		snprintf(why, wl, "%s learner: no result line", mode);
		return -1;
	}
	out->rss_mib = p.maxrss_mib;
	out->cpu_s = p.cpu_s;
	out->rx_body_mib = (double)body / (1024.0 * 1024.0);
	out->rx_wire_mib = (double)wire / (1024.0 * 1024.0);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = bench_proc_main(argc, argv), rounds = 3;
	char self[512], err[256], why[300], what[400];
	struct kube_config *cfg;
	struct kube_client *kc;
	struct kube_error e;
	double setup_s;
	size_t want;

	if (rc >= 0)
		return rc;
	if (argc == 7 && !strcmp(argv[1], "--learn"))
		return learn_main(argv);
	if (argc > 1)
		NODES = atoi(argv[1]);
	if (argc > 2)
		ATTS = atoi(argv[2]);
	if (getenv("BENCH_LEARNER_VPCS"))
		VPCS = atoi(getenv("BENCH_LEARNER_VPCS"));
	if (getenv("BENCH_LEARNER_ROUNDS"))
		rounds = atoi(getenv("BENCH_LEARNER_ROUNDS"));
	B = bench_begin("bench_learner");
	if (NODES < 1 || ATTS < 1 || ATTS > 4000 || VPCS < HOSTED || VPCS < ATTS || rounds < 1 || rounds > 20)
		die("bad shape: %d nodes x %d attachments over %d VPCs, %d rounds (VPCs >= max(%d, "
		    "attachments per node))", NODES, ATTS, VPCS, rounds, HOSTED);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl < 0)
		die("readlink /proc/self/exe: %s", strerror(errno));
	self[sl] = 0;
	glog_set_level(GLOG_WARN);
	curl_global_init(CURL_GLOBAL_ALL);
	if (cp_up(&CP) < 0)
		die("the test control plane did not start (tests/controlplane/cp.sh)");
	if (crds_install(&CP, NULL) < 0)
		die("crds_install failed");
	cfg = kube_config_new(CP.apiserver, CP.token, CP.ca);
	if (!(kc = kube_client_new(cfg, err, sizeof(err))))
		die("client: %s", err);
	{
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				      "metadata", "name", RNS);
		if (kube_create(kc, &NSS, NULL, o, NULL, &e) && e.code != KUBE_ERR_ALREADY_EXISTS)
			die("create namespace: %s", e.message);
		json_decref(o);
	}
	want = expected_routes();
	setup_s = fill();
	printf("setup: %d reports (%d nodes x %d attachments over %d VPCs) created with status in %.1f s "
	       "(%d connections, %d streams); the learner's %d VPCs: %zu routes\n", NODES * ATTS, NODES,
	       ATTS, VPCS, setup_s, CONNS, STREAMS, HOSTED, want);
	fflush(stdout);

	double sc[20], uc[20], sr[20], ur[20], sb[20], ub[20], sw[20], uw[20], scpu[20], ucpu[20];
	/* Round 0 warms up (the API server's watch cache, the page cache); then
	 * the two learners back to back, alternating which goes first. */
	for (int i = 0; i <= rounds; i++) {
		struct run s, u;
		bool sfirst = i % 2 == 0;

		if ((sfirst && run_learner(self, "scoped", &s, why, sizeof(why))) ||
		    run_learner(self, "unscoped", &u, why, sizeof(why)) ||
		    (!sfirst && run_learner(self, "scoped", &s, why, sizeof(why))))
			die("%s", why);
		printf("%s %d: scoped %.3f s, %.1f MiB peak, %.2f MiB received (%.2f on the wire) | "
		       "unscoped %.3f s, %.1f MiB peak, %.2f MiB received (%.2f on the wire)\n",
		       i ? "round" : "warm-up", i, s.conv_s, s.rss_mib, s.rx_body_mib, s.rx_wire_mib,
		       u.conv_s, u.rss_mib, u.rx_body_mib, u.rx_wire_mib);
		fflush(stdout);
		bench_check(B, s.routes == want && u.routes == want,
			    "both learners recorded exactly the %zu routes of the hosted VPCs (scoped %zu, "
			    "unscoped %zu)", want, s.routes, u.routes);
		if (!i)
			continue;
		sc[i - 1] = s.conv_s, uc[i - 1] = u.conv_s;
		sr[i - 1] = s.rss_mib, ur[i - 1] = u.rss_mib;
		sb[i - 1] = s.rx_body_mib, ub[i - 1] = u.rx_body_mib;
		sw[i - 1] = s.rx_wire_mib, uw[i - 1] = u.rx_wire_mib;
		scpu[i - 1] = s.cpu_s, ucpu[i - 1] = u.cpu_s;
	}
	snprintf(what, sizeof(what), "rpt_start -> the record holds all %zu routes of %d hosted VPCs; "
		 "%d nodes x %d attachments over %d VPCs in the API; learner scoped by label selector",
		 want, HOSTED, NODES, ATTS, VPCS);
	bench_limit(B, "learner converged (scoped)", "s", &(struct bench_side){ what, sc, (size_t)rounds },
		    TARGET_S);
	bench_fact(B, "learner converged (unscoped: every report)", "s", "same, one watch of every report",
		   uc, (size_t)rounds);
	bench_fact(B, "learner process peak RSS (scoped)", "MiB", "report module + record, ru_maxrss",
		   sr, (size_t)rounds);
	bench_fact(B, "learner process peak RSS (unscoped)", "MiB", "report module + record, ru_maxrss",
		   ur, (size_t)rounds);
	bench_fact(B, "bytes received until converged (scoped)", "MiB",
		   "response bodies after gzip decoding (kube_client_rx_bytes)", sb, (size_t)rounds);
	bench_fact(B, "bytes received until converged (unscoped)", "MiB",
		   "response bodies after gzip decoding (kube_client_rx_bytes)", ub, (size_t)rounds);
	bench_fact(B, "bytes on the wire until converged (scoped)", "MiB",
		   "bodies as sent + headers, finished transfers", sw, (size_t)rounds);
	bench_fact(B, "bytes on the wire until converged (unscoped)", "MiB",
		   "bodies as sent + headers, finished transfers", uw, (size_t)rounds);
	bench_fact(B, "learner process CPU (scoped)", "s", "user+system, whole process", scpu,
		   (size_t)rounds);
	bench_fact(B, "learner process CPU (unscoped)", "s", "user+system, whole process", ucpu,
		   (size_t)rounds);
	{
		double q[3][20];
		for (int i = 0; i < rounds; i++) {
			q[0][i] = sc[i] / uc[i];
			q[1][i] = sb[i] / ub[i];
			q[2][i] = sr[i] / ur[i];
		}
		bench_fact(B, "scoped / unscoped: time", "x", "per pair", q[0], (size_t)rounds);
		bench_fact(B, "scoped / unscoped: bytes received", "x", "per pair", q[1], (size_t)rounds);
		bench_fact(B, "scoped / unscoped: peak RSS", "x", "per pair", q[2], (size_t)rounds);
	}
	bench_fact(B, "setup: reports created with status", "s", "POST + merge patch of /status, curl "
		   "multi over HTTP/2", &setup_s, 1);
	kube_client_free(kc);
	kube_config_free(cfg);
	cp_down(&CP);
	return bench_end(B);
}
