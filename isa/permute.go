package isa

import "fmt"

// PermutedOverlay is the stand-in for an SDK whose encodings differ from
// ipustack's: a deterministic scramble (from seed) of every row ipustack
// defined itself (Source ipustack), leaving the public rows alone. It
// exists so that the SDK learner can be tested end to end without an SDK
// (`ipu --isa-permute SEED asm` is the stand-in assembler).
//
// Per seed it draws three things, and applies them to all ipustack rows:
//   - a permutation of word-0 bits 20..27 (minus any bit a relocation
//     patches): opcode bits and register fields move;
//   - a constant XORed into each row's fixed bits 0..27 (restricted to the
//     row's mask): sub-opcodes change;
//   - per operand without a relocation, a shuffle of the order of its bits.
//
// Bits 31..28 stay: bit 31 is the co-issue flag and 30..28 keep ipustack's
// block apart from the public encodings. The same bit permutation and XOR
// on every row keep distinct rows distinct, and the result is checked like
// any overlay.
//
// Public rows share ipustack's top nibbles (the LLVM rows and the public
// listing's or.a sit in 0x5...), so a draw can land an ipustack row on a
// public one. Such a draw is rejected and the next one, from the same
// stream, is tried: still one deterministic overlay per seed.
func PermutedOverlay(seed uint64) (*Overlay, error) {
	rng := splitmix{seed}
	var err error
	for attempt := 0; attempt < permuteAttempts; attempt++ {
		var ov *Overlay
		if ov, err = permuteOnce(&rng); err == nil {
			return ov, nil
		}
	}
	return nil, fmt.Errorf("permuted table (seed %d): no valid draw in %d attempts; last: %w", seed, permuteAttempts, err)
}

// permuteAttempts bounds the draws PermutedOverlay tries.
const permuteAttempts = 256

func permuteOnce(rng *splitmix) (*Overlay, error) {
	reserved := uint32(0)
	for i, in := range Table {
		if in.Source != SrcOurs {
			continue
		}
		for j := range in.Operands {
			if in.Operands[j].Reloc != RelocNone {
				for _, f := range defaultEnc[i].fields[j] {
					if f.Word == 0 {
						reserved |= f.mask()
					}
				}
			}
		}
	}
	var domain []int
	for b := 20; b <= 27; b++ {
		if reserved&(1<<b) == 0 {
			domain = append(domain, b)
		}
	}
	perm := map[int]int{}
	img := append([]int(nil), domain...)
	rng.shuffle(img)
	for i, b := range domain {
		perm[b] = img[i]
	}
	move := func(p int) int {
		if q, ok := perm[p]; ok && p < 32 {
			return q
		}
		return p
	}
	xor := uint32(rng.next()) & 0x0FFFFFFF
	ov := DefaultOverlay()
	for i, in := range Table {
		if in.Source != SrcOurs {
			continue
		}
		d := cloneRow(in, defaultEnc[i])
		if err := derive(d); err != nil {
			return nil, err
		}
		m := d.Match ^ xor&d.mask
		var nm uint32
		for b := 0; b < 32; b++ {
			if m&(1<<b) != 0 {
				nm |= 1 << move(b)
			}
		}
		r := &ov.Rows[i]
		r.Match[0] = hexWord(nm)
		for j := range r.Operands {
			bits := r.Operands[j].Bits
			if in.Operands[j].Reloc == RelocNone {
				rng.shuffle(bits)
			}
			for k, p := range bits {
				bits[k] = move(p)
			}
		}
	}
	if err := Validate(ov); err != nil {
		return nil, err
	}
	return ov, nil
}

// splitmix is SplitMix64: small, deterministic on every platform.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func (r *splitmix) shuffle(x []int) {
	for i := len(x) - 1; i > 0; i-- {
		j := int(r.next() % uint64(i+1))
		x[i], x[j] = x[j], x[i]
	}
}
