package changewindow

import (
	"os"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the machine has

	"sigs.k8s.io/yaml"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // a Friday

func readSpecs(t testing.TB, name string) []Spec {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var specs []Spec
	if err := yaml.UnmarshalStrict(b, &specs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return specs
}

func TestParseFixture(t *testing.T) {
	s, err := Parse(readSpecs(t, "windows.yaml"), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.allow) != 1 || len(s.deny) != 2 || s.deny[0].duration != 64*time.Hour || s.allow[0].sched.loc.String() != "Europe/Berlin" {
		t.Fatalf("parsed %+v", s)
	}
}

// Every refusal names the window (or its place in the list) and the field.
func TestParseRefusesFixture(t *testing.T) {
	_, err := Parse(readSpecs(t, "refused.yaml"), now)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`window "bad-zone": timeZone: "Mars/Olympus_Mons": not an IANA time zone`,
		`window "zero": duration: 0s: a window must stay open for some time`,
		`window "feb30": schedule: "0 0 30 2 *" never fires`,
		`window 4: name: required`,
		`window "sometimes": kind: "maybe": want allow or deny; schedule: "@every 1h": @every has no fixed start`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	w := func(name string, kind Kind, sched, dur, tz string) Spec {
		return Spec{Name: name, Kind: kind, Schedule: sched, Duration: dur, TimeZone: tz}
	}
	tests := []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"negative duration", []Spec{w("w", Deny, "0 9 * * *", "-1h", "")}, `window "w": duration: -1h: a window must stay open`},
		{"no duration", []Spec{w("w", Deny, "0 9 * * *", "", "")}, `window "w": duration: required`},
		{"bad duration", []Spec{w("w", Deny, "0 9 * * *", "4 hours", "")}, `window "w": duration: "4 hours"`},
		{"too long", []Spec{w("w", Deny, "0 9 * * *", "9000h", "")}, `window "w": duration: 9000h: longer than`},
		{"no schedule", []Spec{w("w", Allow, "", "1h", "")}, `window "w": schedule: required`},
		{"four fields", []Spec{w("w", Allow, "0 9 * *", "1h", "")}, `window "w": schedule: "0 9 * *": want 5 fields`},
		{"bad field", []Spec{w("w", Allow, "0 25 * * *", "1h", "")}, `window "w": schedule: "0 25 * * *"`},
		{"zone in schedule", []Spec{w("w", Allow, "TZ=UTC 0 9 * * *", "1h", "")}, `set the zone in timeZone`},
		{"Local zone", []Spec{w("w", Allow, "0 9 * * *", "1h", "Local")}, `window "w": timeZone: "Local"`},
		{"duplicate", []Spec{w("w", Allow, "0 9 * * *", "1h", ""), w("w", Deny, "0 9 * * *", "1h", "")}, `window "w": name: used by another window`},
		// can be told only by looking for an opening: Parse does, from now
		{"deny never closes", []Spec{w("always", Deny, "@hourly", "2h", "")}, `held by window "always" (deny): no time to apply within 400 days`},
		{"allow inside a deny", []Spec{w("night", Allow, "0 2 * * *", "1h", "Europe/Berlin"), w("freeze", Deny, "0 0 * * *", "6h", "Europe/Berlin")},
			`held by window "night" (allow): no time to apply within 400 days of 2026-11-27T12:00:00Z: windows "night" (allow), "freeze" (deny) leave none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.specs, now)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSundaySeven(t *testing.T) {
	for in, want := range map[string]string{"7": "0", "1-7": "1,2,3,4,5,6,0", "5-7/2": "5,0", "1-5": "1-5", "*/7": "*/7", "MON,7": "MON,0"} {
		if got, err := sundaySeven(in); err != nil || got != want {
			t.Errorf("sundaySeven(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := sundaySeven("1-7/0"); err == nil {
		t.Error("a zero step passed")
	}
}
