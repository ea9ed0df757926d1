/*
 * Start-up and tear-down shared by the translator's e2e suites
 * (tests/e2e/test_translator_*.c): the real control plane, the CRDs of one
 * variant, the suite's namespaces; at the end the translator processes
 * killed, their logs shown on request (GT_KEEP_LOGS), the control plane down.
 */
#ifndef GALACTIC_TESTS_TRANSLATOR_E2E_H
#define GALACTIC_TESTS_TRANSLATOR_E2E_H

#include <stdbool.h>
#include <sys/types.h>

#include "tests/lib/cp.h"

/*
 * curl, cp_up, crds_install(variant) (printed as "MEASURE: CRD variant V"
 * when measure), then each namespace of the NULL-terminated list created.
 * Fails the running test on the first step that fails.
 */
void te_up(struct cp *cp, const char *variant, bool measure, const char *const *namespaces);
/* SIGKILLs and reaps *pid when it is > 0; *pid becomes 0. */
void te_kill(pid_t *pid);
/* With GT_KEEP_LOGS set, <cp dir>/<logs> (a shell glob) to stderr; then cp_down and curl's cleanup. */
void te_down(struct cp *cp, const char *logs);

#endif
