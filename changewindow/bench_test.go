package changewindow

import "testing"

// The cost of one decision on the fixture's windows, held over a
// weekend (what a poll pays), and of an exhausted search (the worst a
// config Parse accepts can cost at a later time).
func BenchmarkDecide(b *testing.B) {
	specs := readSpecs(b, "windows.yaml")
	s, err := Parse(specs, now)
	if err != nil {
		b.Fatal(err)
	}
	at := utc("2026-11-27T15:30:00Z")
	b.Run("held over the weekend", func(b *testing.B) {
		for b.Loop() {
			if d := s.Decide(at); d.Open {
				b.Fatal("open")
			}
		}
	})
	leap, err := Parse([]Spec{{Name: "leap", Kind: Allow, Schedule: "0 0 29 2 *", Duration: "24h"}}, utc("2028-02-01T00:00:00Z"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("exhausted", func(b *testing.B) {
		for b.Loop() {
			if d := leap.Decide(utc("2028-03-01T00:00:00Z")); !d.Exhausted {
				b.Fatal("not exhausted")
			}
		}
	})
}
