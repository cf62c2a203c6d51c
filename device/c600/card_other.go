//go:build !linux

package c600

import "fmt"

// OpenCard fails: the driver needs Linux.
func OpenCard(node string) (Card, error) {
	return nil, fmt.Errorf("c600: %s: the C600 driver runs on Linux only", node)
}
