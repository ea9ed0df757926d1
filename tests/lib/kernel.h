/*
 * Kernel feature checks for tests, from the preflight probes (run once per
 * process). Use with GT_SKIP:
 *   if (!gt_kernel_has("link vrf", why, sizeof(why))) GT_SKIP("%s", why);
 * Link tests/lib/kernel.c and the gpreflight library.
 */
#ifndef GALACTIC_TESTS_KERNEL_H
#define GALACTIC_TESTS_KERNEL_H
#include <stddef.h>

int gt_kernel_has(const char *probe, char *why, size_t whylen);

#endif
