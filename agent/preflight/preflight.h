/* Kernel capability probes for the SRv6 data plane (see preflight.c). */
#ifndef GALACTIC_PREFLIGHT_H
#define GALACTIC_PREFLIGHT_H

struct pf_probe {
	char name[48];     /* e.g. "link vrf", "seg6local End.DT6 (table)" */
	int ok;            /* 1 when the kernel accepted the probe */
	char detail[96];   /* errno text or what the probe observed */
};

/* Runs every probe; fills up to max entries and returns how many (or -errno). */
int pf_run(struct pf_probe *probes, int max);
const struct pf_probe *pf_find(const struct pf_probe *p, int n, const char *name);

#endif
