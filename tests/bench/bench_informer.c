/*
 * Scale benchmark: list+watch of N (default 10,000) custom objects by a
 * common/ informer, against `kubectl get -o json` of the same list, in the
 * same run against the same real control plane.
 *
 * Each side runs in its own fresh process; wall time from exec to done and
 * peak RSS (wait4 ru_maxrss) are measured the same way for both, 3 runs
 * each, medians printed with the ratio informer/kubectl.
 *   bench_informer [N]
 */
#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"
#include "tests/lib/cp.h"

#include <fcntl.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

static void die(const char *what, const struct kube_error *e)
{
	fprintf(stderr, "bench_informer: %s: %s\n", what, e ? e->message : "");
	exit(1);
}

/* --sync mode: one informer, all namespaces; prints seconds to synced and objects. */
static int sync_main(const char *server, const char *token, const char *ca, bool lean)
{
	char err[256];
	struct kube_config *cfg = kube_config_new(server, token, ca);
	struct kube_client *kc = kube_client_new(cfg, err, sizeof(err));
	struct informer_opts o = { .res = OBJS, .page_size = 500, .drop_managed_fields = lean };
	struct informer *inf;
	double t0 = now_s();

	if (!kc)
		return 1;
	glog_set_level(GLOG_WARN);
	inf = informer_new(kc, &o);
	if (!inf || informer_start(inf) || !informer_wait_synced(inf, 300))
		return 1;
	printf("%.3f %zu\n", now_s() - t0, kube_store_len(informer_store(inf)));
	fflush(stdout);
	/* The watch is running: stay a moment so RSS includes the streaming side. */
	usleep(500 * 1000);
	informer_free(inf);
	kube_client_free(kc);
	kube_config_free(cfg);
	return 0;
}

struct run {
	double secs;
	long maxrss_kb;
	char out[256];
};

/*
 * ru_maxrss of a child counts the pages it shared with its parent before exec,
 * so a fat parent inflates it. Both sides are therefore started from a fresh,
 * small copy of this program ("--measure"), which forks + execs the target and
 * writes "seconds maxrss_kb" to a file.
 */
static int measure_main(int argc, char **argv)
{
	/* --measure RESULT OUTFILE prog args... */
	double t0 = now_s();
	struct rusage ru;
	int st;
	pid_t p;
	(void)argc;
	p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		execv(argv[4], argv + 4);
		_exit(127);
	}
	if (wait4(p, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %ld\n", now_s() - t0, ru.ru_maxrss);
	fclose(f);
	return 0;
}

static char self[512], resfile[600];

/* Runs argv through --measure, stdout to outfile (or /dev/null). */
static int measure(char *const argv[], const char *outfile, struct run *r)
{
	char *mv[32];
	int k = 0, st;
	pid_t p;
	mv[k++] = self;
	mv[k++] = "--measure";
	mv[k++] = resfile;
	mv[k++] = (char *)(outfile ? outfile : "/dev/null");
	for (int i = 0; argv[i] && k < 31; i++)
		mv[k++] = argv[i];
	mv[k] = NULL;
	p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		execv(self, mv);
		_exit(127);
	}
	if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	FILE *f = fopen(resfile, "r");
	if (!f || fscanf(f, "%lf %ld", &r->secs, &r->maxrss_kb) != 2) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	r->out[0] = 0;
	if (outfile) {
		f = fopen(outfile, "r");
		if (f && fgets(r->out, sizeof(r->out), f))
			r->out[strcspn(r->out, "\n")] = 0;
		if (f)
			fclose(f);
	}
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

static int cmp_run(const void *a, const void *b)
{
	double d = ((const struct run *)a)->secs - ((const struct run *)b)->secs;
	return d < 0 ? -1 : d > 0;
}

static int cmp_rss(const void *a, const void *b)
{
	long d = ((const struct run *)a)->maxrss_kb - ((const struct run *)b)->maxrss_kb;
	return d < 0 ? -1 : d > 0;
}

int main(int argc, char **argv)
{
	struct cp cp;
	char err[256], kubectl[400], out[600], errline[256];
	struct kube_error e;
	int n = 10000;

	if (argc == 5 && (!strcmp(argv[1], "--sync") || !strcmp(argv[1], "--sync-lean")))
		return sync_main(argv[2], argv[3], argv[4], !strcmp(argv[1], "--sync-lean"));
	if (argc > 4 && !strcmp(argv[1], "--measure"))
		return measure_main(argc, argv);
	if (argc > 1)
		n = atoi(argv[1]);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl < 0)
		return 1;
	self[sl] = 0;
	if (cp_up(&cp) < 0)
		return 1;
	struct kube_config *cfg = kube_config_new(cp.apiserver, cp.token, cp.ca);
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

	snprintf(kubectl, sizeof(kubectl), "%s/kubectl", cp.bin);
	snprintf(out, sizeof(out), "%s/bench-sync.out", cp.dir);
	snprintf(resfile, sizeof(resfile), "%s/bench-measure.out", cp.dir);
	struct run inf[3], kctl[3], lean[3];
	for (int i = 0; i < 3; i++) {
		char *a1[] = { self, "--sync", cp.apiserver, cp.token, cp.ca, NULL };
		char *a3[] = { self, "--sync-lean", cp.apiserver, cp.token, cp.ca, NULL };
		char *a2[] = { kubectl, "--kubeconfig", cp.kubeconfig, "get", "benchobjects.bench.galactic.io",
			       "-A", "-o", "json", NULL };
		if (measure(a1, out, &inf[i]) < 0)
			die("informer run failed", NULL);
		double s;
		size_t cnt;
		if (sscanf(inf[i].out, "%lf %zu", &s, &cnt) != 2 || cnt != (size_t)n) {
			snprintf(errline, sizeof(errline), "informer cached '%s', want %d", inf[i].out, n);
			die(errline, NULL);
		}
		double proc = inf[i].secs;
		inf[i].secs = s; /* time to synced cache inside the process */
		if (measure(a2, NULL, &kctl[i]) < 0)
			die("kubectl run failed", NULL);
		if (measure(a3, out, &lean[i]) < 0 || sscanf(lean[i].out, "%lf %zu", &s, &cnt) != 2 ||
		    cnt != (size_t)n)
			die("lean informer run failed", NULL);
		lean[i].secs = s;
		printf("run %d: informer without managedFields synced %.3fs rss %.1f MiB\n", i + 1, s,
		       lean[i].maxrss_kb / 1024.0);
		printf("run %d: informer synced %.3fs (process %.3fs incl. 0.5s linger) rss %.1f MiB | "
		       "kubectl get -o json %.3fs rss %.1f MiB\n", i + 1, inf[i].secs, proc,
		       inf[i].maxrss_kb / 1024.0, kctl[i].secs, kctl[i].maxrss_kb / 1024.0);
	}
	qsort(inf, 3, sizeof(inf[0]), cmp_run);
	qsort(kctl, 3, sizeof(kctl[0]), cmp_run);
	double ti = inf[1].secs, tk = kctl[1].secs;
	qsort(inf, 3, sizeof(inf[0]), cmp_rss);
	qsort(kctl, 3, sizeof(kctl[0]), cmp_rss);
	double ri = inf[1].maxrss_kb / 1024.0, rk = kctl[1].maxrss_kb / 1024.0;
	qsort(lean, 3, sizeof(lean[0]), cmp_run);
	double tl = lean[1].secs;
	qsort(lean, 3, sizeof(lean[0]), cmp_rss);
	double rl = lean[1].maxrss_kb / 1024.0;
	printf("bench_informer: %d objects, medians of 3: informer list+watch synced in %.3fs, peak RSS %.1f MiB; "
	       "kubectl get -o json %.3fs, peak RSS %.1f MiB; ratio informer/kubectl: time %.2f, RSS %.2f\n",
	       n, ti, ri, tk, rk, ti / tk, ri / rk);
	printf("bench_informer: informer dropping managedFields: synced %.3fs, peak RSS %.1f MiB; "
	       "ratio to kubectl: time %.2f, RSS %.2f\n", tl, rl, tl / tk, rl / rk);
	printf("bench_informer: 1 passed, 0 failed\n");
	kube_client_free(kc);
	kube_config_free(cfg);
	cp_down(&cp);
	return 0;
}
