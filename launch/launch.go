package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Data is "user" when Options.Data gave any host tensor, else "seeded".
	Data string `json:"data"`
	// Assumptions is the emulator assumption set the run used
	// (emu.AssumptionSet.String: "amp-state-retained", "conservative").
	Assumptions string `json:"assumptions"`
	// Profile is the profile file written (Options.Profile) and Samples
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

// Options configure Run.
type Options struct {
	Device        string
	DeviceOptions device.Options
	Logger        *slog.Logger
	// Profile, when set, is the file that receives the run profile
	// (see Profile and docs/PROFILE.md).
	Profile string
	// Data holds user host tensors by graph node name: row-major in the
	// graph's shape, rounded to f16. They replace the seeded data on the
	// device and in the host reference.
	Data map[string][]float32
	// Output, when set, receives the device's result (row-major, the
	// output node's shape) before the numerical check decides.
	Output func(rows, cols int, got []float32) error
	// Conservative runs the emulator with the conservative assumption
	// set. A package built for the default set is refused (its GEMMs
	// would give wrong results, which says nothing new).
	Conservative bool
}

// Run runs pkg on a device and checks its output against the host
// reference of g, the workload graph it was built from (its recipe's:
// the inputs and parameters the seeded data and the reference come
// from). It returns the metrics (NumericalTest "PASS" or "FAIL").
func Run(ctx context.Context, pkg *ipuexe.Package, g *graph.Graph, opts Options) (*Metrics, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if pkg.Run.Workload == "" {
		return nil, fmt.Errorf("the package does not describe itself (no run information: built by an older compiler?); build it again")
	}
	if len(pkg.Outputs) != 1 {
		return nil, fmt.Errorf("the package has %d outputs; a run checks exactly one", len(pkg.Outputs))
	}
	t0 := time.Now()
	for name := range opts.Data {
		if n := g.Node(name); n == nil || n.DType != graph.F16 || (n.Op != graph.OpInput && n.Op != graph.OpParameter) {
			return nil, fmt.Errorf("user data for %q: not an f16 input or parameter of the workload", name)
		}
	}
	inputs, inputBytes, err := pack(g, pkg.Inputs, opts.Data)
	if err != nil {
		return nil, err
	}
	weights, weightBytes, err := pack(g, pkg.Weights, opts.Data)
	if err != nil {
		return nil, err
	}
	out := &pkg.Outputs[0]
	if _, _, _, err := checkLayout(out); err != nil {
		return nil, err
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
		if pkg.Run.Assumptions != ipuexe.AssumptionsConservative {
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
	got, err := Unpack(out, res.Outputs[out.Name])
	if err != nil {
		return nil, err
	}
	_, cols, _ := out.Matrix()
	if opts.Output != nil {
		on := g.Outputs()[0].Node
		if len(on.Shape) != 2 || on.Shape.Elements() != len(got) {
			return nil, fmt.Errorf("output %q: shape %v does not hold %d values", out.Name, on.Shape, len(got))
		}
		if err := opts.Output(on.Shape[0], on.Shape[1], got); err != nil {
			return nil, err
		}
	}
	want := ref.Outputs[out.Name]
	tol := ref.Tolerances[out.Name]
	if len(want) != len(got) {
		return nil, fmt.Errorf("output %q: %d values, the reference %d", out.Name, len(got), len(want))
	}
	maxErr, worst, ok := reference.Compare(got, want, tol)
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
		c := int(max(1, cols))
		log.Error("numerical test failed", "worst_index", worst, "row", worst/c, "col", worst%c,
			"got", got[worst], "want", want[worst], "tolerance", tol.String())
	}
	tg := ipu21.IPU21()
	m := &Metrics{Workload: pkg.Run.Workload, Tiles: len(pkg.Tiles), ActiveTiles: len(pkg.Profile.Tiles),
		Cycles: res.Cycles, MinimumTileCycles: res.MinimumTileCycles,
		MaximumAbsoluteError: maxErr, NumericalTest: verdict, Device: dev, Data: "seeded",
		Assumptions: set.String(), InputBytes: inputBytes, WeightBytes: weightBytes}
	if len(opts.Data) > 0 {
		m.Data = "user"
	}
	m.DeviceMicroseconds = tg.Microseconds(int64(res.Cycles))
	m.PeakTflops = float64(m.Tiles) * float64(tg.FlopsPerCycleF16) * tg.ClockHz / 1e12
	if res.Cycles > 0 {
		secs := float64(res.Cycles) / tg.ClockHz
		m.EffectiveGemmTflops = float64(pkg.Run.Flops) / secs / 1e12
		m.EfficiencyPercent = 100 * m.EffectiveGemmTflops / m.PeakTflops
	}
	if math.IsNaN(m.MaximumAbsoluteError) {
		m.NumericalTest = "FAIL"
	}
	if opts.Profile != "" {
		t2 := time.Now()
		prof, err := Profile(pkg, res)
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

// pack packs every binding of bs from its graph node's data (the user's
// when data has it, else the seeded generator's) and returns the packed
// bytes by name and the f16 size of those tensors (the metrics' input and
// weight bytes: the tensors, not their padded layouts).
func pack(g *graph.Graph, bs []ipuexe.Binding, data map[string][]float32) (map[string][]byte, int64, error) {
	packed := map[string][]byte{}
	var size int64
	for i := range bs {
		b := &bs[i]
		n := g.Node(b.Name)
		if n == nil {
			return nil, 0, fmt.Errorf("host binding %q: no such node in the workload graph", b.Name)
		}
		shape := make([]uint32, len(n.Shape))
		for j, d := range n.Shape {
			shape[j] = uint32(d)
		}
		if len(b.TensorShape) > 0 && !slices.Equal(shape, b.TensorShape) {
			return nil, 0, fmt.Errorf("package binds %q as %v, the workload graph has %v: the package is damaged or from another compiler version",
				b.Name, b.TensorShape, n.Shape)
		}
		var bits []uint16
		if v, ok := data[n.Name]; ok && n.DType == graph.F16 {
			bits = f16Bits(v)
		} else {
			bits = n.DataF16()
		}
		if bits == nil {
			return nil, 0, fmt.Errorf("host binding %q: graph node has no f16 data", b.Name)
		}
		var err error
		if packed[b.Name], err = Pack(b, bits); err != nil {
			return nil, 0, err
		}
		size += int64(2 * n.Shape.Elements())
	}
	return packed, size, nil
}

// f16Bits converts f16-exact float32 values to their f16 bits.
func f16Bits(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = float16.Fromfloat32(x).Bits()
	}
	return out
}
