package executor

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// TestOutputMemoryBounded runs a hook that prints 256 MiB without a
// newline: what Run keeps of it, logged or captured, is bounded.
func TestOutputMemoryBounded(t *testing.T) {
	const size = 256 << 20
	x := strings.Repeat("x", DefaultOutputLimit)
	marker := fmt.Sprintf("… %d bytes dropped …", size-2*DefaultOutputLimit)
	tests := []struct {
		name     string
		redirect string
		capture  bool
		want     string
	}{
		{name: "logged stdout line", want: `msg="` + x + " " + marker + " " + x + `" output=stdout droppedBytes=268304384`},
		{name: "logged stderr line", redirect: ">&2", want: `msg="` + x + " " + marker + " " + x + `" output=stderr droppedBytes=268304384`},
		{name: "captured stdout", capture: true, want: x + "\n" + marker + "\n" + x},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			hook := script(t, fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x %s`, size, tt.redirect))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := Run(t.Context(), Command{Path: hook, CaptureStdout: tt.capture, Logger: logger})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			// the pipe reads' buffers, the kept bytes, the log line
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("Run allocated %d MiB for %d MiB of output", grew>>20, size>>20)
			}
			got := string(out)
			if !tt.capture {
				got = logs.String()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("kept %d bytes, not the head and tail of %d around %q", len(got), DefaultOutputLimit, marker)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	out, err := Run(t.Context(), Command{Path: script(t, `printf '0123456789\nab'; printf 'long line of stderr' >&2`),
		Logger: logger, OutputLimit: 4})
	if err != nil || out != nil {
		t.Fatalf("out = %q, err = %v", out, err)
	}
	for _, want := range []string{
		`msg="0123 … 2 bytes dropped … 6789" output=stdout droppedBytes=2`,
		`msg=ab output=stdout`,
		`msg="long … 11 bytes dropped … derr" output=stderr droppedBytes=11`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %s in\n%s", want, logs.String())
		}
	}
	out, err = Run(t.Context(), Command{Path: script(t, `printf '0123456789\nfalse'`), CaptureStdout: true, OutputLimit: 4})
	if want := "0123\n… 8 bytes dropped …\nalse"; err != nil || string(out) != want {
		t.Fatalf("out = %q, err = %v; want %q", out, err, want)
	}
}

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name             string
		headMax, tailMax int
		writes           []string
		want             string
		tail             string
	}{
		{name: "nothing", headMax: 4, tailMax: 4},
		{name: "head only", headMax: 4, tailMax: 4, writes: []string{"ab"}, want: "ab"},
		{name: "head and tail just fit", headMax: 4, tailMax: 4, writes: []string{"0123", "4567"}, want: "01234567", tail: "4567"},
		{name: "middle dropped", headMax: 4, tailMax: 4, writes: []string{"0123456789"}, want: "0123|… 2 bytes dropped …|6789", tail: "6789"},
		{name: "small writes wrap the ring", headMax: 4, tailMax: 4, writes: []string{"01", "23", "45", "67", "89", "a", "b"},
			want: "0123|… 4 bytes dropped …|89ab", tail: "89ab"},
		{name: "write longer than the tail", headMax: 4, tailMax: 4, writes: []string{"012345", "6789abcdef"},
			want: "0123|… 8 bytes dropped …|cdef", tail: "cdef"},
		{name: "tail only", tailMax: 3, writes: []string{"ab", "cdef"}, want: "|… 3 bytes dropped …|def", tail: "def"},
		{name: "head only, no tail", headMax: 2, writes: []string{"abcd"}, want: "ab|… 2 bytes dropped …|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &headTail{headMax: tt.headMax, tailMax: tt.tailMax}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := string(b.bytes("|")); got != tt.want {
				t.Errorf("bytes = %q, want %q", got, tt.want)
			}
			if got := string(b.tailBytes()); got != tt.tail {
				t.Errorf("tailBytes = %q, want %q", got, tt.tail)
			}
			b.reset()
			if got := b.bytes("|"); len(got) != 0 {
				t.Errorf("after reset: %q", got)
			}
		})
	}
}

// TestOutputLineLimit: a run logs at most its line limit of each stream,
// then one record that counts the rest.
func TestOutputLineLimit(t *testing.T) {
	tests := []struct {
		name      string
		lines     int
		limit     int
		wantLines int
		dropped   string
	}{
		{name: "under the default", lines: 10, wantLines: 10},
		{name: "over the default", lines: 5000, wantLines: DefaultLineLimit, dropped: "droppedLines=4000 lineLimit=1000"},
		{name: "over a set limit", lines: 50, limit: 20, wantLines: 20, dropped: "droppedLines=30 lineLimit=20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			hook := script(t, fmt.Sprintf("seq %d; seq %d >&2", tt.lines, tt.lines))
			if _, err := Run(t.Context(), Command{Path: hook, Logger: logger, LineLimit: tt.limit}); err != nil {
				t.Fatal(err)
			}
			for _, stream := range []string{"stdout", "stderr"} {
				var lines int
				var summary string
				for _, l := range strings.Split(logs.String(), "\n") {
					switch {
					case strings.Contains(l, "level=INFO") && strings.Contains(l, "output="+stream):
						lines++
					case strings.Contains(l, "droppedLines") && strings.Contains(l, "output="+stream):
						summary = l
					}
				}
				if lines != tt.wantLines || !strings.Contains(summary, tt.dropped) || tt.dropped == "" && summary != "" {
					t.Errorf("%s: %d lines logged and %q, want %d and %q", stream, lines, summary, tt.wantLines, tt.dropped)
				}
			}
		})
	}
}
