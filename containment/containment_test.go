package containment

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/limit"
	"github.com/contain-cli/contain/internal/run"
	"github.com/contain-cli/contain/report"
)

// TestSpecOf: a Group's Options become the Spec every copy runs, checked
// as contain run checks its flags, a fault named by its Options field.
func TestSpecOf(t *testing.T) {
	got, err := specOf(Options{Originator: "MYTOOL", Grace: 1500 * time.Millisecond, Timeout: time.Minute, Signal: syscall.SIGINT,
		KillAfter: 5 * time.Second, Limits: Limits{Memory: 64 << 20, Pids: 50, Strict: true}, AllowDaemons: true, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	want := run.Spec{Tool: "MYTOOL", Grace: 1500 * time.Millisecond, Timeout: time.Minute, Signal: syscall.SIGINT,
		KillAfter: 5 * time.Second, Limits: limit.Set{Memory: 64 << 20, Pids: 50, Strict: true}, AllowDaemons: true, Verbose: true,
		NoTerminal: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("specOf:\n got %+v\nwant %+v", got, want)
	}
	if s, _ := specOf(Options{}); s.Grace != 2*time.Second || s.Signal != syscall.SIGTERM || s.ToolOf() != "CONTAIN" || !s.NoTerminal {
		t.Errorf("specOf(Options{}) = %+v: want contain run's defaults, no terminal", s)
	}
	if s, _ := specOf(Options{Terminal: true}); s.NoTerminal {
		t.Errorf("specOf(Terminal: true) keeps the terminal from the command")
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Grace: -time.Second}, "containment: Grace: "},
		{Options{Limits: Limits{Memory: 10}}, "containment: Limits.Memory: "},
		{Options{Limits: Limits{Pids: -1}}, "containment: Limits.Pids: "},
		{Options{Limits: Limits{CPUs: -2}}, "containment: Limits.CPUs: "},
		{Options{Limits: Limits{CPUTime: time.Microsecond}}, "containment: Limits.CPUTime: "},
		{Options{Limits: Limits{Strict: true}}, "containment: Limits.Strict: "},
		{Options{Originator: "no spaces"}, "containment: Originator: "},
	} {
		if _, err := specOf(c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("specOf(%+v) = %v, want an error beginning %q", c.o, err, c.want)
		}
	}
	if _, err := NewGroup(Options{Originator: "no spaces"}); err == nil {
		t.Error("NewGroup took the originator \"no spaces\"")
	}
}

// TestStartRefuses: what a Group cannot start is refused before anything
// runs, with an error for errors.Is.
func TestStartRefuses(t *testing.T) {
	g, err := NewGroup(Options{Originator: "T"})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	missing := exec.Command("contain-no-such-command")
	if err := g.Start(missing); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Start of a command not found: %v, want exec.ErrNotFound", err)
	}
	if _, err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(exec.Command(self, "-test.run=^$")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

// TestWire: the copy reads back the Spec the host framed, every field of
// it and every byte (an argument that is not UTF-8 included), and refuses
// anything else: another version, a truncated frame, another kind, an
// unknown field, no command; the Outcome comes back whole; its lines and
// its Outcome reach the host whole, in frames.
func TestWire(t *testing.T) {
	spec := run.Spec{Args: []string{"sh", "-c", "echo 'x\ny'", "", "caf\xe9\xff"}, Env: []string{"A=1", "CONTAIN_REPORT=/tmp/r", "L=\x80"},
		Tool: "T", Timeout: time.Second, Signal: syscall.SIGINT, KillAfter: 3, Grace: -4, PreserveStatus: true, Detach: true,
		Verbose: true, Report: "/tmp/r", Keep: true, Limits: limit.Set{Memory: 1 << 40, Pids: 3, CPUTime: time.Minute, CPUs: 1.5, Strict: true},
		AllowDaemons: true, OnTimeout: "echo", NoTerminal: true, Hold: true, SendEvents: true}
	// Every field the wire carries is set above: a field added to
	// run.Spec without its tag fails here.
	v := reflect.ValueOf(spec)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.Tag.Get("wire") != "-" && v.Field(i).IsZero() {
			t.Errorf("run.Spec.%s is not set in this test", f.Name)
		}
	}
	good := encodeSpec(spec)
	got, err := decodeSpec(bytes.NewReader(good))
	if err != nil || !reflect.DeepEqual(got, spec) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, spec)
	}
	if got, err := decodeSpec(bytes.NewReader(encodeSpec(run.Spec{Tool: "T", Hold: true}))); err != nil || !got.Hold {
		t.Errorf("a holder's Spec, which names no command: %+v, %v", got, err)
	}
	other := bytes.Replace(good, []byte(specVersion), []byte("contain-spec-0"), 1)
	noCommand := encodeSpec(run.Spec{Tool: "T"})
	unknown := frame(frameSpec, append(append([]byte(specVersion+"\x00"), marshalSpec(run.Spec{Args: []string{"x"}})...), 99, 0))
	for name, b := range map[string][]byte{
		"empty":      nil,
		"truncated":  good[:len(good)-3],
		"version":    other,
		"kind":       append([]byte{frameLog}, good[1:]...),
		"too long":   {frameSpec, 0xff, 0xff, 0xff, 0xff},
		"no version": frame(frameSpec, []byte("run -- sh")),
		"unknown":    unknown,
		"no command": noCommand,
	} {
		if got, err := decodeSpec(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: decoded %+v", name, got)
		}
	}
	out := run.Outcome{Status: 137, Signal: syscall.SIGKILL, Pid: 7, Exited: true, Code: -3, KilledBy: syscall.SIGTERM,
		TimedOut: true, Limit: "memory", Error: "caf\xe9", Report: func() *report.Report { r := report.New("contain"); r.Tag = "T:1"; return r }()}
	back, err := unmarshalOutcome(marshalOutcome(out))
	if err != nil || back.Report == nil || back.Report.Tag != "T:1" {
		t.Fatalf("the outcome came back as %+v, %v", back, err)
	}
	back.Report, out.Report = nil, nil
	if back != out {
		t.Errorf("the outcome came back as %+v, want %+v", back, out)
	}

	var b bytes.Buffer
	w := &frameWriter{w: &b}
	fmt.Fprint(w.lines(), "contain: one\ncontain: two\n")
	w.send(frameStarted, []byte("123"))
	r := bufio.NewReader(&b)
	for _, want := range []struct {
		kind byte
		text string
	}{{frameLog, "contain: one"}, {frameLog, "contain: two"}, {frameStarted, "123"}} {
		kind, p, err := readFrame(r)
		if err != nil || kind != want.kind || string(p) != want.text {
			t.Errorf("read %c %q (%v), want %c %q", kind, p, err, want.kind, want.text)
		}
	}
	if _, _, err := readFrame(r); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}
