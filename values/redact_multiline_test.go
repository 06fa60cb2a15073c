package values

import (
	"strings"
	"testing"
)

// A multi-line secret (a PEM key) is hidden where a chart indents it
// (/debug/modules/NAME/render, Helm errors).
func TestRedactMultilineIndented(t *testing.T) {
	key := "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nsecondlineofkeymaterialxyz\n-----END KEY-----\n"
	data := map[string]string{"global": "tls:\n  key: |\n    -----BEGIN KEY-----\n    MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n    secondlineofkeymaterialxyz\n    -----END KEY-----\n"}
	s, err := SensitiveFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRedactor()
	r.Add(s, data)
	// a chart's stringData with indent 4, as /debug/modules/NAME/render shows it
	rendered := "stringData:\n  tls.key: |\n" + "    " + strings.ReplaceAll(strings.TrimSuffix(key, "\n"), "\n", "\n    ") + "\n"
	out := r.Text(rendered)
	if strings.Contains(out, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC") {
		t.Errorf("multi-line secret shows")
	}
}
