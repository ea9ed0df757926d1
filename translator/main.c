/*
 * galactic-translator: turns data-plane reports into the status fields the
 * ownership table (docs/architecture.md) gives the translator.
 *
 *   galactic-translator [--kubeconfig FILE] [--namespace NS] [--watch-namespace NS]
 *       [--id ID] [--lease-namespace NS] [--lease-name NAME]
 *       [--lease-duration S] [--renew-deadline S] [--retry-period S]
 *       [--metrics-addr HOST:PORT] [--mapping-config FILE] [--workers N]
 *       [--leave-to-incumbent ROW[,ROW...]] [--ownership-config FILE]
 *       [--egress-shard-namespace NS] [--no-egress]
 *       [--log-level debug|info|warn|error]
 *
 * Without --kubeconfig: $KUBECONFIG, then the in-cluster service account,
 * then ~/.kube/config. Every replica keeps its caches warm; only the holder
 * of the Lease writes (docs/translator.md).
 */
#include "common/kube_client.h"
#include "common/kube_config.h"
#include "common/leader.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/version.h"
#include "translator/controller.h"
#include "translator/mapping.h"
#include "translator/ownership.h"

#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: galactic-translator [--kubeconfig FILE] [--namespace NS]\n"
		"         [--watch-namespace NS] [--id ID] [--lease-namespace NS] [--lease-name NAME]\n"
		"         [--lease-duration S] [--renew-deadline S] [--retry-period S]\n"
		"         [--metrics-addr HOST:PORT] [--mapping-config FILE] [--workers N]\n"
		"         [--leave-to-incumbent ROW[,ROW...]] [--ownership-config FILE]\n"
		"         [--egress-shard-namespace NS] [--no-egress]\n"
		"         [--log-level debug|info|warn|error]\n"
		"       galactic-translator --version | --help\n");
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || v <= 0)
		return -1;
	*out = v;
	return 0;
}

/* "HOST:PORT" (IPv4 host, port 0-65535; port 0 picks one and logs it). */
static int parse_addr(const char *s, char *host, size_t hn, int *port)
{
	const char *c = strrchr(s, ':');
	char *end;
	long p;

	if (!c || (size_t)(c - s) >= hn)
		return -1;
	p = strtol(c + 1, &end, 10);
	if (!c[1] || *end || p < 0 || p > 65535)
		return -1;
	memcpy(host, s, (size_t)(c - s));
	host[c - s] = 0;
	if (!*host)
		snprintf(host, hn, "0.0.0.0");
	*port = (int)p;
	return 0;
}

static void on_new_leader(const char *id, void *ud)
{
	(void)ud;
	glog_kv(GLOG_INFO, "translator", "leader observed", "identity", id, NULL);
}

static bool always_ok(void *ud)
{
	(void)ud;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "watch-namespace", required_argument, NULL, 'w' },
		{ "id", required_argument, NULL, 'i' },
		{ "lease-namespace", required_argument, NULL, 'L' },
		{ "lease-name", required_argument, NULL, 'N' },
		{ "lease-duration", required_argument, NULL, 'D' },
		{ "renew-deadline", required_argument, NULL, 'R' },
		{ "retry-period", required_argument, NULL, 'P' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "mapping-config", required_argument, NULL, 'c' },
		{ "workers", required_argument, NULL, 'W' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "leave-to-incumbent", required_argument, NULL, 'I' },
		{ "ownership-config", required_argument, NULL, 'O' },
		{ "egress-shard-namespace", required_argument, NULL, 'E' },
		{ "no-egress", no_argument, NULL, 'X' },
		{ "version", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *kubeconfig = NULL, *ns = NULL, *watch_ns = NULL, *id = NULL;
	const char *lease_ns = NULL, *lease_name = "galactic-translator";
	const char *metrics_addr = "0.0.0.0:8080", *mapping_file = NULL;
	double lease_duration = 15, renew_deadline = 10, retry_period = 2;
	int workers = 8, opt, rc = 1, port, sig;
	char host[64], idbuf[HOST_NAME_MAX + 32], err[512];
	struct mapping_set maps = { 0 };
	struct ownership own;
	const char *own_file = NULL, *shard_ns = NULL;
	bool no_egress = false;
	struct kube_config *cfg = NULL;
	struct kube_client *kc = NULL;
	struct metrics *m = NULL;
	struct metrics_http *http = NULL;
	struct controller *ctl = NULL;
	struct leader *le = NULL;
	enum glog_level lvl;
	sigset_t sigs;

	/* Two malloc arenas, not one per thread that ever allocated (glibc's
	 * default is 8 per core): the informer threads' and the workers' freed
	 * page and event decodes stayed in five arenas of 5-10 MiB each at
	 * 10,000 sets (docs/performance.md, bench_translator). Before any thread. */
	mallopt(M_ARENA_MAX, 2);
	ownership_init(&own);
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'k': kubeconfig = optarg; break;
		case 'n': ns = optarg; break;
		case 'w': watch_ns = optarg; break;
		case 'i': id = optarg; break;
		case 'L': lease_ns = optarg; break;
		case 'N': lease_name = optarg; break;
		case 'm': metrics_addr = optarg; break;
		case 'c': mapping_file = optarg; break;
		case 'D':
		case 'R':
		case 'P': {
			double *d = opt == 'D' ? &lease_duration : opt == 'R' ? &renew_deadline : &retry_period;
			if (parse_double(optarg, d)) {
				fprintf(stderr, "galactic-translator: bad duration %s\n", optarg);
				return 2;
			}
			break;
		}
		case 'W':
			workers = atoi(optarg);
			if (workers < 1 || workers > 16) {
				fprintf(stderr, "galactic-translator: --workers must be 1-16\n");
				return 2;
			}
			break;
		case 'l':
			if (glog_parse_level(optarg, &lvl)) {
				fprintf(stderr, "galactic-translator: bad log level %s\n", optarg);
				return 2;
			}
			glog_set_level(lvl);
			break;
		case 'I':
			if (ownership_leave_list(&own, optarg, err, sizeof(err))) {
				fprintf(stderr, "galactic-translator: --leave-to-incumbent: %s\n", err);
				return 2;
			}
			break;
		case 'O': own_file = optarg; break;
		case 'E': shard_ns = optarg; break;
		case 'X': no_egress = true; break;
		case 'v': printf("galactic-translator %s\n", GALACTIC_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (renew_deadline >= lease_duration) {
		fprintf(stderr, "galactic-translator: --renew-deadline must be below --lease-duration\n");
		return 2;
	}
	if (parse_addr(metrics_addr, host, sizeof(host), &port)) {
		fprintf(stderr, "galactic-translator: bad --metrics-addr %s (want HOST:PORT)\n",
			metrics_addr);
		return 2;
	}
	if (mapping_set_init(&maps)) {
		fprintf(stderr, "galactic-translator: out of memory\n");
		return 1;
	}
	if (mapping_file && mapping_set_load_file(&maps, mapping_file, err, sizeof(err))) {
		glog_kv(GLOG_ERROR, "translator", "bad mapping config", "error", err, NULL);
		goto out;
	}
	if (own_file && ownership_load_file(&own, own_file, err, sizeof(err))) {
		glog_kv(GLOG_ERROR, "translator", "bad ownership config", "error", err, NULL);
		goto out;
	}
	{
		char left[1024];
		ownership_describe(&own, left, sizeof(left));
		glog_kv(GLOG_INFO, "translator", "contract rows left to incumbents", "rows",
			*left ? left : "none", NULL);
	}
	for (size_t i = 0; i < maps.n; i++)
		glogf(GLOG_INFO, "translator", "reading reports %s.%s/%s (mapping %s)",
		      maps.e[i].resource, maps.e[i].group, maps.e[i].version, maps.e[i].name);

	cfg = kubeconfig ? kube_config_from_kubeconfig(kubeconfig, NULL, err, sizeof(err))
			 : kube_config_load(err, sizeof(err));
	if (!cfg) {
		glog_kv(GLOG_ERROR, "translator", "no Kubernetes config", "error", err, NULL);
		goto out;
	}
	if (!ns)
		ns = cfg->namespace && *cfg->namespace ? cfg->namespace : "galactic-system";
	if (!lease_ns)
		lease_ns = ns;
	if (!id) {
		char hn[HOST_NAME_MAX + 1] = "translator";
		gethostname(hn, sizeof(hn));
		hn[sizeof(hn) - 1] = 0;
		snprintf(idbuf, sizeof(idbuf), "%s_%ld", hn, (long)getpid());
		id = idbuf;
	}
	if (!(kc = kube_client_new(cfg, err, sizeof(err)))) {
		glog_kv(GLOG_ERROR, "translator", "kube client", "error", err, NULL);
		goto out;
	}
	/* Signals go to sigwait below, not to whichever thread runs. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!(m = metrics_new()) || kube_client_set_metrics(kc, m))
		goto out;
	ctl = controller_new(kc, &maps, m,
			     &(struct controller_opts){ .report_ns = ns, .watch_ns = watch_ns,
							.workers = workers, .identity = id,
							.ownership = &own, .no_egress = no_egress,
							.egress_shard_ns = shard_ns });
	if (!ctl) {
		glog_kv(GLOG_ERROR, "translator", "cannot set up the controller", NULL);
		goto out;
	}
	le = leader_new(kc, &(struct leader_opts){
				    .ns = lease_ns, .name = lease_name, .identity = id,
				    .lease_duration_s = lease_duration, .renew_deadline_s = renew_deadline,
				    .retry_period_s = retry_period,
				    .on_started = controller_on_started_leading,
				    .on_stopped = controller_on_stopped_leading,
				    .on_new_leader = on_new_leader, .ud = ctl });
	if (!le) {
		glog_kv(GLOG_ERROR, "translator", "bad leader election settings", NULL);
		goto out;
	}
	controller_set_leader(ctl, le);
	if (!(http = metrics_http_start(m, host, port, err, sizeof(err)))) {
		glog_kv(GLOG_ERROR, "translator", "metrics server", "error", err, NULL);
		goto out;
	}
	metrics_http_add_check(http, "process", false, always_ok, NULL);
	metrics_http_add_check(http, "workers", false, controller_alive, ctl);
	metrics_http_add_check(http, "informers-synced", true, controller_synced, ctl);
	{
		char p[16];
		snprintf(p, sizeof(p), "%d", metrics_http_port(http));
		glog_kv(GLOG_INFO, "translator", "serving metrics", "addr", host, "port", p, "identity",
			id, "namespace", ns, "lease", lease_name, NULL);
	}
	if (controller_start(ctl)) {
		glog_kv(GLOG_ERROR, "translator", "cannot start the controller", NULL);
		goto out;
	}
	/* Elect only once the caches are warm, so a new leader acts on full knowledge. */
	while (!controller_synced(ctl)) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		siginfo_t si;
		if (sigtimedwait(&sigs, &si, &ts) > 0) {
			rc = 0;
			goto out;
		}
	}
	glog_kv(GLOG_INFO, "translator", "caches synced", NULL);
	if (leader_start(le)) {
		glog_kv(GLOG_ERROR, "translator", "cannot start leader election", NULL);
		goto out;
	}
	sigwait(&sigs, &sig);
	glog_kv(GLOG_INFO, "translator", "shutting down", "signal", sig == SIGTERM ? "TERM" : "INT",
		NULL);
	rc = 0;
out:
	/* Workers first (no write after this), then hand the lease over. */
	if (ctl)
		controller_stop(ctl);
	if (le)
		leader_free(le);
	controller_free(ctl);
	metrics_http_stop(http);
	metrics_free(m);
	kube_client_free(kc);
	kube_config_free(cfg);
	mapping_set_free(&maps);
	return rc;
}
