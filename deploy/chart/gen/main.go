// Command gen writes deploy/addon-operator.yaml from the chart (package
// chart), and the chart's copy of the monitoring kit's alert rules.
package main

import (
	"fmt"
	"os"

	"github.com/addonops/addon-operator/deploy/chart"
)

func main() {
	if err := chart.Generate(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
