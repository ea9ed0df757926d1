/*
 * Scale benchmark of galactic-translator (issue 13 items 4 and 6): N
 * (default 10,000; argv[1] or BENCH_TRANSLATOR_N) complete sets of
 * NetworkInterfaceClaim + NetworkInterface + VPCAttachment + NodeAttachment
 * report are created first on the real control plane (tests/lib/cp.h) with
 * the upstream stand-in CRDs (tests/crds, crds_install; variant from
 * GALACTIC_CRD_VARIANT, default atomic as upstream today), in the shapes the
 * e2e suites use and written by the same stand-in managers:
 *   - NSO: interface status phase/networkContextRef/Allocated and claim
 *     status networkInterfaceRef/addresses/Bound/Allocated/Ready=False, by
 *     PUT of /status (as Status().Update);
 *   - the VPC operator: the attachment (controller-owned by its interface)
 *     and its status ids and Ready=True, by server-side apply;
 *   - the agent: the report and its Programmed=True, by server-side apply.
 * Then ONE release-build translator (build/rel/bin/galactic-translator,
 * --workers 2) is started as a process, and measured:
 *   - per claim, the time from the translator's start to the claim's
 *     Programmed=True, seen by this process's own watch (p50, p90, p99, max);
 *   - the order of work: the share of the translator's writes done when
 *     half of the claims were ready (a translator that works kind by kind
 *     makes nearly every claim wait for the last: ~0.9; one that finishes
 *     chain by chain: ~0.5), from a once-a-second timeline of claims ready
 *     and writes per kind (printed); the same in time (median / last
 *     claim) is kept as a fact: it moves with the API server's write rate,
 *     which on a shared machine changes during a run;
 *   - the translator's peak RSS (VmHWM of /proc/PID/status, once every claim
 *     is ready and its write counters have stopped moving);
 *   - status writes per object, per kind, from its own metrics
 *     (galactic_translator_status_writes_total{kind}: every successful
 *     apply or patch). Every input is final before the translator starts, so
 *     every object has exactly one transition (nothing -> final) and the
 *     ideal is 1 write per object;
 *   - 409s (galactic_translator_conflicts_total).
 * BENCH_TRANSLATOR_TIMEOUT: seconds for every claim to be ready (default
 * 120 + 0.3 per set); a run that times out records how far it got.
 * BENCH_TRANSLATOR_BIN runs another build of the translator (e.g. an older
 * commit's, for a before/after in the same conditions).
 * Targets (make bench fails when one is missed): peak RSS <= 64 MB
 * (61.04 MiB), writes per object <= 1 for each kind, 0 409s, writes done at
 * the median claim / all writes <= 0.6. Results in build/bench-results/bench_translator.json.
 *   bench_translator [N]
 */
#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "tests/bench/bench.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TNS "bench-tenant"
#define RNS "galactic-system"
#define FILLERS 6
#define RSS_LIMIT_MIB (64e6 / (1024.0 * 1024.0))

static const struct kube_resource NI = { "networking.datumapis.com", "v1alpha", "networkinterfaces", true };
static const struct kube_resource NIC = { "networking.datumapis.com", "v1alpha", "networkinterfaceclaims", true };
static const struct kube_resource ATT = { "cloud.datumapis.com", "v1alpha1", "vpcattachments", true };
static const struct kube_resource REP = { "network.datumapis.com", "v1alpha1", "nodeattachments", true };
static const struct kube_resource NSS = { "", "v1", "namespaces", false };

static struct bench *B;
static struct cp CP;
static pid_t tr_pid = -1;

static void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	char why[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	bench_error(B, "%s", why);
	if (tr_pid > 0) {
		kill(tr_pid, SIGKILL);
		waitpid(tr_pid, NULL, 0);
	}
	cp_down(&CP);
	exit(bench_end(B));
}

static void set_name(char *buf, size_t n, int i) { snprintf(buf, n, "s-%05d", i); }

/* PUT of /status as NSO's Status().Update does (the object carries its resourceVersion). */
static int nso_put(struct kube_client *kc, const struct kube_resource *r, const char *name,
		   json_t *obj, struct kube_error *e)
{
	char path[512];
	char *body;
	int rc;

	kube_path(r, TNS, name, "status", path, sizeof(path));
	strncat(path, "?fieldManager=nso", sizeof(path) - strlen(path) - 1);
	body = json_dumps(obj, JSON_COMPACT);
	rc = kube_request(kc, "PUT", path, "application/json", body, strlen(body), "nso put", NULL, e);
	free(body);
	return rc;
}

static json_t *cond(const char *type, const char *status, const char *reason)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
			 "message", "set by nso", "lastTransitionTime", "2026-01-01T00:00:00Z");
}

/* One set, as the e2e suites shape it (tests/e2e/test_translator_nic.c). */
static int make_set(struct kube_client *kc, int i, struct kube_error *e)
{
	char name[32], vatt[32], vpc[16], uid[64];
	json_t *o, *out = NULL;
	int rc;

	set_name(name, sizeof(name), i);
	snprintf(vatt, sizeof(vatt), "A%05d", i);
	snprintf(vpc, sizeof(vpc), "Vb%d", i % 10);
	/* claim, then NSO's status of it */
	o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:s, s:[s]}}", "apiVersion",
		      "networking.datumapis.com/v1alpha", "kind", "NetworkInterfaceClaim", "metadata",
		      "name", name, "spec", "network", "name", "net-1", "attachmentMode", "Netns",
		      "ipFamilies", "IPv4");
	rc = kube_create(kc, &NIC, TNS, o, &out, e);
	json_decref(o);
	if (rc)
		return -1;
	json_object_set_new(out, "status",
			    json_pack("{s:{s:s}, s:[{s:s, s:s, s:b}], s:[o, o, o]}",
				      "networkInterfaceRef", "name", name, "addresses", "family", "IPv6",
				      "address", "fd20:60:ff03:0:1::/96", "primary", 1, "conditions",
				      cond("Bound", "True", "Bound"),
				      cond("Allocated", "True", "AddressesAllocated"),
				      cond("Ready", "False", "NotReady")));
	rc = nso_put(kc, &NIC, name, out, e);
	json_decref(out);
	out = NULL;
	if (rc)
		return -1;
	/* interface bound to it, then NSO's status of it */
	o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s}, s:{s:s}, s:s, s:i}}", "apiVersion",
		      "networking.datumapis.com/v1alpha", "kind", "NetworkInterface", "metadata", "name",
		      name, "spec", "network", "name", "net-1", "claimRef", "name", name,
		      "interfaceName", "eth0", "mtu", 1500);
	rc = kube_create(kc, &NI, TNS, o, &out, e);
	json_decref(o);
	if (rc)
		return -1;
	snprintf(uid, sizeof(uid), "%s", gj_str(out, "metadata.uid") ?: "");
	json_object_set_new(out, "status",
			    json_pack("{s:s, s:{s:s}, s:[o]}", "phase", "Bound", "networkContextRef",
				      "name", "ctx-1", "conditions",
				      cond("Allocated", "True", "AddressesAllocated")));
	rc = nso_put(kc, &NI, name, out, e);
	json_decref(out);
	out = NULL;
	if (rc)
		return -1;
	/* the attachment, controlled by the interface; the VPC operator's ids and Ready */
	o = json_pack("{s:s, s:s, s:{s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, "
		      "s:{s:{s:s}, s:{s:s, s:s}, s:{s:s}}}",
		      "apiVersion", "cloud.datumapis.com/v1alpha1", "kind", "VPCAttachment", "metadata",
		      "name", name, "ownerReferences", "apiVersion", "networking.datumapis.com/v1alpha",
		      "kind", "NetworkInterface", "name", name, "uid", uid, "controller", 1,
		      "blockOwnerDeletion", 1, "spec", "vpc", "name", "vpc-blue", "interface", "name",
		      "eth0", "mode", "Netns", "interfaceRef", "name", name);
	rc = kube_create(kc, &ATT, TNS, o, NULL, e);
	json_decref(o);
	if (rc)
		return -1;
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:i, s:[{s:s, s:s, s:s, s:s, s:s}]}}",
		      "apiVersion", "cloud.datumapis.com/v1alpha1", "kind", "VPCAttachment", "metadata",
		      "name", name, "namespace", TNS, "status", "vpc", vpc, "vpcAttachment", vatt,
		      "networkAttachmentDefinition", "nad-1", "observedGeneration", 1, "conditions",
		      "type", "Ready", "status", "True", "reason", "Allocated", "message", "ids",
		      "lastTransitionTime", "2026-01-01T00:00:00Z");
	rc = kube_apply(kc, &ATT, TNS, name, "status", o, "vpc-operator", false, NULL, e);
	json_decref(o);
	if (rc)
		return -1;
	/* the agent's report and its Programmed=True */
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, "
		      "s:[s], s:s}}",
		      "apiVersion", "network.datumapis.com/v1alpha1", "kind", "NodeAttachment",
		      "metadata", "name", name, "namespace", RNS, "spec", "node", "node-a", "vpc", vpc,
		      "vpcAttachment", vatt, "containerID", "c0ffee01", "pod", "namespace", TNS, "name",
		      name, "hostInterface", "gv1f2e", "guestInterface", "eth0", "table", 100,
		      "podSubnets", "10.1.0.0/24", "localSID", "fc00:0:1:1:e001::");
	rc = kube_apply(kc, &REP, RNS, name, NULL, o, "galactic-agent/node-a", false, NULL, e);
	json_decref(o);
	if (rc)
		return -1;
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s, s:s, "
		      "s:i, s:s}]}}",
		      "apiVersion", "network.datumapis.com/v1alpha1", "kind", "NodeAttachment",
		      "metadata", "name", name, "namespace", RNS, "status", "observedGeneration", 1,
		      "reporter", "node", "node-a", "datapath", "kernel", "agentInstance", "agent-1",
		      "conditions", "type", "Programmed", "status", "True", "reason", "KernelVerified",
		      "message", "checked in the kernel", "observedGeneration", 1,
		      "lastTransitionTime", "2026-01-01T00:00:00Z");
	rc = kube_apply(kc, &REP, RNS, name, "status", o, "galactic-agent/node-a", false, NULL, e);
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
	struct kube_config *cfg = kube_config_new(CP.apiserver, CP.token, CP.ca);
	struct kube_client *kc = kube_client_new(cfg, f->err, sizeof(f->err));
	struct kube_error e;

	if (!kc)
		return NULL;
	for (int i = f->from; i < f->to; i++) {
		int tries = 0;
		while (make_set(kc, i, &e)) {
			/* A set half made by a failed try: start it again from the top. */
			if (++tries > 3 || (e.code != KUBE_ERR_ALREADY_EXISTS && tries > 1)) {
				snprintf(f->err, sizeof(f->err), "set %d: %s", i, e.message);
				goto out;
			}
			char name[32];
			set_name(name, sizeof(name), i);
			kube_delete(kc, &NIC, TNS, name, NULL, &e);
			kube_delete(kc, &NI, TNS, name, NULL, &e);
			kube_delete(kc, &ATT, TNS, name, NULL, &e);
			kube_delete(kc, &REP, RNS, name, NULL, &e);
			usleep(200 * 1000);
		}
	}
out:
	kube_client_free(kc);
	kube_config_free(cfg);
	return NULL;
}

/* ---- the claims' readiness, from our own watch ---- */

static double t_start;      /* the translator's spawn (monotonic) */
static double *ready_at;    /* per claim: seconds since t_start, 0 = not yet */
static atomic_int n_ready;
static int n_sets;

static bool programmed_true(const json_t *o)
{
	const json_t *c;
	size_t i;
	json_array_foreach(gj_get(o, "status.conditions"), i, c)
		if (!strcmp(gj_str(c, "type") ?: "", "Programmed"))
			return !strcmp(gj_str(c, "status") ?: "", "True");
	return false;
}

static void seen(json_t *o)
{
	const char *n = gj_str(o, "metadata.name");
	int i;

	if (t_start <= 0 || !n || sscanf(n, "s-%d", &i) != 1 || i < 0 || i >= n_sets)
		return;
	if (ready_at[i] == 0 && programmed_true(o)) {
		ready_at[i] = gt_now() - t_start;
		atomic_fetch_add(&n_ready, 1);
	}
}
static void on_add(json_t *o, void *ud) { (void)ud; seen(o); }
static void on_update(json_t *old, json_t *o, void *ud) { (void)ud; (void)old; seen(o); }

/* ---- the translator process ---- */

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
	if (!(p = strrchr(buf, ')')))
		return -1;
	/* after ") ": state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}


static double pct(const double *sorted, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *kinds[] = { "VPCAttachment", "NetworkInterface", "NetworkInterfaceClaim" };
	const char *bin = getenv("BENCH_TRANSLATOR_BIN") ?: "build/rel/bin/galactic-translator", *variant;
	char err[256], port_s[32], log[400], what[300];
	struct kube_config *cfg;
	struct kube_client *kc;
	struct kube_error e;
	struct informer *inf;
	int n = 10000, port;
	double t0, timeout_s, all_s;

	if (argc > 1)
		n = atoi(argv[1]);
	else if (getenv("BENCH_TRANSLATOR_N"))
		n = atoi(getenv("BENCH_TRANSLATOR_N"));
	B = bench_begin("bench_translator");
	if (n <= 0)
		die("bad N %d", n);
	if (access(bin, X_OK))
		die("%s not built (make)", bin);
	n_sets = n;
	ready_at = calloc((size_t)n, sizeof(*ready_at));
	glog_set_level(GLOG_WARN);
	if (cp_up(&CP) < 0)
		die("the test control plane did not start (tests/controlplane/cp.sh)");
	variant = crds_variant();
	if (crds_install(&CP, variant) < 0)
		die("crds_install %s failed", variant);
	cfg = kube_config_new(CP.apiserver, CP.token, CP.ca);
	if (!(kc = kube_client_new(cfg, err, sizeof(err))))
		die("client: %s", err);
	for (int i = 0; i < 2; i++) {
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				      "metadata", "name", i ? RNS : TNS);
		if (kube_create(kc, &NSS, NULL, o, NULL, &e) && e.code != KUBE_ERR_ALREADY_EXISTS)
			die("create namespace: %s", e.message);
		json_decref(o);
	}

	t0 = gt_now();
	{
		pthread_t t[FILLERS];
		struct filler f[FILLERS];
		for (int i = 0; i < FILLERS; i++) {
			f[i] = (struct filler){ i * n / FILLERS, (i + 1) * n / FILLERS, "" };
			pthread_create(&t[i], NULL, fill, &f[i]);
		}
		for (int i = 0; i < FILLERS; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < FILLERS; i++)
			if (f[i].err[0])
				die("creating the sets: %s", f[i].err);
	}
	printf("created %d claim+interface+attachment+report sets (%s condition lists) in %.1f s\n", n,
	       variant, gt_now() - t0);
	fflush(stdout);

	/* Our own watch of the claims, synced before the translator starts. */
	inf = informer_new(kc, &(struct informer_opts){ .res = NIC, .ns = TNS,
							.drop_managed_fields = true });
	if (!inf || informer_add_handlers(inf, &(struct informer_handlers){ on_add, on_update, NULL,
									    NULL }) ||
	    informer_start(inf) || !informer_wait_synced(inf, 300))
		die("the claims' informer did not sync");

	port = gt_free_port();
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/translator.log", CP.dir);
	char *targv[] = { (char *)bin, "--kubeconfig", CP.kubeconfig, "--namespace", RNS,
			  "--watch-namespace", TNS, "--id", "bench", "--metrics-addr", port_s,
			  "--workers", "2", "--log-level", "warn", NULL };
	t_start = gt_now();
	if ((tr_pid = gt_spawn(log, targv)) < 0)
		die("spawn %s failed", bin);

	/* BENCH_TRANSLATOR_TIMEOUT seconds; default 120 + 0.3 s per set (the API
	 * server's CPU is the limit: ~14 writes/s at load 28 on 2 shared cores). */
	timeout_s = getenv("BENCH_TRANSLATOR_TIMEOUT") ? atof(getenv("BENCH_TRANSLATOR_TIMEOUT"))
						       : 120 + 0.3 * n;
	/* The run over time, once a second: claims ready and the writes of each
	 * kind so far (where the time goes when the order is not chain by chain). */
	struct tl { double t, ready, w[3]; } *tline = NULL;
	size_t ntl = 0, captl = 0;
	double next_tl = 0;
	while (atomic_load(&n_ready) < n && gt_now() - t_start < timeout_s) {
		if (waitpid(tr_pid, NULL, WNOHANG) == tr_pid) {
			tr_pid = -1;
			die("the translator exited early (log: %s)", log);
		}
		if (gt_now() - t_start >= next_tl) {
			if (ntl == captl) {
				captl = captl ? 2 * captl : 256;
				tline = realloc(tline, captl * sizeof(*tline));
				if (!tline)
					die("out of memory");
			}
			tline[ntl].t = gt_now() - t_start;
			tline[ntl].ready = atomic_load(&n_ready);
			for (int k = 0; k < 3; k++) {
				char s[200];
				snprintf(s, sizeof(s), "galactic_translator_status_writes_total{kind=\"%s\"}",
					 kinds[k]);
				tline[ntl].w[k] = gt_metric(port, s);
			}
			ntl++;
			next_tl += 1.0;
		}
		usleep(100 * 1000);
	}
	/* About twenty rows: time, claims ready, writes per kind. */
	for (size_t i = 0; i < ntl; i += ntl / 20 + 1)
		printf("timeline %6.1f s: %6.0f claims ready; writes attachment %6.0f interface %6.0f "
		       "claim %6.0f\n", tline[i].t, tline[i].ready, tline[i].w[0], tline[i].w[1],
		       tline[i].w[2]);
	/* The order in the translator's own units: the share of all its writes
	 * done when half of the claims were ready (chain by chain: ~0.5; kind by
	 * kind: ~0.9), whatever the API server's write rate did meanwhile. */
	double w_half = -1, w_all = 0;
	for (size_t i = 0; i < ntl; i++)
		if (w_half < 0 && tline[i].ready >= n / 2.0)
			w_half = tline[i].w[0] + tline[i].w[1] + tline[i].w[2];
	free(tline);
	all_s = gt_now() - t_start;
	if (atomic_load(&n_ready) < n) {
		/* What was reached, for the record. */
		snprintf(what, sizeof(what), "%d of %d claims Programmed=True after %.0f s; translator "
			 "VmHWM %.1f MiB, writes: attachments %.0f interfaces %.0f claims %.0f (log: %s)",
			 atomic_load(&n_ready), n, all_s, bench_proc_status_kib(tr_pid, "VmHWM") / 1024.0,
			 gt_metric(port, "galactic_translator_status_writes_total{kind=\"VPCAttachment\"}"),
			 gt_metric(port, "galactic_translator_status_writes_total{kind=\"NetworkInterface\"}"),
			 gt_metric(port, "galactic_translator_status_writes_total{kind=\"NetworkInterfaceClaim\"}"),
			 log);
		die("%s", what);
	}
	printf("every claim Programmed=True %.1f s after the translator started\n", all_s);

	/* Settled: the write counters stop moving (a second write would show). */
	double w[3], sk[3], prev = -1, cur;
	for (int i = 0; i < 60; i++) {
		cur = 0;
		for (int k = 0; k < 3; k++) {
			char s[200];
			snprintf(s, sizeof(s), "galactic_translator_status_writes_total{kind=\"%s\"}", kinds[k]);
			cur += gt_metric(port, s);
		}
		if (cur == prev)
			break;
		prev = cur;
		sleep(1);
	}
	double hwm = bench_proc_status_kib(tr_pid, "VmHWM") / 1024.0, rss = bench_proc_status_kib(tr_pid, "VmRSS") / 1024.0;
	double cpu = proc_cpu_s(tr_pid);
	double conflicts = gt_metric(port, "galactic_translator_conflicts_total");
	double rejects = 0, stale = 0;
	for (int k = 0; k < 3; k++) {
		char s[200];
		snprintf(s, sizeof(s), "galactic_translator_status_writes_total{kind=\"%s\"}", kinds[k]);
		w[k] = gt_metric(port, s);
		snprintf(s, sizeof(s), "galactic_translator_status_write_skips_total{kind=\"%s\"}", kinds[k]);
		sk[k] = gt_metric(port, s);
		snprintf(s, sizeof(s), "galactic_translator_guarded_patch_rejections_total{kind=\"%s\"}", kinds[k]);
		rejects += gt_metric(port, s) > 0 ? gt_metric(port, s) : 0;
		snprintf(s, sizeof(s), "galactic_translator_stale_apply_refusals_total{kind=\"%s\"}", kinds[k]);
		stale += gt_metric(port, s) > 0 ? gt_metric(port, s) : 0;
	}
	double t_term = gt_now(), exit_s;
	kill(tr_pid, SIGTERM);
	int st = 0;
	waitpid(tr_pid, &st, 0);
	exit_s = gt_now() - t_term;
	tr_pid = -1;
	informer_free(inf);

	/* ---- results ---- */
	qsort(ready_at, (size_t)n, sizeof(*ready_at), cmp_d);
	double p50 = pct(ready_at, (size_t)n, 0.5), p90 = pct(ready_at, (size_t)n, 0.9);
	double p99 = pct(ready_at, (size_t)n, 0.99), last = ready_at[n - 1], first = ready_at[0];
	printf("claim Programmed=True since the translator's start: first %.2f s, p50 %.2f s, p90 %.2f s, "
	       "p99 %.2f s, last %.2f s\n", first, p50, p90, p99, last);
	printf("translator: peak RSS (VmHWM) %.1f MiB, RSS at the end %.1f MiB, CPU %.1f s; writes "
	       "attachment %.0f interface %.0f claim %.0f; skips %.0f %.0f %.0f; 409s %.0f; guard "
	       "refusals %.0f patch + %.0f apply; exit status %d, %.2f s after SIGTERM\n",
	       hwm, rss, cpu, w[0], w[1], w[2], sk[0], sk[1], sk[2], conflicts, rejects, stale,
	       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), exit_s);
	bench_check(B, hwm > 0, "VmHWM of the translator read from /proc");
	bench_check(B, w[0] >= 0 && w[1] >= 0 && w[2] >= 0 && conflicts >= 0,
		    "the translator's write and conflict counters read from /metrics");
	bench_check(B, WIFEXITED(st) && WEXITSTATUS(st) == 0, "the translator exits 0 on SIGTERM");

	snprintf(what, sizeof(what), "galactic-translator (release, 2 workers), %d sets, %s lists: "
		 "VmHWM once every claim is ready", n, variant);
	bench_limit(B, "translator peak RSS (64 MB)", "MiB", &(struct bench_side){ what, &hwm, 1 },
		    RSS_LIMIT_MIB);
	for (int k = 0; k < 3; k++) {
		char name[160];
		double per = w[k] / n;
		snprintf(name, sizeof(name), "status writes per %s (one transition each)", kinds[k]);
		snprintf(what, sizeof(what), "galactic_translator_status_writes_total{kind=\"%s\"} / %d",
			 kinds[k], n);
		bench_limit(B, name, "writes", &(struct bench_side){ what, &per, 1 }, 1.0);
	}
	bench_limit(B, "409s of the translator", "conflicts",
		    &(struct bench_side){ "galactic_translator_conflicts_total", &conflicts, 1 }, 0);
	w_all = w[0] + w[1] + w[2];
	{
		double q = p50 / last;
		bench_fact(B, "ordering in time: median claim ready / last claim ready", "x",
			   "translator start -> Programmed=True, median / last (moves with the API server's "
			   "write rate during the run)", &q, 1);
		if (w_half >= 0 && w_all > 0) {
			double a[1] = { w_half }, b[1] = { w_all };
			bench_target(B, "ordering: writes done when half the claims are ready / all writes",
				     "writes", &(struct bench_side){ "status writes (3 kinds) when the median "
				     "claim was Programmed=True (sampled each second)", a, 1 },
				     &(struct bench_side){ "status writes (3 kinds) once settled", b, 1 }, 0.6);
		} else {
			bench_not_measured(B, "ordering: writes done when half the claims are ready / all writes",
					   0.6, "the timeline has no sample with half of the claims ready");
		}
	}
	snprintf(what, sizeof(what), "translator start -> claim Programmed=True, %d claims, %s lists", n,
		 variant);
	bench_fact(B, "claim ready: p50", "s", what, &p50, 1);
	bench_fact(B, "claim ready: p90", "s", what, &p90, 1);
	bench_fact(B, "claim ready: p99", "s", what, &p99, 1);
	bench_fact(B, "claim ready: first", "s", what, &first, 1);
	bench_fact(B, "claim ready: last", "s", what, &last, 1);
	bench_fact(B, "translator RSS at the end", "MiB", "VmRSS once settled", &rss, 1);
	bench_fact(B, "translator CPU", "s", "user+system from start to settled", &cpu, 1);
	bench_fact(B, "translator exit after SIGTERM", "s", "kill(SIGTERM) -> reaped", &exit_s, 1);
	bench_fact(B, "guard refusals (retried)", "writes", "guarded patch rejections + stale apply refusals",
		   (double[]){ rejects + stale }, 1);
	for (int k = 0; k < 3; k++) {
		char name[160];
		snprintf(name, sizeof(name), "skipped writes, %s", kinds[k]);
		bench_fact(B, name, "reconciles", "galactic_translator_status_write_skips_total", &sk[k], 1);
	}
	kube_client_free(kc);
	kube_config_free(cfg);
	cp_down(&CP);
	free(ready_at);
	return bench_end(B);
}
