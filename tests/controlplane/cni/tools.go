//go:build tools

// Package tools pins the CNI test tools this module builds: cnitool (the
// reference CNI client, libcni) and reference plugins chained after
// galactic-cni in tests/netns/test_cnitool.c. Nothing here is product code.
package tools

import (
	_ "github.com/containernetworking/cni/cnitool"
	_ "github.com/containernetworking/plugins/plugins/meta/tuning"
)
