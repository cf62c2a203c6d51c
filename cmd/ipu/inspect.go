package main

import (
	"fmt"
	"os"

	"github.com/ipustack/ipustack/ipuexe"
	"github.com/spf13/cobra"
)

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE.ipuexe",
		Short: "summarise an application package: tiles, bytes by segment kind, bindings, calls",
		Long: `inspect reads a package, prints its summary and then validates it against its
target. A package that decodes but does not validate is still summarised, followed
by every problem found (each naming the field and tile); the exit status is then 1.`,
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
			if _, err := ipuexe.Read(data); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
}
