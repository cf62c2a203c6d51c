package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/ipustack/ipustack/elf"
	"github.com/spf13/cobra"
)

func newLinkCmd() *cobra.Command {
	var (
		out     string
		entry   string
		roots   []string
		keepAll bool
	)
	cmd := &cobra.Command{
		Use:   "link FILE.o... -o FILE.elf",
		Short: "link Colossus objects into a region-0 tile image",
		Long: `link places the sections reachable from the entry symbol in tile region 0
(0x4C000..0x80000, the entry section at 0x4C010), resolves symbols and applies
relocations, and writes an ELF32 executable. Undefined or duplicate symbols,
out-of-range relocations and images that do not fit are reported by name.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("link: -o FILE is required")
			}
			if err := refuseOverwrite(out, args...); err != nil {
				return err
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			objs := make([]*elf.Object, 0, len(args))
			for _, path := range args {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				obj, err := elf.Parse(path, data)
				if err != nil {
					return err
				}
				objs = append(objs, obj)
			}
			img, err := elf.Link(objs, elf.LinkOptions{Entry: entry, Roots: roots, KeepAll: keepAll})
			if err != nil {
				return err
			}
			data, err := img.Marshal()
			if err != nil {
				return err
			}
			var size uint32
			for _, s := range img.Sections {
				size += s.Size
			}
			slog.Debug("linked image", "entry", fmt.Sprintf("0x%x", img.Entry), "sections", len(img.Sections), "bytes", size)
			return writeFileAtomic(out, data)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output executable")
	cmd.Flags().StringVar(&entry, "entry", elf.DefaultEntry, "entry symbol, placed at 0x4C010")
	cmd.Flags().StringArrayVar(&roots, "keep", nil, "also keep the section defining this symbol (repeatable)")
	cmd.Flags().BoolVar(&keepAll, "keep-all", false, "keep every allocatable section, reachable or not")
	return cmd
}
