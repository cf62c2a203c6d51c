// Command ipu is the ipustack command line: it assembles, links and
// disassembles IPU21 code today, and will build and run whole models as the
// compiler and device land (see README.md for what exists).
package main

import (
	"errors"
	"fmt"
	_ "github.com/ipustack/ipustack/device/c600"      // the real-card backend ("c600[:/dev/ipuN]")
	_ "github.com/ipustack/ipustack/device/c600model" // the driver over the card model ("c600-model")
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries a specific exit status out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// run executes the CLI with args and returns the process exit status. It is
// separate from main so tests drive the real command tree.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "ipu: %v\n", err)
		return 1
	}
	return 0
}

type globalFlags struct {
	logFormat  string
	logLevel   string
	isa        string
	isaPermute uint64
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "ipu",
		Short:         "ipustack: an ahead-of-time compiler and runtime for the Graphcore IPU21",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := setupLogging(g, stderr); err != nil {
				return err
			}
			return installISA(g)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.isa, "isa", "", "instruction encodings overlay from ipu isa learn, for the assembler, objdump and emulator (default $IPUSTACK_ISA)")
	root.PersistentFlags().Uint64Var(&g.isaPermute, "isa-permute", 0, "test stand-in for an SDK: scramble ipustack's own encodings with this seed")
	_ = root.PersistentFlags().MarkHidden("isa-permute")
	root.AddCommand(newISACmd(), newAsmCmd(), newObjdumpCmd(), newLinkCmd(), newKernelCmd(), newInspectCmd(), newRunCmd(), newBuildCmd(), newVersionCmd(), newDiagnoseCmd(), newExchangeCmd(), newProfileCmd(), newTileCmd())
	root.SetFlagErrorFunc(flagError)
	nameArgErrors(root)
	noOctal(root)
	return root
}

// errOctal is the cause of a flag error for an integer with a leading zero.
var errOctal = errors.New("leading zero")

// octalValue refuses integers written with a leading zero, which pflag
// would read as octal: --tiles 010 would silently mean 8 tiles.
type octalValue struct{ pflag.Value }

func (v octalValue) Set(s string) error {
	if f := strings.TrimLeft(s, "+-"); len(f) > 1 && f[0] == '0' && f[1] >= '0' && f[1] <= '9' {
		return errOctal
	}
	return v.Value.Set(s)
}

// noOctal wraps every integer flag of c and its subcommands in octalValue
// (slice flags parse in decimal already).
func noOctal(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			if _, done := f.Value.(octalValue); !done {
				f.Value = octalValue{f.Value}
			}
		}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		noOctal(sub)
	}
}

// cmdName is a command's path without the program name: "kernel run".
func cmdName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// flagError rewrites pflag's parse errors into "COMMAND: --flag "value":
// want ...", without the Go parser's own words (strconv.ParseUint ...).
func flagError(cmd *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		f := iv.GetFlag()
		want := "a valid " + f.Value.Type()
		switch f.Value.Type() {
		case "int", "int64", "int32":
			want = "an integer"
		case "uint", "uint64", "uint32":
			want = "a non-negative integer"
		case "intSlice", "int64Slice", "int32Slice", "uintSlice":
			want = "integers separated by commas"
		case "duration":
			want = "a duration with a unit, such as 500ms, 30s or 2m"
		case "bool":
			want = "true or false"
		case "float64", "float32":
			want = "a number"
		}
		if errors.Is(err, errOctal) {
			want += " without a leading zero (it would be read as octal)"
		}
		if errors.Is(err, strconv.ErrRange) {
			want += " (this one is out of range)"
		}
		return fmt.Errorf("%s: --%s %q: want %s", cmdName(cmd), f.Name, iv.GetValue(), want)
	}
	return fmt.Errorf("%s: %v (see ipu %s --help)", cmdName(cmd), err, cmdName(cmd))
}

// nameArgErrors makes every command's argument-count errors name the
// command and its usage.
func nameArgErrors(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return fmt.Errorf("%s: %v; usage: %s", cmdName(cmd), err, cmd.UseLine())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		nameArgErrors(sub)
	}
}

func setupLogging(g globalFlags, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		slog.SetDefault(slog.New(slog.NewTextHandler(stderr, opts)))
	case "json":
		slog.SetDefault(slog.New(slog.NewJSONHandler(stderr, opts)))
	default:
		return fmt.Errorf("--log-format %q: want text or json", g.logFormat)
	}
	return nil
}

// Version is the compiler version recorded in outputs.
const Version = "0.1.0"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the ipustack version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "ipustack %s\n", Version)
			return nil
		},
	}
}
