#include "tests/lib/kernel.h"

#include "agent/preflight/preflight.h"

#include <stdio.h>

int gt_kernel_has(const char *probe, char *why, size_t whylen)
{
	static struct pf_probe p[64];
	static int n = -1;
	const struct pf_probe *f;

	if (n < 0)
		n = pf_run(p, 64);
	f = n > 0 ? pf_find(p, n, probe) : NULL;
	if (!f) {
		snprintf(why, whylen, "preflight has no probe named '%s'", probe);
		return 0;
	}
	snprintf(why, whylen, "kernel lacks %s (%s)", probe, f->detail);
	return f->ok;
}
