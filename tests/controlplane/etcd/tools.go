//go:build tools

// Package tools pins the commands this module builds; nothing here is product code.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
