/* Result files and verdicts of the benchmarks (bench.h). */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct bench {
	char name[64];
	json_t *results, *facts, *checks;
	char error[512];
	int missed;
	char keep[512];          /* BENCH_KEEP's directory, once made */
};

static void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "bench: out of memory\n");
		abort();
	}
	return p;
}

struct bench *bench_begin(const char *name)
{
	struct bench *b = must(calloc(1, sizeof(*b)));

	snprintf(b->name, sizeof(b->name), "%s", name);
	b->results = must(json_array());
	b->facts = must(json_array());
	b->checks = must(json_array());
	setvbuf(stdout, NULL, _IOLBF, 0);
	return b;
}

int bench_keep(struct bench *b, const char *file, const char *name)
{
	char to[1100], buf[65536];
	FILE *in, *out;
	size_t n;
	int e = 0;

	if (!getenv("BENCH_KEEP"))
		return 0;
	if (!b->keep[0]) {
		const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";

		snprintf(b->keep, sizeof(b->keep), "%s/%s-keep.XXXXXX", tmp, b->name);
		if (!mkdtemp(b->keep)) {
			e = -errno;
			fprintf(stderr, "BENCH_KEEP: cannot make %s: %s\n", b->keep, strerror(errno));
			b->keep[0] = 0;
			return e;
		}
		printf("BENCH_KEEP: logs kept in %s\n", b->keep);
	}
	snprintf(to, sizeof(to), "%s/%s", b->keep, name);
	if (!(in = fopen(file, "r")) || !(out = fopen(to, "w"))) {
		e = -errno;
		fprintf(stderr, "BENCH_KEEP: cannot copy %s to %s: %s\n", file, to, strerror(errno));
		if (in)
			fclose(in);
		return e;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n) {
			e = -EIO;
			break;
		}
	if (ferror(in))
		e = -EIO;
	fclose(in);
	if (fclose(out) && !e)
		e = -EIO;
	if (e)
		fprintf(stderr, "BENCH_KEEP: copying %s to %s failed\n", file, to);
	else
		printf("BENCH_KEEP: %s\n", to);
	return e;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(const double *v, size_t n)
{
	double *s, m;

	if (!n)
		return 0;
	s = must(malloc(n * sizeof(*s)));
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_d);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static json_t *samples(const double *v, size_t n)
{
	json_t *a = must(json_array());

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}

static json_t *side(const struct bench_side *s)
{
	return must(json_pack("{s:s, s:o, s:f}", "what", s->what, "samples", samples(s->samples, s->n),
			      "median", bench_median(s->samples, s->n)));
}

bool bench_target(struct bench *b, const char *name, const char *unit, const struct bench_side *ours,
		  const struct bench_side *ref, double max_ratio)
{
	bool paired = ours->n == ref->n && ours->n > 0;
	size_t n = paired ? ours->n : 1;
	double *r = must(calloc(n, sizeof(*r))), mo, mr, ratio;
	bool met;
	json_t *row;

	mo = bench_median(ours->samples, ours->n);
	mr = bench_median(ref->samples, ref->n);
	for (size_t i = 0; i < n; i++)
		r[i] = paired ? (ref->samples[i] > 0 ? ours->samples[i] / ref->samples[i] : 0)
			      : (mr > 0 ? mo / mr : 0);
	ratio = bench_median(r, n);
	met = ours->n && ref->n && mr > 0 && ratio <= max_ratio;
	row = must(json_pack("{s:s, s:s, s:b, s:o, s:o, s:{s:o, s:f, s:s}, s:{s:f}, s:b}", "name", name,
			     "unit", unit, "measured", 1, "ours", side(ours), "ref", side(ref), "ratio",
			     "samples", samples(r, n), "median", ratio, "how",
			     paired ? "median of per-pair ratios" : "ratio of medians", "target",
			     "max_ratio", max_ratio, "met", met));
	printf("%s: %s: ours %.4g %s (%s) vs reference %.4g %s (%s), median of %zu%s: ratio %.3f, "
	       "target <= %.2f: ",
	       b->name, name, mo, unit, ours->what, mr, unit, ref->what, ours->n,
	       paired ? " pairs" : "", ratio, max_ratio);
	if (met) {
		printf("met\n");
	} else {
		double by = ratio - max_ratio;

		json_object_set_new(row, "missed_by", must(json_pack("{s:f, s:f}", "ratio", by, "percent",
								      100 * by / max_ratio)));
		printf("NOT met, missed by %.3f (%.0f%% over the target)\n", by, 100 * by / max_ratio);
		b->missed++;
	}
	json_array_append_new(b->results, row);
	free(r);
	return met;
}

bool bench_limit(struct bench *b, const char *name, const char *unit, const struct bench_side *ours,
		 double max_value)
{
	double mo = bench_median(ours->samples, ours->n);
	bool met = ours->n && mo <= max_value;
	json_t *row;

	row = must(json_pack("{s:s, s:s, s:b, s:o, s:{s:f}, s:b}", "name", name, "unit", unit,
			     "measured", 1, "ours", side(ours), "target", "max_value", max_value, "met",
			     met));
	printf("%s: %s: %.4g %s (%s, median of %zu), target <= %.4g %s: ", b->name, name, mo, unit,
	       ours->what, ours->n, max_value, unit);
	if (met) {
		printf("met\n");
	} else {
		double by = mo - max_value;

		json_object_set_new(row, "missed_by",
				    must(json_pack("{s:f, s:f}", "value", by, "percent",
						   max_value > 0 ? 100 * by / max_value : 100.0)));
		printf("NOT met, missed by %.4g %s (%.0f%% over the target)\n", by, unit,
		       max_value > 0 ? 100 * by / max_value : 100.0);
		b->missed++;
	}
	json_array_append_new(b->results, row);
	return met;
}

void bench_not_measured(struct bench *b, const char *name, double max_ratio, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	json_array_append_new(b->results,
			      must(json_pack("{s:s, s:b, s:s, s:{s:f}, s:b}", "name", name, "measured", 0,
					     "why", why, "target", "max_ratio", max_ratio, "met", 0)));
	printf("%s: %s: NOT measured (%s), target <= %.2f counts as not met\n", b->name, name, why, max_ratio);
	b->missed++;
}

void bench_fact(struct bench *b, const char *name, const char *unit, const char *what,
		const double *v, size_t n)
{
	double m = bench_median(v, n);

	json_array_append_new(b->facts, must(json_pack("{s:s, s:s, s:s, s:o, s:f}", "name", name, "unit",
						       unit, "what", what, "samples", samples(v, n),
						       "median", m)));
	printf("%s: %s: %.4g %s (%s%s)\n", b->name, name, m, unit, what, n > 1 ? ", median" : "");
}

bool bench_check(struct bench *b, bool ok, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	json_array_append_new(b->checks, must(json_pack("{s:s, s:b}", "what", what, "ok", ok)));
	if (!ok) {
		printf("%s: check failed: %s\n", b->name, what);
		if (!b->error[0])
			snprintf(b->error, sizeof(b->error), "check failed: %s", what);
	}
	return ok;
}

void bench_error(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	if (b->error[0])
		return; /* the first reason is the one that matters */
	va_start(ap, fmt);
	vsnprintf(b->error, sizeof(b->error), fmt, ap);
	va_end(ap);
	printf("%s: could not run: %s\n", b->name, b->error);
}

bool bench_failed(const struct bench *b)
{
	return b->error[0] != 0;
}

bool bench_need_root(struct bench *b, const char *why)
{
	if (geteuid() == 0)
		return true;
	bench_error(b, "needs root (%s); not root, so nothing was measured", why);
	return false;
}

int bench_end(struct bench *b)
{
	const char *dir = getenv("BENCH_RESULTS");
	const char *status = b->error[0] ? "error" : b->missed ? "missed" : "ok";
	char path[512];
	json_t *doc;
	int rc = b->error[0] ? 2 : b->missed ? 1 : 0;

	dir = dir && *dir ? dir : "build/bench-results";
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.json", dir, b->name);
	doc = must(json_pack("{s:s, s:s, s:o, s:o, s:o}", "bench", b->name, "status", status, "results",
			     b->results, "facts", b->facts, "checks", b->checks));
	if (b->error[0])
		json_object_set_new(doc, "error", json_string(b->error));
	if (json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(6))) {
		fprintf(stderr, "%s: cannot write %s: %s\n", b->name, path, strerror(errno));
		rc = 2;
	}
	json_decref(doc);
	if (b->error[0])
		printf("%s: FAILED: %s\n", b->name, b->error);
	else
		printf("%s: %s (%d target%s not met)\n", b->name, b->missed ? "FAILED" : "ok", b->missed,
		       b->missed == 1 ? "" : "s");
	free(b);
	return rc;
}

/* ---- whole-process measurement ---- */

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* self --bench-measure RESULT OUT PROG ARGS...: fork+exec, wait4, write "wall cpu maxrss_kb code". */
int bench_proc_main(int argc, char **argv)
{
	struct rusage ru;
	double t0;
	int st, code;
	pid_t p;
	FILE *f;

	if (argc < 5 || strcmp(argv[1], "--bench-measure"))
		return -1;
	t0 = mono();
	p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	if (wait4(p, &st, 0, &ru) < 0)
		return 1;
	code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %.6f %ld %d\n", mono() - t0,
		(double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			ru.ru_stime.tv_usec / 1e6,
		ru.ru_maxrss, code);
	return fclose(f) ? 1 : 0;
}

int bench_proc_run(char *const argv[], const char *out, struct bench_proc *r)
{
	char self[512], res[64];
	char *mv[64];
	int k = 0, st, fd;
	long kb;
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t p;
	FILE *f;

	memset(r, 0, sizeof(*r));
	if (sl < 0)
		return -1;
	self[sl] = 0;
	snprintf(res, sizeof(res), "/tmp/bench-proc-%d.XXXXXX", (int)getpid());
	if ((fd = mkstemp(res)) < 0)
		return -1;
	close(fd);
	mv[k++] = self;
	mv[k++] = "--bench-measure";
	mv[k++] = res;
	mv[k++] = (char *)(out ? out : "/dev/null");
	for (int i = 0; argv[i] && k < 63; i++)
		mv[k++] = argv[i];
	mv[k] = NULL;
	p = fork();
	if (p < 0) {
		unlink(res);
		return -1;
	}
	if (p == 0) {
		execv(self, mv);
		_exit(127);
	}
	if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		unlink(res);
		return -1;
	}
	f = fopen(res, "r");
	if (!f || fscanf(f, "%lf %lf %ld %d", &r->wall_s, &r->cpu_s, &kb, &r->exit_code) != 4) {
		if (f)
			fclose(f);
		unlink(res);
		return -1;
	}
	fclose(f);
	unlink(res);
	r->maxrss_mib = (double)kb / 1024.0;
	return 0;
}

double bench_proc_status_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	double v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':')
			v = strtod(line + fl + 1, NULL);
	fclose(f);
	return v;
}
