/*
 * bench_routes: programming remote seg6 encap routes into one VPC table.
 *
 *  1. 10,000 routes: galactic's kernel backend (a full reconcile: dump, diff,
 *     batched apply) against `ip -6 -batch` adding the same routes, in the
 *     same run and namespace, alternating, best of ROUNDS each. Prints the
 *     ratio (target <= 1.2).
 *  2. 50,000 routes: all present afterwards (counted by a dump and by the
 *     backend's observe), none lost to ENOMEM; prints the retries it took.
 *
 * Runs in its own network namespace (gb<pid>-n), removed at exit.
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

#define TABLE 16385
#define ROUNDS 3

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
	struct gdp_remote r = { .vpc = "vpcA" };
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

int main(void)
{
	struct gdp_backend *be;
	struct gdp_state s10, s50, empty;
	struct gdp_results res;
	struct gnl_sock *nl;
	char err[512], file[] = "/tmp/bench-routes.XXXXXX", pf[64];
	double best_ip = 1e9, best_gal = 1e9, t0, t;
	unsigned long retries50;
	long n;
	int r, fd, fails = 0;
	FILE *f;
	unsigned k;

	if (geteuid() != 0) {
		printf("bench_routes: needs root (network namespaces)\n");
		return 0;
	}
	snprintf(ns, sizeof(ns), "gb%d-n", (int)getpid());
	atexit(cleanup);
	if (sh("ip netns add %s && ip -n %s link set lo up && ip -n %s link add up0 type veth peer name up0p && "
	       "ip -n %s link set up0 up && ip -n %s link set up0p up && ip -n %s addr add 2001:db8:f::1/64 dev up0 nodad && "
	       "ip -n %s -6 route add fcbb:bb00:1:2::/64 via 2001:db8:f::2 dev up0", ns, ns, ns, ns, ns, ns, ns)) {
		fprintf(stderr, "bench_routes: cannot build namespace %s\n", ns);
		return 1;
	}
	/* Reference input: the same 10,000 routes as ip -batch commands. */
	fd = mkstemp(file);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		return 1;
	for (k = 0; k < 10000; k++) {
		remote_prefix(k, pf, sizeof(pf));
		fprintf(f, "route add %s encap seg6 mode encap.red segs fcbb:bb00:1:2:e001:: dev up0 table %d proto %d\n",
			pf, TABLE, GDP_RTPROT_DEFAULT);
	}
	fclose(f);

	build_state(&s10, 10000);
	build_state(&s50, 50000);
	build_state(&empty, 0);
	if (gdp_kernel_backend.open(&be, &(struct gdp_backend_opts){ .netns = ns }, err, sizeof(err)) ||
	    gnl_open(&nl, ns, err, sizeof(err))) {
		fprintf(stderr, "bench_routes: %s\n", err);
		return 1;
	}
	gdp_results_init(&res);

	for (r = 0; r < ROUNDS; r++) {
		flush();
		t0 = now();
		if (sh("ip -n %s -6 -batch %s", ns, file))
			fails++;
		t = now() - t0;
		n = count_encap(nl);
		printf("round %d: ip -6 -batch 10000 routes: %.3f s (%ld present)\n", r + 1, t, n);
		if (n != 10000)
			fails++;
		best_ip = t < best_ip ? t : best_ip;

		flush();
		gdp_kernel_backend.apply(be, &empty, &res); /* VPC basics only */
		flush();
		t0 = now();
		if (gdp_kernel_backend.apply(be, &s10, &res))
			fails++;
		t = now() - t0;
		n = count_encap(nl);
		printf("round %d: galactic apply 10000 routes: %.3f s (%ld present, %lu ENOMEM retries)\n", r + 1, t,
		       n, res.retries);
		if (n != 10000)
			fails++;
		best_gal = t < best_gal ? t : best_gal;
	}
	printf("10000 routes: galactic %.3f s vs ip -6 -batch %.3f s: ratio %.2fx (target <= 1.20)\n", best_gal,
	       best_ip, best_gal / best_ip);

	flush();
	t0 = now();
	if (gdp_kernel_backend.apply(be, &s50, &res))
		fails++;
	t = now() - t0;
	retries50 = res.retries;
	n = count_encap(nl);
	r = gdp_kernel_backend.observe(be, &s50, &res);
	printf("50000 routes: galactic %.3f s (%.0f routes/s), %ld present, observe pending %d, ENOMEM retries %lu, failed %lu\n",
	       t, 50000 / t, n, r, retries50, res.failed);
	if (n != 50000 || r != 0)
		fails++;
	flush();
	unlink(file);
	gdp_results_free(&res);
	gdp_kernel_backend.close(be);
	gnl_close(nl);
	gdp_state_free(&s10);
	gdp_state_free(&s50);
	gdp_state_free(&empty);
	printf("bench_routes: %s\n", fails ? "FAILED" : "ok");
	return fails ? 1 : 0;
}
