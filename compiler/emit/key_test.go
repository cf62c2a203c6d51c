package emit

import (
	"reflect"
	"testing"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/kernels"
)

// TestBuffersKey: PlaceAll memoises placements by buffersKey, so two
// buffer lists share a key only when they are equal.
func TestBuffersKey(t *testing.T) {
	base := []tile.Buffer{{Name: "a", Bytes: 64, Align: 8, Apart: []string{"b"}, Live: [2]int{1, 3}}, {Name: "b", Bytes: 32}}
	lists := [][]tile.Buffer{nil, base[:1], base,
		{{Name: "a", Bytes: 64, Align: 8, Apart: []string{"b"}, Live: [2]int{1, 3}}, {Name: "b", Bytes: 32}}, // equal to base
		{{Name: "a", Bytes: 64, Align: 8, Apart: []string{"b"}, Live: [2]int{1, 4}}, {Name: "b", Bytes: 32}},
		{{Name: "a", Bytes: 64, Align: 16, Apart: []string{"b"}, Live: [2]int{1, 3}}, {Name: "b", Bytes: 32}},
		{{Name: "a", Bytes: 64, Align: 8, Apart: []string{"b"}, Live: [2]int{1, 3}, Region: kernels.Interleaved}, {Name: "b", Bytes: 32}},
		{{Name: "a", Bytes: 64, Align: 8, Live: [2]int{1, 3}}, {Name: "b", Bytes: 32}},
		{{Name: "a", Bytes: 64, Align: 8, Apart: []string{"b"}, Live: [2]int{1, 3}}, {Name: "b", Bytes: 33}},
		{{Name: "a b", Bytes: 64}}, {{Name: "a"}, {Name: "b", Bytes: 64}},
		{{Name: "x", Apart: []string{"y", "z"}}}, {{Name: "x", Apart: []string{"yz"}}},
	}
	for i, a := range lists {
		for j, b := range lists {
			if same := buffersKey(a) == buffersKey(b); same != reflect.DeepEqual(a, b) && !(len(a) == 0 && len(b) == 0) {
				t.Errorf("lists %d and %d: same key %v, equal %v", i, j, same, reflect.DeepEqual(a, b))
			}
		}
	}
}
