package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/c600"
)

// deviceOptions builds the device options of a run on dev: the lock wait
// and, for a real card, the SDK bootloader it needs (--bootloader).
func deviceOptions(dev string, lockWait time.Duration, bootloader string) (device.Options, error) {
	o := device.Options{LockWait: lockWait}
	name, _, _ := strings.Cut(dev, ":")
	switch {
	case name == c600.Name:
		o.Backend = c600.Options{Bootloader: bootloader}
	case bootloader != "":
		return o, fmt.Errorf("--bootloader applies to --device c600 only, not %q", dev)
	}
	return o, nil
}
