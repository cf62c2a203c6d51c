package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipustack/ipustack/asm"
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
			if out == "" {
				out = strings.TrimSuffix(src, filepath.Ext(src)) + ".o"
			}
			if err := refuseOverwrite(out, src); err != nil {
				return err
			}
			text, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			obj, err := asm.Assemble(src, text, asm.Options{Defines: defs, IncludeDirs: includes})
			if err != nil {
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

// refuseOverwrite stops an output path from clobbering one of the inputs.
func refuseOverwrite(out string, inputs ...string) error {
	ao, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	for _, in := range inputs {
		ai, err := filepath.Abs(in)
		if err != nil {
			return err
		}
		if ai == ao {
			return fmt.Errorf("output %s would overwrite the input %s; choose another -o", out, in)
		}
	}
	return nil
}

// writeFileAtomic writes through a temporary file in the same directory so a
// failed write never leaves a truncated output behind.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		os.Remove(name)
		return err
	}
	return os.Rename(name, path)
}
