// Package c600model is the C600 card as the driver (device/c600) sees it:
// a register-level model of the configuration window (CCSR, the
// autoloader, HSP GS1/GS2, EXCHANGE_WINDOW_BASE, the exchange-buffer
// request-ID controls, the tile debug interface), the ioctls and the
// attached host buffers, behind the driver's c600.Card interface and
// backed by the chip emulator (device/emu).
//
// The SDK bootloader's effect is modelled, not its code: at each GS1
// handshake of the load the model reads the batch's descriptors and frames
// out of the attached transport buffer and writes each tile's image into
// emulated tile memory from the launch slot; at the execute sentinel it
// starts every loaded tile there; at the final mark it runs the chip to
// the application's initial host synchronization. In the host session each
// GS2 handshake is one host-link handshake of device/emu (emu.HostSession,
// over the attached pages), so a package runs on the model with the same
// cycles and outputs as on backend "emu".
//
// The model refuses what hardware would (a write outside the window, a bad
// frame header, a tile image over 643 frames, a missing or out-of-place
// GS handshake, pages attached out of order or without HEXOPT, loading
// with the exchange buffers not set up, ...), with a *RuleError naming the
// rule. What IPU21.md does not settle is a named assumption, listed in
// docs/c600.md ("The card model").
//
// The backend "c600-model" (registered here, emulated: it takes no device
// lock) runs every package through the real driver's code over this
// model.
package c600model
