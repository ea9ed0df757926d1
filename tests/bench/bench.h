/*
 * What every benchmark shares: its result file and its verdict.
 *
 * A bench compares what we do (ours) with a reference measured in the same
 * invocation the same way (ref), sample by sample: when both sides were run
 * in turn (ours, ref, ours, ref ...) the ratio is the median of the per-pair
 * ratios, so a machine whose speed drifts during the run moves both sides of
 * each pair alike. A target is a bound on that ratio (ours/ref <= target).
 *
 * Everything is written to $BENCH_RESULTS/<bench>.json (default
 * build/bench-results/), also when the bench could not run:
 *   {"bench", "status": "ok"|"missed"|"error", "error"?,
 *    "results": [{"name", "unit", "ours": {"what", "samples", "median"},
 *                 "ref": {...}, "ratio": {"samples", "median"},
 *                 "target": {"max_ratio"}, "met", "missed_by"?,
 *                 "measured": false, "why"?}
 *                or an absolute target {"name", "unit", "ours",
 *                 "target": {"max_value"}, "met", "missed_by"?: {"value", "percent"}}],
 *    "facts": [{"name", "unit", "samples", "median", "what"}]}
 * bench_end() returns the exit status: 0 every target met, 1 a target was
 * missed or not measured, 2 the bench could not run (bench_error()).
 */
#ifndef GALACTIC_TESTS_BENCH_H
#define GALACTIC_TESTS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bench;

struct bench_side {
	const char *what;        /* what was measured on this side, in words */
	const double *samples;
	size_t n;
};

/* name: the bench (file name of the result). Never NULL (aborts on ENOMEM). */
struct bench *bench_begin(const char *name);

/*
 * A target: ours/ref <= max_ratio. Paired when both sides have the same
 * number of samples (sample i of each side taken back to back); otherwise
 * the ratio of the medians. Prints the row; returns whether it was met.
 */
bool bench_target(struct bench *b, const char *name, const char *unit, const struct bench_side *ours,
		  const struct bench_side *ref, double max_ratio);

/*
 * An absolute target: the median of ours <= max_value (unit), for figures
 * that have no reference to compare with (peak RSS under a budget, writes
 * per transition). Written with "target": {"max_value"}; prints the row;
 * returns whether it was met.
 */
bool bench_limit(struct bench *b, const char *name, const char *unit, const struct bench_side *ours,
		 double max_value);

/* A target that could not be measured this run (counts as not met). */
void bench_not_measured(struct bench *b, const char *name, double max_ratio, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A figure without a target (kept in the result file and printed). */
void bench_fact(struct bench *b, const char *name, const char *unit, const char *what,
		const double *samples, size_t n);

/* A check the measurement relies on (routes all present ...): false fails the bench. */
bool bench_check(struct bench *b, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The bench could not run (not root, a tool missing, setup failed): says why. */
void bench_error(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether bench_error() or a failed bench_check() happened. */
bool bench_failed(const struct bench *b);

/* bench_error() unless running as root; returns whether root. */
bool bench_need_root(struct bench *b, const char *why);

/* Writes the result file, prints the verdict, frees b; returns the exit status. */
int bench_end(struct bench *b);

/*
 * BENCH_KEEP=1: copies file (a log the bench is about to remove with its
 * topology) as name into this run's own directory, made on first use
 * (mkdtemp: $TMPDIR or /tmp, "<bench>-keep.XXXXXX") and printed then, so
 * two runs never write the same path. Does nothing without BENCH_KEEP.
 * 0, or -errno (printed).
 */
int bench_keep(struct bench *b, const char *file, const char *name);

/* Median of n values (a sorted copy; 0 when n == 0). */
double bench_median(const double *v, size_t n);

/*
 * Whole-process measurement, the same for every side: a fresh, small copy of
 * the calling bench (re-executed with --bench-measure) forks and execs argv
 * and reports wall time from fork to reap, user+system CPU and the peak RSS
 * of the reaped child (wait4). The trampoline keeps the bench's own memory
 * out of the child's ru_maxrss, which counts pages held before exec.
 * out: the child's stdout goes there (NULL: /dev/null); stderr is kept.
 */
struct bench_proc {
	double wall_s, cpu_s;
	double maxrss_mib;
	int exit_code;           /* the child's exit status, 128+signal if killed */
};
int bench_proc_run(char *const argv[], const char *out, struct bench_proc *r);

/* A "Field:  N kB" line of /proc/PID/status (VmHWM, VmRSS), in KiB; -1 when unreadable. */
double bench_proc_status_kib(pid_t pid, const char *field);
/*
 * First thing in main() of a bench that calls bench_proc_run():
 *   int rc = bench_proc_main(argc, argv); if (rc >= 0) return rc;
 * -1 when this is not the trampoline.
 */
int bench_proc_main(int argc, char **argv);

#endif
