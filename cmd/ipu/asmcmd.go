package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/internal/safefile"
	"github.com/spf13/cobra"
)

func newAsmCmd() *cobra.Command {
	var (
		out      string
		defines  []string
		includes []string
	)
	cmd := &cobra.Command{
		Use:   "asm FILE.S [-D NAME=VALUE]... [-I DIR]... -o FILE.o",
		Short: "assemble IPU21 assembly into a Colossus ELF object",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			defs, err := parseDefines(defines)
			if err != nil {
				return err
			}
			for _, dir := range includes {
				fi, err := os.Stat(dir)
				if err != nil {
					return fmt.Errorf("-I %s: %w", dir, safefile.Cause(err))
				}
				if !fi.IsDir() {
					return fmt.Errorf("-I %s: not a directory", dir)
				}
			}
			if out == "" {
				out = strings.TrimSuffix(src, filepath.Ext(src)) + ".o"
			}
			if err := refuseOverwrite(out, src); err != nil {
				return err
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			text, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			// Record the files #include reads: the output must not replace
			// one of them either.
			var read []string
			readFile := func(path string) ([]byte, error) {
				b, err := os.ReadFile(path)
				if err == nil {
					read = append(read, path)
				}
				return b, err
			}
			obj, err := asm.Assemble(src, text, asm.Options{Defines: defs, IncludeDirs: includes, ReadFile: readFile})
			if err != nil {
				return err
			}
			if err := refuseOverwrite(out, read...); err != nil {
				return err
			}
			data, err := obj.Marshal()
			if err != nil {
				return fmt.Errorf("write object for %s: %w", src, err)
			}
			return writeFileAtomic(out, data)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output object file (default: FILE.o)")
	cmd.Flags().StringArrayVarP(&defines, "define", "D", nil, "preprocessor definition NAME or NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVarP(&includes, "include", "I", nil, "directory searched by #include (repeatable)")
	return cmd
}

// parseDefines turns -D flags into a map; NAME alone defines it as 1, as a C
// preprocessor does.
func parseDefines(flags []string) (map[string]string, error) {
	defs := make(map[string]string, len(flags))
	for _, d := range flags {
		name, value, ok := strings.Cut(d, "=")
		if !ok {
			value = "1"
		}
		if !isIdent(name) {
			return nil, fmt.Errorf("-D %q: %q is not a valid macro name", d, name)
		}
		defs[name] = value
	}
	return defs, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// refuseOverwrite stops an output path from clobbering one of the inputs,
// whether it names the input directly, through another spelling of the path
// or through a symbolic or hard link.
func refuseOverwrite(out string, inputs ...string) error {
	return refuseOverwriteFlag("-o", out, inputs...)
}

// refuseOverwriteFlag is refuseOverwrite for an output given by flag.
func refuseOverwriteFlag(flag, out string, inputs ...string) error {
	ao, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("output %s: %w", out, err)
	}
	oi, statErr := os.Stat(out)
	for _, in := range inputs {
		ai, err := filepath.Abs(in)
		if err != nil {
			return fmt.Errorf("input %s: %w", in, err)
		}
		same := ai == ao
		if !same && statErr == nil {
			if ii, err := os.Stat(in); err == nil && os.SameFile(oi, ii) {
				same = true
			}
		}
		if same {
			return fmt.Errorf("output %s would overwrite the input %s; choose another %s", out, in, flag)
		}
	}
	return nil
}

// checkOutput reports, before any work is done, an output path that cannot
// be written (see internal/safefile).
func checkOutput(path string) error { return safefile.Check(path) }

// writeFileAtomic writes an output file the safe way (internal/safefile):
// a failed write never leaves a truncated output behind.
func writeFileAtomic(path string, data []byte) error { return safefile.WriteFile(path, data, 0o644) }

// writeAtomic is writeFileAtomic for output produced by write, which may
// fail half way: the previous content of path, if any, is then kept.
func writeAtomic(path string, write func(io.Writer) error) error {
	return safefile.Write(path, 0o644, write)
}
