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
 * IPv4 via End.DX4), written through a few HTTP/2 connections with many
 * streams each (curl multi): POST of labels + spec, then merge patch of
 * /status (Programmed=True at generation 1), field manager
 * galactic-agent/<node>. Two writes per report make 200,000 API writes,
 * which took ~20-50 reports/s on the shared 2 cores (over an hour), so by
 * default only nodes 1 and 2 go through the API (node 2 into a second
 * namespace) and the others are put straight into etcd in the form the API
 * server stores: node 1's report of the same attachment index as read back,
 * with this report's name, uid, labels, spec, status, manager and podSubnets
 * set keys; the API server's own watch of etcd fills its cache. Node 2 is
 * also put into etcd, and both copies read back through the API must be
 * equal but for uid and times, or the bench fails. BENCH_LEARNER_SETUP=api
 * writes every report through the API. Setup times are printed and kept.
 *
 * Target (make bench fails when missed): scoped converged < 2 s (median).
 * Results in build/bench-results/bench_learner.json.
 *   bench_learner [NODES [ATTS]]     BENCH_LEARNER_VPCS (1000), BENCH_LEARNER_ROUNDS (3),
 *                                    BENCH_LEARNER_UNSCOPED_TIMEOUT (240 s),
 *                                    BENCH_LEARNER_SETUP=etcd|api,
 *                                    BENCH_LEARNER_UNSCOPED=0 (scoped rounds only),
 *                                    BENCH_LEARNER_HOLD=1 (after setup, wait while
 *                                    CPDIR/hold exists: learners run by hand)
 * Also measured: the API server's CPU while each learner process ran.
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
#include <stddef.h>
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

/* --learn scoped|unscoped KUBECONFIG NODES ATTS VPCS TIMEOUT_S: prints "converged_s routes rx_body
 * rx_wire vmhwm" (converged_s 0: not within TIMEOUT_S; then exits 3 at once). */
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
	dl.tv_sec += atoi(argv[7]);
	pthread_mutex_lock(&s.mu);
	while (s.done_s == 0 && pthread_cond_timedwait(&s.cv, &s.mu, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s.mu);
	rpt_get_stats(r, &rs);
	printf("%.4f %zu %lu %lu %.2f\n", s.done_s, s.last_n, rs.rx_body, rs.rx_wire, status_mib("VmHWM"));
	fflush(stdout);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (s.done_s == 0) {
		/* Measured; a list of 100,000 reports still under way would hold rpt_stop. */
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
		_exit(3);
	}
	rpt_stop(r);
	record_close(s.rec);
	gdp_results_free(&res);
	gdp_state_free(&st);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return 0;
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
static const char *fill_ns = RNS;

/* The report g as its node's publisher writes it (and as JSON objects, for the etcd path). */
static int report_objects(int g, json_t **obj, json_t **status_out, char *name, size_t nn, char *node,
			  size_t nodelen)
{
	int i = g / ATTS + 1, j = g % ATTS;
	char why[256], now[32];
	struct gdp_results res;
	struct rpt_cond c;
	struct rpt_reporter rep = { node, RPT_VERSION, "kernel" };
	const struct gdp_attachment *a;
	json_t *spec;

	node_name(i, node, nodelen);
	if (cur_node != i) {
		if (cur_node >= 0)
			gdp_state_free(&cur_st);
		node_state(i, &cur_st);
		cur_node = i;
	}
	a = &cur_st.atts[j];
	if (rpt_name(node, a->vpc, a->id, name, nn, why, sizeof(why)) ||
	    !(spec = rpt_spec(node, &cur_st, a, NULL)))
		return -1;
	*obj = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:o}", "apiVersion",
			 "network.datumapis.com/v1alpha1", "kind", "NodeAttachment", "metadata", "name", name,
			 "labels", RPT_NODE_LABEL, node, RPT_VPC_LABEL, a->vpc, "spec", spec);
	gdp_results_init(&res);
	all_ok(&res, &cur_st);
	rpt_programmed(&res, a, &c);
	gdp_results_free(&res);
	gj_time_now(now, sizeof(now));
	*status_out = rpt_status(&c, 1, NULL, &rep, now);
	return *obj && *status_out ? 0 : -1;
}

static int report_bodies(int g, struct slot *s)
{
	char node[32], name[300];
	json_t *o, *st;

	if (report_objects(g, &o, &st, name, sizeof(name), node, sizeof(node)))
		return -1;
	s->body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	o = json_pack("{s:o}", "status", st);
	s->status = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	snprintf(s->path, sizeof(s->path), "%s/apis/network.datumapis.com/v1alpha1/namespaces/%s"
		 "/nodeattachments/%s/status?fieldManager=galactic-agent%%2F%s", CP.apiserver, fill_ns,
		 name, node);
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
		snprintf(url, sizeof(url), "%s/apis/network.datumapis.com/v1alpha1/namespaces/%s"
			 "/nodeattachments?%s", CP.apiserver, fill_ns, i_node);
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

/* Reports from..to-1 through the API into ns: POST, then the status patch. */
static double fill(int from, int total, const char *ns)
{
	CURLM *m = curl_multi_init();
	struct slot slots[STREAMS];
	int next = from, done = 0, running = 0, active = 0;
	double t0 = now_s(), last_print = t0;

	fill_ns = ns;

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
			printf("setup: %d of %d reports written (%.0f s)\n", done, total - from, last_print - t0);
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
	return now_s() - t0;
}

/* ---- setup, fast: the rest straight into etcd, in the API's stored form ---- */

static char *b64(const char *in, size_t n)
{
	static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = malloc(4 * ((n + 2) / 3) + 1), *p = o;
	size_t i;

	if (!o)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
		*p++ = T[v >> 18], *p++ = T[(v >> 12) & 63], *p++ = T[(v >> 6) & 63], *p++ = T[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned char)in[i] << 16 | (i + 1 < n ? (unsigned char)in[i + 1] << 8 : 0);
		*p++ = T[v >> 18], *p++ = T[(v >> 12) & 63];
		*p++ = i + 1 < n ? T[(v >> 6) & 63] : '=';
		*p++ = '=';
	}
	*p = 0;
	return o;
}

static size_t discard(char *d, size_t sz, size_t n, void *ud)
{
	(void)d;
	(void)ud;
	return sz * n;
}

/* One etcd transaction of puts (at most 128: etcd's --max-txn-ops default). */
static void etcd_txn(CURL *h, json_t *ops)
{
	json_t *body = json_pack("{s:O}", "success", ops);
	char *b = json_dumps(body, JSON_COMPACT), url[300];
	long code = 0;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s/v3/kv/txn", CP.etcd);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, b);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK || code != 200)
		die("etcd txn: %s, HTTP %ld", curl_easy_strerror(rc), code);
	free(b);
	json_decref(body);
	json_array_clear(ops);
}

static void uuid4(char *buf, size_t n)
{
	unsigned char r[16];
	for (int i = 0; i < 16; i++)
		r[i] = (unsigned char)(random() & 0xff);
	r[6] = (r[6] & 0x0f) | 0x40;
	r[8] = (r[8] & 0x3f) | 0x80;
	snprintf(buf, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
		 r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/*
 * Report obj/status in the form the API server stores it, from tmpl (a
 * report with the same attachment index written through the API, as read
 * back): its metadata and managedFields with this report's name, uid,
 * labels, manager and podSubnets set keys (the only value-dependent part of
 * fieldsV1), this report's spec and status.
 */
static json_t *stored_form(const json_t *tmpl, const json_t *obj, json_t *status, const char *node,
			   const char *now)
{
	json_t *o = json_deep_copy(tmpl), *md = json_object_get(o, "metadata"), *e, *spec;
	char uid[40], mgr[64];
	size_t i;

	spec = json_object_get(obj, "spec");
	uuid4(uid, sizeof(uid));
	snprintf(mgr, sizeof(mgr), RPT_FIELD_MANAGER_PREFIX "%s", node);
	json_object_del(md, "resourceVersion");
	json_object_set(md, "name", json_object_get(json_object_get(obj, "metadata"), "name"));
	json_object_set_new(md, "uid", json_string(uid));
	json_object_set_new(md, "creationTimestamp", json_string(now));
	json_object_set(md, "labels", json_object_get(json_object_get(obj, "metadata"), "labels"));
	json_object_set(o, "spec", spec);
	json_object_set(o, "status", status);
	json_array_foreach(json_object_get(md, "managedFields"), i, e) {
		json_t *ps = json_object_get(json_object_get(json_object_get(e, "fieldsV1"), "f:spec"),
					     "f:podSubnets"), *v;
		const char *k;
		void *tmp;
		size_t x;

		json_object_set_new(e, "manager", json_string(mgr));
		json_object_set_new(e, "time", json_string(now));
		if (!ps)
			continue;
		json_object_foreach_safe(ps, tmp, k, v)
			if (!strncmp(k, "v:", 2))
				json_object_del(ps, k);
		json_array_foreach(json_object_get(spec, "podSubnets"), x, v) {
			char *q = json_dumps(v, JSON_ENCODE_ANY), key[128];
			snprintf(key, sizeof(key), "v:%s", q);
			free(q);
			json_object_set_new(ps, key, json_object());
		}
	}
	return o;
}

static json_t *api_get(struct kube_client *kc, const char *ns, const char *name)
{
	static const struct kube_resource NATT = { "network.datumapis.com", "v1alpha1", "nodeattachments", true };
	struct kube_error e;
	json_t *o = NULL;

	if (kube_get(kc, &NATT, ns, name, &o, &e))
		die("get %s/%s: %s", ns, name, e.message);
	return o;
}

/* What differs between two writes of the same report by nature: identity and times. */
static void normalize(json_t *o)
{
	json_t *md = json_object_get(o, "metadata"), *e;
	size_t i;

	json_object_del(md, "uid");
	json_object_del(md, "resourceVersion");
	json_object_del(md, "creationTimestamp");
	json_object_del(md, "namespace");
	json_array_foreach(json_object_get(md, "managedFields"), i, e)
		json_object_del(e, "time");
	json_array_foreach(gj_get(o, "status.conditions"), i, e)
		json_object_del(e, "lastTransitionTime");
}

#define VERIFY_NS "galactic-verify"

/*
 * Node 1's reports through the API (the templates) and node 2's twice:
 * through the API into VERIFY_NS and into etcd with the rest, where the API
 * server's own watch of etcd brings them into its cache; node 2's two
 * copies, read back through the API, must be equal but for uid and times.
 */
static double fill_etcd(struct kube_client *kc, double *api_s, size_t *stored_bytes)
{
	int total = NODES * ATTS;
	json_t **tmpl = calloc((size_t)ATTS, sizeof(*tmpl)), *ops = json_array();
	CURL *h = curl_easy_init();
	struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
	char now[32], key[400];
	double t0 = now_s(), te;

	*stored_bytes = 0;
	*api_s = fill(0, ATTS, RNS);
	if (NODES > 1)
		*api_s += fill(ATTS, 2 * ATTS, VERIFY_NS);
	for (int j = 0; j < ATTS; j++) {
		char node[32], name[300];
		json_t *o, *st;
		if (report_objects(j, &o, &st, name, sizeof(name), node, sizeof(node)))
			die("report %d: cannot build it", j);
		tmpl[j] = api_get(kc, RNS, name);
		json_decref(o);
		json_decref(st);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	gj_time_now(now, sizeof(now));
	te = now_s();
	for (int g = ATTS; g < total; g++) {
		char node[32], name[300], *v, *kb, *vb;
		json_t *o, *st, *so;

		if (report_objects(g, &o, &st, name, sizeof(name), node, sizeof(node)))
			die("report %d: cannot build it", g);
		so = stored_form(tmpl[g % ATTS], o, st, node, now);
		v = json_dumps(so, JSON_COMPACT);
		snprintf(key, sizeof(key), "/registry/network.datumapis.com/nodeattachments/" RNS "/%s", name);
		kb = b64(key, strlen(key));
		vb = b64(v, strlen(v));
		*stored_bytes += strlen(v);
		json_array_append_new(ops, json_pack("{s:{s:s, s:s}}", "requestPut", "key", kb, "value", vb));
		free(kb);
		free(vb);
		free(v);
		json_decref(so);
		json_decref(o);
		json_decref(st);
		if (json_array_size(ops) == 128)
			etcd_txn(h, ops);
		if ((g + 1) % 20000 == 0) {
			printf("setup: %d of %d reports put into etcd (%.0f s)\n", g + 1, total, now_s() - te);
			fflush(stdout);
		}
	}
	if (json_array_size(ops))
		etcd_txn(h, ops);
	json_decref(ops);
	curl_easy_cleanup(h);
	curl_slist_free_all(hd);
	for (int j = 0; j < ATTS; j++)
		json_decref(tmpl[j]);
	free(tmpl);
	/* The API server has them all (its cache follows etcd). */
	{
		static const struct kube_resource NATT = { "network.datumapis.com", "v1alpha1", "nodeattachments", true };
		long have = -1;
		for (double tw = now_s(); now_s() - tw < 300;) {
			struct kube_error e;
			json_t *l = NULL;
			if (!kube_list_page(kc, &NATT, RNS, &(struct kube_list_opts){ .limit = 1 }, &l, &e)) {
				have = (long)json_array_size(json_object_get(l, "items")) +
				       (long)gj_int(l, "metadata.remainingItemCount", 0);
				json_decref(l);
				if (have == total)
					break;
			}
			usleep(200 * 1000);
		}
		if (have != total)
			die("the API server lists %ld of %d reports", have, total);
	}
	/* And its watch cache, which the learners list from, has caught up:
	 * it takes etcd's events in order, so the last node's reports last
	 * (100,000 puts in a few minutes are a burst no cluster makes; without
	 * this wait the first learner measured the cache catching up). */
	{
		static const struct kube_resource NATT = { "network.datumapis.com", "v1alpha1", "nodeattachments", true };
		char sel[96], node[32];
		size_t have = 0;
		double tw = now_s();

		node_name(NODES, node, sizeof(node));
		snprintf(sel, sizeof(sel), RPT_NODE_LABEL "=%s", node);
		while (now_s() - tw < 900) {
			struct kube_error e;
			json_t *l = NULL;
			if (!kube_list_page(kc, &NATT, RNS, &(struct kube_list_opts){ .label_selector = sel,
										  .resource_version = "0" },
					    &l, &e)) {
				have = json_array_size(json_object_get(l, "items"));
				json_decref(l);
				if (have == (size_t)ATTS)
					break;
			}
			usleep(500 * 1000);
		}
		if (have != (size_t)ATTS)
			die("the API server's watch cache holds %zu of node %s's %d reports after 900 s", have,
			    node, ATTS);
		printf("setup: the API server's watch cache caught up %.1f s after the last put\n",
		       now_s() - tw);
	}
	/* Node 2 both ways, read back through the API. */
	for (int g = ATTS; NODES > 1 && g < 2 * ATTS; g++) {
		char node[32], name[300];
		json_t *o, *st, *a, *b;
		if (report_objects(g, &o, &st, name, sizeof(name), node, sizeof(node)))
			die("report %d: cannot build it", g);
		a = api_get(kc, RNS, name);
		b = api_get(kc, VERIFY_NS, name);
		normalize(a);
		normalize(b);
		if (!json_equal(a, b)) {
			char *da = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS), *db = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
			fprintf(stderr, "etcd-written: %s\nAPI-written:  %s\n", da, db);
			free(da);
			free(db);
			die("report %s put into etcd differs from the same report written through the API", name);
		}
		json_decref(a);
		json_decref(b);
		json_decref(o);
		json_decref(st);
	}
	return now_s() - t0;
}

/* ---- the bench ---- */

struct run {
	double conv_s, rss_mib, rx_body_mib, rx_wire_mib, cpu_s, api_cpu_s, settle_s;
	bool settled;
	size_t routes;
	bool converged;
};

/* The figures without a target of one learner's rounds (side: "scoped" or
 * "unscoped: every report"), one fact each. */
static void side_facts(const char *side, const struct run *r, int n)
{
	static const struct { const char *name, *unit, *what; size_t off; } f[] = {
		{ "learner process peak RSS", "MiB", "report module + record, ru_maxrss", offsetof(struct run, rss_mib) },
		{ "bytes received until converged", "MiB", "response bodies after gzip decoding (kube_client_rx_bytes)",
		  offsetof(struct run, rx_body_mib) },
		{ "bytes on the wire until converged", "MiB", "bodies as sent + headers, finished transfers",
		  offsetof(struct run, rx_wire_mib) },
		{ "learner process CPU", "s", "user+system, whole process", offsetof(struct run, cpu_s) },
		{ "API server CPU while the learner ran", "s",
		  "user+system of kube-apiserver from the learner's start to its exit", offsetof(struct run, api_cpu_s) },
	};
	char name[128];
	double v[20];

	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		for (int i = 0; i < n; i++)
			memcpy(&v[i], (const char *)&r[i] + f[k].off, sizeof(double));
		snprintf(name, sizeof(name), "%s (%s)", f[k].name, side);
		bench_fact(B, name, f[k].unit, f[k].what, v, (size_t)n);
	}
}

/* The API server's CPU so far (user + system, s), from its /proc stat; -1 when unknown. */
static double apiserver_cpu_s(void)
{
	char path[400], buf[1024], *p;
	unsigned long ut, st;
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/apiserver.pid", CP.dir);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (pid <= 0 || !(f = fopen(path, "r")))
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15 */
	if (!p || !(p = strrchr(buf, ')')) || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
						 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/*
 * Until the API server has been quiet (under SETTLE_CPU of a core over a
 * second) or SETTLE_MAX_S passed: each learner starts against an API server
 * not busy with other work (the previous learner's watches, the unscoped
 * one's 100,000-report list, the cache consistency check the API server
 * runs every 5-7.5 min, which lists every report from etcd). Returns the
 * seconds waited; *quiet false when it never settled.
 */
#define SETTLE_CPU 0.08
#define SETTLE_MAX_S 420.0
static double apiserver_settle(bool *quiet)
{
	double t0 = now_s(), prev = apiserver_cpu_s();

	*quiet = false;
	if (prev < 0)
		return 0;
	while (now_s() - t0 < SETTLE_MAX_S) {
		double c;

		usleep(1000 * 1000);
		c = apiserver_cpu_s();
		if (c < 0)
			break;
		if (c - prev < SETTLE_CPU) {
			*quiet = true;
			break;
		}
		prev = c;
	}
	return now_s() - t0;
}

static int run_learner(const char *self, const char *mode, int timeout_s, struct run *out, char *why,
		       size_t wl)
{
	char o[600], ns[16], as[16], vs[16], ts[16];
	struct bench_proc p;
	unsigned long body = 0, wire = 0;
	double hwm = 0;
	FILE *f;
	int ok;

	snprintf(o, sizeof(o), "%s/learner.out", CP.dir);
	snprintf(ns, sizeof(ns), "%d", NODES);
	snprintf(as, sizeof(as), "%d", ATTS);
	snprintf(vs, sizeof(vs), "%d", VPCS);
	snprintf(ts, sizeof(ts), "%d", timeout_s);
	char *argv[] = { (char *)self, "--learn", (char *)mode, CP.kubeconfig, ns, as, vs, ts, NULL };
	bool quiet;
	double waited = apiserver_settle(&quiet);
	double api0 = apiserver_cpu_s();
	int prc = bench_proc_run(argv, o, &p);
	double api1 = apiserver_cpu_s();

	out->api_cpu_s = api0 >= 0 && api1 >= 0 ? api1 - api0 : -1;
	out->settle_s = waited;
	out->settled = quiet;
	if (prc < 0 || (p.exit_code && p.exit_code != 3)) {
		snprintf(why, wl, "%s learner: exit %d", mode, p.exit_code);
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
	out->converged = out->conv_s > 0;
	if (!out->converged)
		out->conv_s = timeout_s; /* a lower bound */
	out->rss_mib = p.maxrss_mib;
	out->cpu_s = p.cpu_s;
	out->rx_body_mib = (double)body / (1024.0 * 1024.0);
	out->rx_wire_mib = (double)wire / (1024.0 * 1024.0);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = bench_proc_main(argc, argv), rounds = 3, utimeout = 240;
	char self[512], err[256], why[300], what[400];
	struct kube_config *cfg;
	struct kube_client *kc;
	struct kube_error e;
	double setup_s, api_s;
	size_t want, stored = 0;
	int api_n;
	bool api_setup = getenv("BENCH_LEARNER_SETUP") && !strcmp(getenv("BENCH_LEARNER_SETUP"), "api");

	if (rc >= 0)
		return rc;
	if (argc == 8 && !strcmp(argv[1], "--learn"))
		return learn_main(argv);
	if (argc > 1)
		NODES = atoi(argv[1]);
	if (argc > 2)
		ATTS = atoi(argv[2]);
	if (getenv("BENCH_LEARNER_VPCS"))
		VPCS = atoi(getenv("BENCH_LEARNER_VPCS"));
	if (getenv("BENCH_LEARNER_ROUNDS"))
		rounds = atoi(getenv("BENCH_LEARNER_ROUNDS"));
	if (getenv("BENCH_LEARNER_UNSCOPED_TIMEOUT"))
		utimeout = atoi(getenv("BENCH_LEARNER_UNSCOPED_TIMEOUT"));
	B = bench_begin("bench_learner");
	if (NODES < 1 || ATTS < 1 || ATTS > 4000 || VPCS < HOSTED || VPCS < ATTS || rounds < 1 || rounds > 20)
		die("bad shape: %d nodes x %d attachments over %d VPCs, %d rounds (VPCs >= max(%d, "
		    "attachments per node))", NODES, ATTS, VPCS, rounds, HOSTED);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl < 0)
		die("readlink /proc/self/exe: %s", strerror(errno));
	self[sl] = 0;
	glog_set_level(GLOG_WARN);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	curl_global_init(CURL_GLOBAL_ALL);
	if (cp_up(&CP) < 0)
		die("the test control plane did not start (tests/controlplane/cp.sh)");
	if (crds_install(&CP, NULL) < 0)
		die("crds_install failed");
	cfg = kube_config_new(CP.apiserver, CP.token, CP.ca);
	if (!(kc = kube_client_new(cfg, err, sizeof(err))))
		die("client: %s", err);
	for (int i = 0; i < 2; i++) {
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				      "metadata", "name", i ? VERIFY_NS : RNS);
		if (kube_create(kc, &NSS, NULL, o, NULL, &e) && e.code != KUBE_ERR_ALREADY_EXISTS)
			die("create namespace: %s", e.message);
		json_decref(o);
	}
	want = expected_routes();
	if (api_setup) {
		setup_s = fill(0, NODES * ATTS, RNS);
		api_s = setup_s;
		api_n = NODES * ATTS;
	} else {
		setup_s = fill_etcd(kc, &api_s, &stored);
		api_n = NODES > 1 ? 2 * ATTS : ATTS;
	}
	printf("setup: %d reports (%d nodes x %d attachments over %d VPCs) in %.1f s; through the API "
	       "(%d connections, %d streams): %d in %.1f s (%.0f reports/s)%s; the learner's %d VPCs: "
	       "%zu routes\n", NODES * ATTS, NODES, ATTS, VPCS, setup_s, CONNS, STREAMS, api_n, api_s,
	       api_n / api_s, api_setup ? "" : ", the rest put into etcd in the API's stored form "
	       "(node 2's copies compared equal)", HOSTED, want);
	if (stored)
		printf("setup: %.0f bytes per report as stored\n", (double)stored / (NODES * ATTS - ATTS));
	fflush(stdout);

	if (getenv("BENCH_LEARNER_HOLD")) {
		/* Keep the filled control plane for learners run by hand. */
		char hold[300];
		FILE *hf;

		snprintf(hold, sizeof(hold), "%s/hold", CP.dir);
		if (!(hf = fopen(hold, "w")))
			die("create %s: %s", hold, strerror(errno));
		fclose(hf);
		printf("hold: %s --learn scoped %s %d %d %d 120; rm %s to go on\n", self, CP.kubeconfig,
		       NODES, ATTS, VPCS, hold);
		fflush(stdout);
		while (access(hold, F_OK) == 0)
			sleep(1);
	}

	struct run sr[20], ur[20];
	double sc[20], uc[20];
	bool with_unscoped = !getenv("BENCH_LEARNER_UNSCOPED") || strcmp(getenv("BENCH_LEARNER_UNSCOPED"), "0");
	/* Round 0 warms the scoped side up (the API server's watch cache, the
	 * page cache; the unscoped side's first list is minutes at 2,000
	 * nodes); then the two learners back to back, alternating which goes
	 * first. The unscoped one gets BENCH_LEARNER_UNSCOPED_TIMEOUT s (240):
	 * one that has not converged by then counts as that (a lower bound). */
	int uncv = 0;
	for (int i = 0; i <= rounds; i++) {
		struct run s, u = { 0 };
		bool sfirst = i % 2 == 0;

		if ((sfirst && run_learner(self, "scoped", 120, &s, why, sizeof(why))) ||
		    (i && with_unscoped && run_learner(self, "unscoped", utimeout, &u, why, sizeof(why))) ||
		    (!sfirst && run_learner(self, "scoped", 120, &s, why, sizeof(why))))
			die("%s", why);
		char la[64] = "?";
		FILE *lf = fopen("/proc/loadavg", "r");

		if (lf && fgets(la, sizeof(la), lf))
			la[strcspn(la, "\n")] = 0;
		if (lf)
			fclose(lf);
		printf("%s %d (load %s): scoped %.3f s%s, %.1f MiB peak, %.2f MiB received (%.2f on the wire), "
		       "%.2f s CPU, API server %.2f s CPU (%s %.0f s before) | unscoped %.3f s%s, %.1f MiB peak, "
		       "%.2f MiB received (%.2f on the wire), %.2f s CPU, API server %.2f s CPU\n",
		       i ? "round" : "warm-up (scoped only)", i, la, s.conv_s, s.converged ? "" : " (NOT converged)",
		       s.rss_mib, s.rx_body_mib, s.rx_wire_mib, s.cpu_s, s.api_cpu_s,
		       s.settled ? "API server quiet" : "API server NOT quiet", s.settle_s, u.conv_s,
		       !i || !with_unscoped || u.converged ? "" : " (NOT converged)", u.rss_mib, u.rx_body_mib,
		       u.rx_wire_mib, u.cpu_s, u.api_cpu_s);
		fflush(stdout);
		bench_check(B, s.converged && s.routes == want,
			    "the scoped learner recorded exactly the %zu routes of the hosted VPCs (%zu)", want,
			    s.routes);
		if (!i)
			continue;
		if (with_unscoped && u.converged)
			bench_check(B, u.routes == want,
				    "the unscoped learner recorded exactly the %zu routes (%zu)", want, u.routes);
		else if (with_unscoped)
			uncv++;
		sr[i - 1] = s, ur[i - 1] = u;
		sc[i - 1] = s.conv_s, uc[i - 1] = u.conv_s;
	}
	snprintf(what, sizeof(what), "rpt_start -> the record holds all %zu routes of %d hosted VPCs; "
		 "%d nodes x %d attachments over %d VPCs in the API; learner scoped by label selector",
		 want, HOSTED, NODES, ATTS, VPCS);
	bench_limit(B, "learner converged (scoped)", "s", &(struct bench_side){ what, sc, (size_t)rounds },
		    TARGET_S);
	side_facts("scoped", sr, rounds);
	if (with_unscoped) {
		double q[3][20];

		snprintf(why, sizeof(why), "same, one watch of every report%s", uncv ? "; NOT converged "
			 "within the timeout in some rounds: those count as the timeout (a lower bound)" : "");
		bench_fact(B, "learner converged (unscoped: every report)", "s", why, uc, (size_t)rounds);
		side_facts("unscoped", ur, rounds);
		for (int i = 0; i < rounds; i++) {
			q[0][i] = sc[i] / uc[i];
			q[1][i] = sr[i].rx_body_mib / ur[i].rx_body_mib;
			q[2][i] = sr[i].rss_mib / ur[i].rss_mib;
		}
		bench_fact(B, "scoped / unscoped: time", "x", "per pair", q[0], (size_t)rounds);
		bench_fact(B, "scoped / unscoped: bytes received", "x", "per pair", q[1], (size_t)rounds);
		bench_fact(B, "scoped / unscoped: peak RSS", "x", "per pair", q[2], (size_t)rounds);
	}
	bench_fact(B, "setup: all reports in place", "s", api_setup ? "through the API" :
		   "templates and node 2 through the API, the rest into etcd", &setup_s, 1);
	{
		double rate = api_n / api_s;
		bench_fact(B, "setup: reports written through the API per second", "reports/s",
			   "POST + merge patch of /status, curl multi over HTTP/2", &rate, 1);
	}
	kube_client_free(kc);
	kube_config_free(cfg);
	cp_down(&CP);
	return bench_end(B);
}
