/* Per-VPC packet/byte counters and per-reason drop counters (per-CPU maps). */
#ifndef GALACTIC_DP_BPF_COUNTERS_BPF_H
#define GALACTIC_DP_BPF_COUNTERS_BPF_H

#include "agent/dp/bpf/maps.bpf.h"
#include "agent/dp/bpf/parse.bpf.h"

static __always_inline struct gbpf_vpc_stats *vpc_stats(__u32 arg)
{
	return bpf_map_lookup_elem(&gbpf_vstats, &arg);
}

/* Counts a drop by reason (and against the VPC when known); returns TC_ACT_SHOT. */
static __always_inline int drop(__u32 reason, int arg)
{
	__u64 *c = bpf_map_lookup_elem(&gbpf_drops, &reason);
	struct gbpf_vpc_stats *s;

	if (c)
		*c += 1;
	if (arg >= 0 && (s = vpc_stats((__u32)arg)))
		s->drop_pkts += 1;
	return TC_ACT_SHOT;
}

static __always_inline void count_decap(__u32 arg, __u32 bytes)
{
	struct gbpf_vpc_stats *s = vpc_stats(arg);

	if (s) {
		s->decap_pkts += 1;
		s->decap_bytes += bytes;
	}
}

static __always_inline void count_encap(__u32 arg, __u32 bytes)
{
	struct gbpf_vpc_stats *s = vpc_stats(arg);

	if (s) {
		s->encap_pkts += 1;
		s->encap_bytes += bytes;
	}
}

static __always_inline void count_local(__u32 arg)
{
	struct gbpf_vpc_stats *s = vpc_stats(arg);

	if (s)
		s->local_pkts += 1;
}

#endif
