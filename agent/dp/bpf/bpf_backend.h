/*
 * The bpf backend (backend.h ops "bpf"). It leaves pod plumbing to the
 * kernel backend (VPC tables, pod steering, pod routes, permanent neighbours,
 * and the seg6local SIDs, which stay as a standby should a filter go) and
 * replaces the part that does not scale, the seg6 encap routes, with the
 * LPM trie; decap and encap run in TC (see docs/dataplane-bpf.md).
 */
#ifndef GALACTIC_DP_BPF_BPF_BACKEND_H
#define GALACTIC_DP_BPF_BPF_BACKEND_H

#include "agent/dp/backend.h"
#include "agent/dp/bpf/bpf_dp.h"
#include "agent/dp/bpf/bpf_sync.h"

extern const struct gdp_backend_ops gdp_bpf_backend;

/*
 * Picks the backend for mode "kernel", "bpf" or "auto". For "bpf" and "auto"
 * it runs gbpf_preflight(); when that fails, "bpf" without fallback returns
 * NULL (refuse to start) and why says what is missing; with fallback (and
 * for "auto") it returns the kernel backend and why says why. Registers the
 * bpf backend with gdp_backend_register().
 */
const struct gdp_backend_ops *gdp_bpf_choose(const char *mode, bool fallback, const char *pin_root,
					     char *why, size_t whylen);

/*
 * Leaving the bpf backend (the agent starts with another one): removes our TC
 * filters from every link of netns (NULL: the caller's) and the pins under
 * pin_root. Call it after the other backend's first apply, so its routes are
 * in place before the filters stop carrying the traffic.
 */
int gdp_bpf_teardown(const char *netns, const char *pin_root, char *err, size_t errlen);

/*
 * Whether a link of this kind (IFLA_INFO_KIND; "" for none) can be the
 * node's uplink when none is named: a device without a kind (a NIC), a
 * bond, a team or a VLAN, with a global IPv6 address. A veth (another CNI's
 * pod, or a container node's own eth0), a bridge, a tunnel, a dummy, a
 * macvlan never is: such an uplink must be named (docs/dataplane-bpf.md).
 */
bool gdp_bpf_uplink_kind(const char *kind);

/* Counters of a bpf backend handle (status and metrics). -EINVAL for other backends. */
int gdp_bpf_vpc_stats(struct gdp_backend *b, uint16_t arg, struct gbpf_vpc_stats *out);
int gdp_bpf_drops(struct gdp_backend *b, uint64_t out[GBPF_DROP_MAX]);
/*
 * The routes-trie step of apply on its own, as apply runs it: inside the
 * node's netns, with the per-SID next-hop resolver apply passes (benches
 * time it against a raw batch update). res may be NULL.
 */
int gdp_bpf_sync_routes(struct gdp_backend *b, const struct gdp_state *d, struct gdp_results *res,
			struct gbpf_sync_stats *st);
/* The loader handle (tests, tools). */
struct gbpf *gdp_bpf_handle(struct gdp_backend *b);

struct gnl_neigh;
/*
 * A neighbour notification of the node's netns (RTM_NEWNEIGH, or deleted:
 * RTM_DELNEIGH), any thread. For a next hop the routes' precomputed L2
 * points at: one gone or not managed is made a managed neighbour again
 * (the kernel keeps it resolved); returns true when it resolved to an
 * address the routes do not carry (or where they carry none), so a full
 * apply should refresh their L2. false for every other neighbour.
 */
bool gdp_bpf_nexthop_event(struct gdp_backend *b, const struct gnl_neigh *n, bool deleted);
/*
 * Whether ifindex (node's netns) is a link a filter of ours belongs on, as
 * the last sync (apply or observe) and the delta applies since left them:
 * the uplinks (decap) and the attachments' host veths (encap). Any thread,
 * a few compares: the agent's watch drops link and TC notifications of
 * other links (another CNI's veths) without a pass.
 */
bool gdp_bpf_link_ours(struct gdp_backend *b, uint32_t ifindex);
/*
 * After a TC deletion on ifindex (node's netns): 1 when the link is there
 * without a filter of ours (maybe drift: read back), 0 when it has ours or
 * is gone itself (a deleted veth takes its filter along), or -errno.
 */
int gdp_bpf_filter_gone(struct gdp_backend *b, int ifindex);

#endif
