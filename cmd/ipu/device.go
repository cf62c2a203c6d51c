package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/device/c600model"
)

// deviceOptions builds the device options of a run on dev: the lock wait
// and, for a real card, the SDK bootloader it needs (--bootloader; the
// card model takes one too, which the driver checks and sends, and
// otherwise sends its stand-in).
func deviceOptions(dev string, lockWait time.Duration, bootloader string) (device.Options, error) {
	o := device.Options{LockWait: lockWait}
	name, _, _ := strings.Cut(dev, ":")
	switch {
	case name == c600.Name:
		o.Backend = c600.Options{Bootloader: bootloader}
	case name == c600model.Name:
		o.Backend = c600model.Options{Bootloader: bootloader}
	case bootloader != "":
		return o, fmt.Errorf("--bootloader applies to --device c600 and c600-model only, not %q", dev)
	}
	return o, nil
}
