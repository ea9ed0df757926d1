/* tests/selftest/runner_checks.h, case ok. */
#define CASE_OK
#include "tests/selftest/runner_checks.h"
