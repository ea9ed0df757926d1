/* tests/selftest/runner_checks.h, case empty. */
#define CASE_EMPTY
#include "tests/selftest/runner_checks.h"
