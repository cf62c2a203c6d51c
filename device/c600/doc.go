// Package c600 is the driver of a real Graphcore C600 card, registered as
// backend "c600" ("c600:/dev/ipuN" names another card; the default node
// is /dev/ipu0). It is written from the protocol facts in IPU21.md, "The
// C600 host interface", in pure Go over golang.org/x/sys/unix.
//
// The driver talks to a Card: 32-bit accesses to the configuration
// window, the ioctls, and host memory it attaches as buffers. OpenCard is
// the real card (Linux); device/c600model is a register-level model of
// one, which backend "c600-model" runs the driver against.
//
// The steps: open and attach (USER_ATTACH, SET_IPU_ID); initialise
// (monitoring, the mailbox check, reset, secondary id); replay the
// configuration (skipping, then zeroing and checking HSP GS1/GS2); load
// (the SDK bootloader through the autoloader, the transport buffer, the
// exchange buffers set up, batches of 64 tiles' frames each followed by a
// GS1 handshake, the execute sentinel and the final mark, the exchange
// buffers restored); the host session (pages attached in the package's
// order, command word, outputs poisoned with 0xA5, one GS2 handshake for
// the command and one per phase); tile debug reads (the cycle samples).
// Every poll times out naming the register, the value expected and the
// value read. On a machine without a card, Open fails with one line
// naming the missing node. Nothing here has run on a card.
//
// The package does not depend on the emulator (go list -deps
// ./device/c600 has no device/emu): the host side of a host plan lives in
// ipuexe (HostPlan).
package c600
