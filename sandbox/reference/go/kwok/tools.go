//go:build tools

// Package tools names the command this module builds, so that go.sum pins everything it needs.
package tools

import (
	_ "sigs.k8s.io/kwok/pkg/kwok/cmd"
)
