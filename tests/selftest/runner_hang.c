/* tests/selftest/runner_checks.h, case hang. */
#define CASE_HANG
#include "tests/selftest/runner_checks.h"
