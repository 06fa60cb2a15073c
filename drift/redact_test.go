package drift

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/kube"
)

// TestDiffRedactsEmbedded: on a real API server, a Secret edited by hand
// as `kubectl apply` leaves it (its last-applied-configuration annotation
// holding the hand's stringData), and a ConfigMap carrying a Secret's
// manifest: the diff shows which fields differ and none of the values,
// in the annotation or the embedded manifest. A kind named sensitive
// (Options.Sensitive) has all its values hidden; unnamed, they show.
func TestDiffRedactsEmbedded(t *testing.T) {
	c := controlPlane(t)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ns := "drift-redact"
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := kube.NewHelm(c.Config, ns, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Upgrade(t.Context(), kube.Release{Name: "vault", ChartDir: "testdata/redact", ChartHash: "1", Key: "vault"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// kubectl apply of a hand-written Secret: an update as its manager,
	// with the whole object in the annotation
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "vault", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["password"] = []byte("hand-secret")
	sec.Annotations["example.com/note"] = "hand"
	sec.Annotations[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"example.com/note":"hand"},"name":"vault","namespace":"` + ns + `"},"stringData":{"password":"hand-secret"}}` + "\n"
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(map[string]string){
		"bundle": func(d map[string]string) {
			d["secret.yaml"] = strings.ReplaceAll(d["secret.yaml"], "chart-bundled", "hand-bundled")
		},
		"plain": func(d map[string]string) { d["token"] = "hand-token" },
	} {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(cm.Data)
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}

	secrets := []string{"hand-secret", "chart-secret", "hand-bundled", "chart-bundled",
		base64.StdEncoding.EncodeToString([]byte("hand-secret")), base64.StdEncoding.EncodeToString([]byte("chart-secret"))}
	tests := []struct {
		name      string
		sensitive []schema.GroupKind
		hidden    []string
		shown     []string
	}{
		{"secrets", nil, secrets, []string{"hand-token", "chart-token", "example.com/note", "(redacted, differs)", corev1.LastAppliedConfigAnnotation}},
		{"configmaps sensitive", []schema.GroupKind{{Kind: "ConfigMap"}}, append(secrets, "hand-token", "chart-token"), []string{"(redacted, differs)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(c.Config, ns, h, Options{Logger: quiet(), Sensitive: tt.sensitive})
			if err != nil {
				t.Fatal(err)
			}
			rep, _, err := d.Check(ctx, "vault")
			if err != nil || len(rep.Objects) != 3 {
				t.Fatalf("Check: %+v, %v; want the three objects drifted", rep.Objects, err)
			}
			diff, err := d.Diff(ctx, "vault")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.hidden {
				if strings.Contains(diff, s) {
					t.Errorf("diff shows %q:\n%s", s, diff)
				}
			}
			for _, s := range tt.shown {
				if !strings.Contains(diff, s) {
					t.Errorf("diff lacks %q:\n%s", s, diff)
				}
			}
		})
	}
}
