package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/device/emudev"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/reference"
	"github.com/ipustack/ipustack/runtime"
	"github.com/x448/float16"
)

// Metrics is the run's metrics line.
type Metrics struct {
	Workload             string  `json:"workload"`
	Tiles                int     `json:"tiles"`
	ActiveTiles          int     `json:"activeTiles"`
	Cycles               uint64  `json:"cycles"`
	MinimumTileCycles    uint64  `json:"minimumTileCycles"`
	DeviceMicroseconds   float64 `json:"deviceMicroseconds"`
	EffectiveGemmTflops  float64 `json:"effectiveGemmTflops"`
	PeakTflops           float64 `json:"peakTflops"`
	EfficiencyPercent    float64 `json:"efficiencyPercent"`
	MaximumAbsoluteError float64 `json:"maximumAbsoluteError"`
	NumericalTest        string  `json:"numericalTest"`
	Device               string  `json:"device"`
	InputBytes           int64   `json:"inputBytes"`
	WeightBytes          int64   `json:"weightBytes"`
	// Data is "user" when RunOptions.Data gave any host tensor, else "seeded".
	Data string `json:"data"`
	// Assumptions is the emulator assumption set the run used
	// (emu.AssumptionSet.String: "amp-state-retained", "conservative").
	Assumptions string `json:"assumptions"`
	// Profile is the profile file written (RunOptions.Profile) and Samples
	// the cycle samples it was built from; both absent without one.
	Profile string `json:"profile,omitempty"`
	Samples uint64 `json:"samples,omitempty"`
}

// Line renders the metrics as one line of key=value, in the documented order.
func (m *Metrics) Line() string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	kv := [][2]string{
		{"workload", m.Workload}, {"tiles", strconv.Itoa(m.Tiles)}, {"activeTiles", strconv.Itoa(m.ActiveTiles)},
		{"cycles", strconv.FormatUint(m.Cycles, 10)}, {"minimumTileCycles", strconv.FormatUint(m.MinimumTileCycles, 10)},
		{"deviceMicroseconds", f(m.DeviceMicroseconds, 3)}, {"effectiveGemmTflops", f(m.EffectiveGemmTflops, 3)},
		{"peakTflops", f(m.PeakTflops, 3)}, {"efficiencyPercent", f(m.EfficiencyPercent, 2)},
		{"maximumAbsoluteError", f(m.MaximumAbsoluteError, 6)}, {"numericalTest", m.NumericalTest},
		{"device", m.Device}, {"inputBytes", strconv.FormatInt(m.InputBytes, 10)},
		{"weightBytes", strconv.FormatInt(m.WeightBytes, 10)}, {"data", m.Data},
		{"assumptions", m.Assumptions},
	}
	if m.Profile != "" {
		kv = append(kv, [2]string{"profile", m.Profile}, [2]string{"samples", strconv.FormatUint(m.Samples, 10)})
	}
	parts := make([]string, len(kv))
	for i, p := range kv {
		parts[i] = p[0] + "=" + p[1]
	}
	return strings.Join(parts, " ")
}

// JSON renders the metrics as one JSON object.
func (m *Metrics) JSON() string {
	b, _ := json.Marshal(m)
	return string(b)
}

// RunOptions configure Run.
type RunOptions struct {
	Device        string
	DeviceOptions device.Options
	Logger        *slog.Logger
	// Profile, when set, is the file that receives the run profile
	// (see Profile and docs/PROFILE.md).
	Profile string
	// Data holds user host tensors by graph node name (LoadWeights,
	// LoadInput): row-major in the graph's shape, rounded to f16. They
	// replace the seeded data on the device and in the host reference.
	Data map[string][]float32
	// Output, when set, receives the device's result (row-major, the
	// output node's shape) before the numerical check decides.
	Output func(rows, cols int, got []float32) error
	// Conservative runs the emulator with the conservative assumption
	// set. A package built for the default set is refused (its GEMMs
	// would give wrong results, which says nothing new).
	Conservative bool
}

// Run runs a package built from recipe on a device, checks the output and
// returns the metrics (NumericalTest "PASS" or "FAIL"). g and pl may be nil:
// they are then regenerated from the recipe.
func Run(ctx context.Context, pkg *ipuexe.Package, r Recipe, g *graph.Graph, pl *low.Plan, opts RunOptions) (*Metrics, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if g == nil || pl == nil {
		var err error
		if g, pl, err = Prepare(r, nil); err != nil {
			return nil, err
		}
	}
	name, err := graph.WorkloadName(r.Workload, r.Flags)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(pkg, pl); err != nil {
		return nil, err
	}
	if err := CheckTensorShapes(pkg, r); err != nil {
		return nil, err
	}
	p := pl.Problem
	// Plans lowered from compiler/mid describe their host layouts as
	// rectangles (hostrect.go); the v0 family's layouts are known here.
	rects := hasRects(pl)
	if n, with := countRects(pl); with > 0 && !rects {
		return nil, fmt.Errorf("plan has %d of %d host slices with a rectangle: neither the v0 nor the generic packer applies", with, n)
	}
	if rects && len(pl.Outputs) == 0 {
		return nil, fmt.Errorf("plan has no output binding")
	}
	t0 := time.Now()
	for name := range opts.Data {
		if n := g.Node(name); n == nil || n.DType != graph.F16 || (n.Op != graph.OpInput && n.Op != graph.OpParameter) {
			return nil, fmt.Errorf("user data for %q: not an f16 input or parameter of the workload", name)
		}
	}
	// f16 returns a host tensor's f16 bits: the user's data when given,
	// else the seeded generator's.
	f16 := func(n *graph.Node) []uint16 {
		if v, ok := opts.Data[n.Name]; ok && n.DType == graph.F16 {
			return f16Bits(v)
		}
		return n.DataF16()
	}
	inputs := map[string][]byte{}
	weights := map[string][]byte{}
	var inputBytes, weightBytes int64
	outName := ""
	if rects {
		outName = pl.Outputs[0].Name
		if inputBytes, err = packBindings(g, pl.Inputs, inputs, f16); err != nil {
			return nil, err
		}
		if weightBytes, err = packBindings(g, pl.Weights, weights, f16); err != nil {
			return nil, err
		}
	} else {
		x := f16(g.Node(p.Input))
		if p.Kind == low.KindMLP {
			inputs[p.Input] = packActivations(pl, x)
			for _, blk := range p.Blocks {
				weights[blk.W1] = packW1(pl, f16(g.Node(blk.W1)))
				weights[blk.W2] = packW2(pl, f16(g.Node(blk.W2)))
				if p.Biases {
					weights[blk.B1] = packB1(pl, f16(g.Node(blk.B1)))
					weights[blk.B2] = packB2(pl, f16(g.Node(blk.B2)))
				}
			}
		} else {
			inputs[p.Input] = packInput(pl, x)
			weights[p.W1] = packW1(pl, f16(g.Node(p.W1)))
		}
	}
	log.Info("prepared reference inputs", "elapsed_ms", time.Since(t0).Milliseconds())
	t1 := time.Now()
	ref, err := reference.EvaluateDetailed(g, opts.Data, reference.Options{Precision: reference.Device, GenerateMissing: true})
	if err != nil {
		return nil, err
	}
	log.Info("evaluated host reference", "referencePrecision", reference.Device.String(), "elapsed_ms", time.Since(t1).Milliseconds())
	dev := opts.Device
	if dev == "" {
		dev = device.DefaultName
	}
	set := emu.DefaultAssumptions
	if opts.Conservative {
		if !r.Conservative() {
			return nil, fmt.Errorf("the package was built for assumptions=%s (its GEMM kernel keeps AMP state between worker runs), "+
				"so it cannot be run under the conservative assumptions: build it with --conservative", emu.DefaultAssumptions)
		}
		if dev != emudev.Name {
			return nil, fmt.Errorf("--conservative selects emulator assumptions; device %q is not the emulator", dev)
		}
		set = emu.ConservativeAssumptions
		eo, _ := opts.DeviceOptions.Backend.(emudev.Options)
		eo.Conservative = true
		opts.DeviceOptions.Backend = eo
	}
	res, err := runtime.Run(ctx, pkg, runtime.Options{Device: dev, DeviceOptions: opts.DeviceOptions,
		Inputs: inputs, Weights: weights, Logger: log})
	if err != nil {
		return nil, err
	}
	var got []float32
	if rects {
		got, err = unpackRects(pl.Outputs[0], res.Outputs[outName])
	} else {
		outName = p.Output
		got, err = unpackOutput(pl, res.Outputs[outName])
	}
	if err != nil {
		return nil, err
	}
	if opts.Output != nil {
		on := g.Outputs()[0].Node
		if len(on.Shape) != 2 || on.Shape.Elements() != len(got) {
			return nil, fmt.Errorf("output %q: shape %v does not hold %d values", outName, on.Shape, len(got))
		}
		if err := opts.Output(on.Shape[0], on.Shape[1], got); err != nil {
			return nil, err
		}
	}
	want := ref.Outputs[outName]
	tol := ref.Tolerances[outName]
	if len(want) != len(got) {
		return nil, fmt.Errorf("output %q: %d values, the reference %d", outName, len(got), len(want))
	}
	maxErr, worst, ok := reference.Compare(got, want, tol)
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
		var cols int
		switch {
		case rects:
			cols = pl.Outputs[0].Cols
		case p.Kind == low.KindMLP:
			cols = p.K
		default:
			cols = p.N
		}
		log.Error("numerical test failed", "worst_index", worst, "row", worst/cols, "col", worst%cols,
			"got", got[worst], "want", want[worst], "tolerance", tol.String())
	}
	tg := ipu21.IPU21()
	m := &Metrics{Workload: name, Tiles: len(pkg.Tiles), ActiveTiles: activeTiles(pl),
		Cycles: res.Cycles, MinimumTileCycles: res.MinimumTileCycles,
		MaximumAbsoluteError: maxErr, NumericalTest: verdict, Device: dev, Data: "seeded",
		Assumptions: set.String()}
	if len(opts.Data) > 0 {
		m.Data = "user"
	}
	m.DeviceMicroseconds = tg.Microseconds(int64(res.Cycles))
	m.PeakTflops = float64(m.Tiles) * float64(tg.FlopsPerCycleF16) * tg.ClockHz / 1e12
	if res.Cycles > 0 {
		secs := float64(res.Cycles) / tg.ClockHz
		m.EffectiveGemmTflops = float64(p.Flops) / secs / 1e12
		m.EfficiencyPercent = 100 * m.EffectiveGemmTflops / m.PeakTflops
	}
	if rects {
		m.InputBytes, m.WeightBytes = inputBytes, weightBytes
	} else {
		m.InputBytes = int64(2 * g.Node(p.Input).Shape.Elements())
		for _, blk := range p.Blocks {
			for _, w := range []string{blk.W1, blk.W2, blk.B1, blk.B2} {
				if w != "" {
					m.WeightBytes += int64(2 * g.Node(w).Shape.Elements())
				}
			}
		}
	}
	if math.IsNaN(m.MaximumAbsoluteError) {
		m.NumericalTest = "FAIL"
	}
	if opts.Profile != "" {
		t2 := time.Now()
		prof, err := Profile(pkg, pl, res, name)
		if err != nil {
			return nil, err
		}
		if err := prof.WriteFile(opts.Profile); err != nil {
			return nil, err
		}
		m.Profile, m.Samples = opts.Profile, prof.Samples
		log.Info("wrote run profile", "path", opts.Profile, "samples", prof.Samples, "steps", prof.NumSteps(),
			"cycles", prof.Cycles, "elapsed_ms", time.Since(t2).Milliseconds())
	}
	return m, nil
}

// activeTiles counts the tiles that compute. It reads the programs, not
// the v0 grid, which plans lowered from compiler/mid leave empty; for the
// v0 family it is Grid.R*Grid.C (every grid position gets its own tile).
func activeTiles(pl *low.Plan) int {
	n := 0
	for l := range pl.Programs {
		if pl.Programs[l].Active() {
			n++
		}
	}
	return n
}

// packBindings packs every rectangle binding of bs from its graph node's
// data into packed (name -> bytes) and returns the f16 size of those nodes
// (the metrics' input/weight bytes: the tensors, not their padded layouts).
func packBindings(g *graph.Graph, bs []low.HostBinding, packed map[string][]byte, f16 func(*graph.Node) []uint16) (int64, error) {
	var size int64
	for _, b := range bs {
		n := g.Node(b.Name)
		if n == nil {
			return 0, fmt.Errorf("host binding %q: no such graph node", b.Name)
		}
		data := f16(n)
		if data == nil {
			return 0, fmt.Errorf("host binding %q: graph node has no f16 data", b.Name)
		}
		var err error
		if packed[b.Name], err = packRects(b, data); err != nil {
			return 0, err
		}
		size += int64(2 * n.Shape.Elements())
	}
	return size, nil
}

// checkLayout checks that the package's bindings are the plan's.
func checkLayout(pkg *ipuexe.Package, pl *low.Plan) error {
	check := func(kind string, got []ipuexe.Binding, want []low.HostBinding) error {
		if len(got) != len(want) {
			return fmt.Errorf("package has %d %s, the plan %d", len(got), kind, len(want))
		}
		for i := range got {
			n, _ := got[i].Bytes()
			if got[i].Name != want[i].Name || int(n) != want[i].Bytes || len(got[i].Slices) != len(want[i].Slices) {
				return fmt.Errorf("package %s %q (%d bytes) does not match the plan's %q (%d bytes): built by another compiler version?",
					kind, got[i].Name, n, want[i].Name, want[i].Bytes)
			}
		}
		return nil
	}
	if err := check("inputs", pkg.Inputs, pl.Inputs); err != nil {
		return err
	}
	if err := check("weights", pkg.Weights, pl.Weights); err != nil {
		return err
	}
	return check("outputs", pkg.Outputs, pl.Outputs)
}

// f16Bits converts f16-exact float32 values to their f16 bits.
func f16Bits(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = float16.Fromfloat32(x).Bits()
	}
	return out
}
