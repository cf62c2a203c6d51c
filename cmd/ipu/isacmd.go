package main

import (
	"fmt"
	"os"

	"github.com/ipustack/ipustack/isa"
	"github.com/ipustack/ipustack/isa/learn"
	"github.com/spf13/cobra"
)

// installISA installs the encoding overlay the user asked for (--isa, else
// $IPUSTACK_ISA), or the hidden permuted stand-in table, before any command
// assembles or decodes.
func installISA(g globalFlags) error {
	path, from := g.isa, "--isa"
	if path == "" {
		path, from = os.Getenv("IPUSTACK_ISA"), "IPUSTACK_ISA"
	}
	switch {
	case path != "" && g.isaPermute != 0:
		return fmt.Errorf("%s %s and --isa-permute: give one encoding table", from, path)
	case path != "":
		if err := isa.InstallFile(path); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	case g.isaPermute != 0:
		ov, err := isa.PermutedOverlay(g.isaPermute)
		if err != nil {
			return err
		}
		if err := isa.Install(ov); err != nil {
			return fmt.Errorf("--isa-permute: %w", err)
		}
	}
	return nil
}

func newISACmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "isa",
		Short: "instruction encodings: learn them from an SDK assembler, check an overlay",
	}
	cmd.AddCommand(newISALearnCmd(), newISACheckCmd())
	return cmd
}

func newISALearnCmd() *cobra.Command {
	var assembler, out, keep string
	cmd := &cobra.Command{
		Use:   "learn --assembler 'CMD {in} {out}' -o isa-overlay.json",
		Short: "learn the instruction encodings of an external assembler (the SDK's popc or llvm-mc)",
		Long: `learn writes a probe source holding every instruction of the table with
operand values that set each bit of each operand field alone and all
together, assembles it with the given command, reads the words back from the
ELF object's text sections and derives each instruction's fixed bits and the
position of every operand bit. The overlay it writes, given to --isa (or
$IPUSTACK_ISA), replaces ipustack's encodings in asm, objdump and the
emulator. Rows taken from the public record must agree with it.

The command template is split into arguments without a shell: blanks separate
words, 'single quotes' are literal, in "double quotes" a backslash escapes only
" and \, elsewhere a backslash escapes the next character; unquoted | & ; < >
( ) $ and backquote are refused (write sh -c '...' for a shell). {in} is
replaced by the probe source path and {out} by the object path. Example:
  ipu isa learn --assembler 'llvm-mc -triple colossus -mcpu ipu21 -filetype=obj {in} -o {out}' -o isa-overlay.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if assembler == "" {
				return fmt.Errorf("--assembler is required, e.g. --assembler 'llvm-mc -filetype=obj {in} -o {out}'")
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			if keep != "" {
				if fi, err := os.Stat(keep); err != nil || !fi.IsDir() {
					return fmt.Errorf("--keep %s: not a directory", keep)
				}
			}
			res, err := learn.Learn(learn.Options{Assembler: assembler, Dir: keep})
			if err != nil {
				return err
			}
			if err := writeFileAtomic(out, res.Overlay.Marshal()); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "learned %d of %d rows -> %s\n", res.Learned, res.Total, out)
			for _, id := range res.UnprobedIDs() {
				fmt.Fprintf(w, "not learned: %s: %s\n", id, res.Unprobed[id])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&assembler, "assembler", "", "assembler command template with {in} and {out}")
	cmd.Flags().StringVarP(&out, "output", "o", "isa-overlay.json", "overlay file to write")
	cmd.Flags().StringVar(&keep, "keep", "", "directory to keep the probe source (probe.S) and object (probe.o) in")
	return cmd
}

func newISACheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "validate an encodings overlay and say how it differs from ipustack's encodings",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ov, err := isa.LoadOverlayFile(args[0])
			if err != nil {
				return err
			}
			def := map[string]string{}
			for _, r := range isa.DefaultOverlay().Rows {
				def[r.ID] = fmt.Sprint(r)
			}
			differ := 0
			for _, r := range ov.Rows {
				if def[r.ID] != fmt.Sprint(r) {
					differ++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid overlay, %d of %d rows, %d differ from ipustack's encodings\n", args[0], len(ov.Rows), len(isa.Table), differ)
			return nil
		},
	}
}
