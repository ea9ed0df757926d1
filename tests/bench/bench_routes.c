/*
 * bench_routes: programming remote seg6 encap routes into one VPC table.
 *
 *  1. 10,000 routes, process to process: a program that opens galactic's
 *     kernel backend on the namespace and applies the state (a full
 *     reconcile: dump, diff, batched apply, every write acknowledged) and exits (this
 *     program's --apply mode), against `ip -n NS -6 -batch FILE` adding the
 *     same routes; both started and timed the same way (tests/bench/bench.h,
 *     fork to reap, no shell), in the same namespace, from the same starting
 *     point (table flushed, VPC basics in place), one warm-up round, then
 *     ROUNDS rounds back to back. Target: median per-round ratio <= 0.7.
 *  2. 50,000 routes: all present afterwards (counted by a dump and by the
 *     backend's observe), none lost to ENOMEM; prints the retries it took.
 *
 * Runs in its own network namespace (gb<pid>-n), removed at exit. Results in
 * build/bench-results/bench_routes.json.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/nl/objects.h"
#include "tests/bench/bench.h"

#define TABLE 16385
#define ROUNDS 15

static char ns[64];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void cleanup(void)
{
	if (ns[0])
		sh("ip netns del %s 2>/dev/null", ns);
}

static void remote_prefix(unsigned k, char *buf, size_t n)
{
	snprintf(buf, n, "fd00:a::%x:%x/128", (k >> 16) + 1, k & 0xffff);
}

static void build_state(struct gdp_state *st, unsigned n)
{
	struct gdp_vpc v = { .id = "vpcA", .arg = 1, .table = TABLE, .n_prefixes = 1 };
	struct gdp_remote r = { .vpc_ix = gdp_vpc_ix("vpcA") };
	char pf[64];
	unsigned k;

	gdp_state_init(st);
	memcpy(st->node.block, (uint8_t[]){ 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, 6);
	st->node.node_id = 1;
	snprintf(st->node.uplink, sizeof(st->node.uplink), "up0");
	gdp_prefix_parse("fd00:a::/64", &v.prefixes[0]);
	gdp_state_add_vpc(st, &v);
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.sid);
	for (k = 0; k < n; k++) {
		remote_prefix(k, pf, sizeof(pf));
		gdp_prefix_parse(pf, &r.prefix);
		gdp_state_add_remote(st, &r);
	}
}

struct cnt {
	long n;
};

static int cnt_cb(const struct nlmsghdr *h, void *arg)
{
	struct gnl_route r;

	if (gnl_route_parse(h, &r) == 0 && r.table == TABLE && r.encap == GNL_ENCAP_SEG6 &&
	    r.protocol == GDP_RTPROT_DEFAULT)
		((struct cnt *)arg)->n++;
	return 0;
}

static long count_encap(struct gnl_sock *nl)
{
	struct cnt c;
	struct nl_msg *m;
	int rc;

	gnl_route_dump_msg(&m, AF_INET6, 0);
	do {
		c.n = 0;
		rc = gnl_dump(nl, m, cnt_cb, &c);
	} while (rc == -EAGAIN);
	nlmsg_free(m);
	return rc ? -1 : c.n;
}

static void flush(void)
{
	sh("ip -n %s -6 route flush table %d 2>/dev/null", ns, TABLE);
}

/* --apply NS N: the galactic side as a whole process. */
static int apply_main(const char *netns, unsigned n)
{
	struct gdp_backend *be;
	struct gdp_results res;
	struct gdp_state st;
	char err[512];
	int rc;

	build_state(&st, n);
	if (gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = netns }, err, sizeof(err))) {
		fprintf(stderr, "bench_routes --apply: %s\n", err);
		return 1;
	}
	gdp_results_init(&res);
	rc = gdp_kernel_backend.apply(be, &st, &res);
	printf("%lu\n", res.retries);
	gdp_results_free(&res);
	gdp_kernel_backend.close(be);
	gdp_state_free(&st);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct gdp_backend *be;
	struct gdp_state s50, empty;
	struct gdp_results res;
	struct gnl_sock *nl;
	struct bench *b;
	char err[512], file[] = "/tmp/bench-routes.XXXXXX", pf[64], n10[16], out[64];
	double ip_s[ROUNDS], gal_s[ROUNDS], ip_c[ROUNDS], gal_c[ROUNDS], retries[ROUNDS], t0, t;
	unsigned long retries50;
	long n;
	int r, fd;
	FILE *f;
	unsigned k;

	if ((r = bench_proc_main(argc, argv)) >= 0)
		return r;
	if (argc == 4 && !strcmp(argv[1], "--apply"))
		return apply_main(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
	b = bench_begin("bench_routes");
	if (!bench_need_root(b, "network namespaces, routes"))
		return bench_end(b);
	snprintf(ns, sizeof(ns), "gb%d-n", (int)getpid());
	atexit(cleanup);
	if (sh("ip netns add %s && ip -n %s link set lo up && ip -n %s link add up0 type veth peer name up0p && "
	       "ip -n %s link set up0 up && ip -n %s link set up0p up && ip -n %s addr add 2001:db8:f::1/64 dev up0 nodad && "
	       "ip -n %s -6 route add fcbb:bb00:1:2::/64 via 2001:db8:f::2 dev up0", ns, ns, ns, ns, ns, ns, ns)) {
		bench_error(b, "cannot build namespace %s", ns);
		return bench_end(b);
	}
	/* Reference input: the same 10,000 routes as ip -batch commands. */
	fd = mkstemp(file);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		bench_error(b, "mkstemp: %s", strerror(errno));
		return bench_end(b);
	}
	for (k = 0; k < 10000; k++) {
		remote_prefix(k, pf, sizeof(pf));
		fprintf(f, "route add %s encap seg6 mode encap.red segs fcbb:bb00:1:2:e001:: dev up0 table %d proto %d\n",
			pf, TABLE, GDP_RTPROT_DEFAULT);
	}
	fclose(f);

	build_state(&s50, 50000);
	build_state(&empty, 0);
	if (gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)) ||
	    gnl_open(&nl, ns, err, sizeof(err))) {
		bench_error(b, "%s", err);
		unlink(file);
		return bench_end(b);
	}
	gdp_results_init(&res);
	snprintf(n10, sizeof(n10), "10000");
	snprintf(out, sizeof(out), "/tmp/bench-routes-%d.out", (int)getpid());
	char *a_ip[] = { "ip", "-n", ns, "-6", "-batch", file, NULL };
	char *a_gal[] = { "/proc/self/exe", "--apply", ns, n10, NULL };
	char self[512];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (sl > 0) {
		self[sl] = 0;
		a_gal[0] = self;
	}
	for (r = 0; r <= ROUNDS && !bench_failed(b); r++) {
		struct bench_proc pi, pg;

		/* Same start for both: table empty, VPC basics (rules, table) in place. */
		flush();
		gdp_kernel_backend.apply(be, &empty, &res);
		flush();
		if (bench_proc_run(a_ip, NULL, &pi) || pi.exit_code) {
			bench_error(b, "ip -6 -batch failed (exit %d)", pi.exit_code);
			break;
		}
		n = count_encap(nl);
		if (!bench_check(b, n == 10000, "round %d: ip -6 -batch left %ld of 10000 routes", r, n))
			break;
		flush();
		gdp_kernel_backend.apply(be, &empty, &res);
		flush();
		if (bench_proc_run(a_gal, out, &pg) || pg.exit_code) {
			bench_error(b, "galactic apply process failed (exit %d)", pg.exit_code);
			break;
		}
		n = count_encap(nl);
		if (!bench_check(b, n == 10000, "round %d: galactic apply left %ld of 10000 routes", r, n))
			break;
		f = fopen(out, "r");
		if (!f || fscanf(f, "%lf", &retries[r ? r - 1 : 0]) != 1)
			retries[r ? r - 1 : 0] = -1;
		if (f)
			fclose(f);
		printf("%s %d: ip -6 -batch 10000 routes %.3f s (cpu %.3f s) | galactic apply process %.3f s "
		       "(cpu %.3f s, %.0f ENOMEM retries): %.2fx\n", r ? "round" : "warm-up", r, pi.wall_s, pi.cpu_s,
		       pg.wall_s, pg.cpu_s, retries[r ? r - 1 : 0], pg.wall_s / pi.wall_s);
		if (r) {
			ip_s[r - 1] = pi.wall_s;
			gal_s[r - 1] = pg.wall_s;
			ip_c[r - 1] = pi.cpu_s;
			gal_c[r - 1] = pg.cpu_s;
		}
	}
	unlink(out);
	if (!bench_failed(b)) {
		struct bench_side sg = { "galactic kernel backend, whole process: open, full reconcile of "
					 "10,000 seg6 encap routes (dump, diff, batched apply, every write acknowledged), exit",
					 gal_s, ROUNDS };
		struct bench_side si = { "ip -n NS -6 -batch of the same 10,000 route adds, whole process",
					 ip_s, ROUNDS };

		double q[ROUNDS];

		bench_target(b, "10,000 routes: galactic / ip -6 -batch (wall, process to process)", "s", &sg,
			     &si, 0.7);
		for (int i = 0; i < ROUNDS; i++)
			q[i] = gal_c[i] / ip_c[i];
		bench_fact(b, "10,000 routes: galactic process CPU (user+system)", "s", "same runs", gal_c, ROUNDS);
		bench_fact(b, "10,000 routes: ip -6 -batch process CPU (user+system)", "s", "same runs", ip_c,
			   ROUNDS);
		bench_fact(b, "10,000 routes: CPU ratio galactic / ip", "x", "per pair", q, ROUNDS);
		bench_fact(b, "10,000 routes: galactic ENOMEM retries", "", "per run (each backs off 1 ms+)",
			   retries, ROUNDS);
	}

	flush();
	t0 = now();
	if (gdp_kernel_backend.apply(be, &s50, &res))
		bench_error(b, "apply of 50,000 routes failed");
	t = now() - t0;
	retries50 = res.retries;
	n = count_encap(nl);
	r = gdp_kernel_backend.observe(be, &s50, &res);
	bench_check(b, n == 50000 && r == 0, "50,000 routes: %ld present, observe pending %d, ENOMEM retries %lu, "
		    "failed %lu", n, r, retries50, res.failed);
	bench_fact(b, "50,000 routes, in-process apply", "s", "galactic kernel backend apply (all present)", &t, 1);
	flush();
	unlink(file);
	gdp_results_free(&res);
	gdp_kernel_backend.close(be);
	gnl_close(nl);
	gdp_state_free(&s50);
	gdp_state_free(&empty);
	return bench_end(b);
}
