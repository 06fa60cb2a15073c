package changewindow

import (
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, specs []Spec, at time.Time) *Set {
	t.Helper()
	s, err := Parse(specs, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The fixture's windows: office hours, a weekend freeze and a year-end
// freeze, in Berlin.
func TestDecideFixture(t *testing.T) {
	s := mustParse(t, readSpecs(t, "windows.yaml"), now)
	tests := []struct {
		name, at  string
		held      string
		until     string
		wantKind  Kind
		wantFirst bool
	}{
		{"in office hours", "2026-11-27T12:00:00Z", "", "", "", false},
		{"a minute before the freeze", "2026-11-27T14:59:00Z", "", "", "", false},
		// the freeze ends Monday 08:00, office hours open at 09:00
		{"in the weekend freeze", "2026-11-27T15:30:00Z", "weekend-freeze", "2026-11-30T09:00:00+01:00", Deny, false},
		{"a weekday evening", "2026-11-26T20:00:00Z", "office-hours", "2026-11-27T09:00:00+01:00", Allow, false},
		// the year-end freeze ends Sunday 3 January: the next office hours
		// are Monday's
		{"in the year-end freeze", "2026-12-21T10:00:00Z", "year-end", "2027-01-04T09:00:00+01:00", Deny, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.Decide(utc(tt.at))
			if tt.held == "" {
				if !d.Open || d.HeldBy != "" || d.Reason != "" {
					t.Fatalf("Decide = %+v, want open", d)
				}
				return
			}
			if d.Open || d.HeldBy != tt.held || d.Kind != tt.wantKind || !d.Until.Equal(utc(tt.until)) || d.Exhausted {
				t.Fatalf("Decide = %+v, want held by %s until %s", d, tt.held, tt.until)
			}
			want := `held by window "` + tt.held + `" (` + string(tt.wantKind) + `) until ` + tt.until
			if d.Reason != want {
				t.Fatalf("reason %q, want %q", d.Reason, want)
			}
			open, by, until := s.Open(utc(tt.at))
			if open || by != tt.held || !until.Equal(d.Until) {
				t.Fatalf("Open = %v %q %s", open, by, until)
			}
		})
	}
}

// Clocks that jump or repeat: a start they skip opens when they jump, a
// start they repeat opens once, and a duration is elapsed time.
func TestDecideDST(t *testing.T) {
	berlin := func(kind Kind, sched, dur string) []Spec {
		return []Spec{{Name: "w", Kind: kind, Schedule: sched, Duration: dur, TimeZone: "Europe/Berlin"}}
	}
	tests := []struct {
		name  string
		specs []Spec
		at    string
		until string // "": open
	}{
		// 29 March 2026: 02:00 CET becomes 03:00 CEST (01:00 UTC)
		{"skipped start: before the jump", berlin(Allow, "30 2 * * *", "1h"), "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z"},
		{"skipped start: opened at the jump", berlin(Allow, "30 2 * * *", "1h"), "2026-03-29T01:30:00Z", ""},
		{"skipped start: an hour after the jump", berlin(Allow, "30 2 * * *", "1h"), "2026-03-29T02:00:00Z", "2026-03-30T00:30:00Z"},
		{"spring: an 8h deny is 8 hours", berlin(Deny, "0 22 * * *", "8h"), "2026-03-29T04:30:00Z", "2026-03-29T05:00:00Z"},
		{"spring: after the deny", berlin(Deny, "0 22 * * *", "8h"), "2026-03-29T05:30:00Z", ""},
		// 25 October 2026: 03:00 CEST becomes 02:00 CET (01:00 UTC)
		{"repeated start: first time", berlin(Allow, "30 2 * * *", "30m"), "2026-10-25T00:40:00Z", ""},
		{"repeated start: the hour again, before the start", berlin(Allow, "30 2 * * *", "30m"), "2026-10-25T01:10:00Z", "2026-10-26T01:30:00Z"},
		{"repeated start: not again", berlin(Allow, "30 2 * * *", "30m"), "2026-10-25T01:40:00Z", "2026-10-26T01:30:00Z"},
		{"autumn: an 8h deny is 8 hours", berlin(Deny, "0 22 * * *", "8h"), "2026-10-25T03:30:00Z", "2026-10-25T04:00:00Z"},
		{"autumn: after the deny", berlin(Deny, "0 22 * * *", "8h"), "2026-10-25T04:10:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.specs, utc(tt.at))
			d := s.Decide(utc(tt.at))
			if tt.until == "" {
				if !d.Open {
					t.Fatalf("Decide = %+v, want open", d)
				}
				return
			}
			if d.Open || d.HeldBy != "w" || !d.Until.Equal(utc(tt.until)) {
				t.Fatalf("Decide = %+v, want held until %s", d, tt.until)
			}
		})
	}
}

// instant maps wall times onto instants in zones with whole-hour and
// half-hour changes.
func TestInstant(t *testing.T) {
	tests := []struct {
		zone, wall, want string
	}{
		{"Europe/Berlin", "2026-03-29T02:30:00Z", "2026-03-29T01:00:00Z"}, // skipped: the jump
		{"Europe/Berlin", "2026-10-25T02:30:00Z", "2026-10-25T00:30:00Z"}, // repeated: the first
		{"Europe/Berlin", "2026-10-25T03:00:00Z", "2026-10-25T02:00:00Z"},
		{"Europe/Berlin", "2026-07-01T12:00:00Z", "2026-07-01T10:00:00Z"},
		{"America/New_York", "2026-03-08T02:30:00Z", "2026-03-08T07:00:00Z"},
		{"America/New_York", "2026-11-01T01:30:00Z", "2026-11-01T05:30:00Z"},
		{"Australia/Lord_Howe", "2026-04-05T01:45:00Z", "2026-04-04T14:45:00Z"}, // +11 then +10:30
		{"Australia/Lord_Howe", "2026-10-04T02:15:00Z", "2026-10-03T15:30:00Z"},
		{"UTC", "2026-10-25T02:30:00Z", "2026-10-25T02:30:00Z"},
	}
	for _, tt := range tests {
		loc, err := time.LoadLocation(tt.zone)
		if err != nil {
			t.Fatal(err)
		}
		if got := (wallSchedule{loc: loc}).instant(utc(tt.wall)); !got.Equal(utc(tt.want)) {
			t.Errorf("%s %s = %s, want %s", tt.zone, tt.wall, got.UTC().Format(time.RFC3339), tt.want)
		}
	}
}

func TestDecideOverlaps(t *testing.T) {
	// four hourly starts of 90 minutes each: one closed stretch to 04:30
	s := mustParse(t, []Spec{{Name: "batch", Kind: Deny, Schedule: "0 0-3 * * *", Duration: "90m"}}, now)
	d := s.Decide(utc("2026-11-27T00:10:00Z"))
	if d.Open || !d.Until.Equal(utc("2026-11-27T04:30:00Z")) {
		t.Fatalf("Decide = %+v, want held until 04:30", d)
	}
	// two allow windows: the one that opens first is named
	s = mustParse(t, []Spec{
		{Name: "late", Kind: Allow, Schedule: "0 20 * * *", Duration: "1h"},
		{Name: "early", Kind: Allow, Schedule: "0 6 * * *", Duration: "1h"},
	}, now)
	if open, by, until := s.Open(utc("2026-11-27T03:00:00Z")); open || by != "early" || !until.Equal(utc("2026-11-27T06:00:00Z")) {
		t.Fatalf("Open = %v %q %s", open, by, until)
	}
	var none *Set
	if open, _, _ := none.Open(now); !open {
		t.Fatal("no windows held a change")
	}
	if open, _, _ := mustParse(t, nil, now).Open(now); !open {
		t.Fatal("an empty set held a change")
	}
}

// A window that opens too rarely for the search: Parse passes it while
// it opens soon, and later it is a held state with its reason.
func TestDecideExhausted(t *testing.T) {
	s := mustParse(t, []Spec{{Name: "leap", Kind: Allow, Schedule: "0 0 29 2 *", Duration: "24h"}}, utc("2028-02-01T00:00:00Z"))
	d := s.Decide(utc("2028-03-01T00:00:00Z"))
	want := `held by window "leap" (allow): no time to apply within 400 days of 2028-03-01T00:00:00Z: windows "leap" (allow) leave none`
	if d.Open || !d.Exhausted || !d.Until.IsZero() || d.HeldBy != "leap" || d.Reason != want {
		t.Fatalf("Decide = %+v, want exhausted: %s", d, want)
	}
}
