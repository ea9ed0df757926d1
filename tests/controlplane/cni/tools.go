//go:build tools

// Package tools pins the CNI test tools this module builds: cnitool (the
// reference CNI client, libcni), the reference plugin chained after
// galactic-cni in tests/netns/test_cnitool.c (tuning) and the reference
// ptp + host-local plugins tests/bench/bench_cni.c compares the CNI burst
// with. Nothing here is product code.
package tools

import (
	_ "github.com/containernetworking/cni/cnitool"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/ptp"
	_ "github.com/containernetworking/plugins/plugins/meta/tuning"
)
