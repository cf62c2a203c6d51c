package mid

import (
	"errors"
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
)

// FuzzSearchEncoder plans small encoder layers of any shape the flags
// accept on any tile count: SearchEncoder must plan or say why (a
// "does not fit" or an UnsupportedError, never a panic), and every plan it
// returns must pass the data-presence checker and carry a consistent cost
// record.
func FuzzSearchEncoder(f *testing.F) {
	f.Add(uint8(1), uint8(37), uint8(4), uint8(16), uint8(60), uint8(64))
	f.Add(uint8(2), uint8(5), uint8(1), uint8(8), uint8(3), uint8(3))
	f.Add(uint8(1), uint8(1), uint8(2), uint8(4), uint8(1), uint8(1))
	f.Add(uint8(1), uint8(197), uint8(3), uint8(16), uint8(200), uint8(255))
	f.Fuzz(func(t *testing.T, batch, tokens, heads, headDim, hidden, tiles uint8) {
		c := graph.DefaultEncoder
		c.Batch, c.Tokens, c.Heads, c.Hidden = 1+int(batch%2), 1+int(tokens), 1+int(heads%8), 1+int(hidden)
		c.Dim = c.Heads * (1 + int(headDim%32))
		g, err := graph.EncoderLayerGraph(c, 1)
		if err != nil {
			return // the flags refuse it before the planner sees it
		}
		res, err := SearchEncoder(g, ipu21.IPU21(), Options{Tiles: 1 + int(tiles)})
		if err != nil {
			var u *UnsupportedError
			if err.Error() == "" || (errors.As(err, &u) && u.Err == nil) {
				t.Fatalf("%+v on %d tiles: an empty error", c, 1+int(tiles))
			}
			return
		}
		p := res.Finalists[0]
		if err := p.Check(); err != nil {
			t.Fatalf("%+v on %d tiles: the plan fails the checker: %v", c, 1+int(tiles), err)
		}
		if e := p.Estimate(); e.Total != int(p.Cycles) {
			t.Fatalf("%+v on %d tiles: record %d cycles, plan %d", c, 1+int(tiles), e.Total, p.Cycles)
		}
	})
}
