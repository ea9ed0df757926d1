/*
 * Installs the CRDs a suite runs against: ours (crds/) and the faithful
 * upstream stand-ins (tests/crds/), through tests/lib/crds.sh so the C and
 * shell suites share one list.
 */
#ifndef GALACTIC_TESTS_CRDS_H
#define GALACTIC_TESTS_CRDS_H
#include "tests/lib/cp.h"

/*
 * Applies crds/ and tests/crds/ in `variant` ("atomic": upstream's shape
 * today; "maplist": NetworkInterface and NetworkInterfaceClaim conditions as
 * a map list keyed by type) and waits until every CRD is Established.
 * variant NULL: GALACTIC_CRD_VARIANT, else atomic. Returns 0, or -1 with a
 * message on stderr.
 */
int crds_install(const struct cp *cp, const char *variant);

/* The variant crds_install(cp, NULL) installs ("atomic" or "maplist"). */
const char *crds_variant(void);

#endif
