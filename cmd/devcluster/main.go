package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/addonops/addon-operator/internal/testenv"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "bin/run/kubeconfig", "where to write the admin kubeconfig")
	dir := flag.String("dir", "", "data directory (default: a temporary directory removed on exit)")
	workloads := flag.Bool("workloads", true, "also run kube-controller-manager, kube-scheduler and kwok, so pods start on a simulated node")
	crdDir := flag.String("crds", "", "a directory of CRD files (*.yaml, one CRD each) to create once the control plane is up, as the chart's crds/ (make run: the Module objects')")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var opts []testenv.Option
	if *dir != "" {
		opts = append(opts, testenv.WithDir(*dir))
	}
	if *workloads {
		opts = append(opts, testenv.WithWorkloads())
	}
	cp, err := testenv.Start(ctx, opts...)
	if err != nil {
		slog.Error("start control plane", "err", err)
		os.Exit(1)
	}
	defer cp.Stop()
	var crds []string
	if *crdDir != "" {
		if crds, err = applyCRDs(ctx, cp.Config, *crdDir); err != nil {
			slog.Error("create the CRDs", "dir", *crdDir, "err", err)
			return
		}
	}
	if err := copyFile(cp.KubeconfigPath, *kubeconfig); err != nil {
		slog.Error("write kubeconfig", "err", err)
		return
	}
	nodes := ""
	if *workloads {
		nodes = fmt.Sprintf(" with simulated node %s", testenv.NodeName)
	}
	if len(crds) > 0 {
		nodes += "; CRDs " + strings.Join(crds, ", ")
	}
	fmt.Printf("control plane ready at %s%s; kubeconfig: %s\n", cp.Config.Host, nodes, *kubeconfig)
	<-ctx.Done()
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	// renamed into place so a waiting script never reads half a file
	return os.Rename(tmp, to)
}
