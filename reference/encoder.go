package reference

import "math"

// Host references of the encoder-layer operators in float64, row by row:
// what the device kernels (kernels/assemble/src/layer_norm.S, softmax.S, merge.S)
// are compared with. Inputs are the values the device reads (already
// rounded to its storage precision); nothing here rounds.

// LayerNorm64 normalises each of rows rows of width values of x:
// out = (x - mean) / sqrt(var + eps) * scale + bias, with the mean and the
// biased variance (divided by width) of the row, all in float64. It returns
// out (rows*width) and the per-row mean and variance.
func LayerNorm64(x, scale, bias []float64, rows, width int, eps float64) (out, mean, variance []float64) {
	out = make([]float64, rows*width)
	mean, variance = make([]float64, rows), make([]float64, rows)
	for r := 0; r < rows; r++ {
		row := x[r*width : (r+1)*width]
		m := 0.0
		for _, v := range row {
			m += v
		}
		m /= float64(width)
		q := 0.0
		for _, v := range row {
			q += (v - m) * (v - m)
		}
		q /= float64(width)
		rs := 1 / math.Sqrt(q+eps)
		for i, v := range row {
			out[r*width+i] = (v-m)*rs*scale[i] + bias[i]
		}
		mean[r], variance[r] = m, q
	}
	return out, mean, variance
}

// Softmax64 is softmax(scale * x) over the first valid of keys values of
// each of rows rows, in float64 (the maximum subtracted first); entries
// valid..keys-1 of each row are 0.
func Softmax64(x []float64, rows, keys, valid int, scale float64) []float64 {
	out := make([]float64, rows*keys)
	for r := 0; r < rows; r++ {
		row := x[r*keys : r*keys+valid]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, scale*v)
		}
		sum := 0.0
		for i, v := range row {
			e := math.Exp(scale*v - m)
			out[r*keys+i] = e
			sum += e
		}
		for i := range row {
			out[r*keys+i] /= sum
		}
	}
	return out
}

// AttentionMerge64 is one online-softmax merge step on rows rows of values
// values in float64: with the running maximum m, sum l and accumulator acc
// of a row and a block's (mb, lb, bacc), m' = max(m, mb), a = exp(m - m'),
// b = exp(mb - m'), l' = a l + b lb, acc' = a acc + b bacc. It updates m,
// l and acc in place.
func AttentionMerge64(m, l, acc, mb, lb, bacc []float64, rows, values int) {
	for r := 0; r < rows; r++ {
		mp := math.Max(m[r], mb[r])
		a, b := math.Exp(m[r]-mp), math.Exp(mb[r]-mp)
		for i := r * values; i < (r+1)*values; i++ {
			acc[i] = a*acc[i] + b*bacc[i]
		}
		m[r], l[r] = mp, a*l[r]+b*lb[r]
	}
}
