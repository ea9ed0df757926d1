/*
 * Scale benchmark: list+watch of N (default 10,000) custom objects by a
 * common/ informer, against `kubectl get -o json` of the same list, in the
 * same run against the same real control plane.
 *
 * Process to process: each side is a whole, fresh process (ours: this
 * program's --sync-lean mode, which starts, lists and watches to synced and
 * exits; the reference: kubectl) measured the same way (tests/bench/bench.h:
 * wall time from fork to reap, peak RSS of the reaped child), one warm-up
 * round, then 5 rounds with the sides back to back. Targets: time <= 0.5x,
 * peak RSS <= 0.3x kubectl. Results in build/bench-results/bench_informer.json.
 *   bench_informer [N]
 *   bench_informer --hold [N]   set up, print both commands, wait for stdin to close
 */
#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "tests/bench/bench.h"
#include "tests/lib/cp.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct kube_resource CRDS = { "apiextensions.k8s.io", "v1", "customresourcedefinitions", false };
static const struct kube_resource OBJS = { "bench.galactic.io", "v1", "benchobjects", true };
static const struct kube_resource NSS = { "", "v1", "namespaces", false };

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct bench *B;
static struct cp CP;
static char self[512];

/* Setup failed: the result file says why, the control plane goes. */
static void die(const char *what, const struct kube_error *e)
{
	bench_error(B, "%s: %s", what, e ? e->message : "");
	cp_down(&CP);
	exit(bench_end(B));
}

/*
 * --sync[-lean] SERVER TOKEN CA: the informer side as a whole process: starts,
 * lists (pages of 500) and starts the watch, then exits; prints the number
 * of cached objects. Timed from outside exactly as kubectl is.
 */
static int sync_main(const char *server, const char *token, const char *ca, bool lean)
{
	char err[256];
	struct kube_config *cfg = kube_config_new(server, token, ca);
	struct kube_client *kc = kube_client_new(cfg, err, sizeof(err));
	struct informer_opts o = { .res = OBJS, .page_size = 500, .drop_managed_fields = lean };
	struct informer_stats st;
	struct informer *inf;
	size_t n;

	if (!kc)
		return 1;
	glog_set_level(GLOG_WARN);
	inf = informer_new(kc, &o);
	if (!inf || informer_start(inf) || !informer_wait_synced(inf, 300))
		return 1;
	n = kube_store_len(informer_store(inf));
	/* Synced means listed; wait for the watch request to be under way too. */
	for (int i = 0; i < 3000; i++) {
		informer_get_stats(inf, &st);
		if (st.watches)
			break;
		usleep(1000);
	}
	printf("%zu %lu\n", n, st.watches);
	fflush(stdout);
	informer_free(inf);
	kube_client_free(kc);
	kube_config_free(cfg);
	return 0;
}

struct filler {
	struct kube_client *kc;
	int from, to;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct kube_error e;
	char name[32], ns[32];
	for (int i = f->from; i < f->to; i++) {
		snprintf(name, sizeof(name), "obj-%05d", i);
		snprintf(ns, sizeof(ns), "bench-%d", i % 10);
		/* About the size of a data-plane report: a few ids, addresses, conditions. */
		json_t *o = json_pack(
			"{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:s, s:s, s:s, s:[s, s], s:s, s:i}}",
			"apiVersion", "bench.galactic.io/v1", "kind", "BenchObject", "metadata", "name", name,
			"namespace", ns, "labels", "node", "node-17", "vpc", "vpc-3",
			"spec", "node", "node-17", "vpc", "3kQy6hAR0fTZ", "attachment", "8nSbq1RrwF0x",
			"hostInterface", "gv-3kqy6h-8nsbq1", "addresses", "10.1.2.3/32", "fd00:a:b::3/128",
			"sid", "fd00:0:17:e003::", "table", 1003);
		if (kube_create(f->kc, &OBJS, ns, o, NULL, &e) && e.code != KUBE_ERR_ALREADY_EXISTS)
			die("create", &e);
		json_decref(o);
	}
	return NULL;
}

#define ROUNDS 5

/* One whole-process run; its stdout (if out) must say "<n> <watches>" with n objects. */
static int run_side(char *const argv[], const char *out, size_t want, struct bench_proc *r,
		    char *why, size_t whylen)
{
	size_t cnt;
	unsigned long w;
	FILE *f;
	int ok;

	if (bench_proc_run(argv, out, r) < 0 || r->exit_code) {
		snprintf(why, whylen, "%s: exit %d", argv[0], r->exit_code);
		return -1;
	}
	if (!out)
		return 0;
	f = fopen(out, "r");
	ok = f && fscanf(f, "%zu %lu", &cnt, &w) == 2 && cnt == want && w > 0;
	if (f)
		fclose(f);
	if (!ok) {
		snprintf(why, whylen, "informer run did not cache %zu objects and start its watch", want);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rc = bench_proc_main(argc, argv);
	struct bench *b;
	char err[256], kubectl[400], out[600], why[256];
	struct kube_error e;
	int n = 10000;

	if (rc >= 0)
		return rc;
	if (argc == 5 && (!strcmp(argv[1], "--sync") || !strcmp(argv[1], "--sync-lean")))
		return sync_main(argv[2], argv[3], argv[4], !strcmp(argv[1], "--sync-lean"));
	bool hold = argc > 1 && !strcmp(argv[1], "--hold");

	if (hold) {
		argv++;
		argc--;
	}
	if (argc > 1)
		n = atoi(argv[1]);
	b = B = bench_begin("bench_informer");
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl < 0) {
		bench_error(b, "readlink /proc/self/exe: %s", strerror(errno));
		return bench_end(b);
	}
	self[sl] = 0;
	if (cp_up(&CP) < 0) {
		bench_error(b, "the test control plane did not start (tests/controlplane/cp.sh)");
		return bench_end(b);
	}
	struct kube_config *cfg = kube_config_new(CP.apiserver, CP.token, CP.ca);
	struct kube_client *kc = kube_client_new(cfg, err, sizeof(err));
	if (!kc)
		die(err, NULL);
	json_t *crd = json_pack(
		"{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:b, s:b, s:{s:{}}, "
		"s:{s:{s:s, s:b}}}]}}",
		"apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
		"metadata", "name", "benchobjects.bench.galactic.io",
		"spec", "group", "bench.galactic.io", "scope", "Namespaced",
		"names", "plural", "benchobjects", "kind", "BenchObject",
		"versions", "name", "v1", "served", 1, "storage", 1, "subresources", "status",
		"schema", "openAPIV3Schema", "type", "object", "x-kubernetes-preserve-unknown-fields", 1);
	if (kube_create(kc, &CRDS, NULL, crd, NULL, &e))
		die("create CRD", &e);
	json_decref(crd);
	for (int i = 0; i < 10; i++) {
		char ns[32];
		snprintf(ns, sizeof(ns), "bench-%d", i);
		json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", ns);
		if (kube_create(kc, &NSS, NULL, o, NULL, &e))
			die("create namespace", &e);
		json_decref(o);
	}
	for (int i = 0;; i++) { /* wait for the new resource to be served */
		json_t *l = NULL;
		if (kube_list_page(kc, &OBJS, NULL, &(struct kube_list_opts){ .limit = 1 }, &l, &e) == 0) {
			json_decref(l);
			break;
		}
		if (i > 300)
			die("CRD not served", &e);
		usleep(100 * 1000);
	}
	double t0 = now_s();
	pthread_t t[4];
	struct filler f[4];
	for (int i = 0; i < 4; i++) {
		f[i] = (struct filler){ kc, i * n / 4, (i + 1) * n / 4 };
		pthread_create(&t[i], NULL, fill, &f[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("created %d BenchObjects in %.1fs\n", n, now_s() - t0);

	snprintf(kubectl, sizeof(kubectl), "%s/kubectl", CP.bin);
	snprintf(out, sizeof(out), "%s/bench-sync.out", CP.dir);
	char *a_def[] = { self, "--sync", CP.apiserver, CP.token, CP.ca, NULL };
	char *a_lean[] = { self, "--sync-lean", CP.apiserver, CP.token, CP.ca, NULL };
	char *a_k[] = { kubectl, "--kubeconfig", CP.kubeconfig, "get", "benchobjects.bench.galactic.io",
			"-A", "-o", "json", NULL };
	if (hold) { /* For timing both sides by hand (e.g. /usr/bin/time -v): until stdin closes. */
		printf("ours:      %s --sync-lean %s %s %s\nreference: %s --kubeconfig %s get "
		       "benchobjects.bench.galactic.io -A -o json\nclose stdin to tear down\n",
		       self, CP.apiserver, CP.token, CP.ca, kubectl, CP.kubeconfig);
		fflush(stdout);
		while (getchar() != EOF)
			;
		kube_client_free(kc);
		kube_config_free(cfg);
		cp_down(&CP);
		return 0;
	}
	double ti[ROUNDS], tl[ROUNDS], tk[ROUNDS], ri[ROUNDS], rl[ROUNDS], rk[ROUNDS];
	/* Round 0 warms up every side (kubectl's discovery cache, the apiserver's
	 * watch cache, the page cache); rounds 1..ROUNDS count. In turn: lean,
	 * kubectl, default, so each pair is taken back to back. */
	for (int i = 0; i <= ROUNDS; i++) {
		struct bench_proc pl, pk, pd;

		if (run_side(a_lean, out, (size_t)n, &pl, why, sizeof(why)) ||
		    run_side(a_k, NULL, 0, &pk, why, sizeof(why)) ||
		    run_side(a_def, out, (size_t)n, &pd, why, sizeof(why)))
			die(why, NULL);
		printf("%s %d: informer (drop managedFields) %.3f s %.1f MiB | kubectl get -o json %.3f s "
		       "%.1f MiB | informer (keeps managedFields) %.3f s %.1f MiB\n",
		       i ? "run" : "warm-up", i, pl.wall_s, pl.maxrss_mib, pk.wall_s, pk.maxrss_mib,
		       pd.wall_s, pd.maxrss_mib);
		if (!i)
			continue;
		tl[i - 1] = pl.wall_s, rl[i - 1] = pl.maxrss_mib;
		tk[i - 1] = pk.wall_s, rk[i - 1] = pk.maxrss_mib;
		ti[i - 1] = pd.wall_s, ri[i - 1] = pd.maxrss_mib;
	}
	char wl[160], wd[160], wk[160];
	snprintf(wl, sizeof(wl), "informer process, list+watch of %d objects to synced, then exit "
		 "(drop_managed_fields, as the agent's learner runs it)", n);
	snprintf(wd, sizeof(wd), "informer process, same, default options (keeps managedFields)");
	snprintf(wk, sizeof(wk), "kubectl get -A -o json of the same %d objects, stdout to /dev/null", n);
	struct bench_side sl_t = { wl, tl, ROUNDS }, sk_t = { wk, tk, ROUNDS }, sd_t = { wd, ti, ROUNDS };
	struct bench_side sl_r = { wl, rl, ROUNDS }, sk_r = { wk, rk, ROUNDS }, sd_r = { wd, ri, ROUNDS };
	bench_target(b, "time, whole process: informer / kubectl", "s", &sl_t, &sk_t, 0.5);
	bench_target(b, "peak RSS, whole process: informer / kubectl", "MiB", &sl_r, &sk_r, 0.3);
	bench_fact(b, "time, whole process: informer keeping managedFields", "s", wd, ti, ROUNDS);
	bench_fact(b, "peak RSS, whole process: informer keeping managedFields", "MiB", wd, ri, ROUNDS);
	{
		double q[ROUNDS], m[ROUNDS];

		for (int i = 0; i < ROUNDS; i++)
			q[i] = sd_t.samples[i] / sk_t.samples[i], m[i] = sd_r.samples[i] / sk_r.samples[i];
		bench_fact(b, "time ratio to kubectl, informer keeping managedFields", "x", "per pair", q,
			   ROUNDS);
		bench_fact(b, "peak RSS ratio to kubectl, informer keeping managedFields", "x", "per pair",
			   m, ROUNDS);
	}
	kube_client_free(kc);
	kube_config_free(cfg);
	cp_down(&CP);
	return bench_end(b);
}
