/*
 * The same burst of CNI ADDs against today's upstream write pattern and
 * ours (issue 13 items 1-3), in one invocation on the same machine.
 *
 * For each N (argv, or BENCH_BURST_N="100 500 ..."; default 100) and each
 * pattern (today's first, then ours), from scratch: a real control plane
 * (tests/lib/cp.h) with our CRDs, the upstream stand-ins (tests/crds,
 * atomic lists as upstream today) and the fixtures today's CNI needs
 * (tests/crds/burst: NAD, VPC, BGPRouter/VRFInstance/Advertisement), three
 * netns nodes with a real galactic-agent each (tests/lib/topo.h), and N
 * attachments prepared the way a cell has them before the pods start:
 * claim + interface (NSO's status) + VPCAttachment (the VPC operator's ids,
 * Ready) + NAD + Pod object, node i%3+1, two VPCs. Then the writers of the
 * pattern start and the state settles (every claim Prepared=True, written
 * by the VPC operator in today's pattern and by the translator in ours),
 * and the burst runs: N ADDs, BENCH_BURST_CONCURRENCY (default 12) at a
 * time, each the two plugins of the conflist the VPC operator renders
 * (attach, then galactic-bgp, with the first's result as prevResult).
 *
 *   today: agents without the API (upstream distributes routes by BGP);
 *          the plugins are today's CNI (tests/bench/burst_standin.c
 *          cni-veth/cni-bgp: its API round trips around our kernel work);
 *          writers: NSO, the VPC operator + the data-plane status writer
 *          (one process, as datum-cloud/cloud runs them), the router;
 *   ours:  agents reporting to the API (--kubeconfig); our plugins (no API
 *          call); writers: galactic-translator and NSO writing only its own
 *          condition (burst_standin.c nso-contract).
 *
 * Measured per pattern: per claim, CNI ADD start -> claim Ready=True (our
 * own watch): p50, p90, p99, max; the API server's apiserver_request_total
 * (GET /metrics before and after: all requests, writes and 409s per
 * resource); writes per object per transition (VPCAttachment: Programmed;
 * NetworkInterface: Programmed; claim: Programmed and Ready = 2); requests
 * and 409s per writer (the stand-ins count their own, the translator from
 * its /metrics, the agents from the API server: only they write reports);
 * CPU seconds during the burst and peak RSS (VmHWM) of every agent, the
 * translator and each stand-in process.
 *
 * Targets (make bench fails when one is missed), at the largest N run:
 * claim Ready p99 ours <= 0.5 x today's; 0 409s for every writer of ours;
 * <= 1 write per object per transition for each kind in ours. Result:
 * build/bench-results/bench_burst.json. BENCH_BURST_TIMEOUT: seconds for
 * every claim to become Ready after the burst started (120 + 0.6 N).
 * BENCH_BURST_TRANSLATOR_WORKERS: the translator's --workers (unset: its default).
 * Diagnosis only: BENCH_BURST_STAGES=1 prints when each step of the chains
 * was seen (report, attachment, interface Programmed; three more watches);
 * BENCH_BURST_ONLY=today|ours|base runs one pattern (no ratio: the bench fails).
 * A/B of two builds of ours: BENCH_BURST_BASE=DIR (galactic-agent,
 * galactic-translator, galactic-veth, galactic-bgp of another build) runs our
 * pattern once more with those ("base"), after today's and before ours
 * (BENCH_BURST_BASE_LAST=1: after ours), and prints both ratios. Every
 * pattern prints the API server's requests during the burst by verb,
 * resource and subresource, and per chain.
 * Needs root (network namespaces).
 */
#include "common/informer.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/log.h"
#include "tests/bench/bench.h"
#include "tests/lib/cnirt.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/curlbuf.h"
#include "tests/lib/daemon.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TNS "burst"
#define RNS "galactic-system"
#define NODES 3
#define MAXN 5000
#define STANDIN "build/rel/bench-tools/burst-standin"

static const struct kube_resource NIC = { "networking.datumapis.com", "v1alpha", "networkinterfaceclaims", true };
static const struct kube_resource NI = { "networking.datumapis.com", "v1alpha", "networkinterfaces", true };
static const struct kube_resource VA = { "cloud.datumapis.com", "v1alpha1", "vpcattachments", true };
static const struct kube_resource VPC = { "cloud.datumapis.com", "v1alpha1", "vpcs", true };
static const struct kube_resource NAD = { "k8s.cni.cncf.io", "v1", "network-attachment-definitions", true };
static const struct kube_resource RTR = { "network.datumapis.com", "v1alpha1", "bgprouters", true };
static const struct kube_resource VRFR = { "network.datumapis.com", "v1alpha1", "bgpvrfinstances", true };
static const struct kube_resource POD = { "", "v1", "pods", true };
static const struct kube_resource SA = { "", "v1", "serviceaccounts", true };
static const struct kube_resource NODE = { "", "v1", "nodes", false };
static const struct kube_resource NSS = { "", "v1", "namespaces", false };

/* Two VPCs (base62 ids in lower case, so the advertisement names built
 * from them are valid object names); the VPC objects are named as the
 * network the claims name. */
static const char *const vpc_id[2] = { "7hq2x9lm", "bq81zrt4" };
static const char *const vpc_name[2] = { "net-a", "net-b" };

static struct bench *B;
static struct cp CP;
static bool cp_is_up;
static struct topo T;

/* BASE: our pattern once more with another build's binaries (BENCH_BURST_BASE=DIR
 * holding galactic-agent, galactic-translator, galactic-veth, galactic-bgp): an
 * A/B of two builds of ours in one invocation, each beside the same today's run. */
enum pattern { TODAY, OURS, BASE, NPAT };
static const char *const pname[NPAT] = { "today", "ours", "base" };
/* The directory of the binaries of the pattern being run (ours, base). */
static char BIN[400] = "build/rel/bin";

/* ---- small helpers ---- */

static double now_s(void) { return gt_now(); }

static void att_id(int i, char *buf, size_t n)
{
	static const char d[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	int k = i / 2 + 1; /* per VPC */

	snprintf(buf, n, "%c%c%c", d[(k / 1296) % 36], d[(k / 36) % 36], d[k % 36]);
}
static void pod_name(int i, char *buf, size_t n) { snprintf(buf, n, "p%04d", i); }
static void addr6(int i, char *buf, size_t n) { snprintf(buf, n, "fd00:a::%x", 0x1000 + i); }
static void addr4(int i, char *buf, size_t n) { snprintf(buf, n, "10.1.%d.%d", i / 250, i % 250 + 1); }

static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(const double *sorted, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(p * (double)n) - 1;
	return sorted[i < n ? i : n - 1];
}

static double loadavg1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* ---- the API server's request counters ---- */

#define MAXM 2048
struct mrow {
	char res[64], sub[16], verb[16], code[8];
	double v;
};
struct msnap {
	struct mrow r[MAXM];
	int n;
};

static void label(const char *line, const char *key, char *out, size_t n)
{
	char k[40];
	const char *p, *e;

	snprintf(k, sizeof(k), "%s=\"", key);
	out[0] = 0;
	if ((p = strstr(line, k)) && (e = strchr(p + strlen(k), '"')))
		snprintf(out, n, "%.*s", (int)(e - p - strlen(k)), p + strlen(k));
}

static int metrics_snap(struct msnap *s)
{
	char url[256], auth[200];
	struct gt_buf b = { 0 };
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	long code = 0;

	s->n = 0;
	if (!c)
		return -1;
	snprintf(url, sizeof(url), "%s/metrics", CP.apiserver);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", CP.token);
	h = curl_slist_append(h, auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_CAINFO, CP.ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gt_buf_sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (code != 200 || !b.p) {
		free(b.p);
		return -1;
	}
	for (char *line = strtok(b.p, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "apiserver_request_total{", 24) || s->n >= MAXM)
			continue;
		struct mrow *r = &s->r[s->n++];
		label(line, "resource", r->res, sizeof(r->res));
		label(line, "subresource", r->sub, sizeof(r->sub));
		label(line, "verb", r->verb, sizeof(r->verb));
		label(line, "code", r->code, sizeof(r->code));
		r->v = atof(strrchr(line, ' ') + 1);
	}
	free(b.p);
	return 0;
}

static bool is_write(const char *verb)
{
	return !strcmp(verb, "POST") || !strcmp(verb, "PUT") || !strcmp(verb, "PATCH") || !strcmp(verb, "APPLY") ||
	       !strcmp(verb, "DELETE");
}

/* Sum of after - before over rows matching (res NULL: any; writes only; code NULL: any). */
static double mdelta(const struct msnap *a, const struct msnap *b, const char *res, bool writes, const char *code)
{
	double s = 0;

	for (int i = 0; i < b->n; i++) {
		const struct mrow *r = &b->r[i];
		double before = 0;

		if ((res && strcmp(r->res, res)) || (writes && !is_write(r->verb)) || (code && strcmp(r->code, code)))
			continue;
		for (int j = 0; j < a->n; j++)
			if (!strcmp(a->r[j].res, r->res) && !strcmp(a->r[j].sub, r->sub) && !strcmp(a->r[j].verb, r->verb) &&
			    !strcmp(a->r[j].code, r->code))
				before = a->r[j].v;
		s += r->v - before;
	}
	return s;
}

/* Every request counted (writes: only writes, the Lease renewals aside: a
 * leader renews every 2 s, so with them counted the writes never stood still
 * and settle() waited its whole maximum after each of our bursts). */
static double mtotal(const struct msnap *s, bool writes)
{
	double t = 0;

	for (int i = 0; i < s->n; i++)
		if (!writes || (is_write(s->r[i].verb) && strcmp(s->r[i].res, "leases")))
			t += s->r[i].v;
	return t;
}

/* Every request the API server counted during the burst, by verb, resource
 * and subresource (codes summed; the non-2xx ones named), and per chain (/ n):
 * where a pattern's requests go. The API server's metrics name no client; the
 * resource and verb do here (docs/performance.md, bench_burst). */
static void print_requests(const char *pat, int n, const struct msnap *a, const struct msnap *b)
{
	for (int i = 0; i < b->n; i++) {
		const struct mrow *r = &b->r[i];
		double tot = 0;
		char bad[160] = "";
		bool first = true;

		for (int k = 0; k < i; k++) /* printed with an earlier row of the same verb/resource */
			if (!strcmp(b->r[k].res, r->res) && !strcmp(b->r[k].sub, r->sub) && !strcmp(b->r[k].verb, r->verb))
				first = false;
		if (!first)
			continue;
		for (int k = i; k < b->n; k++) {
			const struct mrow *q = &b->r[k];
			double before = 0, d;
			if (strcmp(q->res, r->res) || strcmp(q->sub, r->sub) || strcmp(q->verb, r->verb))
				continue;
			for (int j = 0; j < a->n; j++)
				if (!strcmp(a->r[j].res, q->res) && !strcmp(a->r[j].sub, q->sub) &&
				    !strcmp(a->r[j].verb, q->verb) && !strcmp(a->r[j].code, q->code))
					before = a->r[j].v;
			d = q->v - before;
			tot += d;
			if (d > 0 && q->code[0] != '2' && strlen(bad) < sizeof(bad) - 24)
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " %s:%.0f", q->code, d);
		}
		if (tot > 0)
			printf("%s N=%d: requests %s %s%s%s: %.0f (%.2f per chain)%s%s\n", pat, n, r->verb, r->res,
			       r->sub[0] ? "/" : "", r->sub, tot, tot / n, bad[0] ? "; not 2xx:" : "", bad);
	}
}

/* ---- setup: the cell before the pods ---- */

static struct kube_config *CFG;
static struct kube_client *KC;
static int N;

static json_t *conds_seeded(json_t *o)
{
	json_t *c = json_deep_copy(json_object_get(json_object_get(o, "status"), "conditions"));

	return json_is_array(c) ? c : json_array();
}

static void setc(json_t *conds, const char *type, const char *status, const char *reason, const char *msg)
{
	size_t i;
	json_t *c, *hit = NULL;

	json_array_foreach(conds, i, c)
		if (!strcmp(gj_str(c, "type") ?: "", type))
			hit = c;
	if (!hit) {
		hit = json_object();
		json_object_set_new(hit, "type", json_string(type));
		json_array_append_new(conds, hit);
	}
	json_object_set_new(hit, "status", json_string(status));
	json_object_set_new(hit, "reason", json_string(reason));
	json_object_set_new(hit, "message", json_string(msg));
	json_object_set_new(hit, "lastTransitionTime", json_string("2026-01-01T00:00:00Z"));
}

static int put_status(const struct kube_resource *r, const char *ns, json_t *o, struct kube_error *e)
{
	return kube_update(KC, r, ns, gj_str(o, "metadata.name"), "status", o, NULL, e);
}

/* The conflist the VPC operator renders for attachment i (UPSTREAM.md §6). */
static json_t *conflist_of(int i)
{
	char a6[64], a4[40], att[8], name[16];
	struct cnirt_att a = { 0 };

	pod_name(i, name, sizeof(name));
	att_id(i, att, sizeof(att));
	addr6(i, a6, sizeof(a6));
	strcat(a6, "/128");
	addr4(i, a4, sizeof(a4));
	strcat(a4, "/32");
	a.net = name, a.type = "galactic-veth", a.vpc = vpc_id[i % 2], a.att = att, a.mtu = 1400;
	a.addrs[0].address = a6, a.addrs[0].gateway = "fe80::1";
	a.addrs[1].address = a4, a.addrs[1].gateway = "169.254.1.1";
	a.n_addrs = 2;
	return cnirt_operator_conflist(&a, "1.0.0");
}

static int make_set(int i, struct kube_error *e)
{
	char name[16], att[8], a6[64], a4[40], node[8], msg[200];
	json_t *o, *out = NULL, *conds;
	const char *net = vpc_name[i % 2];
	int rc = -1;

	pod_name(i, name, sizeof(name));
	att_id(i, att, sizeof(att));
	addr6(i, a6, sizeof(a6));
	strcat(a6, "/128");
	addr4(i, a4, sizeof(a4));
	strcat(a4, "/32");
	snprintf(node, sizeof(node), "n%d", i % NODES + 1);
	/* compute's claim */
	o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:s, s:s, s:[s, s]}}", "apiVersion", "networking.datumapis.com/v1alpha",
		      "kind", "NetworkInterfaceClaim", "metadata", "name", name, "spec", "network", "name", net,
		      "attachmentMode", "Netns", "interfaceName", "eth0", "ipFamilies", "IPv6", "IPv4");
	rc = kube_create(KC, &NIC, TNS, o, &out, e);
	json_decref(o);
	if (rc)
		return -1;
	json_t *claim = out;
	/* NSO's interface and its status */
	o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:{s:s}, s:s, s:s, s:i, s:[{s:s, s:s, s:b}, {s:s, s:s}]}}",
		      "apiVersion", "networking.datumapis.com/v1alpha", "kind", "NetworkInterface", "metadata", "name", name,
		      "spec", "network", "name", net, "claimRef", "name", name, "interfaceName", "eth0", "attachmentMode",
		      "Netns", "mtu", 1400, "addresses", "family", "IPv6", "address", a6, "primary", 1, "family", "IPv4",
		      "address", a4);
	out = NULL;
	rc = kube_create(KC, &NI, TNS, o, &out, e);
	json_decref(o);
	if (rc) {
		json_decref(claim);
		return -1;
	}
	json_t *ni = out;
	char ni_uid[64];
	snprintf(ni_uid, sizeof(ni_uid), "%s", gj_str(ni, "metadata.uid") ?: "");
	conds = conds_seeded(ni);
	setc(conds, "Allocated", "True", "Allocated", "Every requested address is held");
	json_object_set_new(ni, "status", json_pack("{s:s, s:{s:s}, s:o}", "phase", "Bound", "networkContextRef", "name", net,
						    "conditions", conds));
	rc = put_status(&NI, TNS, ni, e);
	json_decref(ni);
	if (rc) {
		json_decref(claim);
		return -1;
	}
	/* NSO's claim status (Prepared and Programmed still as seeded) */
	conds = conds_seeded(claim);
	snprintf(msg, sizeof(msg), "Bound to network interface \"%s\"", name);
	setc(conds, "Bound", "True", "Bound", msg);
	setc(conds, "Allocated", "True", "Allocated", "Every requested address is held");
	setc(conds, "Ready", "Unknown", "NotPrepared", "Waiting for Prepared");
	json_object_set_new(claim, "status",
			    json_pack("{s:{s:s}, s:[{s:s, s:s, s:b}, {s:s, s:s}], s:o}", "networkInterfaceRef", "name", name,
				      "addresses", "family", "IPv6", "address", a6, "primary", 1, "family", "IPv4", "address",
				      a4, "conditions", conds));
	rc = put_status(&NIC, TNS, claim, e);
	json_decref(claim);
	if (rc)
		return -1;
	/* the VPC operator's attachment (controller-owned by the interface), its ids and Ready */
	o = json_pack("{s:s, s:s, s:{s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:{s:s}, s:{s:s}, s:{s:s, s:s, s:[s, s]}}}",
		      "apiVersion", "cloud.datumapis.com/v1alpha1", "kind", "VPCAttachment", "metadata", "name", name,
		      "ownerReferences", "apiVersion", "networking.datumapis.com/v1alpha", "kind", "NetworkInterface", "name",
		      name, "uid", ni_uid, "controller", 1, "blockOwnerDeletion", 1, "spec", "vpc", "name", net,
		      "interfaceRef", "name", name, "interface", "name", "eth0", "mode", "Netns", "addresses", a6, a4);
	out = NULL;
	rc = kube_create(KC, &VA, TNS, o, &out, e);
	json_decref(o);
	if (rc)
		return -1;
	json_t *va = out;
	char va_uid[64];
	snprintf(va_uid, sizeof(va_uid), "%s", gj_str(va, "metadata.uid") ?: "");
	snprintf(msg, sizeof(msg), "NetworkAttachmentDefinition %s is ready for use", name);
	json_object_set_new(va, "status",
			    json_pack("{s:s, s:s, s:s, s:I, s:[{s:s, s:s, s:s, s:s, s:s}]}", "vpc", vpc_id[i % 2],
				      "vpcAttachment", att, "networkAttachmentDefinition", name, "observedGeneration",
				      gj_int(va, "metadata.generation", 1), "conditions", "type", "Ready", "status", "True",
				      "reason", "AttachmentDefinitionReady", "message", msg, "lastTransitionTime",
				      "2026-01-01T00:00:00Z"));
	rc = put_status(&VA, TNS, va, e);
	json_decref(va);
	if (rc)
		return -1;
	/* its NAD (the allocation record of the attachment id) */
	json_t *cl = conflist_of(i);
	char *cfg = json_dumps(cl, JSON_COMPACT);
	json_decref(cl);
	o = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:s}}", "apiVersion",
		      "k8s.cni.cncf.io/v1", "kind", "NetworkAttachmentDefinition", "metadata", "name", name, "labels",
		      "cloud.datumapis.com/vpc", vpc_id[i % 2], "cloud.datumapis.com/vpc-attachment", att,
		      "ownerReferences", "apiVersion", "cloud.datumapis.com/v1alpha1", "kind", "VPCAttachment", "name", name,
		      "uid", va_uid, "controller", 1, "blockOwnerDeletion", 1, "spec", "config", cfg);
	free(cfg);
	rc = kube_create(KC, &NAD, TNS, o, NULL, e);
	json_decref(o);
	if (rc)
		return -1;
	/* the Pod object (today's CNI reads it; nothing runs it) */
	o = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:b, s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Pod",
		      "metadata", "name", name, "labels", "networking.datumapis.com/inject-interfaces", "true", "spec",
		      "nodeName", node, "automountServiceAccountToken", 0, "containers", "name", "c", "image", "pause");
	rc = kube_create(KC, &POD, TNS, o, NULL, e);
	json_decref(o);
	return rc ? -1 : 0;
}

struct filler {
	int from, to;
	char err[600];
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct kube_error e;

	for (int i = f->from; i < f->to; i++)
		if (make_set(i, &e)) {
			snprintf(f->err, sizeof(f->err), "set %d: %s", i, e.message);
			break;
		}
	return NULL;
}

/* ---- the claims' readiness, from our own watch ---- */

static double *t_add, *t_add_end, *t_ready, *t_prog, t_burst;
/* BENCH_BURST_STAGES=1: when each step of a claim's chain was first seen by
 * watches of the bench's own (diagnosis; off by default: three more watches
 * the API server serves): the node's report created, its Programmed=True,
 * the attachment's and the interface's Programmed=True. */
enum { ST_REP, ST_REP_PROG, ST_VA_PROG, ST_NI_PROG, ST_N };
static double *t_st[ST_N];
static atomic_int n_ready, n_prepared;
static atomic_bool burst_on;
static char *prepared_seen;

static const char *cond_status(const json_t *o, const char *type)
{
	size_t i;
	json_t *c;

	json_array_foreach(gj_get(o, "status.conditions"), i, c)
		if (!strcmp(gj_str(c, "type") ?: "", type))
			return gj_str(c, "status") ?: "";
	return "";
}

static void seen(json_t *o)
{
	const char *n = gj_str(o, "metadata.name");
	int i;

	if (!n || sscanf(n, "p%d", &i) != 1 || i < 0 || i >= N)
		return;
	if (!prepared_seen[i] && !strcmp(cond_status(o, "Prepared"), "True")) {
		prepared_seen[i] = 1;
		atomic_fetch_add(&n_prepared, 1);
	}
	if (atomic_load(&burst_on) && t_prog[i] == 0 && !strcmp(cond_status(o, "Programmed"), "True"))
		t_prog[i] = now_s();
	if (atomic_load(&burst_on) && t_ready[i] == 0 && !strcmp(cond_status(o, "Ready"), "True")) {
		t_ready[i] = now_s();
		atomic_fetch_add(&n_ready, 1);
	}
}
static void on_add(json_t *o, void *ud) { (void)ud; seen(o); }

static void stamp(int st, int i)
{
	if (t_st[st] && i >= 0 && i < N && t_st[st][i] == 0 && atomic_load(&burst_on))
		t_st[st][i] = now_s();
}
/* ud: ST_VA_PROG or ST_NI_PROG (objects named as the pod), or ST_REP (reports: spec.pod.name). */
static void stage_seen(json_t *o, void *ud)
{
	int st = (int)(intptr_t)ud, i = -1;
	const char *n = st == ST_REP ? gj_str(o, "spec.pod.name") : gj_str(o, "metadata.name");

	if (!n || sscanf(n, "p%d", &i) != 1)
		return;
	if (st == ST_REP) {
		stamp(ST_REP, i);
		if (!strcmp(cond_status(o, "Programmed"), "True"))
			stamp(ST_REP_PROG, i);
	} else if (!strcmp(cond_status(o, "Programmed"), "True")) {
		stamp(st, i);
	}
}
static void stage_upd(json_t *old, json_t *o, void *ud) { (void)old; stage_seen(o, ud); }
static void on_update(json_t *old, json_t *o, void *ud) { (void)ud; (void)old; seen(o); }

/* ---- processes ---- */

struct proc {
	char name[48];
	pid_t pid;
	double cpu0, cpu1, hwm_mib;
};

static pid_t spawn_standin(const char *mode, const char *ns, const char *counts, const char *rns, const char *log)
{
	char *argv[] = { STANDIN, (char *)mode, CP.kubeconfig, (char *)ns, (char *)counts, (char *)rns, NULL };

	return gt_spawn(log, argv);
}

static void stop_pid(pid_t *p)
{
	if (*p > 0) {
		kill(*p, SIGTERM);
		for (int i = 0; i < 100; i++) {
			if (waitpid(*p, NULL, WNOHANG) == *p) {
				*p = -1;
				return;
			}
			usleep(100 * 1000);
		}
		kill(*p, SIGKILL);
		waitpid(*p, NULL, 0);
		*p = -1;
	}
}

/* ---- one CNI ADD: the two plugins of the conflist ---- */

struct addctx {
	enum pattern pat;
	char work[400];
	atomic_int next, failed;
	char first_err[700];
	pthread_mutex_t mu;
};

/* Runs bin (argv0, mode) with env and stdin in; stdout into out (malloc'd). Exit status. */
static int run(const char *bin, const char *argv0, const char *mode, char *const env[], const char *in, char **out)
{
	int ip[2], op[2], st;
	pid_t p;
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);

	*out = NULL;
	if (!buf || pipe2(ip, O_CLOEXEC) || pipe2(op, O_CLOEXEC)) {
		free(buf);
		return 127;
	}
	if ((p = fork()) == 0) {
		dup2(ip[0], 0);
		dup2(op[1], 1);
		if (mode)
			execle(bin, argv0, mode, (char *)NULL, env);
		else
			execle(bin, argv0, (char *)NULL, env);
		_exit(127);
	}
	close(ip[0]);
	close(op[1]);
	size_t l = strlen(in);
	if (write(ip[1], in, l) != (ssize_t)l)
		fprintf(stderr, "bench_burst: short write to %s\n", argv0);
	close(ip[1]);
	for (ssize_t r; (r = read(op[0], buf + n, cap - n - 1)) > 0;) {
		n += (size_t)r;
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				break;
			buf = nb;
		}
	}
	buf[n] = 0;
	close(op[0]);
	waitpid(p, &st, 0);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static json_t *plugin_conf(json_t *list, size_t k, json_t *prev)
{
	json_t *p = json_deep_copy(json_array_get(json_object_get(list, "plugins"), k));

	json_object_set(p, "cniVersion", json_object_get(list, "cniVersion"));
	json_object_set(p, "name", json_object_get(list, "name"));
	if (prev)
		json_object_set(p, "prevResult", prev);
	return p;
}

static int one_add(struct addctx *a, int i, char *why, size_t wn)
{
	char name[16], cid[72], e_cmd[64], e_cid[100], e_netns[200], e_args[300], e_sock[400], e_kc[400], e_node[32],
		e_plugin[600], e_counts[600], nsp[200];
	int node = i % NODES + 1, rc;
	json_t *list = conflist_of(i), *c1, *c2, *res = NULL;
	char *in, *out = NULL;

	pod_name(i, name, sizeof(name));
	snprintf(cid, sizeof(cid), "%016x%016x%016x%016x", 0xb0u, (unsigned)i, 0xc0ffeeu, (unsigned)i * 7919u);
	snprintf(e_cmd, sizeof(e_cmd), "CNI_COMMAND=ADD");
	snprintf(e_cid, sizeof(e_cid), "CNI_CONTAINERID=%s", cid);
	snprintf(e_netns, sizeof(e_netns), "CNI_NETNS=%s", cnirt_ns_path(&T, name, nsp, sizeof(nsp)));
	snprintf(e_args, sizeof(e_args), "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=" TNS ";K8S_POD_NAME=%s;"
		 "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-%s", name, cid, name);
	snprintf(e_sock, sizeof(e_sock), "GALACTIC_AGENT_SOCKET=%s/n%d/cni.sock", T.dir, node);
	snprintf(e_kc, sizeof(e_kc), "BURST_KUBECONFIG=%s", CP.kubeconfig);
	snprintf(e_node, sizeof(e_node), "BURST_NODE=n%d", node);
	snprintf(e_plugin, sizeof(e_plugin), "BURST_PLUGIN=%s/build/rel/bin/galactic-cni", cnirt_top());
	snprintf(e_counts, sizeof(e_counts), "BURST_COUNTS=%s/counts.cni", a->work);
	char e_path[440], veth[440], bgp[440];
	snprintf(e_path, sizeof(e_path), "CNI_PATH=%s", BIN);
	snprintf(veth, sizeof(veth), "%s/galactic-veth", BIN);
	snprintf(bgp, sizeof(bgp), "%s/galactic-bgp", BIN);
	char *env[] = { e_cmd, e_cid, e_netns, "CNI_IFNAME=eth0", e_path, e_args, e_sock, e_kc, e_node,
			e_plugin, e_counts, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

	c1 = plugin_conf(list, 0, NULL);
	in = json_dumps(c1, JSON_COMPACT);
	json_decref(c1);
	if (a->pat == TODAY)
		rc = run(STANDIN, "galactic-veth", "cni-veth", env, in, &out);
	else
		rc = run(veth, "galactic-veth", NULL, env, in, &out);
	free(in);
	if (rc || !(res = json_loads(out ?: "", 0, NULL))) {
		snprintf(why, wn, "%s ADD %s: plugin 1 exit %d: %.400s", pname[a->pat], name, rc, out ?: "");
		free(out);
		json_decref(list);
		return -1;
	}
	free(out);
	out = NULL;
	c2 = plugin_conf(list, 1, res);
	in = json_dumps(c2, JSON_COMPACT);
	json_decref(c2);
	json_decref(res);
	res = NULL;
	if (a->pat == TODAY)
		rc = run(STANDIN, "galactic-bgp", "cni-bgp", env, in, &out);
	else
		rc = run(bgp, "galactic-bgp", NULL, env, in, &out);
	free(in);
	json_decref(list);
	if (rc || !(res = json_loads(out ?: "", 0, NULL)) || json_object_get(res, "code")) {
		snprintf(why, wn, "%s ADD %s: plugin 2 exit %d: %.400s", pname[a->pat], name, rc, out ?: "");
		json_decref(res);
		free(out);
		return -1;
	}
	json_decref(res);
	free(out);
	return 0;
}

static void *adder(void *arg)
{
	struct addctx *a = arg;
	char why[700];

	for (int i; (i = atomic_fetch_add(&a->next, 1)) < N;) {
		t_add[i] = now_s();
		if (one_add(a, i, why, sizeof(why))) {
			pthread_mutex_lock(&a->mu);
			if (!atomic_fetch_add(&a->failed, 1))
				snprintf(a->first_err, sizeof(a->first_err), "%s", why);
			pthread_mutex_unlock(&a->mu);
		}
		t_add_end[i] = now_s();
	}
	return NULL;
}

/* ---- per-writer counts ---- */

#define MAXW 32
struct wrow {
	char writer[32], res[48];
	double req, ok, conflict, other;
};
struct wcounts {
	struct wrow r[MAXW];
	int n;
};

static void counts_read(const char *path, struct wcounts *w)
{
	FILE *f = fopen(path, "r");
	struct wrow x;

	if (!f)
		return;
	while (fscanf(f, "%31s %47s %lf %lf %lf %lf", x.writer, x.res, &x.req, &x.ok, &x.conflict, &x.other) == 6) {
		int i;
		for (i = 0; i < w->n; i++)
			if (!strcmp(w->r[i].writer, x.writer) && !strcmp(w->r[i].res, x.res))
				break;
		if (i == w->n) {
			if (w->n == MAXW)
				continue;
			w->r[w->n++] = (struct wrow){ .req = 0 };
			snprintf(w->r[i].writer, sizeof(w->r[i].writer), "%s", x.writer);
			snprintf(w->r[i].res, sizeof(w->r[i].res), "%s", x.res);
		}
		w->r[i].req += x.req, w->r[i].ok += x.ok, w->r[i].conflict += x.conflict, w->r[i].other += x.other;
	}
	fclose(f);
}

/* ---- one pattern at one N ---- */

struct result {
	bool ok;
	double p50, p90, p99, max, span, add_p50, add_p99;
	double fb_p50, fb_p99; /* from the burst's start (every pod asked for at once) */
	double ep_p50, ep_p99; /* ADD returned -> claim Programmed=True */
	double pr_p50, pr_p99; /* claim Programmed=True -> Ready=True */
	double req_total, writes_total, c409_total;
	double writes_va, writes_ni, writes_nic; /* per object per transition */
	struct wcounts w;                         /* per writer: requests and 409s */
	struct proc procs[10];
	int nprocs;
	double load0, load1, setup_s;
};

static void add_writer(struct result *r, const char *writer, const char *res, double req, double conflict)
{
	if (r->w.n < MAXW) {
		struct wrow *x = &r->w.r[r->w.n++];
		*x = (struct wrow){ .req = req, .conflict = conflict };
		snprintf(x->writer, sizeof(x->writer), "%s", writer);
		snprintf(x->res, sizeof(x->res), "%s", res);
	}
}

static double writer_conflicts(const struct result *r, const char *writer)
{
	double s = 0;

	for (int i = 0; i < r->w.n; i++)
		if (!strcmp(r->w.r[i].writer, writer))
			s += r->w.r[i].conflict;
	return s;
}

static int wait_file(const char *path, double timeout_s)
{
	for (double end = now_s() + timeout_s; now_s() < end; usleep(100 * 1000))
		if (!access(path, F_OK))
			return 0;
	return -1;
}

/* Until the API server's write counter stands still for quiet_s (at most max_s). */
static void settle(double quiet_s, double max_s)
{
	struct msnap *s = malloc(sizeof(*s));
	double last = -1, since = now_s(), end = now_s() + max_s;

	if (!s)
		return;
	while (now_s() < end) {
		double w = metrics_snap(s) ? -1 : mtotal(s, true);
		if (w != last) {
			last = w;
			since = now_s();
		} else if (now_s() - since >= quiet_s) {
			break;
		}
		usleep(500 * 1000);
	}
	free(s);
}

/* p50 / p99 of to - from over the claims that have both (BENCH_BURST_STAGES). */
static void stage_gap(enum pattern pat, int n, const char *what, const double *from, const double *to)
{
	double *d = calloc((size_t)n, sizeof(double));
	size_t m = 0;

	if (!d)
		return;
	for (int i = 0; i < n; i++)
		if (from[i] > 0 && to[i] > 0)
			d[m++] = to[i] - from[i];
	qsort(d, m, sizeof(double), cmp_d);
	if (m)
		printf("%s N=%d: stage %s: p50 %.2f s, p90 %.2f s, p99 %.2f s, max %.2f s (%zu claims)\n", pname[pat], n,
		       what, pct(d, m, 0.5), pct(d, m, 0.9), pct(d, m, 0.99), d[m - 1], m);
	free(d);
}

static void print_stages(enum pattern pat, int n)
{
	double *rp = t_st[ST_REP_PROG], *va = t_st[ST_VA_PROG], *ni = t_st[ST_NI_PROG];
	double *last = calloc((size_t)n, sizeof(double));

	stage_gap(pat, n, "ADD returned -> report seen", t_add_end, t_st[ST_REP]);
	stage_gap(pat, n, "report seen -> report Programmed", t_st[ST_REP], rp);
	stage_gap(pat, n, "ADD returned -> report Programmed", t_add_end, rp);
	stage_gap(pat, n, "report Programmed -> attachment Programmed", rp, va);
	stage_gap(pat, n, "ADD returned -> attachment Programmed", t_add_end, va);
	stage_gap(pat, n, "attachment -> interface Programmed", va, ni);
	stage_gap(pat, n, "attachment -> claim Programmed", va, t_prog);
	stage_gap(pat, n, "claim Programmed -> Ready", t_prog, t_ready);
	/* when each step was done, from the burst's start: how the whole burst moved through it */
	if (last) {
		for (int i = 0; i < n; i++)
			last[i] = t_burst;
		stage_gap(pat, n, "burst start -> ADD returned", last, t_add_end);
		stage_gap(pat, n, "burst start -> report Programmed", last, rp);
		stage_gap(pat, n, "burst start -> attachment Programmed", last, va);
		stage_gap(pat, n, "burst start -> claim Programmed", last, t_prog);
		stage_gap(pat, n, "burst start -> claim Ready", last, t_ready);
	}
	free(last);
}

static int run_pattern(enum pattern pat, int n, struct result *r)
{
	char err[300], work[400] = "", log[600], counts[600], extra[1200], cmd[1600];
	struct kube_error e;
	struct informer *inf = NULL, *sinf[3] = { NULL, NULL, NULL };
	bool stages = getenv("BENCH_BURST_STAGES") && atoi(getenv("BENCH_BURST_STAGES"));
	pid_t tr = -1, sp[3] = { -1, -1, -1 };
	int tport = 0, nsp = 0, rc = -1;
	struct msnap *m0 = calloc(1, sizeof(*m0)), *m1 = calloc(1, sizeof(*m1));
	double t0 = now_s(), timeout_s;
	struct addctx *a = calloc(1, sizeof(*a));

	memset(r, 0, sizeof(*r));
	N = n;
	snprintf(BIN, sizeof(BIN), "%s", pat == BASE ? getenv("BENCH_BURST_BASE") : "build/rel/bin");
	t_add = calloc((size_t)n, sizeof(double));
	t_add_end = calloc((size_t)n, sizeof(double));
	t_ready = calloc((size_t)n, sizeof(double));
	t_prog = calloc((size_t)n, sizeof(double));
	for (int k = 0; stages && k < ST_N; k++)
		t_st[k] = calloc((size_t)n, sizeof(double));
	prepared_seen = calloc((size_t)n, 1);
	atomic_store(&n_ready, 0);
	atomic_store(&n_prepared, 0);
	atomic_store(&burst_on, false);
	if (!m0 || !m1 || !a || !t_add || !t_add_end || !t_ready || !t_prog || !prepared_seen)
		goto out;
	r->load0 = loadavg1();
	if (cp_up(&CP)) {
		bench_error(B, "%s N=%d: the test control plane did not start", pname[pat], n);
		goto out;
	}
	cp_is_up = true;
	snprintf(work, sizeof(work), "%s/burst", CP.dir);
	mkdir(work, 0755);
	if (crds_install(&CP, "atomic") ||
	    topo_sh("%s/kubectl --kubeconfig %s apply -f %s/tests/crds/burst/burst-fixtures.yaml >/dev/null && "
		    "%s/kubectl --kubeconfig %s wait --for condition=Established crd --all --timeout 60s >/dev/null",
		    CP.bin, CP.kubeconfig, cnirt_top(), CP.bin, CP.kubeconfig)) {
		bench_error(B, "%s N=%d: CRDs (ours, tests/crds, tests/crds/burst) not established", pname[pat], n);
		goto out;
	}
	CFG = kube_config_new(CP.apiserver, CP.token, CP.ca);
	if (!(KC = kube_client_new(CFG, err, sizeof(err)))) {
		bench_error(B, "client: %s", err);
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
				      i ? RNS : TNS);
		kube_create(KC, &NSS, NULL, o, NULL, &e);
		json_decref(o);
	}
	{
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata", "name",
				      "default");
		kube_create(KC, &SA, TNS, o, NULL, &e);
		json_decref(o);
	}
	/* the VPCs (NIR waits for status.vpc) and one BGPRouter per node */
	for (int v = 0; v < 2; v++) {
		json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{}}", "apiVersion", "cloud.datumapis.com/v1alpha1", "kind", "VPC",
				      "metadata", "name", vpc_name[v], "spec"), *out = NULL;
		if (kube_create(KC, &VPC, TNS, o, &out, &e)) {
			bench_error(B, "VPC: %s", e.message);
			json_decref(o);
			goto out;
		}
		json_decref(o);
		json_object_set_new(out, "status", json_pack("{s:s}", "vpc", vpc_id[v]));
		if (put_status(&VPC, TNS, out, &e)) {
			bench_error(B, "VPC status: %s", e.message);
			json_decref(out);
			goto out;
		}
		json_decref(out);
	}
	for (int k = 1; k <= NODES; k++) {
		char rn[16], nn[8];
		snprintf(rn, sizeof(rn), "router-n%d", k);
		snprintf(nn, sizeof(nn), "n%d", k);
		/* the Node object, as the kubelet registers it (our agent owns its reports by it) */
		json_t *no = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata", "name", nn);
		if (kube_create(KC, &NODE, NULL, no, NULL, &e)) {
			bench_error(B, "Node: %s", e.message);
			json_decref(no);
			goto out;
		}
		json_decref(no);
		json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:i}}", "apiVersion", "network.datumapis.com/v1alpha1",
				      "kind", "BGPRouter", "metadata", "name", rn, "spec", "targetRef", "name", nn, "localASN",
				      65000 + k);
		if (kube_create(KC, &RTR, RNS, o, NULL, &e)) {
			bench_error(B, "BGPRouter: %s", e.message);
			json_decref(o);
			goto out;
		}
		json_decref(o);
		/* Each VPC's BGPVRFInstance on the node, as earlier pods of the VPC
		 * left it (galactic-bgp shares one per VPC and node): a burst's
		 * concurrent first ADDs of a VPC on a node would otherwise race to
		 * create it, and upstream fails the loser's ADD (AlreadyExists is not
		 * retried): docs/performance.md. */
		for (int v = 0; v < 2; v++) {
			char vn[64];
			snprintf(vn, sizeof(vn), "%s-n%d", vpc_id[v], k);
			/* the spec galactic-bgp computes (route target ASN:low 32 bits of the VPC id) */
			unsigned long long vh = 0;
			char rt[64];
			for (const char *p = vpc_id[v]; *p; p++)
				vh = vh * 62 + (unsigned)(*p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'z' ? *p - 'a' + 10 : *p - 'A' + 36);
			snprintf(rt, sizeof(rt), "%d:%u", 65000 + k, (unsigned)(vh & 0xffffffffu));
			o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:i, s:[{s:s}], s:[{s:s}]}}", "apiVersion",
				      "network.datumapis.com/v1alpha1", "kind", "BGPVRFInstance", "metadata", "name", vn, "spec",
				      "routerRef", "name", rn, "vrfID", v + 1, "importRouteTargets", "value", rt,
				      "exportRouteTargets", "value", rt);
			if (kube_create(KC, &VRFR, RNS, o, NULL, &e)) {
				bench_error(B, "BGPVRFInstance: %s", e.message);
				json_decref(o);
				goto out;
			}
			json_decref(o);
		}
	}
	{
		enum { F = 6 };
		pthread_t th[F];
		struct filler f[F];
		for (int i = 0; i < F; i++) {
			f[i] = (struct filler){ i * n / F, (i + 1) * n / F, "" };
			pthread_create(&th[i], NULL, fill, &f[i]);
		}
		for (int i = 0; i < F; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < F; i++)
			if (f[i].err[0]) {
				bench_error(B, "%s N=%d: creating the sets: %s", pname[pat], n, f[i].err);
				goto out;
			}
	}
	/* the nodes, their agents, the pods' namespaces */
	if (topo_up(&T, NODES)) {
		bench_error(B, "topo_up failed");
		goto out;
	}
	if (pat != TODAY)
		snprintf(T.agent_bin, sizeof(T.agent_bin), "%s/galactic-agent", BIN);
	for (int k = 1; k <= NODES; k++) {
		if (pat != TODAY)
			snprintf(extra, sizeof(extra), "--cni-socket %s/n%d/cni.sock --node n%d --kubeconfig %s --report-namespace " RNS,
				 T.dir, k, k, CP.kubeconfig);
		else
			snprintf(extra, sizeof(extra), "--cni-socket %s/n%d/cni.sock", T.dir, k);
		if (topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,\"uplink\":\"up0\"},"
			    "\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json", k, T.dir, k) ||
		    topo_agent_start(&T, k, extra) <= 0) {
			bench_error(B, "agent n%d did not start", k);
			goto out;
		}
	}
	for (int k = 1; k <= NODES; k++)
		if (topo_sh("for _ in $(seq 300); do [ -S %s/n%d/cni.sock ] && exit 0; sleep 0.1; done; exit 1", T.dir, k)) {
			char tail[400] = "";
			topo_out(tail, sizeof(tail), "tail -c 300 %s/n%d/agent.log", T.dir, k);
			bench_error(B, "agent n%d did not open its CNI socket: %s", k, tail);
			goto out;
		}
	snprintf(cmd, sizeof(cmd), "for i in $(seq 0 %d); do p=$(printf p%%04d $i); ip netns add %s-$p && "
		 "ip -n %s-$p link set lo up || exit 1; done", n - 1, T.prefix, T.prefix);
	if (topo_sh("%s", cmd)) {
		bench_error(B, "pod namespaces");
		goto out;
	}
	/* our watch of the claims */
	inf = informer_new(KC, &(struct informer_opts){ .res = NIC, .ns = TNS, .drop_managed_fields = true });
	if (!inf || informer_add_handlers(inf, &(struct informer_handlers){ on_add, on_update, NULL, NULL }) ||
	    informer_start(inf) || !informer_wait_synced(inf, 120)) {
		bench_error(B, "the claims' informer did not sync");
		goto out;
	}
	if (stages) {
		static const struct kube_resource REP = { "network.datumapis.com", "v1alpha1", "nodeattachments", true };
		const struct kube_resource *sr[3] = { &REP, &VA, &NI };
		const int st[3] = { ST_REP, ST_VA_PROG, ST_NI_PROG };
		for (int k = 0; k < 3; k++) {
			if (!(sinf[k] = informer_new(KC, &(struct informer_opts){ .res = *sr[k], .ns = k ? TNS : RNS,
										    .drop_managed_fields = true })) ||
			    informer_add_handlers(sinf[k], &(struct informer_handlers){ stage_seen, stage_upd, NULL,
											(void *)(intptr_t)st[k] }) ||
			    informer_start(sinf[k]) || !informer_wait_synced(sinf[k], 120)) {
				bench_error(B, "BENCH_BURST_STAGES: an informer did not sync");
				goto out;
			}
		}
	}
	/* the writers of the pattern */
	if (pat == TODAY) {
		static const char *const modes[3] = { "nso", "cloud", "router" };
		for (int k = 0; k < 3; k++) {
			snprintf(counts, sizeof(counts), "%s/counts.%s", work, modes[k]);
			snprintf(log, sizeof(log), "%s/%s.log", work, modes[k]);
			sp[k] = spawn_standin(modes[k], k == 2 ? RNS : TNS, counts, RNS, log);
			snprintf(r->procs[r->nprocs].name, sizeof(r->procs[0].name), "stand-in %s", modes[k]);
			r->procs[r->nprocs++].pid = sp[k];
			nsp++;
		}
	} else {
		char p[32];
		tport = gt_free_port();
		snprintf(p, sizeof(p), "127.0.0.1:%d", tport);
		snprintf(log, sizeof(log), "%s/translator.log", work);
		/* BENCH_BURST_TRANSLATOR_WORKERS: --workers (unset: the translator's default) */
		char wk[16];
		snprintf(wk, sizeof(wk), "%s", getenv("BENCH_BURST_TRANSLATOR_WORKERS") ?: "");
		char tbin[440];
		snprintf(tbin, sizeof(tbin), "%s/galactic-translator", BIN);
		char *targv[] = { tbin, "--kubeconfig", CP.kubeconfig, "--namespace", RNS,
				  "--watch-namespace", TNS, "--id", "burst", "--metrics-addr", p, "--log-level", "warn",
				  wk[0] ? "--workers" : NULL, wk, NULL };
		tr = gt_spawn(log, targv);
		snprintf(r->procs[r->nprocs].name, sizeof(r->procs[0].name), "galactic-translator");
		r->procs[r->nprocs++].pid = tr;
		snprintf(counts, sizeof(counts), "%s/counts.nso-contract", work);
		snprintf(log, sizeof(log), "%s/nso-contract.log", work);
		sp[0] = spawn_standin("nso-contract", TNS, counts, RNS, log);
		snprintf(r->procs[r->nprocs].name, sizeof(r->procs[0].name), "stand-in nso-contract");
		r->procs[r->nprocs++].pid = sp[0];
		nsp = 1;
	}
	for (int k = 1; k <= NODES; k++) {
		snprintf(r->procs[r->nprocs].name, sizeof(r->procs[0].name), "agent n%d", k);
		r->procs[r->nprocs++].pid = T.agent[k];
	}
	for (int k = 0; stages && k < 2; k++) { /* the API server's and etcd's CPU too */
		static const char *const cpn[2] = { "apiserver", "etcd" };
		char pf[400];
		FILE *f;
		int pid = 0;
		snprintf(pf, sizeof(pf), "%s/%s.pid", CP.dir, cpn[k]);
		if ((f = fopen(pf, "r"))) {
			if (fscanf(f, "%d", &pid) == 1 && pid > 0) {
				snprintf(r->procs[r->nprocs].name, sizeof(r->procs[0].name), "%s", cpn[k]);
				r->procs[r->nprocs++].pid = pid;
			}
			fclose(f);
		}
	}
	for (int k = 0; k < nsp; k++) {
		static const char *const mt[3] = { "nso", "cloud", "router" };
		snprintf(counts, sizeof(counts), "%s/counts.%s.ready", work, pat == TODAY ? mt[k] : "nso-contract");
		if (wait_file(counts, 120)) {
			bench_error(B, "%s: stand-in did not sync (%s)", pname[pat], counts);
			goto out;
		}
	}
	/* the cell before the pods: every claim Prepared=True, writes settled */
	for (double end = now_s() + 60 + 0.3 * n; atomic_load(&n_prepared) < n && now_s() < end;)
		usleep(100 * 1000);
	if (atomic_load(&n_prepared) < n) {
		bench_error(B, "%s N=%d: only %d claims Prepared=True before the burst (logs in %s)", pname[pat], n,
			    atomic_load(&n_prepared), work);
		goto out;
	}
	settle(3, 60);
	r->setup_s = now_s() - t0;
	printf("%s N=%d: set up in %.1f s (load %.1f); burst of %d ADDs, %d at a time\n", pname[pat], n, r->setup_s,
	       loadavg1(), n, atoi(getenv("BENCH_BURST_CONCURRENCY") ?: "12"));

	/* ---- the burst ---- */
	if (metrics_snap(m0)) {
		bench_error(B, "GET /metrics of the API server failed");
		goto out;
	}
	for (int k = 0; k < r->nprocs; k++)
		r->procs[k].cpu0 = proc_cpu_s(r->procs[k].pid);
	/* the stand-ins' counts so far (COUNTS.pre), subtracted at the end */
	for (int k = 0; k < 3; k++)
		if (sp[k] > 0)
			kill(sp[k], SIGUSR1);
	for (int k = 0; k < nsp; k++) {
		static const char *const mt[3] = { "nso", "cloud", "router" };
		snprintf(counts, sizeof(counts), "%s/counts.%s.pre.done", work, pat == TODAY ? mt[k] : "nso-contract");
		if (wait_file(counts, 30)) {
			bench_error(B, "%s: stand-in did not write its counts (%s)", pname[pat], counts);
			goto out;
		}
	}
	double tr_w0 = 0, tr_c0 = 0;
	if (pat != TODAY) {
		tr_w0 = fmax(gt_metric(tport, "galactic_translator_status_writes_total{kind=\"VPCAttachment\"}"), 0) +
			fmax(gt_metric(tport, "galactic_translator_status_writes_total{kind=\"NetworkInterface\"}"), 0) +
			fmax(gt_metric(tport, "galactic_translator_status_writes_total{kind=\"NetworkInterfaceClaim\"}"), 0);
		tr_c0 = fmax(gt_metric(tport, "galactic_translator_conflicts_total"), 0);
	}
	snprintf(a->work, sizeof(a->work), "%s", work);
	a->pat = pat;
	pthread_mutex_init(&a->mu, NULL);
	int conc = atoi(getenv("BENCH_BURST_CONCURRENCY") ?: "12");
	if (conc < 1)
		conc = 1;
	pthread_t *th = calloc((size_t)conc, sizeof(*th));
	atomic_store(&burst_on, true);
	double tb = now_s();
	t_burst = tb;
	for (int k = 0; k < conc; k++)
		pthread_create(&th[k], NULL, adder, a);
	for (int k = 0; k < conc; k++)
		pthread_join(th[k], NULL);
	free(th);
	double adds_s = now_s() - tb;
	printf("%s N=%d: %d ADDs in %.1f s (%d failed)\n", pname[pat], n, n, adds_s, atomic_load(&a->failed));
	if (!bench_check(B, atomic_load(&a->failed) == 0, "%s N=%d: every CNI ADD succeeded (%d failed; first: %s)", pname[pat],
			 n, atomic_load(&a->failed), a->first_err))
		goto out;
	timeout_s = getenv("BENCH_BURST_TIMEOUT") ? atof(getenv("BENCH_BURST_TIMEOUT")) : 120 + 0.6 * n;
	while (atomic_load(&n_ready) < n && now_s() - tb < timeout_s)
		usleep(50 * 1000);
	if (atomic_load(&n_ready) < n) {
		bench_error(B, "%s N=%d: only %d of %d claims Ready=True %.0f s after the burst started (logs in %s)",
			    pname[pat], n, atomic_load(&n_ready), n, now_s() - tb, work);
		goto out;
	}
	double last_ready = now_s();
	settle(3, 60);
	if (metrics_snap(m1)) {
		bench_error(B, "GET /metrics of the API server failed");
		goto out;
	}
	r->load1 = loadavg1();
	for (int k = 0; k < r->nprocs; k++) {
		r->procs[k].cpu1 = proc_cpu_s(r->procs[k].pid);
		r->procs[k].hwm_mib = bench_proc_status_kib(r->procs[k].pid, "VmHWM") / 1024.0;
	}
	/* ---- results ---- */
	double *lat = calloc((size_t)n, sizeof(double)), *ad = calloc((size_t)n, sizeof(double)), first = 1e18,
	       lastr = 0, *fb = calloc((size_t)n, sizeof(double)), *ep = calloc((size_t)n, sizeof(double)),
	       *pr = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		lat[i] = t_ready[i] - t_add[i];
		ad[i] = t_add_end[i] - t_add[i];
		fb[i] = t_ready[i] - t_burst;
		ep[i] = (t_prog[i] > 0 ? t_prog[i] : t_ready[i]) - t_add_end[i];
		pr[i] = t_ready[i] - (t_prog[i] > 0 ? t_prog[i] : t_ready[i]);
		if (t_add[i] < first)
			first = t_add[i];
		if (t_ready[i] > lastr)
			lastr = t_ready[i];
	}
	(void)last_ready;
	qsort(lat, (size_t)n, sizeof(double), cmp_d);
	qsort(ad, (size_t)n, sizeof(double), cmp_d);
	r->p50 = pct(lat, (size_t)n, 0.5), r->p90 = pct(lat, (size_t)n, 0.9), r->p99 = pct(lat, (size_t)n, 0.99);
	r->max = lat[n - 1], r->span = lastr - first;
	r->add_p50 = pct(ad, (size_t)n, 0.5), r->add_p99 = pct(ad, (size_t)n, 0.99);
	qsort(fb, (size_t)n, sizeof(double), cmp_d);
	qsort(ep, (size_t)n, sizeof(double), cmp_d);
	qsort(pr, (size_t)n, sizeof(double), cmp_d);
	r->fb_p50 = pct(fb, (size_t)n, 0.5), r->fb_p99 = pct(fb, (size_t)n, 0.99);
	r->ep_p50 = pct(ep, (size_t)n, 0.5), r->ep_p99 = pct(ep, (size_t)n, 0.99);
	r->pr_p50 = pct(pr, (size_t)n, 0.5), r->pr_p99 = pct(pr, (size_t)n, 0.99);
	free(lat);
	free(ad);
	free(fb);
	free(ep);
	free(pr);
	r->req_total = mdelta(m0, m1, NULL, false, NULL);
	r->writes_total = mdelta(m0, m1, NULL, true, NULL);
	r->c409_total = mdelta(m0, m1, NULL, false, "409");
	r->writes_va = mdelta(m0, m1, "vpcattachments", true, NULL) / n;
	r->writes_ni = mdelta(m0, m1, "networkinterfaces", true, NULL) / n;
	r->writes_nic = mdelta(m0, m1, "networkinterfaceclaims", true, NULL) / n / 2;
	print_requests(pname[pat], n, m0, m1);
	/* per writer */
	if (pat != TODAY) {
		static const char *const kinds[3] = { "VPCAttachment", "NetworkInterface", "NetworkInterfaceClaim" };
		double w = 0;
		for (int k = 0; k < 3; k++) {
			char s[160];
			snprintf(s, sizeof(s), "galactic_translator_status_writes_total{kind=\"%s\"}", kinds[k]);
			w += fmax(gt_metric(tport, s), 0);
		}
		add_writer(r, "galactic-translator", "attachments+interfaces+claims", w - tr_w0,
			   fmax(gt_metric(tport, "galactic_translator_conflicts_total"), 0) - tr_c0);
	}
	add_writer(r, "agents", "nodeattachments+nodedataplanes",
		   mdelta(m0, m1, "nodeattachments", true, NULL) + mdelta(m0, m1, "nodedataplanes", true, NULL),
		   mdelta(m0, m1, "nodeattachments", true, "409") + mdelta(m0, m1, "nodedataplanes", true, "409"));
	for (int k = 0; k < 3; k++)
		stop_pid(&sp[k]);
	{
		struct wcounts w = { 0 }, pre = { 0 };
		static const char *const f[5] = { "nso", "cloud", "router", "nso-contract", "cni" };
		for (int k = 0; k < 5; k++) {
			snprintf(counts, sizeof(counts), "%s/counts.%s", work, f[k]);
			counts_read(counts, &w);
			snprintf(counts, sizeof(counts), "%s/counts.%s.pre", work, f[k]);
			counts_read(counts, &pre);
		}
		for (int k = 0; k < w.n; k++) {
			double req = w.r[k].req, c = w.r[k].conflict;
			for (int j = 0; j < pre.n; j++)
				if (!strcmp(pre.r[j].writer, w.r[k].writer) && !strcmp(pre.r[j].res, w.r[k].res))
					req -= pre.r[j].req, c -= pre.r[j].conflict;
			add_writer(r, w.r[k].writer, w.r[k].res, req, c);
		}
	}
	if (stages) {
		print_stages(pat, n);
		char *body = NULL;
		if (pat != TODAY && gt_http_get(tport, "/metrics", &body) == 200)
			for (char *l = strtok(body, "\n"); l; l = strtok(NULL, "\n"))
				if (!strncmp(l, "galactic_kube_request", 21) || !strncmp(l, "galactic_translator_reconciles", 30) ||
				    !strncmp(l, "galactic_translator_new_report", 30) ||
				    !strncmp(l, "galactic_translator_status_write_skips", 38))
					printf("%s N=%d: translator %s\n", pname[pat], n, l);
		free(body);
		if (getenv("BENCH_BURST_LOGS"))
			topo_sh("mkdir -p %s/%s && cp %s/*.log %s/%s/ && for k in 1 2 3; do cp %s/n$k/agent.log %s/%s/agent-n$k.log; done",
				getenv("BENCH_BURST_LOGS"), pname[pat], work, getenv("BENCH_BURST_LOGS"), pname[pat], T.dir,
				getenv("BENCH_BURST_LOGS"), pname[pat]);
	}
	r->ok = true;
	rc = 0;
	printf("%s N=%d: CNI ADD -> claim Ready=True p50 %.2f s, p90 %.2f s, p99 %.2f s, max %.2f s; first ADD -> last "
	       "Ready %.1f s; ADD p50 %.0f ms, p99 %.0f ms\n",
	       pname[pat], n, r->p50, r->p90, r->p99, r->max, r->span, r->add_p50 * 1e3, r->add_p99 * 1e3);
	printf("%s N=%d: from the burst's start (all pods at once) -> Ready p50 %.2f s, p99 %.2f s; ADD returned -> claim "
	       "Programmed p50 %.2f s, p99 %.2f s; Programmed -> Ready p50 %.2f s, p99 %.2f s\n",
	       pname[pat], n, r->fb_p50, r->fb_p99, r->ep_p50, r->ep_p99, r->pr_p50, r->pr_p99);
	printf("%s N=%d: API requests %.0f (writes %.0f, 409s %.0f); writes per object per transition: VPCAttachment "
	       "%.2f, NetworkInterface %.2f, claim %.2f\n",
	       pname[pat], n, r->req_total, r->writes_total, r->c409_total, r->writes_va, r->writes_ni, r->writes_nic);
	for (int k = 0; k < r->w.n; k++)
		printf("%s N=%d: writer %s on %s: %.0f requests, %.0f 409s\n", pname[pat], n, r->w.r[k].writer, r->w.r[k].res,
		       r->w.r[k].req, r->w.r[k].conflict);
	for (int k = 0; k < r->nprocs; k++)
		printf("%s N=%d: %s: CPU %.2f s during the burst, VmHWM %.1f MiB\n", pname[pat], n, r->procs[k].name,
		       r->procs[k].cpu1 - r->procs[k].cpu0, r->procs[k].hwm_mib);
	printf("%s N=%d: load average %.1f before setup, %.1f after the burst\n", pname[pat], n, r->load0, r->load1);
out:
	for (int k = 0; k < 3; k++)
		stop_pid(&sp[k]);
	if (rc && work[0])
		topo_sh("for f in %s/*.log; do echo \"== $f\"; tail -n 15 \"$f\"; done", work);
	if (inf) {
		informer_stop(inf);
		informer_free(inf);
	}
	for (int k = 0; k < 3; k++)
		if (sinf[k]) {
			informer_stop(sinf[k]);
			informer_free(sinf[k]);
		}
	for (int k = 0; k < ST_N; k++) {
		free(t_st[k]);
		t_st[k] = NULL;
	}
	if (tr > 0) {
		kill(tr, SIGTERM);
		waitpid(tr, NULL, 0);
	}
	if (T.prefix[0])
		topo_down(&T);
	memset(&T, 0, sizeof(T));
	if (KC)
		kube_client_free(KC);
	if (CFG)
		kube_config_free(CFG);
	KC = NULL, CFG = NULL;
	if (cp_is_up && !getenv("BENCH_BURST_KEEP"))
		cp_down(&CP);
	cp_is_up = false;
	free(m0);
	free(m1);
	free(a);
	free(t_add);
	free(t_add_end);
	free(t_ready);
	free(t_prog);
	free(prepared_seen);
	t_add = t_add_end = t_ready = t_prog = NULL;
	prepared_seen = NULL;
	return rc;
}

/* ---- the report ---- */

static void facts_of(const struct result *r, enum pattern pat, int n)
{
	char name[200], what[300];

#define FACT(label, unit, val, fmt, ...)                                                 \
	do {                                                                             \
		double v_ = (val);                                                       \
		snprintf(name, sizeof(name), "%s N=%d: %s", pname[pat], n, label);       \
		snprintf(what, sizeof(what), fmt, ##__VA_ARGS__);                        \
		bench_fact(B, name, unit, what, &v_, 1);                                 \
	} while (0)
	FACT("claim Ready p50", "s", r->p50, "CNI ADD start -> claim Ready=True");
	FACT("claim Ready p90", "s", r->p90, "CNI ADD start -> claim Ready=True");
	FACT("claim Ready p99", "s", r->p99, "CNI ADD start -> claim Ready=True");
	FACT("claim Ready max", "s", r->max, "CNI ADD start -> claim Ready=True");
	FACT("first ADD -> last Ready", "s", r->span, "the whole burst");
	FACT("burst start -> claim Ready p50", "s", r->fb_p50, "every pod asked for at the burst's start (ADD queueing counted)");
	FACT("burst start -> claim Ready p99", "s", r->fb_p99, "every pod asked for at the burst's start (ADD queueing counted)");
	FACT("ADD returned -> claim Programmed p50", "s", r->ep_p50, "after the ADD: reports/advertisements and status writers");
	FACT("ADD returned -> claim Programmed p99", "s", r->ep_p99, "after the ADD: reports/advertisements and status writers");
	FACT("claim Programmed -> Ready p50", "s", r->pr_p50, "NSO's derivation of Ready");
	FACT("claim Programmed -> Ready p99", "s", r->pr_p99, "NSO's derivation of Ready");
	FACT("ADD p50", "ms", r->add_p50 * 1e3, "both plugins of the conflist");
	FACT("ADD p99", "ms", r->add_p99 * 1e3, "both plugins of the conflist");
	FACT("API requests", "requests", r->req_total, "apiserver_request_total, after - before the burst");
	FACT("API writes", "requests", r->writes_total, "POST/PUT/PATCH/APPLY/DELETE in apiserver_request_total");
	FACT("API 409s", "requests", r->c409_total, "code=409 in apiserver_request_total");
	FACT("writes per VPCAttachment per transition", "writes", r->writes_va, "writes to vpcattachments / N");
	FACT("writes per NetworkInterface per transition", "writes", r->writes_ni, "writes to networkinterfaces / N");
	FACT("writes per claim per transition", "writes", r->writes_nic, "writes to networkinterfaceclaims / N / 2");
	for (int k = 0; k < r->w.n; k++) {
		snprintf(name, sizeof(name), "%s N=%d: writer %s, %s: requests", pname[pat], n, r->w.r[k].writer, r->w.r[k].res);
		bench_fact(B, name, "requests", "during the burst, counted by the writer (the translator: its /metrics; the "
			   "agents: the API server's, only they write reports)", &r->w.r[k].req, 1);
		snprintf(name, sizeof(name), "%s N=%d: writer %s, %s: 409s", pname[pat], n, r->w.r[k].writer, r->w.r[k].res);
		bench_fact(B, name, "conflicts", "409 answers to this writer", &r->w.r[k].conflict, 1);
	}
	for (int k = 0; k < r->nprocs; k++) {
		double cpu = r->procs[k].cpu1 - r->procs[k].cpu0;
		snprintf(name, sizeof(name), "%s N=%d: %s CPU", pname[pat], n, r->procs[k].name);
		bench_fact(B, name, "s", "user+system during the burst", &cpu, 1);
		snprintf(name, sizeof(name), "%s N=%d: %s peak RSS", pname[pat], n, r->procs[k].name);
		bench_fact(B, name, "MiB", "VmHWM after the burst", &r->procs[k].hwm_mib, 1);
	}
	FACT("load average", "", r->load1, "1-minute load average after the burst (%.1f before setup)", r->load0);
#undef FACT
}

int main(int argc, char **argv)
{
	int ns[8], nn = 0;
	static struct result res[8][NPAT];
	char list[128];

	B = bench_begin("bench_burst");
	if (argc > 1)
		for (int i = 1; i < argc && nn < 8; i++)
			ns[nn++] = atoi(argv[i]);
	else {
		snprintf(list, sizeof(list), "%s", getenv("BENCH_BURST_N") ?: "100");
		for (char *t = strtok(list, " ,"); t && nn < 8; t = strtok(NULL, " ,"))
			ns[nn++] = atoi(t);
	}
	for (int i = 0; i < nn; i++)
		if (ns[i] < 3 || ns[i] > MAXN) {
			bench_error(B, "bad N %d (3..%d)", ns[i], MAXN);
			return bench_end(B);
		}
	if (!bench_need_root(B, "network namespaces for the nodes and pods"))
		return bench_end(B);
	if (access(STANDIN, X_OK) || access("build/rel/bin/galactic-translator", X_OK) ||
	    access("build/rel/bin/galactic-agent", X_OK) || access("build/rel/bin/galactic-veth", X_OK)) {
		bench_error(B, "%s or the release binaries missing (make)", STANDIN);
		return bench_end(B);
	}
	glog_set_level(GLOG_WARN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	int done = 0;
	/* BENCH_BURST_ONLY=today|ours: one pattern only (diagnosis: no ratio, the bench fails) */
	const char *only = getenv("BENCH_BURST_ONLY");
	/* BENCH_BURST_BASE=DIR: base (those binaries) and ours alternate after today's,
	 * base first unless BENCH_BURST_BASE_LAST=1 (alternate it between runs). */
	const char *base = getenv("BENCH_BURST_BASE");
	bool base_last = getenv("BENCH_BURST_BASE_LAST") && atoi(getenv("BENCH_BURST_BASE_LAST"));
	if (base && access(base, X_OK)) {
		bench_error(B, "BENCH_BURST_BASE=%s: not a directory of binaries", base);
		return bench_end(B);
	}
	enum pattern order[NPAT] = { TODAY, OURS };
	int norder = 2;
	if (base) {
		order[1] = base_last ? OURS : BASE;
		order[2] = base_last ? BASE : OURS;
		norder = 3;
	}
	for (int i = 0; i < nn; i++) {
		for (int q = 0; q < norder; q++) {
			enum pattern p = order[q];
			if ((!only || !strcmp(only, pname[p])) && run_pattern(p, ns[i], &res[i][p]))
				goto report;
		}
		done = i + 1;
		if (only)
			continue;
		for (int q = 0; q < norder; q++)
			facts_of(&res[i][order[q]], order[q], ns[i]);
		if (base) {
			const struct result *t = &res[i][TODAY], *o = &res[i][OURS], *b = &res[i][BASE];
			printf("A/B N=%d: claim Ready p99 ours %.2f s, base %.2f s, today's %.2f s: ours / today %.3f, "
			       "base / today %.3f, ours / base %.3f; requests per chain ours %.2f, base %.2f\n",
			       ns[i], o->p99, b->p99, t->p99, o->p99 / t->p99, b->p99 / t->p99, o->p99 / b->p99,
			       o->req_total / ns[i], b->req_total / ns[i]);
		}
	}
report:
	if (only) {
		bench_error(B, "BENCH_BURST_ONLY=%s: one pattern only, no ratio", only);
		return bench_end(B);
	}
	if (!done) {
		if (!bench_failed(B))
			bench_error(B, "no N completed");
		return bench_end(B);
	}
	{
		int k = done - 1, n = ns[k];
		struct result *t = &res[k][TODAY], *o = &res[k][OURS];
		char what[200], wt[200], name[200];

		snprintf(what, sizeof(what), "ours: CNI ADD -> claim Ready=True p99, N=%d, 3 nodes", n);
		snprintf(wt, sizeof(wt), "today's pattern: the same, same burst, same run");
		snprintf(name, sizeof(name), "claim Ready p99 at N=%d, ours / today's pattern", n);
		bench_target(B, name, "s", &(struct bench_side){ what, &o->p99, 1 }, &(struct bench_side){ wt, &t->p99, 1 },
			     0.5);
		static const char *const writers[3] = { "galactic-translator", "nso-contract", "agents" };
		for (int w = 0; w < 3; w++) {
			double c = writer_conflicts(o, writers[w]);
			snprintf(name, sizeof(name), "409s of %s in our pattern, N=%d", writers[w], n);
			bench_limit(B, name, "conflicts", &(struct bench_side){ "409 answers during the burst", &c, 1 }, 0);
		}
		snprintf(name, sizeof(name), "writes per VPCAttachment per transition (ours), N=%d", n);
		bench_limit(B, name, "writes", &(struct bench_side){ "writes to vpcattachments / N", &o->writes_va, 1 }, 1);
		snprintf(name, sizeof(name), "writes per NetworkInterface per transition (ours), N=%d", n);
		bench_limit(B, name, "writes", &(struct bench_side){ "writes to networkinterfaces / N", &o->writes_ni, 1 }, 1);
		snprintf(name, sizeof(name), "writes per claim per transition (ours), N=%d", n);
		bench_limit(B, name, "writes",
			    &(struct bench_side){ "writes to networkinterfaceclaims / N / 2 (Programmed, Ready)", &o->writes_nic, 1 },
			    1);
	}
	return bench_end(B);
}
