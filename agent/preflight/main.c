/*
 * galactic-preflight: prints what this kernel supports for the data plane.
 *   galactic-preflight            human-readable table
 *   galactic-preflight --json     {"probe name": {"ok": bool, "detail": "..."}}
 *   galactic-preflight --has NAME exit 0 if probe NAME passed, 1 if it failed,
 *                                 2 if there is no such probe
 * Tests read the JSON to SKIP (visibly) what the kernel lacks.
 */
#include "agent/preflight/preflight.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct pf_probe p[64];
	int n, json = argc == 2 && !strcmp(argv[1], "--json");
	const char *has = argc == 3 && !strcmp(argv[1], "--has") ? argv[2] : NULL;

	if (argc > 1 && !json && !has) {
		fprintf(stderr, "usage: %s [--json | --has PROBE]\n", argv[0]);
		return 2;
	}
	if (geteuid() != 0)
		fprintf(stderr, "preflight: not root; netlink and BPF probes will fail\n");
	n = pf_run(p, 64);
	if (n < 0) {
		fprintf(stderr, "preflight: %s\n", strerror(-n));
		return 1;
	}
	if (has) {
		for (int i = 0; i < n; i++)
			if (!strcmp(p[i].name, has)) {
				printf("%s: %s (%s)\n", has, p[i].ok ? "yes" : "no", p[i].detail);
				return p[i].ok ? 0 : 1;
			}
		fprintf(stderr, "preflight: no probe named '%s'\n", has);
		return 2;
	}
	if (json) {
		json_t *o = json_object();
		for (int i = 0; i < n; i++)
			json_object_set_new(o, p[i].name,
					    json_pack("{s:b,s:s}", "ok", p[i].ok, "detail",
						      p[i].detail));
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(o);
		return 0;
	}
	for (int i = 0; i < n; i++)
		printf("%-32s %-4s %s\n", p[i].name, p[i].ok ? "yes" : "no", p[i].detail);
	return 0;
}
