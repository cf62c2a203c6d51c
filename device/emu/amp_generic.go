//go:build !amd64 || purego

package emu

// hihoAsm is false: there is no assembly f16v4hihov4amp on this platform.
var hihoAsm = false

func hihoAVX(acc *ampAcc, w *[4][16]float32, x, pp uint64, p int) uint64 {
	panic("BUG: hihoAVX called without assembly support")
}
