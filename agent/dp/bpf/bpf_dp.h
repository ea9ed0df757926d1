/*
 * User side of the SRv6 TC programs: the skeleton's load, maps pinned under
 * bpffs with a versioned layout, TC attach/detach, map updates, counters and
 * the bpf preflight. Model-agnostic: bpf_backend.c maps model.h onto this.
 *
 * Every function returns 0 or -errno and, where it takes err, says what
 * failed on which object there; nothing here prints.
 */
#ifndef GALACTIC_DP_BPF_BPF_DP_H
#define GALACTIC_DP_BPF_BPF_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/bpf/srv6.h"

#define GBPF_PIN_ROOT_DEFAULT "/sys/fs/bpf/galactic"
#define GBPF_TC_HANDLE 0x5336   /* "S6": our filter's handle on clsact ingress */
#define GBPF_TC_PRIO   0x5336

enum gbpf_prog { GBPF_PROG_DECAP, GBPF_PROG_ENCAP, GBPF_PROG_PROBE_FIB, GBPF_PROG_PROBE_ADJ,
		 GBPF_PROG_RESOLVE };
enum gbpf_map { GBPF_MAP_CFG, GBPF_MAP_VPCS, GBPF_MAP_IFACES, GBPF_MAP_ROUTES,
		GBPF_MAP_VSTATS, GBPF_MAP_DROPS, GBPF_MAP_COUNT };

struct gbpf;

struct gbpf_opts {
	const char *pin_root;   /* bpffs directory; NULL: GBPF_PIN_ROOT_DEFAULT; "" : no pinning */
};

/* Mounts bpffs on /sys/fs/bpf when the pin root's filesystem is not bpffs. */
int gbpf_ensure_bpffs(const char *pin_root, char *err, size_t errlen);

/*
 * Loads the programs. Maps are reused from <pin_root>/v<GBPF_BPF_LAYOUT>/ when
 * pinned there with the same layout, else created empty and pinned
 * (gbpf_maps_fresh() then says so: the caller must repopulate them).
 */
int gbpf_open(struct gbpf **out, const struct gbpf_opts *o, char *err, size_t errlen);
/* Frees the handle; pinned maps and attached filters stay (restart without loss). */
void gbpf_close(struct gbpf *g);
bool gbpf_maps_fresh(const struct gbpf *g);
/* Layout directories found at open that were not ours (older/newer versions). */
int gbpf_stale_layouts(const struct gbpf *g);
/* Removes the pins of other layout versions (after the new programs are attached). */
int gbpf_prune_layouts(struct gbpf *g, char *err, size_t errlen);
/* Removes <pin_root> with every layout under it. */
int gbpf_unpin_all(const char *pin_root, char *err, size_t errlen);

int gbpf_prog_fd(const struct gbpf *g, enum gbpf_prog p);
int gbpf_map_fd(const struct gbpf *g, enum gbpf_map m);
/*
 * The memory the kernel accounts to map m ("memlock" in the map's fdinfo):
 * for the routes trie (no preallocation) it is the number of entries times
 * the entry size on kernels with per-map memory accounting (6.18 here),
 * so an entry added or deleted by anyone changes it. A few microseconds.
 */
int gbpf_map_memlock(const struct gbpf *g, enum gbpf_map m, uint64_t *out);
const char *gbpf_map_name(enum gbpf_map m);

/* clsact ingress of ifindex (in the caller's network namespace). */
int gbpf_attach(struct gbpf *g, int ifindex, enum gbpf_prog p, char *err, size_t errlen);
int gbpf_detach(int ifindex, char *err, size_t errlen);
/*
 * What our filter on ifindex runs: 2 = program p as this handle has it (its
 * own load, or a load with the same instructions on the same maps), 1 =
 * another version of p (other code or an older layout's maps), 0 = nothing
 * or something else, -errno.
 */
int gbpf_attached(const struct gbpf *g, int ifindex, enum gbpf_prog p);

/* Name of the program our filter on ifindex runs (1), 0 when there is none, -errno. */
int gbpf_filter_name(int ifindex, char *name, size_t len);

int gbpf_set_cfg(struct gbpf *g, const struct gbpf_cfg *c, char *err, size_t errlen);
int gbpf_get_cfg(struct gbpf *g, struct gbpf_cfg *c);
int gbpf_set_vpc(struct gbpf *g, uint16_t arg, uint32_t table, char *err, size_t errlen);
int gbpf_del_vpc(struct gbpf *g, uint16_t arg, char *err, size_t errlen);
int gbpf_get_vpc(struct gbpf *g, uint16_t arg, struct gbpf_vpc *v);
int gbpf_set_iface(struct gbpf *g, uint32_t ifindex, uint16_t arg, char *err, size_t errlen);
int gbpf_del_iface(struct gbpf *g, uint32_t ifindex, char *err, size_t errlen);

/* Route keys: family AF_INET/AF_INET6, addr in network order, plen in address bits. */
void gbpf_route_key(struct gbpf_route_key *k, uint16_t arg, int family, const void *addr,
		    unsigned plen);
int gbpf_set_route(struct gbpf *g, const struct gbpf_route_key *k, const struct gbpf_route *r,
		   char *err, size_t errlen);
int gbpf_del_route(struct gbpf *g, const struct gbpf_route_key *k, char *err, size_t errlen);
/* n routes in as few bpf_map_update_batch calls as the kernel allows. */
int gbpf_set_routes(struct gbpf *g, const struct gbpf_route_key *k, const struct gbpf_route *r,
		    size_t n, char *err, size_t errlen);

/*
 * Precomputed L2 toward sid from src, as the kernel would route it now (main
 * table, in the caller's netns): fills r->ifindex/smac/dmac and sets
 * GBPF_RT_L2, or returns -EHOSTUNREACH / -EAGAIN (no neighbour entry yet).
 */
int gbpf_resolve(struct gbpf *g, const uint8_t src[16], const uint8_t sid[16], struct gbpf_route *r);

/* The next hop toward a SID: the link and the neighbour's address (gateway, or the SID on-link). */
struct gbpf_nexthop {
	uint32_t ifindex;   /* 0: no route */
	uint8_t addr[16];
};
/* gbpf_resolve, also saying the next hop (set on success and on -EAGAIN). */
int gbpf_resolve_nh(struct gbpf *g, const uint8_t src[16], const uint8_t sid[16], struct gbpf_route *r,
		    struct gbpf_nexthop *nh);

/* Counters summed over CPUs. */
int gbpf_vpc_stats(struct gbpf *g, uint16_t arg, struct gbpf_vpc_stats *out);
int gbpf_drops(struct gbpf *g, uint64_t out[GBPF_DROP_MAX]);
const char *gbpf_drop_name(int reason);
/* The same from the pinned maps of a running data plane (no program load). */
int gbpf_pinned_vpc_stats(const char *pin_root, uint16_t arg, struct gbpf_vpc_stats *out, char *err,
			  size_t errlen);
int gbpf_pinned_drops(const char *pin_root, uint64_t out[GBPF_DROP_MAX], char *err, size_t errlen);

/*
 * Can the bpf backend run here? Checks program and map types, helpers, vmlinux
 * BTF, bpffs, that the verifier takes our programs, and test-runs
 * bpf_fib_lookup with a table id and the decap room adjustment.
 * Returns 0, or -errno with the first missing piece in why.
 */
int gbpf_preflight(const char *pin_root, char *why, size_t whylen);

#endif
