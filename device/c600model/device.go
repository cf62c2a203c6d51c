package c600model

import (
	"context"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Name is the backend's registry name.
const Name = "c600-model"

func init() {
	device.RegisterEmulated(Name, func(opts device.Options) (device.Device, error) {
		o, err := device.BackendOptions[Options]("c600-model", opts.Backend)
		if err != nil {
			return nil, err
		}
		return New(o), nil
	})
}

// Device is the C600 driver (c600.Device) over a modelled card.
type Device struct {
	*c600.Device
	card *Card
}

// New makes the driver over a new modelled card (made when the driver
// opens it).
func New(opts Options) *Device {
	d := &Device{}
	co := c600.Options{Bootloader: opts.Bootloader}
	if co.Bootloader == "" {
		co.BootloaderELF = StandInBootloader()
	}
	d.Device = c600.New("c600-model:ipu21", co, func(string) (c600.Card, error) {
		d.card = NewCard(opts)
		return d.card, nil
	})
	return d
}

// Info describes the modelled card.
func (d *Device) Info() device.Info {
	return device.Info{Name: Name, Path: "c600-model:ipu21", Target: "ipu21", Tiles: ipu21.Tiles, ClockHz: ipu21.ClockHz}
}

// Load gives the card the package (SetPackage) and loads it through the
// driver.
func (d *Device) Load(ctx context.Context, pkg *ipuexe.Package, progress func(done, total int)) error {
	if d.card != nil {
		d.card.SetPackage(pkg)
	}
	return d.Device.Load(ctx, pkg, progress)
}

// Card is the modelled card (nil before Open).
func (d *Device) Card() *Card { return d.card }
