// Command addon-operator runs the operator (`start`, the default) and its
// helper subcommands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	args := os.Args[1:]
	cmd := "start"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "start":
		err = start(args)
	case "source":
		err = sourceCommand(args)
	case "render":
		err = renderCommand(args, os.Stdout)
	case "diff":
		err = diffCommand(args, os.Stdout)
	case "module", "global", "queue", "hook":
		err = debugCommand(cmd, args, os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (commands: start, source, render, diff, module, global, queue, hook)", cmd)
	}
	if errors.Is(err, errDiffFound) {
		os.Exit(1)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "addon-operator:", err)
		os.Exit(1)
	}
}
