package main

import (
	"os"
	// change windows' time zones in an image without /usr/share/zoneinfo
	// (docs/operator.md, "Fleets")
	_ "time/tzdata"
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
