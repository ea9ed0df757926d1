/*
 * Pod steering of the kernel backend (docs/dataplane-kernel.md, "Pod
 * steering"): which VPC table a packet a pod sends is routed in.
 *
 * One nftables table (family inet) holds a map from host veth name to its
 * VPC's mark (GDE_MARK_POD | VPC argument, agent/dp/egress.h) and one rule
 * on prerouting that sets the mark of every packet received on a listed
 * veth, unless a mark of our kinds is already there (the bpf backend's
 * egress mark, set at TC ingress before it). One `fwmark MARK/MASK lookup
 * TABLE` rule per VPC and family (kernel.c) then routes the packet in its
 * VPC's table. An attachment adds or removes one map element: no policy
 * rule per attachment (an IPv6 rule added or removed flushes the whole
 * IPv6 FIB, ~290 ms at 100,000 routes) and no rule for the kernel to bind
 * when a veth registers.
 *
 * Why nftables and not a tc classifier: the kernels this runs on are built
 * without cls_matchall, cls_fw, act_skbedit and act_gact (only u32, bpf and
 * mirred), so tc cannot set a mark without eBPF there, and the kernel
 * backend stays eBPF-free. libnftables is already the egress translator's.
 *
 * Rendering and reading back (gds_render*, gds_parse) are pure, so they are
 * unit-tested and fuzzed; gds_nft_* run libnftables in the caller's netns.
 */
#ifndef GALACTIC_AGENT_DP_STEER_H
#define GALACTIC_AGENT_DP_STEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#define GDS_TABLE "galactic_steer"  /* nftables table (family inet) */
#define GDS_MAP   "pods"            /* host veth name -> mark */
#define GDS_CHAIN "steer"
#define GDS_PRIO  (-200)            /* prerouting, before the egress translator's -150 */
#define GDS_IFNAME_MAX 15

struct gds_pod {
	char ifname[GDS_IFNAME_MAX + 1];
	uint32_t mark;
};

/* A name that can be written into an nftables program as it is: 1-15 bytes, no quote, backslash, space or control. */
bool gds_ifname_ok(const char *name);
/*
 * The whole table as one transaction (added, deleted, defined: a rewrite
 * never leaves a half-updated table) with the n elements of p. *out is
 * malloc'd. 0, or -EINVAL/-ENOMEM with err.
 */
int gds_render(const struct gds_pod *p, size_t n, char **out, char *err, size_t errlen);
/*
 * Element changes as one transaction: deletes names del[0..ndel) (a name
 * in both lists is replaced: deleted, then added), then adds add[0..nadd).
 * *out is malloc'd; NULL (and 0) when there is nothing to change.
 */
int gds_render_elems(const struct gds_pod *add, size_t nadd, const char (*del)[GDS_IFNAME_MAX + 1], size_t ndel,
		     char **out, char *err, size_t errlen);
/*
 * Reads the JSON listing of the table (`nft -j list table inet
 * galactic_steer`). 0 with its elements in *got (malloc'd, *n of them) when
 * the table is exactly what gds_render makes (one map of ifname : mark, one
 * chain on prerouting at GDS_PRIO with our one rule, nothing else); -EPROTO
 * with err saying what differs; -EINVAL when it is not such a listing.
 */
int gds_parse(const char *json, struct gds_pod **got, size_t *n, char *err, size_t errlen);

/*
 * One message of the nftables notification group (NETLINK_NETFILTER,
 * NFNLGRP_NFTABLES): GDS_EV_OURS when it adds, changes or removes
 * something of the steering table; GDS_EV_GEN at the end of a transaction
 * (proc gets the committing task's name, NFTA_GEN_PROC_NAME); GDS_EV_OTHER
 * for anything else, and for what does not parse.
 */
enum gds_event { GDS_EV_OTHER, GDS_EV_OURS, GDS_EV_GEN };
enum gds_event gds_notification(const struct nlmsghdr *h, char *proc, size_t proclen);

/* A libnftables context bound to the network namespace of the caller. */
struct gds_nft;
int gds_nft_open(struct gds_nft **out, char *err, size_t errlen);
void gds_nft_close(struct gds_nft *c);
/* Runs a program (one transaction). 0 or -EIO with err (nftables' message). */
int gds_nft_run(struct gds_nft *c, const char *text, char *err, size_t errlen);
/* The table's JSON listing into *json (malloc'd). 0, -ENOENT (no table) or -errno with err. */
int gds_nft_list(struct gds_nft *c, char **json, char *err, size_t errlen);

#endif
