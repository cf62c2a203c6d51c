package graph

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/x448/float16"
)

// The data generator.
//
// A value's data is a pure function of (seed, value name, element type, element count, range):
//
//	base      = splitmix64(seed ^ splitmix64(fnv1a64(name)))
//	chunk c   = elements [c*ChunkElements, (c+1)*ChunkElements)
//	stream c  = PCG-DXSM (math/rand/v2 NewPCG) with state (splitmix64(base + (c+1)*golden),
//	            splitmix64(base ^ (c+1)*golden2))
//	element   = lo + (hi-lo) * (Uint64()>>11) * 2^-53   (a uniform float64 in [lo, hi))
//	            rounded to f32 and then, for f16 values, to f16 (both round to nearest even)
//
// Chunks are independent, so they are generated in parallel and the bytes do not depend on
// GOMAXPROCS or scheduling. Hashing the name means adding or reordering values in a graph does not
// change the data of the others, and two values with one seed get unrelated data. splitmix64 is
// applied to every PCG seed word because PCG's two words are its raw state: nearby raw states
// (c, c+1) would give correlated streams. The f32-then-f16 double rounding can differ from a
// direct f64->f16 rounding in the last bit of rare values; it is part of the definition.

// ChunkElements is the number of elements generated from one PCG stream.
const ChunkElements = 1 << 16

const (
	golden  = 0x9e3779b97f4a7c15
	golden2 = 0xd1b54a32d192ed03
)

func splitmix64(x uint64) uint64 {
	x += golden
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func fnv1a64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Range is the interval a node's data is drawn from: [-1, 1) for InitUniformUnit,
// ±1/sqrt(FanIn) for InitUniformFanIn, 1±1/sqrt(FanIn) for InitAroundOne, [0, 0] for InitZero.
func (n *Node) Range() (lo, hi float64) {
	switch n.Init {
	case InitUniformFanIn:
		s := 1 / math.Sqrt(float64(n.FanIn))
		return -s, s
	case InitAroundOne:
		s := 1 / math.Sqrt(float64(n.FanIn))
		return 1 - s, 1 + s
	case InitZero:
		return 0, 0
	}
	return -1, 1
}

// Data returns the generated values of an Input or Parameter, already rounded to its dtype (f16
// values are exact in float32). It returns nil for other ops.
func (n *Node) Data() []float32 {
	if n.Op != OpInput && n.Op != OpParameter {
		return nil
	}
	lo, hi := n.Range()
	return Generate(n.Seed, n.Name, n.DType, n.Shape.Elements(), lo, hi)
}

// DataF16 returns Data as f16 bit patterns (little-endian order is the caller's choice), or nil
// when the node is not f16 or has no generated data.
func (n *Node) DataF16() []uint16 {
	if n.DType != F16 {
		return nil
	}
	d := n.Data()
	if d == nil {
		return nil
	}
	bits := make([]uint16, len(d))
	parallelChunks(len(d), func(from, to, _ int) {
		for i := from; i < to; i++ {
			bits[i] = float16.Fromfloat32(d[i]).Bits()
		}
	})
	return bits
}

// Generate returns count values uniform in [lo, hi) rounded to dt, as defined above.
func Generate(seed uint64, name string, dt DType, count int, lo, hi float64) []float32 {
	out := make([]float32, count)
	base := splitmix64(seed ^ splitmix64(fnv1a64(name)))
	span := hi - lo
	parallelChunks(count, func(from, to, c int) {
		k := uint64(c + 1)
		r := rand.New(rand.NewPCG(splitmix64(base+k*golden), splitmix64(base^(k*golden2))))
		for i := from; i < to; i++ {
			u := float64(r.Uint64()>>11) * 0x1p-53
			v := float32(lo + span*u)
			if dt == F16 {
				v = float16.Fromfloat32(v).Float32()
			}
			out[i] = v
		}
	})
	return out
}

// parallelChunks calls fn(from, to, chunkIndex) for every ChunkElements-sized chunk of [0, n),
// on up to GOMAXPROCS goroutines. Chunk boundaries depend only on n.
func parallelChunks(n int, fn func(from, to, c int)) {
	chunks := (n + ChunkElements - 1) / ChunkElements
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 {
		for c := 0; c < chunks; c++ {
			fn(c*ChunkElements, min(n, (c+1)*ChunkElements), c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				fn(c*ChunkElements, min(n, (c+1)*ChunkElements), c)
			}
		}()
	}
	wg.Wait()
}
