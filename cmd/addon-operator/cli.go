package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Exit codes (docs/operator.md, "Command line").
const (
	exitOK = 0
	// exitFailed: the command failed; for diff, the trees differ.
	exitFailed = 1
	// exitUsage: an unknown command, flag or argument; for diff, the
	// comparison itself failed (as diff(1) and kubectl diff).
	exitUsage = 2
)

// usageError is a command line that asks for something that does not
// exist; it exits with exitUsage and points at the command's help.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// rootExample is the root's --help example block: what a newcomer types first.
const rootExample = `  # a local control plane and the examples/ repository, from a clone
  make run

  # follow a git repository from inside a cluster
  GIT_URL=https://git.example.com/platform/modules.git GIT_REF=main addon-operator start

  # what runs, from which commit; roll back by pinning a tag
  addon-operator source status
  addon-operator source set-ref v1.2.0

  # preview what a pull request changes, without running its code
  addon-operator diff --from main --to refs/pull/42/head`

// newRootCmd is the command tree. Every command reads its settings from
// flags with an environment fallback (the flag wins), as before cobra.
func newRootCmd(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "addon-operator",
		Short: "Run cluster add-ons (Helm chart, hooks, values) from a git repository",
		Long: `addon-operator manages cluster add-ons ("modules": a Helm chart, hook scripts, values and
OpenAPI schemas) and global hooks, pulled from a git repository or read from a directory.

With no command, or with only flags, it runs 'start'. Every setting is a flag with an
environment fallback; the flag wins. See docs/operator.md for every setting.`,
		Example:       rootExample,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddGroup(
		&cobra.Group{ID: "run", Title: "Run the operator:"},
		&cobra.Group{ID: "git", Title: "Git source and previews:"},
		&cobra.Group{ID: "inspect", Title: "Inspect a running operator:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("run", newStartCmd(&startOptions{}, &env{}))
	add("git", newSourceCmd(), newRenderCmd(), newDiffCmd(), newConfigCmd())
	add("inspect", newDebugCmds()...)
	root.AddCommand(newVersionCmd())
	root.SetHelpCommandGroupID("")
	root.SetCompletionCommandGroupID("")
	return root
}

// execute runs one command line and returns the process's exit code.
func execute(args []string, out, errOut io.Writer) int {
	root := newRootCmd(out, errOut)
	root.SetArgs(defaultToStart(singleDashLongFlags(root, args)))
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errDiffFound) {
		return exitFailed
	}
	fmt.Fprintln(errOut, "addon-operator:", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	if cmd.Name() == "diff" {
		return exitUsage
	}
	return exitFailed
}

// defaultToStart keeps the command line of earlier versions working: no
// command, or flags alone, mean start.
func defaultToStart(args []string) []string {
	if len(args) == 0 {
		return []string{"start"}
	}
	switch args[0] {
	case "-h", "--help", "--version":
		return args
	}
	if strings.HasPrefix(args[0], "-") {
		return append([]string{"start"}, args...)
	}
	return args
}

// singleDashLongFlags turns -flag-name into --flag-name for the long flags
// of cmd's tree: the standard flag package, which earlier versions used,
// took long flags with one dash, where pflag would read a cluster of
// one-letter flags. -o, -g and -ojson are not long names and stay as they are.
func singleDashLongFlags(cmd *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, s := range c.Commands() {
			visit(s)
		}
	}
	visit(cmd)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "="); len(a) > 2 && a[0] == '-' && a[1] != '-' && len(name) > 1 && long[name] {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

// run runs cmd alone on args, writing to out: the way tests and the
// wrappers below call one command without the whole tree.
func run(cmd *cobra.Command, args []string, out io.Writer) error {
	cmd.SetArgs(singleDashLongFlags(cmd, args))
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd.Execute()
}

// exactArgs is cobra.ExactArgs with a usage error that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
			}
			return usageError{fmt.Errorf("usage: %s %s", cmd.CommandPath(), names)}
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands: run alone, or with an
// unknown subcommand, it is a usage error that lists them.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q (commands of %s: %s)", cmd.Name()+" "+args[0], cmd.CommandPath(), subNames(cmd))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("%s needs a command: %s", cmd.CommandPath(), subNames(cmd))}
		},
	}
	c.AddCommand(subs...)
	return c
}

func subNames(cmd *cobra.Command) string {
	var names []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return strings.Join(names, ", ")
}

// outputFlag adds -o/--output with the formats a command prints.
func outputFlag(fs *pflag.FlagSet, dst *string, formats ...string) {
	*dst = formats[0]
	fs.StringVarP(dst, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
}

// checkOutput refuses a format the command does not print; "text" is the
// original addon-operator's name of the table.
func checkOutput(output *string, formats ...string) error {
	if *output == "text" {
		*output = "table"
	}
	for _, f := range formats {
		if *output == f {
			return nil
		}
	}
	var want []string
	for _, f := range []string{"table", "json", "yaml"} {
		if slices.Contains(formats, f) {
			want = append(want, f)
		}
	}
	last := len(want) - 1
	return usageError{fmt.Errorf("-o %s: want %s or %s", *output, strings.Join(want[:last], ", "), want[last])}
}

// writeData prints v as JSON or YAML for -o; it reports false for any other
// format, which the command prints its own way.
func writeData(w io.Writer, output string, v any) (bool, error) {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		y, err := yaml.Marshal(v)
		if err == nil {
			_, err = w.Write(y)
		}
		return true, err
	}
	return false, nil
}
