#include "tests/lib/crds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *crds_variant(void)
{
	const char *v = getenv("GALACTIC_CRD_VARIANT");

	return v && *v ? v : "atomic";
}

int crds_install(const struct cp *cp, const char *variant)
{
	char cmd[1024];
	int rc;

	if (!variant)
		variant = crds_variant();
	if (strcmp(variant, "atomic") && strcmp(variant, "maplist")) {
		fprintf(stderr, "crds_install: unknown variant '%s' (atomic or maplist)\n", variant);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "tests/lib/crds.sh install '%s' %s", cp->dir, variant);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "crds_install: '%s' failed (status %d)\n", cmd, rc);
		return -1;
	}
	return 0;
}
