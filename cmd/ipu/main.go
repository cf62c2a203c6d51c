// Command ipu is the ipustack command line: it assembles, links and
// disassembles IPU21 code today, and will build and run whole models as the
// compiler and device land (see README.md for what exists).
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
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
	logFormat string
	logLevel  string
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "ipu",
		Short:         "ipustack: an ahead-of-time compiler and runtime for the Graphcore IPU21",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging(g, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.AddCommand(newAsmCmd(), newObjdumpCmd(), newLinkCmd(), newKernelCmd(), newInspectCmd(), newRunCmd(), newBuildCmd(), newVersionCmd(), newDiagnoseCmd(), newExchangeCmd(), newProfileCmd())
	return root
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
