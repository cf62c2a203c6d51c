package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// BenchmarkEmulateGemmF16 measures how fast the emulator executes the GEMM
// kernel's bundles (setup and checking excluded): the whole-chip MLP run
// depends on it.
func BenchmarkEmulateGemmF16(b *testing.B) {
	params := kernels.Params{"k": 240, "c": 48, "r": 232}
	var bundles uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p, err := prepare("gemm_f16", params, 1, assemble.Cache{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := p.execute()
		if err != nil {
			b.Fatal(err)
		}
		bundles += res.Bundles
	}
	b.ReportMetric(float64(bundles)/b.Elapsed().Seconds(), "bundles/s")
}
