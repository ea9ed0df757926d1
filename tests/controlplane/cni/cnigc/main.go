// Command cnigc runs libcni's GCNetworkList WITH GC args, which cnitool
// v1.3.1 cannot pass (its gc command always calls it without). Test tool
// only (tests/netns/test_cnitool.c); nothing here is product code.
//
//	cnigc NETWORK [CONTAINERID/IFNAME ...]
//
// Reads the conflist like cnitool (NETCONFPATH, CNI_PATH). With no pairs the
// valid list is nil, which libcni sends as JSON null: "no attachment is
// valid".
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cnigc NETWORK [CONTAINERID/IFNAME ...]")
		os.Exit(2)
	}
	dir := os.Getenv("NETCONFPATH")
	if dir == "" {
		dir = "/etc/cni/net.d"
	}
	list, err := libcni.LoadNetworkConf(dir, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var valid []types.GCAttachment
	for _, a := range os.Args[2:] {
		cid, ifn, ok := strings.Cut(a, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "cnigc: %q is not CONTAINERID/IFNAME\n", a)
			os.Exit(2)
		}
		valid = append(valid, types.GCAttachment{ContainerID: cid, IfName: ifn})
	}
	cni := libcni.NewCNIConfig(filepath.SplitList(os.Getenv("CNI_PATH")), nil)
	if err := cni.GCNetworkList(context.TODO(), list, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
