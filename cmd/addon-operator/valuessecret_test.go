package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// putSecret creates or replaces a Secret's data.
func putSecret(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	_, err := client.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		cur.Data, cur.StringData = nil, data
		_, err = client.CoreV1().Secrets(ns).Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// secretValuesModule is module alpha with a config schema (a format that
// quotes the refused value in its message), a hook that writes what it is
// given to dir (and its values to stderr, which the operator logs), and a
// chart that carries alpha.v.
func secretValuesModule(dir string) map[string]string {
	files := alphaOn("1")
	files["modules/001-alpha/openapi/config-values.yaml"] = "type: object\nproperties:\n  v: {type: string}\n  extra: {type: string}\n  short: {type: string}\n  mail: {type: string, format: email}\n"
	for k, v := range alphaHook(`cat "$VALUES_PATH" > ` + filepath.Join(dir, "values.json") + `
cat "$CONFIG_VALUES_PATH" > ` + filepath.Join(dir, "config.json") + `
cat "$VALUES_PATH" >&2`) {
		files[k] = v
	}
	return files
}

// TestValuesSecret: a values Secret's value, merged over the values
// ConfigMap, reaches a hook (VALUES_PATH, CONFIG_VALUES_PATH) and the
// chart, and shows nowhere else: not on /status (a chart error quoting it),
// not in Events, the operator's log (the hook's stderr, a schema refusal
// quoting a new Secret value), /debug (`module values`, `module config`,
// `global values`, `module render`, `module diff`, hooks' output) or the
// commit statuses, where it is <redacted> with its key path kept.
func TestValuesSecret(t *testing.T) {
	const secret, short, refused = "s3cr3t-hunter-2026", "xy9", "s3cr3t-not-a-mail"
	f := newForgeSetup(t, "valsecret")
	ns, forge := f.ns, f.forge
	seen := t.TempDir()
	commitFiles(t, f.repo, "alpha with a schema and a hook", secretValuesModule(seen))
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator", Namespace: ns},
		Data:       map[string]string{"alpha": "extra: plain-value\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	good := map[string]string{"alpha": "v: " + secret + "\nshort: " + short + "\n"}
	putSecret(t, ns, "alpha-secrets", good)
	op := startOperator(t, f.env("ADDON_OPERATOR_VALUES_SECRET=alpha-secrets", "ADDON_OPERATOR_DRIFT=warn",
		"ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github", "ADDON_OPERATOR_COMMIT_STATUS_URL="+forge.GitHubURL(),
		"ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons")...)

	// the chart and the hook get the real values: the Secret's over the
	// ConfigMap's, key by key
	eventually(t, "the chart to carry the Secret's value", func() bool { return cmValue(ns, "001-alpha-cm") == secret })
	for _, file := range []string{"values.json", "config.json"} {
		b, err := os.ReadFile(filepath.Join(seen, file))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if a := doc["alpha"]; a["v"] != secret || a["short"] != short || a["extra"] != "plain-value" {
			t.Fatalf("the hook's %s: %s", file, b)
		}
	}

	// shown: redacted, with the key path and the other values kept
	env := []string{"ADDON_OPERATOR_LISTEN_ADDRESS=" + op.addr}
	var shown []string
	for _, args := range [][]string{{"module", "values", "alpha", "-g"}, {"module", "config", "alpha"}, {"global", "values"}} {
		code, out, errOut := cli(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.Contains(out, short) {
			t.Errorf("%v shows the short secret value:\n%s", args, out)
		}
		if args[0] == "module" && !(strings.Contains(out, "v: <redacted>") && strings.Contains(out, "short: <redacted>") && strings.Contains(out, "extra: plain-value")) {
			t.Errorf("%v: want v and short redacted, extra kept:\n%s", args, out)
		}
		shown = append(shown, out)
	}
	code, out, errOut := cli(t, env, "module", "render", "alpha")
	if code != 0 || !strings.Contains(out, "001-alpha-cm") {
		t.Fatalf("module render: exit %d: %s%s", code, out, errOut)
	}
	shown = append(shown, out)
	// a hand edit: the live diff shows the chart's side redacted
	cmObj, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "001-alpha-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmObj.Data["v"] = "hand-edit"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cmObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "module diff to show the hand edit", func() bool {
		_, out, _ := cli(t, env, "module", "diff", "alpha")
		if strings.Contains(out, "hand-edit") {
			shown = append(shown, out)
			return true
		}
		return false
	})

	// a Secret change the schema refuses: the message names the path, not
	// the value; the last good values keep running
	putSecret(t, ns, "alpha-secrets", map[string]string{"alpha": good["alpha"] + "mail: " + refused + "\n"})
	eventually(t, "the refusal in the log", func() bool {
		b, _ := os.ReadFile(op.log)
		return strings.Contains(string(b), "alpha.mail in body must be of type email")
	})
	putSecret(t, ns, "alpha-secrets", good)

	// a chart error that quotes the value: on /status, redacted
	commitFiles(t, f.repo, "a template quoting the secret", map[string]string{
		"modules/001-alpha/templates/fail.yaml": `{{ fail (printf "cannot use %s" .Values.alpha.v) }}`})
	var status string
	eventually(t, "the chart error on /status", func() bool {
		_, status = get(op.addr, "/status")
		return strings.Contains(status, "cannot use <redacted>")
	})
	_, hooks, _ := cli(t, env, "hook", "list", "-o", "json")
	_, debugModules := get(op.addr, "/debug/modules")
	shown = append(shown, status, hooks, debugModules)
	// the web view shows what /status shows: redacted (docs/operator.md,
	// "Web view"); its diff page as module diff
	if _, page := get(op.addr, "/ui/modules/alpha"); !strings.Contains(page, "cannot use &lt;redacted&gt;") {
		t.Errorf("the web view's module page does not show the error redacted:\n%s", page)
	}
	for _, path := range []string{"/ui/", "/ui/modules/alpha", "/ui/modules/alpha/diff", "/ui/revision", "/ui/queues"} {
		_, page := get(op.addr, path)
		shown = append(shown, page)
	}

	events, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		shown = append(shown, e.Message)
	}
	statuses, _ := json.Marshal(forge.Statuses())
	logs, _ := os.ReadFile(op.log)
	shown = append(shown, string(statuses), string(logs))
	if !strings.Contains(string(logs), `\"v\":\"<redacted>\"`) && !strings.Contains(string(logs), `"v":"<redacted>"`) {
		t.Errorf("the hook's stderr (its values) is not in the log, redacted:\n%s", logs)
	}
	for i, s := range shown {
		for _, v := range []string{secret, refused} {
			if strings.Contains(s, v) {
				t.Errorf("output %d shows %q:\n%s", i, v, s)
			}
		}
	}
}
