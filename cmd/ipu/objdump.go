package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
	"github.com/spf13/cobra"
)

func newObjdumpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "objdump FILE",
		Short: "disassemble a Colossus ELF object or executable, one line per word",
		Long: `objdump prints every executable section of FILE (an object from 'ipu asm' or an
executable from 'ipu link') as lines of

  ADDRESS  WORD  disassembly

in hexadecimal, with labels on their own lines and relocations as comments. The
disassembly column, read top to bottom, assembles back to the same words: a bundle
is written '{ main ;' on its first word and 'aux }' on its second, an instruction's
inline second word has an empty column, and a word that decodes to nothing is
written '.long 0x...'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			secs, err := elf.Sections(args[0], data)
			if err != nil {
				return err
			}
			return dumpSections(cmd.OutOrStdout(), secs)
		},
	}
}

func dumpSections(w io.Writer, secs []elf.LoadedSection) error {
	first := true
	for i := range secs {
		s := &secs[i]
		if s.Flags&elf.FlagExec == 0 || s.NoBits {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		fmt.Fprintf(w, "// section %s at 0x%x, %d bytes\n", s.Name, s.Addr, len(s.Data))
		if err := dumpCode(w, s); err != nil {
			return err
		}
	}
	return nil
}

// dumpCode disassembles one section. Each output line is one word.
func dumpCode(w io.Writer, s *elf.LoadedSection) error {
	labels := map[uint32][]string{}
	for _, sym := range s.Symbols {
		if sym.Name != "" {
			labels[sym.Offset] = append(labels[sym.Offset], sym.Name)
		}
	}
	relocs := map[uint32][]string{}
	for _, r := range s.Relocs {
		text := fmt.Sprintf("%s %s", r.Type, r.Symbol)
		if r.Addend != 0 {
			text += fmt.Sprintf("%+d", r.Addend)
		}
		relocs[r.Offset] = append(relocs[r.Offset], text)
	}
	n := len(s.Data) / 4
	words := make([]uint32, n)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(s.Data[4*i:])
	}
	line := func(off uint32, text string) {
		suffix := ""
		if rs := relocs[off]; len(rs) > 0 {
			sort.Strings(rs)
			suffix = "  // " + strings.Join(rs, ", ")
		}
		fmt.Fprintf(w, "%08x  %08x  %s%s\n", s.Addr+off, words[off/4], text, suffix)
	}
	for i := 0; i < n; {
		off := uint32(4 * i)
		for _, l := range labels[off] {
			fmt.Fprintf(w, "%s:\n", l)
		}
		d, err := isa.Decode(words[i:])
		if err != nil {
			line(off, fmt.Sprintf(".long 0x%08x", words[i]))
			i++
			continue
		}
		if d.CoIssue && i+d.Inst.Words < n {
			// A bundle: the next instruction co-issues with this one.
			d2, err2 := isa.Decode(words[i+d.Inst.Words:])
			if err2 == nil && d.Inst.Words == 1 && d2.Inst.Words == 1 {
				line(off, "{ "+isa.Format(d)+" ;")
				line(off+4, "  "+isa.Format(d2)+" }")
				i += 2
				continue
			}
		}
		line(off, isa.Format(d))
		for k := 1; k < d.Inst.Words; k++ {
			line(off+uint32(4*k), "")
		}
		i += d.Inst.Words
	}
	if rem := len(s.Data) % 4; rem != 0 {
		fmt.Fprintf(w, "%08x  %-8s  .byte", s.Addr+uint32(len(s.Data)-rem), "")
		for j := len(s.Data) - rem; j < len(s.Data); j++ {
			sep := ","
			if j == len(s.Data)-rem {
				sep = ""
			}
			fmt.Fprintf(w, "%s 0x%02x", sep, s.Data[j])
		}
		fmt.Fprintln(w)
	}
	return nil
}
