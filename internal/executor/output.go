package executor

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// pipeGrace bounds how long Run reads output after the hook's process
// group is dead: only a process that left the group (setsid) can still
// hold the pipes, and it must not keep Run waiting.
var pipeGrace = 2 * time.Second

// streams reads a hook's stdout and stderr through pipes of its own, so
// that Run, not exec.Cmd.Wait, decides how long to wait for them.
type streams struct {
	logger           *slog.Logger
	stdoutR, stderrR *os.File
	// stdoutW and stderrW are the child's ends, closed once it has them.
	stdoutW, stderrW *os.File
	stdout           io.Writer
	stderr           io.Writer
	stdoutLog        *lineLogger // nil when stdout is captured
	stderrLog        *lineLogger
	capture          *headTail // nil when stdout is logged
	errTail          *headTail
	done             sync.WaitGroup
}

func newStreams(logger *slog.Logger, capture bool, limit, maxLines int) (*streams, error) {
	s := &streams{logger: logger, errTail: &headTail{tailMax: stderrTail}}
	var err error
	if s.stdoutR, s.stdoutW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if s.stderrR, s.stderrW, err = os.Pipe(); err != nil {
		s.abort()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	s.stderrLog = newLineLogger(logger, "stderr", limit, maxLines)
	s.stderr = io.MultiWriter(s.stderrLog, s.errTail)
	if capture {
		s.capture = &headTail{headMax: limit, tailMax: limit}
		s.stdout = s.capture
	} else {
		s.stdoutLog = newLineLogger(logger, "stdout", limit, maxLines)
		s.stdout = s.stdoutLog
	}
	return s, nil
}

// abort closes the pipes of a process that did not start.
func (s *streams) abort() {
	for _, f := range []*os.File{s.stdoutR, s.stdoutW, s.stderrR, s.stderrW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// read closes the child's ends (the child has its own copies now) so the
// pipes close when the child's group is dead, and starts reading them.
func (s *streams) read() {
	_ = s.stdoutW.Close()
	_ = s.stderrW.Close()
	s.done.Add(2)
	go s.copy(s.stdout, s.stdoutR)
	go s.copy(s.stderr, s.stderrR)
}

// copyBuffers are the buffers of copy: io.Copy made a 32 KiB one for
// each of a hook run's two streams, 180 MB of garbage in a 1,000-module
// converge (docs/performance.md).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (s *streams) copy(w io.Writer, r *os.File) {
	defer s.done.Done()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// an error is the read end closed by finish: nothing more to read.
	// Only the reader: *os.File's WriteTo would take io.Copy's own buffer.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, *buf)
}

// finish waits for the pipes to close, at most pipeGrace, and flushes the
// last lines.
func (s *streams) finish() {
	done := make(chan struct{})
	go func() {
		s.done.Wait()
		close(done)
	}()
	timer := time.NewTimer(pipeGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		s.logger.Warn("a process that left the hook's process group still holds its output; the rest is discarded",
			"waited", pipeGrace)
	}
	// ends the reads still blocked on a pipe held open
	_ = s.stdoutR.Close()
	_ = s.stderrR.Close()
	<-done
	s.stderrLog.Flush()
	if s.stdoutLog != nil {
		s.stdoutLog.Flush()
	}
}

// captured is what was kept of stdout, nil when it was logged.
func (s *streams) captured() []byte {
	if s.capture == nil {
		return nil
	}
	return s.capture.bytes("\n")
}

// stderrTail is the end of stderr, for an error message.
func (s *streams) stderrTail() string {
	return string(s.errTail.tailBytes())
}

// lineLogger logs each complete line it is written, each bounded by a
// headTail so a hook that never prints a newline cannot fill memory, and
// at most maxLines of them, so a hook that prints without end cannot fill
// the operator's log; the lines past that are counted.
type lineLogger struct {
	mu       sync.Mutex
	logger   *slog.Logger
	stream   string
	line     headTail
	maxLines int
	logged   int
	dropped  int64
}

func newLineLogger(l *slog.Logger, stream string, limit, maxLines int) *lineLogger {
	return &lineLogger{logger: l, stream: stream, line: headTail{headMax: limit, tailMax: limit}, maxLines: maxLines}
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		_, _ = w.line.Write(p[:i])
		w.emit()
		p = p[i+1:]
	}
	_, _ = w.line.Write(p)
	return n, nil
}

// emit logs the line so far and starts the next.
func (w *lineLogger) emit() {
	line, dropped := w.line.bytes(" "), w.line.dropped
	w.line.reset()
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if w.logged >= w.maxLines {
		w.dropped++
		return
	}
	w.logged++
	if dropped > 0 {
		w.logger.Info(string(line), "output", w.stream, "droppedBytes", dropped)
		return
	}
	w.logger.Info(string(line), "output", w.stream)
}

// Flush logs a last line that had no newline, and how many lines were
// over the bound.
func (w *lineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
	if w.dropped > 0 {
		w.logger.Warn("hook output over the line limit was not logged", "output", w.stream, "droppedLines", w.dropped, "lineLimit", w.maxLines)
	}
}

// headTail keeps the first headMax and the last tailMax bytes written and
// counts those in between, so output of any size takes bounded memory.
// The head is what names the problem, the tail how it ended.
type headTail struct {
	headMax, tailMax int
	head             []byte
	// tail is a ring of up to tailMax bytes; once full, next is both
	// where the next byte goes and where the oldest is.
	tail    []byte
	next    int
	dropped int64
}

func (b *headTail) Write(p []byte) (int, error) {
	n := len(p)
	k := min(len(p), b.headMax-len(b.head))
	b.head = append(b.head, p[:k]...)
	b.keepTail(p[k:])
	return n, nil
}

func (b *headTail) keepTail(p []byte) {
	if len(p) == 0 {
		return // all in the head: no tail buffer (most output is small)
	}
	if over := len(p) - b.tailMax; over > 0 {
		// would be overwritten before Write returns
		b.dropped += int64(over)
		p = p[over:]
	}
	if len(b.tail) < b.tailMax {
		k := min(len(p), b.tailMax-len(b.tail))
		b.tail = append(b.tail, p[:k]...)
		p = p[k:]
	}
	// the ring is full: each byte left replaces the oldest
	b.dropped += int64(len(p))
	for len(p) > 0 {
		k := copy(b.tail[b.next:], p)
		p = p[k:]
		b.next = (b.next + k) % b.tailMax
	}
}

// bytes is the head, the tail and, between them when bytes were dropped,
// "… N bytes dropped …" set off by sep.
func (b *headTail) bytes(sep string) []byte {
	out := make([]byte, 0, len(b.head)+len(b.tail)+2*len(sep)+32)
	out = append(out, b.head...)
	if b.dropped > 0 {
		out = fmt.Appendf(out, "%s… %d bytes dropped …%s", sep, b.dropped, sep)
	}
	return b.appendTail(out)
}

// tailBytes is the tail alone, oldest byte first.
func (b *headTail) tailBytes() []byte {
	return b.appendTail(make([]byte, 0, len(b.tail)))
}

func (b *headTail) appendTail(out []byte) []byte {
	out = append(out, b.tail[b.next:]...)
	return append(out, b.tail[:b.next]...)
}

// reset empties b and keeps its buffers.
func (b *headTail) reset() {
	b.head, b.tail, b.next, b.dropped = b.head[:0], b.tail[:0], 0, 0
}
