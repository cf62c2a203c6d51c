package assemble

import (
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/kernels"
)

// linkedBytes is the span of the sections a specialisation links into
// (text and vertex data, the padding between them included), alone, from
// its entry.
func linkedBytes(t *testing.T, s kernels.Spec) int {
	t.Helper()
	b, err := BuildSpec(s, Cache{})
	if err != nil {
		t.Fatalf("%#v: %v", s, err)
	}
	img, err := elf.Link([]*elf.Object{b.Object}, elf.LinkOptions{Entry: b.Kernel.Entry})
	if err != nil {
		t.Fatalf("%#v: link: %v", s, err)
	}
	lo, hi := ^uint32(0), uint32(0)
	for _, ps := range img.Sections {
		lo, hi = min(lo, ps.Addr), max(hi, ps.Addr+ps.Size)
	}
	return int(hi - lo)
}

// TestCodeBytes checks each spec's CodeBytes against the linked size of
// the specialisation, at parameter points that cover the code-shaping
// parameters (variants, flags, the reduce's part count) and the extremes
// of the others: the figure must be an upper bound.
func TestCodeBytes(t *testing.T) {
	specs := []kernels.Spec{
		kernels.Gemm{K: 16, C: 16, R: 1}, kernels.Gemm{K: 240, C: 48, R: 232}, kernels.Gemm{K: 2048, C: 512, R: 768},
		kernels.Gemm{K: 16, C: 16, R: 1, Conservative: true}, kernels.Gemm{K: 240, C: 48, R: 232, Conservative: true},
		kernels.Gemm{K: 16, C: 8, R: 1, F32Acc: true}, kernels.Gemm{K: 240, C: 48, R: 232, F32Acc: true},
		kernels.Gemm{K: 16, C: 8, R: 1, F32Acc: true, Conservative: true}, kernels.Gemm{K: 240, C: 48, R: 232, F32Acc: true, Conservative: true},
		kernels.Copy{N: 8}, kernels.Copy{N: 192 << 10},
		kernels.ReduceAdd{N: 4, Parts: 1}, kernels.ReduceAdd{N: 1024, Parts: 2}, kernels.ReduceAdd{N: 4, Parts: 85},
		kernels.Gelu{N: 4}, kernels.Gelu{N: 96 << 10}, kernels.Gelu{N: 4, Precise: true}, kernels.Gelu{N: 96 << 10, Precise: true},
		kernels.AddBias{Rows: 1, R: 1}, kernels.AddBias{Rows: 6144, R: 4096, First: 4095},
		kernels.UnpackOut{R: 1, C: 4}, kernels.UnpackOut{R: 4096, C: 2044}, kernels.UnpackOut{R: 7, C: 5, Stride: 2044},
		kernels.UnpackOut{R: 7, C: 16}, kernels.UnpackOut{R: 7, C: 28},
		kernels.UnpackOut{R: 1, C: 4, F32: true}, kernels.UnpackOut{R: 4096, C: 2044, F32: true}, kernels.UnpackOut{R: 7, C: 5, Stride: 2044, F32: true},
		kernels.UnpackOut{R: 7, C: 12, F32: true},
		kernels.Fill{Bytes: 8}, kernels.Fill{Bytes: 1 << 18},
		kernels.PackLeft{R: 1, K: 4}, kernels.PackLeft{R: 4096, K: 2044}, kernels.PackLeft{R: 7, K: 5, Stride: 2044}, kernels.PackLeft{R: 7, K: 20},
		kernels.Add{N: 4}, kernels.Add{N: 65536},
		kernels.LayerNorm{Rows: 1, Width: 4}, kernels.LayerNorm{Rows: 256, Width: 128}, kernels.LayerNorm{Rows: 2, Width: 16384},
		kernels.LayerNorm{Rows: 1, Width: 4, Residual: true}, kernels.LayerNorm{Rows: 256, Width: 128, Residual: true},
		kernels.Softmax{Rows: 1, Keys: 4, DK: 1}, kernels.Softmax{Rows: 256, Keys: 256, Valid: 255, DK: 65535},
		kernels.Softmax{Rows: 1, Keys: 4, DK: 1, Stats: true}, kernels.Softmax{Rows: 16, Keys: 4096, Valid: 3000, DK: 72, Stats: true},
		kernels.Softmax{Rows: 1, Keys: 64, Valid: 3, DK: 2, Stats: true},
		kernels.LayerNorm{Rows: 1, Width: 16, Panels: true}, kernels.LayerNorm{Rows: 256, Width: 128, Residual: true, Panels: true},
		kernels.LayerNorm{Rows: 2, Width: 16384, Residual: true, Panels: true},
		kernels.Softmax{Rows: 1, Keys: 16, DK: 1, Panels: true}, kernels.Softmax{Rows: 256, Keys: 256, Valid: 255, DK: 65535, Panels: true},
		kernels.Softmax{Rows: 7, Keys: 112, Valid: 2, DK: 72, Panels: true}, kernels.Softmax{Rows: 7, Keys: 112, Valid: 2, DK: 72, Stats: true, Panels: true},
		kernels.Softmax{Rows: 16, Keys: 4096, Valid: 3000, DK: 72, Stats: true, Panels: true}, kernels.Softmax{Rows: 8, Keys: 736, Valid: 729, DK: 72, Panels: true},
		kernels.AttentionMerge{Rows: 1, Values: 4, Mode: kernels.MergeInitial}, kernels.AttentionMerge{Rows: 4096, Values: 8, Mode: kernels.MergeUpdate},
		kernels.AttentionMerge{Rows: 8, Values: 4096, Mode: kernels.MergeFinal}, kernels.AttentionMerge{Rows: 8, Values: 72, Mode: kernels.MergeUpdate, Bacc32: true},
		kernels.AttentionMerge{Rows: 8, Values: 72, Mode: kernels.MergeFinal, Bacc32: true},
	}
	for _, s := range specs {
		got := linkedBytes(t, s)
		t.Logf("%-22s %-45s linked %5d, CodeBytes %5d", s.Name(), s.Params(), got, s.CodeBytes())
		if got > s.CodeBytes() {
			t.Errorf("%#v: links to %d bytes, CodeBytes says %d", s, got, s.CodeBytes())
		}
	}
}
