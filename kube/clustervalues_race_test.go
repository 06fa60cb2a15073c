package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A ConfigMap edit the watch delivered after Update's write (a newer
// resourceVersion) is in Update's answer: the answer's newer counter must
// not carry the older write's data and undo the edit. The interleaving is
// set up by hand (the watch's state ahead of the write).
func TestClusterValuesUpdateKeepsNewerEdit(t *testing.T) {
	ns := namespace(t)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := NewClusterValues(NewConfigMap(client, ns, "cm"), NewValuesSecret(client, ns, "sec"), nil, nil)
	if _, err := c.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	var delivered []string
	// the watch delivers a kubectl edit made after our write (its RV is later)
	c.changed(func(_ map[string]string, v string) { delivered = append(delivered, v) }, func() bool {
		c.cmData, c.cmVer, c.cmSeen, c.cmWatched = map[string]string{"a": "1", "edit": "kubectl"}, "999999999", true, true
		return true
	})
	data, ver, err := c.Update(t.Context(), func(m map[string]string) (map[string]string, error) {
		out := map[string]string{"hook": "patch"}
		for k, v := range m {
			out[k] = v
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := data["edit"]; !ok {
		t.Errorf("Update's data (version %s, newer than the watch's %v) lacks the newer edit: the store adopts it and drops the edit", ver, delivered)
	}
}
