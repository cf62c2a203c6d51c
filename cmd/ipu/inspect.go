package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/spf13/cobra"
)

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE.ipuexe",
		Short: "summarise an application package: tiles, bytes by segment kind, bindings, calls",
		Long: `inspect reads a package, prints its summary and then validates it against its
target. A package that decodes but does not validate is still summarised, followed
by every problem found (each naming the field and tile); the exit status is then 1.

It also lists the host tensors the package binds (from its recorded recipe):
role, binding name, dtype and shape, and for weights the Hugging Face
checkpoint name (after ipu run --weights-prefix) and shape (out x in) that
ipu run --weights reads. Any data of these shapes runs on the package.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			pkg, err := ipuexe.Decode(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprint(cmd.OutOrStdout(), ipuexe.Summary(pkg))
			if err := printTensors(cmd.OutOrStdout(), pkg); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if _, err := ipuexe.Read(data); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
}

// printTensors lists the host tensors a package binds, with the shapes
// recorded in its bindings (ipuexe.Binding.TensorShape) and, from its
// recipe, the checkpoint names ipu run --weights reads them by. A package
// written before shapes were recorded takes them from its recipe.
func printTensors(w io.Writer, pkg *ipuexe.Package) error {
	byNode := map[string]driver.Tensor{}
	if pkg.Recipe != "" {
		r, err := driver.RecipeOf(pkg)
		if err != nil {
			return err
		}
		ts, err := driver.Tensors(r)
		if err != nil {
			return fmt.Errorf("recipe: %w", err)
		}
		for _, t := range ts {
			byNode[t.Node] = t
		}
		if err := driver.CheckTensorShapes(pkg, r); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "host tensors (role, binding, dtype, shape; checkpoint name under --weights-prefix, shape out x in):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, kb := range []struct {
		role string
		bs   []ipuexe.Binding
	}{{"input", pkg.Inputs}, {"weight", pkg.Weights}, {"output", pkg.Outputs}} {
		for _, b := range kb.bs {
			t, known := byNode[b.Name]
			shape := "?"
			switch {
			case len(b.TensorShape) > 0:
				shape = fmt.Sprint(b.TensorShape)
			case known:
				shape = fmt.Sprint(t.Shape) + " (from the recipe)"
			}
			ck := ""
			if t.Checkpoint != "" {
				ck = fmt.Sprintf("checkpoint %s %v", t.Checkpoint, t.CheckpointShape)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", kb.role, b.Name, b.DType, shape, ck)
		}
	}
	return tw.Flush()
}
