// Package events is contain run's stream of what happens while it runs
// (contain run --events, containment.Options.Events): one JSON object a
// line, each written with one write as soon as it happens, so that a
// reader that follows the file (tail -f, a pipe) sees it at once. The
// schema is versioned (Version); docs/REPORT.md documents it, beside the
// report's.
//
// Every line has "v" (the version), "kind", "time" (RFC 3339 in UTC,
// with nanoseconds) and, where the run has one, "tag" (the session's
// TOOL:PID); the other fields are the kind's (Started, Joined, Daemon,
// Limit, Signal, Leftover, End, Dropped).
//
// A Writer never holds up the run: the lines go through a queue to a
// goroutine of its own that writes them. A reader that stops reading (a
// pipe's reader that no longer reads; a FILE never does) fills the queue,
// and the lines that do not fit are dropped and counted: a Dropped line
// says how many, as soon as there is room again. A write that fails (the
// reader gone) ends the stream: OnError is told, once, and nothing more
// is written.
package events

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/contain-cli/contain/report"
)

// Version is the schema's version: it changes when a field changes
// meaning or goes away, or when a kind or field is added that a reader
// must not miss. Other fields and kinds may appear in the same version.
const Version = 1

// The kinds of line.
const (
	KindStarted  = "started"
	KindJoined   = "joined"
	KindDaemon   = "daemon"
	KindLimit    = "limit"
	KindSignal   = "signal"
	KindLeftover = "leftover"
	KindEnd      = "end"
	KindDropped  = "dropped"
)

// Kinds are every kind of line, in the order a run emits them.
var Kinds = []string{KindStarted, KindJoined, KindDaemon, KindLimit, KindSignal, KindLeftover, KindEnd, KindDropped}

// Event is one kind of line's own fields.
type Event interface {
	Kind() string
}

// Started: COMMAND runs (or a library Group's session is held), in the
// layers that hold it.
type Started struct {
	// PID is COMMAND's; absent in a held session, which runs none.
	PID     int      `json:"pid,omitempty"`
	Command []string `json:"command,omitempty"`
	// Layers are what holds the group, as -v and the report's
	// containment name them.
	Layers     []string `json:"layers,omitempty"`
	ContainPID int      `json:"contain_pid"`
	// Detached: contain run -d started it and does not wait for it.
	Detached bool `json:"detached,omitempty"`
	// Held: a library Group's session, which holds what the program
	// starts in it.
	Held bool `json:"held,omitempty"`
}

func (Started) Kind() string { return KindStarted }

// Joined: a process of the session seen outside COMMAND's tree as it
// was started: out of COMMAND's process group (setsid, setpgid), or
// re-parented once its parent ended (a double fork).
type Joined struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid"`
	Comm string `json:"comm"`
	// FoundBy is how contain found it, in the report's words
	// (leftovers[].found_by): descendant, cgroup, process group,
	// session, tracked, tag, marker, lineage.
	FoundBy          string `json:"found_by"`
	LeftProcessGroup bool   `json:"left_process_group"`
	// LeftSession: it left COMMAND's session (setsid); absent where it
	// could not be read.
	LeftSession *bool `json:"left_session,omitempty"`
	// Reparented: its parent is no member of the session (it ended: the
	// process was adopted by contain, its shim, or PID 1).
	Reparented bool `json:"reparented"`
}

func (Joined) Kind() string { return KindJoined }

// Daemon: a daemon that --allow-daemons lets leave the group and outlive
// the run.
type Daemon struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	Why  string `json:"why"`
}

func (Daemon) Kind() string { return KindDaemon }

// Limit: a whole-tree limit was exceeded (or, for cpus, held the tree
// back), as the report's limits say it.
type Limit struct {
	// Limit is its name in the report: memory, pids, cpu_time, cpus.
	Limit      string  `json:"limit"`
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"`
	EnforcedBy string  `json:"enforced_by"`
	// What showed it ("the tree's resident memory reached 112 MiB");
	// absent where only the kernel's counters told it.
	What   string `json:"what,omitempty"`
	Action string `json:"action,omitempty"`
	// HeldBy names what held it, as the report's limits do (absent:
	// nothing could be named).
	HeldBy []report.Holder `json:"held_by,omitempty"`
}

func (Limit) Kind() string { return KindLimit }

// The targets of a Signal.
const (
	ToProcess = "process"
	ToGroup   = "group"
)

// Signal: contain sent a signal (on Windows a console event, or
// TerminateJobObject).
type Signal struct {
	Signal string `json:"signal"`
	// To is process (PID, Comm) or group (every process of the group,
	// or on Windows COMMAND's console process group or the job).
	To   string `json:"to"`
	PID  int    `json:"pid,omitempty"`
	Comm string `json:"comm,omitempty"`
	// Group is the process group a console event went to (Windows:
	// COMMAND's console process group, whose ID is COMMAND's PID).
	Group int `json:"group,omitempty"`
	// Why is the report's phase (timeout, limit, told to stop, after
	// COMMAND ended) or forwarded (a signal contain received, passed on).
	Why string `json:"why"`
}

func (Signal) Kind() string { return KindSignal }

// Why a signal was sent, beside the report's phases.
const WhyForwarded = "forwarded"

// Leftover: a process that was still running when COMMAND ended has
// ended, and how, in the report's words (leftovers[].ended_by).
type Leftover struct {
	PID     int    `json:"pid"`
	Comm    string `json:"comm"`
	EndedBy string `json:"ended_by"`
	// Ports are the sockets it listened on when contain ended it, as
	// the report's leftovers have them (absent: none, or not read).
	Ports []report.Port `json:"ports,omitempty"`
}

func (Leftover) Kind() string { return KindLeftover }

// End: the run is over, the group closed and the report (if asked for)
// written: the last line.
type End struct {
	// Status is contain's exit status.
	Status int `json:"status"`
	// ExitCode or Signal: how COMMAND ended (absent where it did not
	// run, was detached, or in a held session).
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Why: exited, signaled, timeout, told to stop, limit, not started,
	// detached, closed (a held session).
	Why        string `json:"why"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	ToldToStop string `json:"told_to_stop,omitempty"`
	// Limit names the limit that ended the run, as the report does.
	Limit string `json:"limit,omitempty"`
	// Leftovers is how many processes were still running when COMMAND
	// ended (the report's leftovers, spared daemons aside).
	Leftovers int `json:"leftovers"`
	// Error: why COMMAND could not be started, or contain failed.
	Error string `json:"error,omitempty"`
}

func (End) Kind() string { return KindEnd }

// The End's reasons.
const (
	EndExited     = "exited"
	EndSignaled   = "signaled"
	EndTimeout    = "timeout"
	EndStopped    = "told to stop"
	EndLimit      = "limit"
	EndNotStarted = "not started"
	EndDetached   = "detached"
	EndClosed     = "closed"
)

// Dropped: lines that the queue could not take (the reader had stopped
// reading) were dropped.
type Dropped struct {
	Count int `json:"count"`
}

func (Dropped) Kind() string { return KindDropped }

// Queue is how many lines wait for a reader that does not read before
// the next ones are dropped.
const Queue = 4096

// Linger is the longest Close waits for a reader that has stopped reading
// before it gives up the lines not yet written.
const Linger = 5 * time.Second

// Writer writes a run's lines. A nil *Writer writes nothing: every
// method does nothing then.
type Writer struct {
	tag string
	out io.Writer
	// OnError, when set, is told of the first write that failed; no line
	// is written after it.
	OnError func(err error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	q       chan item
	stopped chan struct{}

	// mu guards closed and the closing of q: each send holds it shared.
	mu     sync.RWMutex
	closed bool
	// dmu guards the count of lines dropped and the keys of Once.
	dmu     sync.Mutex
	dropped int
	once    map[string]bool
}

// item is one line to write, or a flush's mark (line nil).
type item struct {
	line    []byte
	flushed chan struct{}
}

// New starts a Writer of lines to out (nil: none, and New returns nil),
// each with the session's tag ("": none).
func New(out io.Writer, tag string) *Writer {
	if out == nil {
		return nil
	}
	w := &Writer{tag: tag, out: out, q: make(chan item, Queue), stopped: make(chan struct{}), once: map[string]bool{}}
	go w.write()
	return w
}

// write writes the queued lines until Close, each with one Write.
func (w *Writer) write() {
	defer close(w.stopped)
	failed := false
	for it := range w.q {
		if it.flushed != nil {
			close(it.flushed)
			continue
		}
		if failed {
			continue
		}
		if err := w.writeLine(it.line); err != nil {
			failed = true
			if w.OnError != nil {
				w.OnError(err)
			}
		}
	}
}

// writeLine writes one line; a writer that panics fails the stream,
// never the run.
func (w *Writer) writeLine(b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errPanic{p}
		}
	}()
	n, err := w.out.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

type errPanic struct{ v any }

func (e errPanic) Error() string { return "the writer panicked" }

// Emit writes e's line, stamped now.
func (w *Writer) Emit(e Event) {
	if w == nil {
		return
	}
	w.Line(w.encode(e))
}

// Line queues a line already made (a library copy's, passed on by its
// program: it carries its own session's tag and time); a newline is added
// where it has none.
func (w *Writer) Line(b []byte) {
	if w == nil || len(b) == 0 {
		return
	}
	if b[len(b)-1] != '\n' {
		b = append(b[:len(b):len(b)], '\n')
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	w.dmu.Lock()
	defer w.dmu.Unlock()
	if w.dropped > 0 {
		select {
		case w.q <- item{line: w.encode(Dropped{Count: w.dropped})}:
			w.dropped = 0
		default:
			w.dropped++
			return
		}
	}
	select {
	case w.q <- item{line: b}:
	default:
		w.dropped++
	}
}

// Once reports whether key is asked for the first time: a moment that
// several parts of the run may see (a limit) is written once.
func (w *Writer) Once(key string) bool {
	if w == nil {
		return false
	}
	w.dmu.Lock()
	defer w.dmu.Unlock()
	if w.once[key] {
		return false
	}
	w.once[key] = true
	return true
}

// encode is e's line: the common fields first, then e's own.
func (w *Writer) encode(e Event) []byte {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"kind":`...)
	b = appendString(b, e.Kind())
	b = append(b, `,"time":`...)
	b = appendString(b, now().UTC().Format(time.RFC3339Nano))
	if w.tag != "" {
		b = append(b, `,"tag":`...)
		b = appendString(b, w.tag)
	}
	own, err := marshal(e)
	if err == nil && len(own) > 2 {
		b = append(b, ',')
		b = append(b, own[1:len(own)-1]...)
	}
	return append(b, '}', '\n')
}

// marshal is v as JSON, with & < > as they are (a command line's), as
// the report writes them.
func marshal(v any) ([]byte, error) {
	var buf jsonBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.b
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	return b, nil
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

func appendString(b []byte, s string) []byte {
	q, _ := marshal(s)
	return append(b, q...)
}

// Flush waits until every line queued before it is written, or the
// Linger has passed (a reader that has stopped reading).
func (w *Writer) Flush() {
	if w != nil {
		w.flushBy(time.NewTimer(Linger))
	}
}

// flushBy is Flush, until t fires (and stops t).
func (w *Writer) flushBy(t *time.Timer) {
	defer t.Stop()
	done := make(chan struct{})
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return
	}
	// A full queue is waited for, until t at most; the lines queued
	// meanwhile may come before the mark, which only follows those
	// queued before.
	select {
	case w.q <- item{flushed: done}:
	case <-t.C:
		w.mu.RUnlock()
		return
	}
	w.mu.RUnlock()
	select {
	case <-done:
	case <-t.C:
	}
}

// Close writes what is queued, the Linger at most in all, and ends the
// Writer: lines emitted after it are not written.
func (w *Writer) Close() {
	if w == nil {
		return
	}
	deadline := time.Now().Add(Linger)
	w.flushBy(time.NewTimer(Linger))
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.dmu.Lock()
	if w.dropped > 0 {
		select {
		case w.q <- item{line: w.encode(Dropped{Count: w.dropped})}:
		default:
		}
	}
	w.dmu.Unlock()
	w.closed = true
	close(w.q)
	w.mu.Unlock()
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-w.stopped:
	case <-t.C:
	}
}
