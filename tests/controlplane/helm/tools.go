//go:build tools

// Package tools pins the commands this module builds; nothing here is product code.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
