package main

import (
	"fmt"
	"io"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/internal/npy"
	"github.com/ipustack/ipustack/launch"
	"github.com/spf13/pflag"
)

// userDataFlags are `ipu run`'s host-data flags: the user's weights
// (safetensors), input and output (.npy). They apply to a package file as
// well as to a workload built from flags: a package is code, and runs with
// any data of the shapes its recipe fixes.
type userDataFlags struct {
	weights, prefix string
	input, output   string
	outputDType     string
	strict          bool
	inShape         []int // the --input array's shape, which --output takes
}

func (u *userDataFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&u.weights, "weights", "", "read the MLP's weights from this safetensors checkpoint (Hugging Face names fc1.weight [hidden, dim], fc1.bias, fc2.weight, fc2.bias)")
	fs.StringVar(&u.prefix, "weights-prefix", "", "prefix of the checkpoint's tensor names (one layer: e.g. vision_model.encoder.layers.7.mlp.; with --blocks N: the layer list, e.g. vision_model.encoder.layers., read as PREFIX<i>.mlp.fc1.weight for i < N)")
	fs.StringVar(&u.input, "input", "", "read the input from this .npy (f16 or f32, C order, [tokens, dim] or [batch, tokens, dim]) instead of seeded data")
	fs.StringVar(&u.output, "output", "", "write the device's result to this .npy")
	fs.StringVar(&u.outputDType, "output-dtype", "f32", "dtype of --output: f32 or f16")
	fs.BoolVar(&u.strict, "strict", false, "make values that overflow f16 or flush to zero in --weights/--input an error (default: a warning)")
}

// names are the flags that also apply to a package file.
func (u *userDataFlags) names() []string {
	return []string{"weights", "weights-prefix", "input", "output", "output-dtype", "strict"}
}

// apply checks the flags and loads the user's data for recipe r into opts.
func (u *userDataFlags) apply(r driver.Recipe, opts *launch.Options) error {
	var dt string
	switch u.outputDType {
	case "f32":
		dt = "<f4"
	case "f16":
		dt = "<f2"
	default:
		return fmt.Errorf("--output-dtype %q: want f32 or f16", u.outputDType)
	}
	if u.prefix != "" && u.weights == "" {
		return fmt.Errorf("--weights-prefix %q given without --weights", u.prefix)
	}
	if u.output != "" {
		var ins []string
		for _, f := range []string{u.input, u.weights} {
			if f != "" {
				ins = append(ins, f)
			}
		}
		if err := refuseOverwriteFlag("--output", u.output, ins...); err != nil {
			return err
		}
		if err := checkOutput(u.output); err != nil {
			return err
		}
	}
	data := map[string][]float32{}
	if u.weights != "" {
		if err := driver.LoadWeights(r, u.weights, u.prefix, u.strict, nil, data); err != nil {
			return err
		}
	}
	if u.input != "" {
		s, err := driver.LoadInput(r, u.input, u.strict, nil, data)
		if err != nil {
			return err
		}
		u.inShape = s
	}
	if len(data) > 0 {
		opts.Data = data
	}
	if u.output != "" {
		out := u.output
		opts.Output = func(rows, cols int, got []float32) error {
			shape := driver.OutputShape(u.inShape, rows, cols)
			return writeAtomic(out, func(w io.Writer) error { return npy.Write(w, dt, shape, got) })
		}
	}
	return nil
}
