//go:build tools

// Package tools names the command this module builds, so that go.sum pins everything it needs.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
