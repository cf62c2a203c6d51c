//go:build !linux

package c600

import "fmt"

func openCard(node string) (card, error) {
	return nil, fmt.Errorf("c600: %s: the C600 driver runs on Linux only", node)
}
