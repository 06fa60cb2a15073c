package kube

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/values"
)

func putSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	_, err := client.CoreV1().Secrets(ns).Create(t.Context(), sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := client.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		cur.Data, cur.StringData = nil, data
		_, err = client.CoreV1().Secrets(ns).Update(t.Context(), cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// deliveries records what Watch hands on.
type deliveries struct {
	mu   sync.Mutex
	data []map[string]string
	vers []string
	errs []string
}

func (d *deliveries) last() (map[string]string, string, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.data) == 0 {
		return nil, "", 0
	}
	return d.data[len(d.data)-1], d.vers[len(d.vers)-1], len(d.data)
}

func (d *deliveries) errors() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.errs, "\n")
}

// The values Secret is merged over the ConfigMap key by key, watched with
// it under one version that only grows, its values told to the Redactor
// before the data is handed on; a Secret key that is not YAML is an error
// naming the Secret and the key, and nothing of it is handed on.
func TestClusterValues(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cm := NewConfigMap(client, ns, "addon-operator")
	red := values.NewRedactor()
	var got deliveries
	cv := NewClusterValues(cm, NewValuesSecret(client, ns, "values"), red, func(err error) {
		got.mu.Lock()
		got.errs = append(got.errs, err.Error())
		got.mu.Unlock()
	})

	// a missing Secret is empty
	if data, err := cv.Get(t.Context()); err != nil || len(data) != 0 {
		t.Fatalf("nothing there: %v, %v", data, err)
	}
	if _, _, err := cm.Update(t.Context(), func(map[string]string) (map[string]string, error) {
		return map[string]string{"db": "host: db.local\nauth:\n  user: app\n", "global": "a: 1\n"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	putSecret(t, ns, "values", map[string]string{"db": "auth:\n  password: hunter2-db\n", "extraEnabled": "true"})
	data, err := cv.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"db": "auth:\n  password: hunter2-db\n  user: app\nhost: db.local\n", "global": "a: 1\n", "extraEnabled": "true"}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("merged %s = %q, want %q", k, data[k], v)
		}
	}
	if red.Text("pw hunter2-db") != "pw <redacted>" {
		t.Error("the Secret's value was not told to the Redactor")
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go cv.Watch(ctx, func(d map[string]string, v string) {
		got.mu.Lock()
		defer got.mu.Unlock()
		got.data, got.vers = append(got.data, d), append(got.vers, v)
	})
	testwait.Until(t, "the first merged data", func() bool { _, _, n := got.last(); return n > 0 })
	first, v1, _ := got.last()
	if first["db"] != want["db"] {
		t.Fatalf("watched db = %q", first["db"])
	}

	// a hook's write: the ConfigMap alone, merged data and a newer version
	// back; its echo from the watch is no change
	merged, v2, err := cv.Update(t.Context(), func(d map[string]string) (map[string]string, error) {
		d["global"] = "a: 2\n"
		return d, nil
	})
	if err != nil || merged["db"] != want["db"] || !newer(v2, v1) {
		t.Fatalf("Update: %v, version %s after %s, %v", merged, v2, v1, err)
	}
	if live, _ := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "addon-operator", metav1.GetOptions{}); strings.Contains(live.Data["db"], "hunter2") {
		t.Fatal("a Secret value was written to the ConfigMap")
	}

	// a Secret change: handed on with a version newer than Update's
	putSecret(t, ns, "values", map[string]string{"db": "auth:\n  password: rotated-pw\n"})
	testwait.Until(t, "the rotated Secret", func() bool {
		d, _, _ := got.last()
		return strings.Contains(d["db"], "rotated-pw")
	})
	d, v3, _ := got.last()
	if !newer(v3, v2) || d["global"] != "a: 2\n" || d["extraEnabled"] != "" {
		t.Fatalf("after the rotation: %v at %s (Update's %s)", d, v3, v2)
	}

	// a key that is not YAML: an error naming the Secret and key, without
	// its text; nothing handed on
	_, _, n := got.last()
	putSecret(t, ns, "values", map[string]string{"db": "auth: [unclosed-secret-text\n"})
	testwait.Until(t, "the error", func() bool { return strings.Contains(got.errors(), "key db") })
	if e := got.errors(); !strings.Contains(e, "values Secret "+ns+"/values") || strings.Contains(e, "unclosed-secret-text") {
		t.Fatalf("error = %q", e)
	}
	// a ConfigMap edit still goes on, over the last good Secret
	if _, _, err := cm.Update(t.Context(), func(d map[string]string) (map[string]string, error) {
		d["global"] = "a: 3\n"
		return d, nil
	}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the ConfigMap edit", func() bool { d, _, _ := got.last(); return d["global"] == "a: 3\n" })
	d, _, m := got.last()
	if !strings.Contains(d["db"], "rotated-pw") || m <= n {
		t.Fatalf("after a bad Secret: %v", d)
	}
	for _, dd := range got.data {
		if strings.Contains(dd["db"], "unclosed") {
			t.Fatal("the bad Secret was handed on")
		}
	}
}

func newer(a, b string) bool {
	x, _ := strconv.ParseUint(a, 10, 64)
	y, _ := strconv.ParseUint(b, 10, 64)
	return x > y
}

// Event messages go through RedactEvents' function.
func TestRedactEvents(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cm := NewConfigMap(client, ns, "addon-operator")
	cm.RedactEvents(func(s string) string { return strings.ReplaceAll(s, "hunter2-db", values.Redacted) })
	if err := cm.Warning(t.Context(), "Test", "refused hunter2-db"); err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Message != "refused <redacted>" {
		t.Fatalf("events: %v, %v", list, err)
	}
	// a long message is cut after the redaction: a secret across the cut
	// is still replaced whole, and none of it is sent
	long := strings.Repeat("x", maxEventMessage-4) + "hunter2-db"
	if err := cm.Warning(t.Context(), "Long", long); err != nil {
		t.Fatal(err)
	}
	list, err = client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=Long"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("events: %v, %v", list, err)
	}
	if msg := list.Items[0].Message; strings.Contains(msg, "hunt") || len(msg) > maxEventMessage+len("…") {
		t.Fatalf("a long message with a secret across the cut: %d bytes, ends %q", len(msg), msg[len(msg)-20:])
	}
}

// Without a values ConfigMap the watch has no first event of it: the
// Secret's changes are handed on all the same, from what Get read.
func TestClusterValuesWithoutConfigMap(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	cv := NewClusterValues(NewConfigMap(client, ns, "addon-operator"), NewValuesSecret(client, ns, "values"), nil, nil)
	if _, err := cv.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got deliveries
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go cv.Watch(ctx, func(d map[string]string, v string) {
		got.mu.Lock()
		defer got.mu.Unlock()
		got.data, got.vers = append(got.data, d), append(got.vers, v)
	})
	putSecret(t, ns, "values", map[string]string{"alpha": "v: 1\n"})
	testwait.Until(t, "the Secret's data", func() bool { d, _, _ := got.last(); return d["alpha"] == "v: 1\n" })
}
