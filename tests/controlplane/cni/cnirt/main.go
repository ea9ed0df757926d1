// Command cnirt runs a conflist through libcni the way a container runtime
// does (containerd's CRI plugin through go-cni: libcni's AddNetworkList /
// CheckNetworkList / DelNetworkList with the sandbox's own id, 64 hex
// characters, as the container id), which cnitool v1.3.1 cannot (it derives
// the id from the namespace path). Test tool only
// (tests/netns/test_upstream_e2e.c); nothing here is product code.
//
//	cnirt add|check|del NETWORK NETNS CONTAINERID [IFNAME]
//
// Reads the conflist like cnitool (NETCONFPATH, CNI_PATH); CNI_ARGS
// (K=V;K=V, e.g. K8S_POD_NAMESPACE, K8S_POD_NAME) become the runtime's args.
// add prints the final result.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "cnirt: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 5 || len(os.Args) > 6 {
		fmt.Fprintln(os.Stderr, "usage: cnirt add|check|del NETWORK NETNS CONTAINERID [IFNAME]")
		os.Exit(2)
	}
	dir := os.Getenv("NETCONFPATH")
	if dir == "" {
		dir = "/etc/cni/net.d"
	}
	list, err := libcni.LoadNetworkConf(dir, os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	netns, err := filepath.Abs(os.Args[3])
	if err != nil {
		fail("%v", err)
	}
	rt := &libcni.RuntimeConf{ContainerID: os.Args[4], NetNS: netns, IfName: "eth0"}
	if len(os.Args) == 6 {
		rt.IfName = os.Args[5]
	}
	if env := os.Getenv("CNI_ARGS"); env != "" {
		for _, kv := range strings.Split(env, ";") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				fail("CNI_ARGS: %q is not K=V", kv)
			}
			rt.Args = append(rt.Args, [2]string{k, v})
		}
	}
	cni := libcni.NewCNIConfig(filepath.SplitList(os.Getenv("CNI_PATH")), nil)
	ctx := context.TODO()
	switch os.Args[1] {
	case "add":
		res, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			fail("%v", err)
		}
		if err := res.Print(); err != nil {
			fail("%v", err)
		}
	case "check":
		if err := cni.CheckNetworkList(ctx, list, rt); err != nil {
			fail("%v", err)
		}
	case "del":
		if err := cni.DelNetworkList(ctx, list, rt); err != nil {
			fail("%v", err)
		}
	default:
		fail("unknown verb %q", os.Args[1])
	}
}
