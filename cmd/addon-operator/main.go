// Command addon-operator runs the operator (`start`, the default) and its
// helper subcommands. The command tree is in cli.go; each command's flags
// and run are in the file of its job.
package main

import "os"

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
