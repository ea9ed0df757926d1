/* tests/selftest/runner_checks.h, case none. */
#define CASE_NONE
#include "tests/selftest/runner_checks.h"
