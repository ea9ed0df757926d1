/* Maps of the SRv6 TC programs; keys and values come from srv6.h. */
#ifndef GALACTIC_DP_BPF_MAPS_BPF_H
#define GALACTIC_DP_BPF_MAPS_BPF_H

#include "agent/dp/bpf/srv6.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gbpf_cfg);
} gbpf_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GBPF_MAX_ARG);
	__type(key, __u32);
	__type(value, struct gbpf_vpc);
} gbpf_vpcs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GBPF_MAX_IFACES);
	__type(key, __u32);
	__type(value, struct gbpf_iface);
} gbpf_ifaces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, GBPF_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct gbpf_route_key);
	__type(value, struct gbpf_route);
} gbpf_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GBPF_MAX_ARG);
	__type(key, __u32);
	__type(value, struct gbpf_vpc_stats);
} gbpf_vstats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GBPF_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} gbpf_drops SEC(".maps");

#endif
