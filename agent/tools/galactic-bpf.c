/*
 * galactic-bpf: the bpf backend from the command line, on the agent's own
 * state directory (its record, agent/record.h; or, on a node the agent has
 * not started on yet, the legacy state.json/remotes.json), read only, for
 * operators and tests.
 *
 *   galactic-bpf preflight [--bpffs DIR]
 *   galactic-bpf apply     --state-dir DIR [--netns NAME] [--bpffs DIR] [--mode bpf|auto] [--fallback]
 *   galactic-bpf observe   --state-dir DIR [--netns NAME] [--bpffs DIR]
 *   galactic-bpf stats     [--bpffs DIR] [--state-dir DIR]   counters from the pinned maps
 *   galactic-bpf teardown  [--netns NAME] [--bpffs DIR]      our filters and pins go (leaving bpf)
 *
 * apply/observe exit 0 when every object is programmed (observe: in sync),
 * 1 otherwise, 2 on usage errors; each failing object is printed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_backend.h"
#include "agent/record.h"
#include "agent/record_legacy.h"

/* The record when there is one, else the legacy files (never written). */
static int load_state(const char *dir, struct gdp_state *st, struct gdp_results *bad, char *err,
		      size_t errlen)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/%s", dir, RECORD_FILE);
	if (access(p, F_OK) == 0)
		return record_load_state(dir, st, err, errlen);
	return legacy_load(dir, st, bad, err, errlen);
}

static void usage(void)
{
	fprintf(stderr, "usage: galactic-bpf preflight|apply|observe|stats|teardown [--state-dir DIR] [--netns NAME]\n"
			"                    [--bpffs DIR] [--mode bpf|auto] [--fallback]\n");
}

static void print_failures(const struct gdp_results *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].err)
			printf("%s %s%s%s: %s\n", gdp_obj_kind_str(r->v[i].kind), r->v[i].vpc,
			       r->v[i].key[0] ? "/" : "", r->v[i].key, r->v[i].msg);
}

static int stats(const char *pin_root, const char *state_dir)
{
	uint64_t d[GBPF_DROP_MAX];
	struct gdp_state st;
	struct gdp_results bad;
	char err[512];
	int rc = 0;

	if (gbpf_pinned_drops(pin_root, d, err, sizeof(err))) {
		fprintf(stderr, "galactic-bpf: %s\n", err);
		return 1;
	}
	for (int i = 1; i < GBPF_DROP_MAX; i++)
		printf("drop reason=%s packets=%llu\n", gbpf_drop_name(i), (unsigned long long)d[i]);
	gdp_state_init(&st);
	gdp_results_init(&bad);
	/* With the state, name the VPCs; without it, every argument with traffic. */
	if (state_dir && load_state(state_dir, &st, &bad, err, sizeof(err))) {
		fprintf(stderr, "galactic-bpf: %s\n", err);
		rc = 1;
	}
	for (unsigned arg = 1; !rc && arg < GBPF_MAX_ARG; arg++) {
		struct gbpf_vpc_stats s;
		const char *id = NULL;

		for (size_t i = 0; i < st.n_vpcs; i++)
			if (st.vpcs[i].arg == arg)
				id = st.vpcs[i].id;
		if (gbpf_pinned_vpc_stats(pin_root, (uint16_t)arg, &s, err, sizeof(err))) {
			fprintf(stderr, "galactic-bpf: %s\n", err);
			rc = 1;
			break;
		}
		if (!id && !s.decap_pkts && !s.encap_pkts && !s.local_pkts && !s.drop_pkts)
			continue;
		printf("vpc arg=%u id=%s decap_packets=%llu decap_bytes=%llu encap_packets=%llu "
		       "encap_bytes=%llu local_packets=%llu drop_packets=%llu\n",
		       arg, id ? id : "-", (unsigned long long)s.decap_pkts,
		       (unsigned long long)s.decap_bytes, (unsigned long long)s.encap_pkts,
		       (unsigned long long)s.encap_bytes, (unsigned long long)s.local_pkts,
		       (unsigned long long)s.drop_pkts);
	}
	gdp_results_free(&bad);
	gdp_state_free(&st);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "state-dir", required_argument, 0, 's' }, { "netns", required_argument, 0, 'n' },
		{ "bpffs", required_argument, 0, 'F' },     { "mode", required_argument, 0, 'm' },
		{ "fallback", no_argument, 0, 'f' },        { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct gdp_backend_opts bo = { 0 };
	const char *cmd, *state_dir = NULL, *mode = "bpf";
	const struct gdp_backend_ops *ops;
	struct gdp_backend *be = NULL;
	struct gdp_results res, bad;
	struct gdp_state st;
	bool fallback = false;
	char err[512], why[512];
	size_t nbad = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "s:n:F:m:fh", lo, NULL)) != -1) {
		switch (c) {
		case 's': state_dir = optarg; break;
		case 'n': bo.netns = optarg; break;
		case 'F': bo.bpffs_dir = optarg; break;
		case 'm': mode = optarg; break;
		case 'f': fallback = true; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	cmd = argv[optind];
	if (!strcmp(cmd, "preflight")) {
		rc = gbpf_preflight(bo.bpffs_dir, why, sizeof(why));
		printf(rc ? "bpf backend: unavailable: %s\n" : "bpf backend: usable%s\n", rc ? why : "");
		return rc ? 1 : 0;
	}
	if (!strcmp(cmd, "stats"))
		return stats(bo.bpffs_dir, state_dir);
	if (!strcmp(cmd, "teardown")) {
		if (gdp_bpf_teardown(bo.netns, bo.bpffs_dir, err, sizeof(err))) {
			fprintf(stderr, "galactic-bpf: %s\n", err);
			return 1;
		}
		return 0;
	}
	if ((strcmp(cmd, "apply") && strcmp(cmd, "observe")) || !state_dir) {
		usage();
		return 2;
	}
	ops = gdp_bpf_choose(mode, fallback, bo.bpffs_dir, why, sizeof(why));
	if (!ops) {
		fprintf(stderr, "galactic-bpf: %s\n", why);
		return 1;
	}
	if (why[0])
		fprintf(stderr, "galactic-bpf: %s\n", why);
	gdp_state_init(&st);
	gdp_results_init(&bad);
	gdp_results_init(&res);
	if ((rc = load_state(state_dir, &st, &bad, err, sizeof(err)))) {
		fprintf(stderr, "galactic-bpf: %s\n", err);
		goto out;
	}
	print_failures(&bad);
	nbad = bad.n;
	if ((rc = ops->open(&be, &bo, err, sizeof(err)))) {
		fprintf(stderr, "galactic-bpf: open %s backend: %s\n", ops->name, err);
		goto out;
	}
	rc = !strcmp(cmd, "apply") ? be->ops->apply(be, &st, &res) : be->ops->observe(be, &st, &res);
	print_failures(&res);
	printf("%s %s: %zu objects, added %lu, removed %lu, unchanged %lu, failed %lu: %s\n", ops->name,
	       cmd, res.n + res.remotes_ok, res.added, res.removed, res.unchanged, res.failed,
	       rc ? (rc < 0 ? strerror(-rc) : "out of sync") : "ok");
out:
	if (be)
		be->ops->close(be); /* filters and pins stay */
	gdp_results_free(&res);
	gdp_results_free(&bad);
	gdp_state_free(&st);
	return rc || nbad ? 1 : 0;
}
