package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/gitserver"
	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/webhook"
)

// guardHook is a module hook as shell-operator's users write it: a
// kubernetesValidating binding (it refuses ConfigMaps named bad-*), and a
// conversion binding that no conversion server is configured for.
const guardHook = `#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then cat <<EOF
configVersion: v1
kubernetesValidating:
- name: guard.webhook.test
  labelSelector: {matchLabels: {guarded: "%[1]s"}}
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
kubernetesCustomResourceConversion:
- name: convert
  crdName: things.guard.webhook.test
  conversions: [{fromVersion: v1, toVersion: v2}]
EOF
exit 0; fi
case "$(jq -r '.[0].review.request.name' "$BINDING_CONTEXT_PATH")" in
  bad-*) echo '{"allowed":false,"message":"the guard refuses bad-*"}' > "$VALIDATING_RESPONSE_PATH" ;;
  *) echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH" ;;
esac
`

// A module hook's validating webhook, with shell-operator's settings and
// our URL clientConfig: the API server calls the operator's binary over
// TLS while the module is enabled; disabling the module removes the
// configuration. A binding whose server has no certificate is an error on
// /status naming the hook.
func TestWebhooksAsShellOperatorUsersRunThem(t *testing.T) {
	ns := namespace(t, "webhooks")
	base := guardSetup(t, ns)
	wh := newValidatingSetup(t, ns)
	op := startOperator(t, append(wh.env, "ADDON_OPERATOR_NAMESPACE="+ns,
		"MODULES_DIR="+filepath.Join(base, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(base, "global-hooks"),
		"VALIDATING_WEBHOOK_FAILURE_POLICY=Fail")...)
	create := func(name string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"guarded": ns}}}
		_, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	}
	eventually(t, "the guard refuses bad-one", func() bool {
		err := create("bad-one")
		return err != nil && strings.Contains(err.Error(), `admission webhook "guard.webhook.test" denied the request: the guard refuses bad-*`)
	})
	if err := create("good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	// the conversion binding has no server: /status names the hook
	eventually(t, "the conversion binding's error on /status", func() bool {
		st := status(t, op.addr)
		wh, _ := st["webhooks"].(map[string]any)
		for _, b := range asList(wh["bindings"]) {
			if b["kind"] == "conversion" && strings.Contains(fmt.Sprint(b["error"]), "hook 001-guard/hooks/guard.sh binds a conversion of CRD things.guard.webhook.test") &&
				strings.Contains(fmt.Sprint(b["error"]), "CONVERSION_WEBHOOK_SERVER_CERT") {
				return true
			}
		}
		return false
	})

	code, out, errOut := cli(t, []string{"ADDON_OPERATOR_LISTEN_ADDRESS=" + op.addr}, "hook", "list")
	if code != 0 || !strings.Contains(out, "kubernetesValidating:guard.webhook.test") ||
		!strings.Contains(out, "kubernetesCustomResourceConversion:convert(things.guard.webhook.test)") {
		t.Errorf("hook list: %d %s %s", code, out, errOut)
	}

	// disabling the module removes its webhook
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{"guardEnabled": "false"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the configuration deleted", func() bool { return !wh.registered(t) })
	eventually(t, "bad-two admitted", func() bool { return create("bad-two") == nil })
}

func asList(v any) []map[string]any {
	var out []map[string]any
	items, _ := v.([]any)
	for _, i := range items {
		if m, ok := i.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// shell-operator's webhook settings, from the environment or flags (the
// flag wins); a server is configured only when its certificate and key
// exist, and a path set to a missing file is an error.
func TestWebhookSettings(t *testing.T) {
	_, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		validating bool // configured
		conversion bool
		bad        string
		check      func(t *testing.T, o webhookOptions)
	}{
		{name: "defaults: no certificate, no server", check: func(t *testing.T, o webhookOptions) {
			if o.Validating.ListenPort != "9680" || o.Conversion.ListenPort != "9681" || o.ConfigurationName != "addon-operator-hooks" ||
				o.Validating.ServerCert != "/validating-certs/tls.crt" || o.Conversion.ServiceName != "addon-operator-conversion-svc" {
				t.Errorf("defaults = %+v", o)
			}
		}},
		{name: "environment", env: map[string]string{"VALIDATING_WEBHOOK_SERVER_CERT": cert, "VALIDATING_WEBHOOK_SERVER_KEY": key,
			"VALIDATING_WEBHOOK_CLIENT_CA": "/a.crt,/b.crt", "VALIDATING_WEBHOOK_CONFIGURATION_NAME": "mine", "VALIDATING_WEBHOOK_LISTEN_PORT": "1234"},
			validating: true, check: func(t *testing.T, o webhookOptions) {
				if len(o.Validating.ClientCA) != 2 || o.ConfigurationName != "mine" || o.Validating.address() != "0.0.0.0:1234" {
					t.Errorf("options = %+v", o)
				}
			}},
		{name: "flags win", env: map[string]string{"CONVERSION_WEBHOOK_LISTEN_PORT": "1"},
			args:       []string{"--conversion-webhook-server-cert", cert, "--conversion-webhook-server-key", key, "--conversion-webhook-listen-port", "2", "--conversion-webhook-url", "https://10.0.0.5:2"},
			conversion: true, check: func(t *testing.T, o webhookOptions) {
				if o.Conversion.ListenPort != "2" || o.Conversion.endpoint("ns").URL != "https://10.0.0.5:2" {
					t.Errorf("options = %+v", o.Conversion)
				}
			}},
		{name: "a certificate set to a missing file", env: map[string]string{"CONVERSION_WEBHOOK_SERVER_CERT": "/nowhere/tls.crt"}, bad: "conversion webhook server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o, err := parseStart(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			w, err := newWebhookServers(o.wh, "ns", "ns.addon-operator", nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("error %v, want %q", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := w != nil && w.Serves(webhook.Validating); got != tt.validating {
				t.Errorf("validating configured: %v", got)
			}
			if got := w != nil && w.Serves(webhook.Conversion); got != tt.conversion {
				t.Errorf("conversion configured: %v", got)
			}
			if tt.check != nil {
				tt.check(t, o.wh)
			}
		})
	}
}

// A client CA file that does not load keeps the webhook server from
// starting, and so from being registered: the API server is never sent to
// a server that cannot answer; /status says why.
func TestWebhookBadClientCANotRegistered(t *testing.T) {
	ns := namespace(t, "webhooks-ca")
	base := guardSetup(t, ns)
	badCA := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(badCA, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wh := newValidatingSetup(t, ns)
	op := startOperator(t, append(wh.env, "ADDON_OPERATOR_NAMESPACE="+ns,
		"MODULES_DIR="+filepath.Join(base, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(base, "global-hooks"),
		"VALIDATING_WEBHOOK_CLIENT_CA="+badCA)...)
	eventually(t, "the client CA's error on /status", func() bool {
		return strings.Contains(fmt.Sprint(status(t, op.addr)["webhooks"]), "no PEM certificate")
	})
	time.Sleep(time.Second)
	if wh.registered(t) {
		t.Fatal("the webhooks were registered for a server that did not start")
	}
}

// guardSetup writes the tree of module guard, whose hook guards ns's
// ConfigMaps.
func guardSetup(t *testing.T, ns string) (base string) {
	t.Helper()
	base = t.TempDir()
	writeFiles(t, base, merged(
		moduleFiles("001-guard", "guard", "1"),
		map[string]string{
			"modules/values.yaml":              "guardEnabled: true\n",
			"modules/001-guard/hooks/guard.sh": fmt.Sprintf(guardHook, ns),
			"global-hooks/.keep":               "",
		}))
	return base
}

// validatingSetup is a validating webhook server for the operator's
// environment: a fresh serving certificate, a free 127.0.0.1 port, and a
// configuration named after the test's namespace, deleted when it ends.
type validatingSetup struct {
	env        []string
	configName string
}

func newValidatingSetup(t *testing.T, ns string) validatingSetup {
	t.Helper()
	caFile, certFile, keyFile, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hookAddr := freeAddr(t)
	_, port, _ := strings.Cut(hookAddr, ":")
	configName := "hooks-" + ns
	vwc := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	t.Cleanup(func() { _ = vwc.Delete(context.Background(), configName, metav1.DeleteOptions{}) })
	return validatingSetup{configName: configName, env: []string{
		"VALIDATING_WEBHOOK_SERVER_CERT=" + certFile, "VALIDATING_WEBHOOK_SERVER_KEY=" + keyFile, "VALIDATING_WEBHOOK_CA=" + caFile,
		"VALIDATING_WEBHOOK_LISTEN_ADDRESS=127.0.0.1", "VALIDATING_WEBHOOK_LISTEN_PORT=" + port,
		"VALIDATING_WEBHOOK_URL=https://" + hookAddr, "VALIDATING_WEBHOOK_CONFIGURATION_NAME=" + configName}}
}

// registered: the ValidatingWebhookConfiguration exists.
func (w validatingSetup) registered(t *testing.T) bool {
	t.Helper()
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), w.configName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get configuration %s: %v", w.configName, err)
	}
	return err == nil
}

// ownGuardHook allows everything through a Fail webhook on the ConfigMaps
// labelled guarded=NS, which its module's own chart creates.
const ownGuardHook = `#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then cat <<EOF
configVersion: v1
kubernetesValidating:
- name: own.guard.webhook.test
  failurePolicy: Fail
  timeoutSeconds: 5
  labelSelector: {matchLabels: {guarded: "%[1]s"}}
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"]}
EOF
exit 0; fi
echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH"
`

// ownGuardTree is module guard: its chart's ConfigMap (value v) passes
// its own hook's Fail webhook.
func ownGuardTree(ns, v, hook string) map[string]string {
	return map[string]string{
		"modules/values.yaml":                 "guardEnabled: true\n",
		"modules/001-guard/Chart.yaml":        "apiVersion: v2\nname: guard\nversion: 0.1.0\n",
		"modules/001-guard/values.yaml":       "guard: {}\n",
		"modules/001-guard/hooks/guard.sh":    hook,
		"modules/001-guard/templates/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guarded-cm\n  labels: {guarded: %q}\ndata:\n  v: %q\n", ns, v),
	}
}

// After a restart, a Fail webhook whose rule matches the module's own
// objects does not lock the operator out: the server listens and the
// webhook reaches the hook from the first loaded tree on, so the chart
// edited while the operator was down is upgraded through it and the first
// reload converges. A commit that drops the binding unregisters it within
// seconds, though that reload cannot converge (a hook fails every run).
func TestWebhookRestartFailPolicy(t *testing.T) {
	ns := namespace(t, "webhook-restart")
	root := t.TempDir()
	repo := newRepo(t, root)
	commitFiles(t, repo, "guard 1", ownGuardTree(ns, "1", fmt.Sprintf(ownGuardHook, ns)))
	srv, err := gitserver.StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	wh := newValidatingSetup(t, ns)
	env := append(wh.env, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL="+srv.URL("addons"), "GIT_REF=main", "GIT_POLL_INTERVAL=200ms")
	registered := func() bool { return wh.registered(t) }
	ready := func(op *testOperator) bool { code, _ := get(op.addr, "/readyz"); return code == http.StatusOK }
	// each start on a fresh checkout: its first loaded tree is the newest
	// commit, so the restart's first reload is the one that meets it
	start := func() *testOperator {
		return startOperator(t, append(env, "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))...)
	}

	first := start()
	eventually(t, "guard 1 applied through its own webhook", func() bool {
		return registered() && cmValue(ns, "guarded-cm") == "1" && ready(first)
	})
	first.stop(15 * time.Second)

	// edited while the operator is down: the upgrade needs the webhook
	commitFiles(t, repo, "guard 2", ownGuardTree(ns, "2", fmt.Sprintf(ownGuardHook, ns)))
	second := start()
	within(t, 30*time.Second, "the restarted operator upgrades guard 2 and converges", func() bool {
		return cmValue(ns, "guarded-cm") == "2" && ready(second)
	})
	second.stop(15 * time.Second)

	// the binding dropped, and a beforeHelm hook that fails every run
	failing := "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\nexit 1\n"
	commitFiles(t, repo, "no webhook", ownGuardTree(ns, "3", failing))
	third := start()
	within(t, 15*time.Second, "the dropped binding unregistered", func() bool { return !registered() })
	if ready(third) {
		t.Fatal("the reload converged: the test needs it not to")
	}
}
