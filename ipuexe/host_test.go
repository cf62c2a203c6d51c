package ipuexe

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// hostPackage is two tiles, input "x" (64 bytes a tile) uploaded in phase
// 0 and output "y" read back in phase 1, through page 1.
func hostPackage() *Package {
	p := &Package{Tiles: []Tile{{Physical: 0}, {Physical: 2}}}
	x := Binding{Name: "x", DType: U8, Shape: []uint32{128}}
	y := Binding{Name: "y", DType: U8, Shape: []uint32{128}}
	var up, down HostPhase
	for i, id := range []uint32{0, 2} {
		x.Slices = append(x.Slices, Slice{Tile: id, Address: 0x60000, Offset: uint64(64 * i), Length: 64})
		y.Slices = append(y.Slices, Slice{Tile: id, Address: 0x61000, Offset: uint64(64 * i), Length: 64})
		up.Transfers = append(up.Transfers, HostTransfer{Kind: KindInput, Slice: uint32(i), Length: 64, Page: 1, PageOffset: uint32(4096 * i)})
		down.Transfers = append(down.Transfers, HostTransfer{Kind: KindOutput, Slice: uint32(i), Length: 64, Page: 1, PageOffset: uint32(4096*i + 64)})
	}
	p.Inputs, p.Outputs = []Binding{x}, []Binding{y}
	p.Host = HostExchange{Pages: []HostPage{{Index: 0, Size: 4096}, {Index: 1, Size: 8192}}, SlotSize: 4096,
		Calls: []HostCall{{Name: "run", Command: 1, Phases: []HostPhase{up, down}}, {Name: "initialize", Command: 2}}}
	return p
}

func TestResolveTransfer(t *testing.T) {
	p := hostPackage()
	r, err := p.ResolveTransfer(p.Host.Calls[0].Phases[0].Transfers[1])
	if err != nil {
		t.Fatal(err)
	}
	if r.Tile != 2 || !r.ToTile || r.Addr != ipu21.HostApertureBase || r.TensorAt != 64 || r.Size != 128 || r.Page != 1 || r.PageOffset != 4096 {
		t.Fatalf("input transfer %+v", r)
	}
	r, err = p.ResolveTransfer(p.Host.Calls[0].Phases[1].Transfers[0])
	if err != nil || r.ToTile || r.Addr != 0x61000 || r.Binding != "y" {
		t.Fatalf("output transfer %+v %v", r, err)
	}
	for _, c := range []struct {
		tr   HostTransfer
		want string
	}{
		{HostTransfer{Kind: 9}, "unknown binding kind 9"},
		{HostTransfer{Kind: KindWeight}, "no weights binding 0"},
		{HostTransfer{Kind: KindInput, Slice: 5}, `binding "x" has no slice 5`},
		{HostTransfer{Kind: KindInput, Length: 65, Page: 1}, "outside the slice or tensor"},
		{HostTransfer{Kind: KindInput, Length: 8, Page: 3}, "page 3 bytes [0,+8) are not in a host page"},
		{HostTransfer{Kind: KindInput, Length: 8, Page: 1, PageOffset: 8}, "32-byte aligned"},
	} {
		if _, err := p.ResolveTransfer(c.tr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.tr, err, c.want)
		}
	}
	p.Inputs[0].Slices[0].Tile = 7
	if _, err := p.ResolveTransfer(p.Host.Calls[0].Phases[0].Transfers[0]); err == nil || !strings.Contains(err.Error(), "tile 7, which the package does not load") {
		t.Errorf("slice off the package: %v", err)
	}
}

func TestHostPlanErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(p *Package)
		want string
	}{
		{"duplicate command", func(p *Package) { p.Host.Calls[1].Command = 1 }, `call 1 ("initialize"): command word 1 is also call "run"'s`},
		{"duplicate name", func(p *Package) { p.Host.Calls[1].Name = "run" }, `duplicate name "run"`},
		{"command page missing", func(p *Package) { p.Host.CommandPage = 4 }, "the command word (page 4 offset 0) is outside every host page"},
		{"command past the page", func(p *Package) { p.Host.CommandOffset = 4094 }, "(page 0 offset 4094) is outside every host page"},
		{"overlap", func(p *Package) { p.Host.Calls[0].Phases[0].Transfers[1].Slice = 0 }, "overlap another transfer's"},
	} {
		p := hostPackage()
		c.edit(p)
		if _, err := NewHostPlan(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestHostPlanSides(t *testing.T) {
	p := hostPackage()
	plan, err := NewHostPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := plan.Call("run")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Call("nope"); err == nil || !strings.Contains(err.Error(), `no call "nope" (calls: [initialize run])`) {
		t.Fatalf("unknown call: %v", err)
	}
	pages := map[uint32][]byte{0: make([]byte, 4096), 1: make([]byte, 8192)}
	if err := plan.CheckPages(map[uint32][]byte{0: make([]byte, 4096)}); err == nil || !strings.Contains(err.Error(), "host page 1: have 0 bytes, the package wants 8192") {
		t.Fatalf("missing page: %v", err)
	}
	x := make([]byte, 128)
	for i := range x {
		x[i] = byte(i + 1)
	}
	out := map[string][]byte{}
	if err := c.CheckCallTensors(map[string][]byte{"x": x[:3]}, out); err == nil || !strings.Contains(err.Error(), `tensor "x" has 3 bytes, the package wants 128`) {
		t.Fatalf("short input: %v", err)
	}
	if err := c.CheckCallTensors(nil, out); err == nil || !strings.Contains(err.Error(), `needs tensor "x"`) {
		t.Fatalf("missing input: %v", err)
	}
	in := map[string][]byte{"x": x}
	if err := c.CheckCallTensors(in, out); err != nil || len(out["y"]) != 128 {
		t.Fatalf("check: %v, out %d bytes", err, len(out["y"]))
	}
	plan.WriteCommand(pages, c)
	if got, err := plan.ReadCommand(pages); err != nil || got != c {
		t.Fatalf("command read back: %v %v", got, err)
	}
	c.StagePhase(0, pages, in)
	if pages[1][0] != 1 || pages[1][4096] != 65 || pages[1][64] != 0 {
		t.Fatal("staged bytes misplaced")
	}
	c.PoisonOutputs(1, pages)
	if pages[1][64] != OutputPoison || pages[1][4096+127] != OutputPoison || pages[1][4096+128] != 0 {
		t.Fatal("poison misplaced")
	}
	pages[1][4096+64] = 9
	c.CollectPhase(1, pages, out)
	if out["y"][0] != OutputPoison || out["y"][64] != 9 {
		t.Fatalf("collected %x", out["y"][:4])
	}
	pages[0][0] = 7
	if _, err := plan.ReadCommand(pages); err == nil || !strings.Contains(err.Error(), "command word 0x7 (page 0 offset 0) names no call") {
		t.Fatalf("bad command word: %v", err)
	}
	pin, bin, pout, bout := c.Traffic(len(plan.Tiles))
	if pin != 4 || bin != 8+128 || pout != 2 || bout != 128 {
		t.Fatalf("traffic %d %d %d %d", pin, bin, pout, bout)
	}
}
