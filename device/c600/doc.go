// Package c600 is the backend for a real Graphcore C600 card, registered
// as "c600" ("c600:/dev/ipuN" names another card; the default node is
// /dev/ipu0). It is written from the protocol facts in IPU21.md, "The C600
// host interface", in pure Go over golang.org/x/sys/unix.
//
// This revision implements the first steps only: open the node
// (O_RDWR|O_CLOEXEC), map the 0x80000-byte configuration window, attach
// (USER_ATTACH, SET_IPU_ID), initialise (monitoring, the mailbox check,
// reset, secondary id) and replay the configuration (skipping, then
// zeroing and checking the HSP GS1/GS2 registers). Loading and the host
// session are not built yet: Load and StartSession say so. On a machine
// without a card, Open fails with one line naming the missing node.
package c600
