package emu

import (
	"testing"
)

// benchLoop runs workers executing a tight predecoded loop: a co-issued
// {ld64step ; f32v2add} bundle, an {and.zi ; fnop} bundle keeping the
// pointer inside a 2 KiB window, and brnzdec. It reports issued bundles
// per second of host time.
func benchLoop(b *testing.B, workers int) {
	tl := NewTile(0)
	loop := int64(workerBase + 8*2)
	prog := cat(setM(1, uint32(b.N)), []in{
		// 0x00 setzi/or.iz (count) ; 0x08:
		I("setzi", 5, 0), I("nop"),
		// 0x10 loop:
		Co("ld64step", 0, 14, 5, 1), I("f32v2add", 2, 2, 0),
		Co("and.zi", 5, 5, 0x7F8), I("fnop"),
		I("brnzdec", 1, loop),
		I("exitz", mzero),
	})
	load(b, tl, workerBase, prog...)
	for w := 0; w < workers; w++ {
		if err := tl.StartWorker(w, workerBase, dataBase); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	res, err := tl.Run(^uint64(0) >> 1)
	b.StopTimer()
	if err != nil || res.Reason != StopIdle {
		b.Fatal(res, err)
	}
	b.ReportMetric(float64(res.Bundles)/b.Elapsed().Seconds(), "bundles/s")
	b.ReportMetric(float64(res.Bundles)/float64(b.N), "bundles/op")
}

func BenchmarkWorkerLoop(b *testing.B)    { benchLoop(b, 1) }
func BenchmarkSixWorkerLoop(b *testing.B) { benchLoop(b, 6) }

// BenchmarkAMPLoop: one worker issuing {ld64step ; f16v4hihov4amp} in an
// rpt body, the shape of a matmul inner loop.
func BenchmarkAMPLoop(b *testing.B) {
	tl := NewTile(0)
	prog := cat(setM(1, uint32(b.N)), []in{
		I("setzi", 5, 0), I("nop"),
		// 0x10:
		Co("rpt.i", 64, 0), I("fnop"),
		Co("ld64step", 0, 14, 5, 1), I("f16v4hihov4amp", 2, 0, 8, 1),
		Co("and.zi", 5, 5, 0x7F8), I("fnop"),
		I("brnzdec", 1, workerBase+0x10),
		I("exitz", mzero),
	})
	load(b, tl, workerBase, prog...)
	tl.StartWorker(0, workerBase, dataBase)
	b.ResetTimer()
	res, err := tl.Run(^uint64(0) >> 1)
	b.StopTimer()
	if err != nil || res.Reason != StopIdle {
		b.Fatal(res, err)
	}
	b.ReportMetric(float64(res.Bundles)/b.Elapsed().Seconds(), "bundles/s")
}
