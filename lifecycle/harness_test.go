package lifecycle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/objectpatch"
)

var (
	restCfg      *rest.Config
	client       kubernetes.Interface
	watcher      *kube.Watcher
	controlPlane *testenv.ControlPlane
	nsSeq        atomic.Int64
)

// shared is the package's API server, started by the first test that
// needs it (cluster): the unit tests of the steps (fakes_test.go) run
// without one.
var shared = testenv.Shared{Setup: func(cp *testenv.ControlPlane) {
	restCfg, controlPlane = cp.Config, cp
	client = kubernetes.NewForConfigOrDie(restCfg)
	var err error
	if watcher, err = kube.NewWatcher(restCfg, quiet()); err != nil {
		panic(err)
	}
}}

func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }

// cluster makes sure the API server runs (and the package's clients exist).
func cluster(t testing.TB) {
	t.Helper()
	shared.Get(t)
}

// tree writes files (path → content; a hook is made executable when its
// content starts with #!) into a new directory.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

// writeFiles writes files into an existing directory; a file that starts
// with "#!" is executable.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(c, "#!") {
			mode = 0o755
			c = withRecordFile(dir, c)
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// withRecordFile makes a script that appends to $RECORD_FILE find its
// test's records without the process environment (which parallel tests
// cannot set): the file beside the test's temporary directories, the one
// parallelSetup's env reads. A RECORD_FILE in the environment still wins.
func withRecordFile(dir, script string) string {
	if !strings.Contains(script, "RECORD_FILE") {
		return script
	}
	shebang, rest, _ := strings.Cut(script, "\n")
	return shebang + "\n" + fmt.Sprintf("export RECORD_FILE=\"${RECORD_FILE:-%s}\"\n", recordsOf(dir)) + rest
}

// recordsOf is the records file of the test whose temporary directory dir is.
func recordsOf(dir string) string { return filepath.Join(filepath.Dir(dir), "records.jsonl") }

// recordingHook is a hook that prints config for --config and otherwise
// appends {hook, ctx, values, config} to $RECORD_FILE, then runs extra.
func recordingHook(name, config, extra string) string {
	return fmt.Sprintf(`#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then echo '%s'; exit 0; fi
jq -cn --arg hook %q --slurpfile ctx "$BINDING_CONTEXT_PATH" --slurpfile values "$VALUES_PATH" --slurpfile config "$CONFIG_VALUES_PATH" \
  '{hook:$hook, ctx:$ctx[0], values:$values[0], config:$config[0]}' >> "$RECORD_FILE"
%s
`, config, name, extra)
}

// moduleChart is a module chart with one ConfigMap showing values.
func moduleChart(name, key string) map[string]string {
	return map[string]string{
		"Chart.yaml":               fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name),
		"templates/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-values\ndata:\n  values: {{ toJson .Values.%s | quote }}\n  global: {{ toJson .Values.global | quote }}\n", name, key),
	}
}

func withPrefix(prefix string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[prefix+"/"+k] = v
	}
	return out
}

func merged(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

type record struct {
	Hook   string           `json:"hook"`
	Ctx    []map[string]any `json:"ctx"`
	Values map[string]any   `json:"values"`
	Config map[string]any   `json:"config"`
}

func (r record) binding() string {
	if len(r.Ctx) == 0 {
		return ""
	}
	b, _ := r.Ctx[0]["binding"].(string)
	return b
}

// env is one operator under test in its own namespace.
type env struct {
	t        testing.TB
	ns       string
	dir      string
	records  string
	op       *Operator
	reg      *prometheus.Registry
	cancel   context.CancelFunc
	done     chan error
	helm     *kube.Helm
	cmName   string
	runError error
	// checkInterval is the absent-resources check period (0: off)
	checkInterval time.Duration
	// commit is the start-up revision's commit (its tree is e.dir)
	commit string
	// hookTimeout bounds one hook run (default 30s)
	hookTimeout time.Duration
	// backend, if set, wraps the ConfigMap backend
	backend func(*kube.ConfigMap) ConfigBackend
	// beforeRun, if set, sees the operator between New and Run
	beforeRun func(*Operator)
	// configure, if set, edits the Config before New
	configure func(*Config)
	// parallel is Config.ParallelModules
	parallel int
	// purgeLimit is Config.PurgeLimit
	purgeLimit int
	// onRevision is Config.OnRevisionState
	onRevision func(RevisionState)
	// webhooks is Config.Webhooks
	webhooks WebhookRegistrar
	// loaderOpts are more options of the operator's loader
	loaderOpts []loader.Option
}

func newNamespace(t testing.TB) string {
	t.Helper()
	cluster(t)
	ns := fmt.Sprintf("t%d-%s", nsSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	if len(ns) > 60 {
		ns = ns[:60]
	}
	ns = strings.TrimRight(strings.ReplaceAll(ns, "_", "-"), "-")
	_, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func (e *env) setConfigMap(data map[string]string) {
	e.t.Helper()
	cms := client.CoreV1().ConfigMaps(e.ns)
	cm, err := cms.Get(context.Background(), e.cmName, metav1.GetOptions{})
	if err != nil {
		if _, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: e.cmName}, Data: data}, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	cm.Data = data
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) configMap() map[string]string {
	e.t.Helper()
	cm, err := client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), e.cmName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cm.Data
}

func quiet() *slog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// setup prepares a namespace, an optional ConfigMap and a tree, without
// starting; hooks find the records file in $RECORD_FILE (a batch
// executable too).
func setup(t testing.TB, files map[string]string, cm map[string]string) *env {
	t.Helper()
	e := newEnv(t, files, cm)
	e.records = filepath.Join(t.TempDir(), "records.jsonl")
	t.Setenv("RECORD_FILE", e.records)
	return e
}

// parallelSetup is setup for a test that runs in parallel with others
// (t.Parallel: its own namespace, ConfigMap, tree and operator): its
// scripts find the records file without the environment
// (withRecordFile), so a batch executable, which reads the environment,
// needs setup.
func parallelSetup(t testing.TB, files map[string]string, cm map[string]string) *env {
	t.Helper()
	e := newEnv(t, files, cm)
	e.records = recordsOf(e.dir)
	return e
}

func newEnv(t testing.TB, files map[string]string, cm map[string]string) *env {
	t.Helper()
	e := &env{t: t, ns: newNamespace(t), dir: tree(t, files), cmName: "addon-operator"}
	if cm != nil {
		e.setConfigMap(cm)
	}
	h, err := kube.NewHelm(restCfg, e.ns, quiet())
	if err != nil {
		t.Fatal(err)
	}
	e.helm = h
	return e
}

// start runs the operator; retries are fast so failure paths finish quickly.
func (e *env) start() {
	e.t.Helper()
	e.reg = prometheus.NewRegistry()
	if e.hookTimeout == 0 {
		e.hookTimeout = 30 * time.Second
	}
	crds, err := kube.NewCRDs(restCfg)
	if err != nil {
		e.t.Fatal(err)
	}
	patcher, err := objectpatch.New(restCfg, quiet())
	if err != nil {
		e.t.Fatal(err)
	}
	var backend ConfigBackend = kube.NewConfigMap(client, e.ns, e.cmName)
	if e.backend != nil {
		backend = e.backend(kube.NewConfigMap(client, e.ns, e.cmName))
	}
	cfg := Config{
		ModulesDir: filepath.Join(e.dir, "modules"), GlobalHooksDir: filepath.Join(e.dir, "global-hooks"),
		RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, HookTimeout: e.hookTimeout,
		ResourcesCheckInterval: e.checkInterval, Logger: quiet(), Registry: e.reg, Monitors: KubeMonitors(watcher),
		ParallelModules: e.parallel, Events: kube.NewConfigMap(client, e.ns, e.cmName), CRDs: crds,
		SourceEvents: kube.NewConfigMap(client, e.ns, e.cmName+"-source"), PurgeLimit: e.purgeLimit,
		ObjectPatcher: patcher, OnRevisionState: e.onRevision, Webhooks: e.webhooks,
	}
	if e.configure != nil {
		e.configure(&cfg)
	}
	e.op = New(cfg, backend, e.helm, loader.New(append([]loader.Option{loader.WithLogger(quiet())}, e.loaderOpts...)...))
	if e.commit != "" {
		e.op.TreeChanged(Revision{Revision: gitsync.Revision{Commit: e.commit}})
	}
	if e.beforeRun != nil {
		e.beforeRun(e.op)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- e.op.Run(ctx) }()
	e.t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.done:
		e.runError = err
	case <-time.After(30 * time.Second):
		e.t.Error("operator did not stop")
	}
	e.cancel = nil
}

// eventually polls cond until it holds or the bound passes.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s\nqueues: %+v\nstatus: %+v", what, e.op.Status().Queues, e.op.Status().Modules)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) waitReady() {
	e.t.Helper()
	e.eventually("first convergence", func() bool { return e.op.Ready() })
	e.idle()
}

// idle waits until the main queue is empty.
func (e *env) idle() {
	e.t.Helper()
	e.eventually("main queue to drain", func() bool { q := e.op.Queues(); return q != nil && q.Main().Len() == 0 })
}

func (e *env) readRecords() []record { return readJSONLines[record](e.t, e.records) }

// readJSONLines reads the records hooks appended to path, one JSON value
// per line (none while the file does not exist).
func readJSONLines[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	// a line without its newline is one a hook is still writing: the next
	// read has it
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// sequence is "hook:binding" for each record.
func (e *env) sequence() []string {
	var out []string
	for _, r := range e.readRecords() {
		out = append(out, r.Hook+":"+r.binding())
	}
	return out
}

func (e *env) upgrades(module string) float64 {
	return testutil.ToFloat64(e.op.metrics.HelmUpgrades.WithLabelValues(module))
}

func (e *env) releaseValues(module string) map[string]any {
	e.t.Helper()
	cm, err := client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), module+"-values", metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("release ConfigMap of %s: %v", module, err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(cm.Data["values"]), &v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

func (e *env) hasRelease(module string) bool {
	ok, err := e.helm.Has(context.Background(), module)
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

func assertJSON(t *testing.T, got any, want string) {
	t.Helper()
	g, _ := json.Marshal(got)
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	if err := json.Unmarshal([]byte(want), &wv); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	if !reflect.DeepEqual(gv, wv) {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}

// testutilCounter sums every series of a metric.
func testutilCounter(e *env, name string) float64 {
	mfs, err := e.op.metrics.Compact.Gatherer(e.reg).Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
		}
	}
	return sum
}

// releaseFor is a one-ConfigMap release for a module that need not exist.
func releaseFor(t *testing.T, name string) kube.Release {
	dir := tree(t, moduleChart(name, "x"))
	return kube.Release{Name: name, ChartDir: dir, Values: map[string]any{"x": map[string]any{}, "global": map[string]any{}}}
}
