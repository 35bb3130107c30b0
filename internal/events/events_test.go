package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a buffer the Writer's goroutine writes while the test
// reads it.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
}

// TestLine: each event is one line, one Write: the common fields first
// (v, kind, time in RFC 3339 UTC, tag), then the kind's own, with & < >
// as they are; an empty field of omitempty is left out.
func TestLine(t *testing.T) {
	var buf lockedBuffer
	w := New(&buf, "T:1")
	w.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600)) }
	w.Emit(Started{PID: 7, Command: []string{"sh", "-c", "a && b < c"}, Layers: []string{"process group"}, ContainPID: 6})
	w.Emit(End{Status: 0, ExitCode: new(0), Why: EndExited})
	w.Close()
	got := buf.lines()
	want := []string{
		`{"v":1,"kind":"started","time":"2026-01-02T02:04:05.000000006Z","tag":"T:1","pid":7,"command":["sh","-c","a && b < c"],"layers":["process group"],"contain_pid":6}`,
		`{"v":1,"kind":"end","time":"2026-01-02T02:04:05.000000006Z","tag":"T:1","status":0,"exit_code":0,"why":"exited","leftovers":0}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if buf.writes != 2 {
		t.Errorf("%d writes for 2 lines", buf.writes)
	}
	for _, l := range got {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
}

// TestNil: a nil Writer (a run without events) does nothing, and New of
// no writer is nil.
func TestNil(t *testing.T) {
	var w *Writer
	w.Emit(End{})
	w.Line([]byte("x"))
	w.Flush()
	w.Close()
	if w.Once("k") {
		t.Error("a nil Writer's Once said yes")
	}
	if New(nil, "") != nil {
		t.Error("New(nil) is not nil")
	}
}

// TestOnce: a key is first once.
func TestOnce(t *testing.T) {
	w := New(&lockedBuffer{}, "")
	defer w.Close()
	if !w.Once("limit memory") || w.Once("limit memory") || !w.Once("limit pids") {
		t.Error("Once did not say yes exactly the first time of each key")
	}
}

// blocking is a reader that has stopped reading: each Write waits until
// released.
type blocking struct {
	lockedBuffer
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (b *blocking) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return b.lockedBuffer.Write(p)
}

// TestDropped: a reader that stops reading holds nothing up; the lines
// that do not fit in the queue are dropped, and a dropped line says how
// many before the next line that fits: every line emitted is written or
// counted.
func TestDropped(t *testing.T) {
	out := &blocking{release: make(chan struct{}), entered: make(chan struct{})}
	w := New(out, "")
	w.Emit(Daemon{PID: 1})
	<-out.entered // the goroutine holds the first line, in its Write
	const more = Queue + 50
	done := make(chan struct{})
	go func() {
		for i := range more {
			w.Emit(Daemon{PID: i + 2})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Emit blocked behind a reader that does not read")
	}
	close(out.release)
	w.Emit(Daemon{PID: -1}) // after the reader reads again
	w.Close()
	written, dropped, droppedLines := 0, 0, 0
	for _, l := range out.lines() {
		var m struct {
			Kind  string `json:"kind"`
			Count int    `json:"count"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		switch m.Kind {
		case KindDropped:
			dropped += m.Count
			droppedLines++
		case KindDaemon:
			written++
		}
	}
	if droppedLines == 0 || written+dropped != more+2 {
		t.Errorf("%d lines written, %d dropped in %d dropped lines; want %d in all, some dropped", written, dropped, droppedLines, more+2)
	}
}

// failing fails every write after the first.
type failing struct {
	lockedBuffer
	n int
}

func (f *failing) Write(p []byte) (int, error) {
	f.n++
	if f.n > 1 {
		return 0, errors.New("gone")
	}
	return f.lockedBuffer.Write(p)
}

// panicking panics on each write.
type panicking struct{}

func (panicking) Write([]byte) (int, error) { panic("no") }

// TestWriteFails: the first write that fails (or panics) ends the
// stream, and OnError is told once; the run goes on.
func TestWriteFails(t *testing.T) {
	for name, out := range map[string]interface {
		Write([]byte) (int, error)
	}{"error": &failing{}, "panic": panicking{}} {
		var mu sync.Mutex
		var errs []error
		w := New(out, "")
		w.OnError = func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		for range 5 {
			w.Emit(End{})
		}
		w.Close()
		mu.Lock()
		if len(errs) != 1 {
			t.Errorf("%s: OnError told %d times: %v", name, len(errs), errs)
		}
		mu.Unlock()
		if f, ok := out.(*failing); ok && f.n != 2 {
			t.Errorf("%s: %d writes, want none after the one that failed", name, f.n)
		}
	}
}

// TestFlush: Flush returns once what was emitted before it is written;
// Close too, and nothing is written after Close.
func TestFlush(t *testing.T) {
	var buf lockedBuffer
	w := New(&buf, "")
	for range 100 {
		w.Emit(Leftover{PID: 1})
	}
	w.Flush()
	if n := len(buf.lines()); n != 100 {
		t.Errorf("%d lines written after Flush, want 100", n)
	}
	w.Line([]byte(`{"v":1,"kind":"end"}`))
	w.Close()
	w.Emit(End{})
	if got := buf.lines(); len(got) != 101 || got[100] != `{"v":1,"kind":"end"}` {
		t.Errorf("after Close: %d lines, the last %q", len(got), got[len(got)-1])
	}
}

// TestParseFD: fd:N, N a number, is a descriptor; anything else not
// starting with fd: is a FILE.
func TestParseFD(t *testing.T) {
	for to, want := range map[string]struct {
		n      int
		ok, ef bool
	}{
		"fd:3": {3, true, false}, "fd:0": {0, true, false},
		"fd:": {0, true, true}, "fd:x": {0, true, true}, "fd:-1": {0, true, true}, "fd:03": {0, true, true},
		"events.jsonl": {0, false, false}, "./fd:3": {0, false, false}, "-": {0, false, false},
	} {
		n, ok, err := parseFD(to)
		if n != want.n || ok != want.ok || (err != nil) != want.ef {
			t.Errorf("parseFD(%q) = %d, %v, %v", to, n, ok, err)
		}
	}
}
