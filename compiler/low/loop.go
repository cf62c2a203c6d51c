package low

import (
	"slices"

	"github.com/ipustack/ipustack/compiler/tile"
)

// loopOps returns count iterations of body as one OpLoop at nesting depth
// when every iteration k is iteration 0 with its refs advanced by k times
// a constant step (the same kernels, parameters, phases and buffers); the
// emitted runtime then holds the body once instead of count times, so
// that the code area does not bound blocks x row chunks. One iteration is
// returned as is; bodies that are not affine in k are unrolled.
func loopOps(count, depth int, body func(k int) []tile.Op) []tile.Op {
	first := body(0)
	if len(first) == 0 {
		return nil // nothing to repeat (an idle tile's empty chunk)
	}
	if count <= 1 || depth >= tile.MaxLoopDepth {
		return unroll(count, first, body)
	}
	looped, ok := withSteps(first, body(1), depth)
	if !ok {
		return unroll(count, first, body)
	}
	for k := 2; k < count; k++ {
		if !slices.EqualFunc(advance(looped, depth, k), body(k), opEqual) {
			return unroll(count, first, body)
		}
	}
	return []tile.Op{{Kind: tile.OpLoop, Count: count, Body: looped, Depth: depth}}
}

func unroll(count int, first []tile.Op, body func(k int) []tile.Op) []tile.Op {
	ops := first
	for k := 1; k < count; k++ {
		ops = append(ops, body(k)...)
	}
	return ops
}

// withSteps returns a with Step[depth] of every ref set to its offset's
// difference in b, when a and b differ only in ref offsets.
func withSteps(a, b []tile.Op, depth int) ([]tile.Op, bool) {
	if len(a) != len(b) {
		return nil, false
	}
	out := make([]tile.Op, len(a))
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind || x.Kernel != y.Kernel || x.Params.String() != y.Params.String() ||
			x.Phase != y.Phase || x.Sample != y.Sample || x.Count != y.Count || x.Depth != y.Depth || x.Bytes != y.Bytes || len(x.Args) != len(y.Args) {
			return nil, false
		}
		step := func(r, q tile.Ref) (tile.Ref, bool) {
			if r.Buf != q.Buf || r.Step != q.Step {
				return r, false
			}
			r.Step[depth] = q.Off - r.Off
			return r, true
		}
		var ok bool
		if x.Dst, ok = step(x.Dst, y.Dst); !ok {
			return nil, false
		}
		x.Args = slices.Clone(x.Args)
		for k := range x.Args {
			if x.Args[k].Reg != y.Args[k].Reg {
				return nil, false
			}
			if x.Args[k].Ref, ok = step(x.Args[k].Ref, y.Args[k].Ref); !ok {
				return nil, false
			}
		}
		if x.Body, ok = withSteps(x.Body, y.Body, depth); !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// advance returns ops as iteration k of the loop at depth: every ref's
// offset advanced by k*Step[depth] and that step cleared.
func advance(ops []tile.Op, depth, k int) []tile.Op {
	if ops == nil {
		return nil
	}
	out := make([]tile.Op, len(ops))
	for i, op := range ops {
		adv := func(r tile.Ref) tile.Ref {
			r.Off += k * r.Step[depth]
			r.Step[depth] = 0
			return r
		}
		op.Dst = adv(op.Dst)
		op.Args = slices.Clone(op.Args)
		for a := range op.Args {
			op.Args[a].Ref = adv(op.Args[a].Ref)
		}
		op.Body = advance(op.Body, depth, k)
		out[i] = op
	}
	return out
}

func opEqual(x, y tile.Op) bool {
	if x.Kind != y.Kind || x.Kernel != y.Kernel || x.Params.String() != y.Params.String() || x.Dst != y.Dst ||
		x.Bytes != y.Bytes || x.Phase != y.Phase || x.Sample != y.Sample || x.Count != y.Count || x.Depth != y.Depth {
		return false
	}
	return slices.Equal(x.Args, y.Args) && slices.EqualFunc(x.Body, y.Body, opEqual)
}
