/* tests/selftest/runner_checks.h, case skip. */
#define CASE_SKIP
#include "tests/selftest/runner_checks.h"
