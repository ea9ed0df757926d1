/*
 * Lease-based leader election against the real kube-apiserver, with separate
 * processes contending for one Lease (15 s duration, 10 s renew deadline, 2 s
 * retry). Each contender writes to a ConfigMap every 100 ms while
 * leader_is_leader() and logs "<epoch ms> <id> <event>" lines to a shared file.
 *   1. A leads; B waits.
 *   2. A's election traffic is cut (a proxy), its data writes are not: A must
 *      stop writing on its own within the renew deadline; B takes over.
 *   3. B is killed (SIGKILL): A takes over within the lease duration.
 *   4. A shuts down cleanly and releases the lease: C takes over at once.
 * From the log: no second holds writes of two identities.
 * renew_one_put: a holder renews with one PUT per retry period (client-go's
 * optimistic fast path, no GET); a write by someone else in between costs
 * one refused PUT, then the GET and PUT of the slow path, and no term.
 */
#include "common/json.h"
#include "common/leader.h"
#include "common/log.h"
#include "common/metrics.h"
#include "tests/lib/common_e2e.h"
#include "tests/lib/common_proxy.h"
#include "tests/lib/gtest.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct cp cp;
static char logpath[512];
static int logfd = -1;
static const char *my_id;
static volatile sig_atomic_t term;

static void logev(const char *id, const char *ev)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%.0f %s %s\n", ce_wall_ms(), id, ev);
	if (write(logfd, line, (size_t)n) != n)
		_exit(3);
}

static void started(void *ud) { (void)ud; logev(my_id, "lead"); }
static void stopped(void *ud) { (void)ud; logev(my_id, "stop"); }
static void on_term(int s) { (void)s; term = 1; }

/* Runs in a fresh process image (exec), so it holds no fd of the test's proxy. */
static void contender(const char *id, const char *election_server)
{
	char err[256];
	logfd = open(logpath, O_WRONLY | O_APPEND);
	if (logfd < 0)
		_exit(4);
	struct kube_config *ce = kube_config_new(election_server, cp.token, cp.ca);
	struct kube_config *cw = kube_config_new(cp.apiserver, cp.token, cp.ca);
	struct kube_client *ke = kube_client_new(ce, err, sizeof(err));
	struct kube_client *kw = kube_client_new(cw, err, sizeof(err));
	struct leader_opts o = { .ns = "default", .name = "e2e-leader", .identity = id,
				 .on_started = started, .on_stopped = stopped };
	struct leader *l;

	my_id = id;
	/* The partitioned contender's failed renewals are expected: keep the log short. */
	glog_set_level(GLOG_ERROR);
	signal(SIGTERM, on_term);
	if (!ke || !kw || !(l = leader_new(ke, &o)) || leader_start(l))
		_exit(2);
	while (!term) {
		if (leader_is_leader(l)) {
			struct kube_error e;
			json_t *p = json_pack("{s:{s:s}}", "data", "holder", id), *out = NULL;
			if (kube_merge_patch(kw, &CE_CONFIGMAPS, "default", "e2e-leader-writes", NULL, p,
					     id, &out, &e) == 0)
				logev(id, "write");
			json_decref(out);
			json_decref(p);
		}
		usleep(100 * 1000);
	}
	/* Clean shutdown: stop writing, let in-flight writes land, then release. */
	usleep(1000 * 1000);
	leader_stop(l);
	logev(id, "exit");
	leader_free(l);
	kube_client_free(ke);
	kube_client_free(kw);
	kube_config_free(ce);
	kube_config_free(cw);
	_exit(0);
}

struct ev {
	double ms;
	char id[8], what[8];
};

static int read_log(struct ev *evs, int max)
{
	FILE *f = fopen(logpath, "r");
	int n = 0;
	if (!f)
		return 0;
	while (n < max && fscanf(f, "%lf %7s %7s", &evs[n].ms, evs[n].id, evs[n].what) == 3)
		n++;
	fclose(f);
	return n;
}

static pid_t spawn(const char *id, const char *server)
{
	pid_t p = fork();
	ck_assert_int_ge(p, 0);
	if (p == 0) {
		char *argv[] = { "test_common_leader", "--contender", (char *)id, (char *)server,
				 cp.apiserver, cp.token, cp.ca, logpath, NULL };
		execv("/proc/self/exe", argv);
		_exit(5);
	}
	return p;
}

/* Last `what` by id in [from, to). */
static double last_event(const char *id, const char *what, double from, double to)
{
	static struct ev evs[4096];
	int n = read_log(evs, 4096);
	double last = -1;
	for (int i = 0; i < n; i++)
		if (evs[i].ms >= from && evs[i].ms < to && !strcmp(evs[i].id, id) &&
		    !strcmp(evs[i].what, what) && evs[i].ms > last)
			last = evs[i].ms;
	return last;
}

/* Time (epoch ms) of the first `what` by id after `after`, waiting up to timeout_s. */
static double wait_event(const char *id, const char *what, double after, double timeout_s)
{
	static struct ev evs[4096];
	double end = ce_now() + timeout_s;
	do {
		int n = read_log(evs, 4096);
		for (int i = 0; i < n; i++)
			if (evs[i].ms >= after && !strcmp(evs[i].id, id) && !strcmp(evs[i].what, what))
				return evs[i].ms;
		usleep(50 * 1000);
	} while (ce_now() < end);
	return -1;
}

static int cmp_ev(const void *a, const void *b)
{
	double d = ((const struct ev *)a)->ms - ((const struct ev *)b)->ms;
	return d < 0 ? -1 : d > 0;
}

START_TEST(lease_handover)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct kube_error e;
	struct tproxy *px = tproxy_start(ce_port(&cp));
	char purl[64];
	json_t *cm = ce_cm("default", "e2e-leader-writes", "holder", "none");
	static struct ev evs[4096];
	int st;

	ck_assert_int_eq(kube_create(kc, &CE_CONFIGMAPS, "default", cm, NULL, &e), 0);
	json_decref(cm);
	snprintf(logpath, sizeof(logpath), "%s/leader-events.log", cp.dir);
	logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
	ck_assert_int_ge(logfd, 0);
	snprintf(purl, sizeof(purl), "https://127.0.0.1:%d", tproxy_port(px));

	double t_start = ce_wall_ms();
	pid_t a = spawn("A", purl);
	double a_lead = wait_event("A", "lead", t_start, 20);
	ck_assert_msg(a_lead > 0, "A never led");
	pid_t b = spawn("B", cp.apiserver);
	usleep(4000 * 1000);
	ck_assert_msg(wait_event("B", "lead", 0, 0) < 0, "B led while A renewed");

	/* 2. Partition A's election client. */
	double t_cut = ce_wall_ms();
	tproxy_cut(px);
	double b_lead = wait_event("B", "lead", t_cut, 30);
	double a_stop = wait_event("A", "stop", t_cut, 5);
	double a_last = last_event("A", "write", t_cut, 1e18);
	if (a_stop < 0 || b_lead < 0) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "grep -v write %s", logpath);
		if (system(cmd) != 0)
			printf("no log\n");
	}
	ck_assert_msg(a_stop > 0, "A did not stop leading when it could not renew");
	ck_assert_msg(b_lead > 0, "B did not take over");
	ck_assert_msg(a_stop < b_lead, "A stopped at %.0f, after B led at %.0f", a_stop, b_lead);
	ck_assert_msg(a_last > 0 && a_last < b_lead, "A wrote at %.0f, B led at %.0f", a_last, b_lead);
	printf("partition: A's last write %.2fs after the cut (renew deadline 10s), A stopped leading %.2fs after it "
	       "(lease 15s: renewing late from 10s), B led %.2fs after it\n", (a_last - t_cut) / 1e3,
	       (a_stop - t_cut) / 1e3, (b_lead - t_cut) / 1e3);
	/* writes stop at the renew deadline; the term (renewing late, no
	 * writes) ends lease_duration after the last renewal, which started
	 * before the cut */
	ck_assert_double_le((a_last - t_cut) / 1e3, 10 + 0.5);
	ck_assert_double_le((a_stop - t_cut) / 1e3, 15 + 0.5);
	tproxy_restore(px);
	usleep(3000 * 1000);

	/* 3. Kill the leader. */
	double t_kill = ce_wall_ms();
	kill(b, SIGKILL);
	waitpid(b, &st, 0);
	double a_lead2 = wait_event("A", "lead", t_kill, 30);
	ck_assert_msg(a_lead2 > 0, "A did not take over from the killed leader");
	double takeover = (a_lead2 - t_kill) / 1e3;
	printf("kill: leadership moved %.2fs after SIGKILL of the leader (lease 15s, retry 2s)\n", takeover);
	/* Bound: the follower sees the last renewal up to one retry (2.4 s) late and
	 * takes over one lease duration after that: 17.4 s + request latency. */
	ck_assert_double_le(takeover, 15 + 2 * 1.2 + 1.5);

	/* 4. Clean shutdown releases the lease. */
	pid_t c = spawn("C", cp.apiserver);
	usleep(3000 * 1000);
	double t_term = ce_wall_ms();
	kill(a, SIGTERM);
	waitpid(a, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	double a_exit = wait_event("A", "exit", t_term, 1);
	double c_lead = wait_event("C", "lead", t_term, 10);
	ck_assert_msg(a_exit > 0 && c_lead > 0, "C did not take over after A released");
	printf("release: C led %.2fs after A released the lease\n", (c_lead - a_exit) / 1e3);
	ck_assert_double_le((c_lead - a_exit) / 1e3, 2 * 1.2 + 0.5);
	usleep(1000 * 1000);
	kill(c, SIGTERM);
	waitpid(c, &st, 0);

	/* Writes: one identity per second, and the leader changes only across gaps. */
	int n = read_log(evs, 4096), writes = 0, handovers = 0;
	qsort(evs, (size_t)n, sizeof(evs[0]), cmp_ev);
	double last_ms = 0, min_gap = 1e18;
	char last_id[8] = "";
	long last_sec = -1;
	for (int i = 0; i < n; i++) {
		if (strcmp(evs[i].what, "write"))
			continue;
		long sec = (long)(evs[i].ms / 1000);
		writes++;
		if (last_id[0] && strcmp(last_id, evs[i].id)) {
			handovers++;
			ck_assert_msg(sec != last_sec, "%s and %s both wrote in second %ld", last_id, evs[i].id, sec);
			if (evs[i].ms - last_ms < min_gap)
				min_gap = evs[i].ms - last_ms;
		}
		snprintf(last_id, sizeof(last_id), "%s", evs[i].id);
		last_sec = sec;
		last_ms = evs[i].ms;
	}
	/* Check every second bucket, not only neighbours (A,B,A in one second). */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n && evs[j].ms < evs[i].ms + 1000; j++)
			if (!strcmp(evs[i].what, "write") && !strcmp(evs[j].what, "write") &&
			    (long)(evs[i].ms / 1000) == (long)(evs[j].ms / 1000))
				ck_assert_msg(!strcmp(evs[i].id, evs[j].id), "two writers in second %ld",
					      (long)(evs[i].ms / 1000));
	printf("writes: %d by leaders, %d handovers, smallest gap between two leaders' writes %.2fs\n",
	       writes, handovers, min_gap / 1e3);
	ck_assert_int_eq(handovers, 3); /* A->B, B->A, A->C */
	ck_assert_int_gt(writes, 100);
	close(logfd);
	tproxy_stop(px);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

static const struct kube_resource LEASES = { "coordination.k8s.io", "v1", "leases", true };
static atomic_int renew_stops;

static void renew_stopped(void *ud) { (void)ud; atomic_fetch_add(&renew_stops, 1); }

static double reqs(struct metrics *reg, const char *lv)
{
	return metric_value(metric_lookup(reg, "galactic_kube_requests_total"), lv);
}

START_TEST(renew_one_put)
{
	struct kube_config *cfg, *cfg2;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg), *other = ce_client_token(&cp, NULL, &cfg2);
	struct metrics *reg = metrics_new();
	struct leader_opts o = { .ns = "default", .name = "e2e-renew", .identity = "R", .on_stopped = renew_stopped };
	struct leader *l;
	struct kube_error e;
	json_t *lease = NULL, *out = NULL;
	double end, g0, p0, g1, p1;

	ck_assert_int_eq(kube_client_set_metrics(kc, reg), 0);
	ck_assert_ptr_nonnull(l = leader_new(kc, &o));
	ck_assert_int_eq(leader_start(l), 0);
	for (end = ce_now() + 10; !leader_is_leader(l) && ce_now() < end;)
		usleep(50 * 1000);
	ck_assert_msg(leader_is_leader(l), "R never led");
	/* Renewals only: over 7 s (three retry periods and a half) no GET. */
	g0 = reqs(reg, "GET,200") + reqs(reg, "GET,404");
	p0 = reqs(reg, "PUT,200");
	usleep(7000 * 1000);
	g1 = reqs(reg, "GET,200") + reqs(reg, "GET,404");
	p1 = reqs(reg, "PUT,200");
	printf("renewals: %.0f PUTs and %.0f GETs in 7 s of holding\n", p1 - p0, g1 - g0);
	ck_assert_double_eq(g1 - g0, 0);
	ck_assert_double_ge(p1 - p0, 3);
	ck_assert_double_le(p1 - p0, 4);
	ck_assert_double_eq(reqs(reg, "PUT,409"), 0);

	/* Someone else writes the Lease (an annotation; the holder stays R):
	 * the next optimistic PUT is refused, the slow path reads and renews. */
	ck_assert_int_eq(kube_get(other, &LEASES, "default", "e2e-renew", &lease, &e), 0);
	json_object_set_new(json_object_get(lease, "metadata"), "annotations", json_pack("{s:s}", "test", "touched"));
	ck_assert_int_eq(kube_update(other, &LEASES, "default", "e2e-renew", NULL, lease, &out, &e), 0);
	json_decref(lease);
	json_decref(out);
	g0 = reqs(reg, "GET,200");
	p0 = reqs(reg, "PUT,200");
	usleep(3000 * 1000);
	ck_assert_double_eq(reqs(reg, "PUT,409"), 1);
	ck_assert_double_eq(reqs(reg, "GET,200") - g0, 1);
	ck_assert_double_ge(reqs(reg, "PUT,200") - p0, 1);
	ck_assert_msg(leader_is_leader(l), "R lost the lease to a foreign write");
	ck_assert_int_eq(atomic_load(&renew_stops), 0);
	/* and back to one PUT a renewal */
	g0 = reqs(reg, "GET,200");
	usleep(4500 * 1000);
	ck_assert_double_eq(reqs(reg, "GET,200") - g0, 0);
	ck_assert_double_eq(reqs(reg, "PUT,409"), 1);
	leader_stop(l);
	leader_free(l);
	kube_client_free(kc);
	kube_client_free(other);
	kube_config_free(cfg);
	kube_config_free(cfg2);
	metrics_free(reg);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc == 8 && !strcmp(argv[1], "--contender")) {
		snprintf(cp.apiserver, sizeof(cp.apiserver), "%s", argv[4]);
		snprintf(cp.token, sizeof(cp.token), "%s", argv[5]);
		snprintf(cp.ca, sizeof(cp.ca), "%s", argv[6]);
		snprintf(logpath, sizeof(logpath), "%s", argv[7]);
		contender(argv[2], argv[3]);
	}
	Suite *s = suite_create("common_leader");
	TCase *tc = tcase_create("leader");
	int rc;
	ce_setup(&cp);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, lease_handover);
	tcase_add_test(tc, renew_one_put);
	suite_add_tcase(s, tc);
	rc = gt_run(s);
	cp_down(&cp);
	return rc;
}
