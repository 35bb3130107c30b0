package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/proc/procargs"
	"github.com/contain-cli/contain/session"
)

var procargs2Parse = procargs.Parse

// procargs2 builds a KERN_PROCARGS2 buffer as XNU lays it out: argc, the
// exec path (/usr/local/bin/ and argv[0]'s name), padding to 8 bytes,
// argv, the environment, padding to 8 bytes (none when it ends on a
// boundary), apple strings, padding. env nil and hidden: the buffer ends
// after argv.
func procargs2(argv, env []string, hidden bool) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(argv)))
	name := "x"
	if len(argv) > 0 {
		name = argv[0][strings.LastIndexByte(argv[0], '/')+1:]
	}
	pad := func() {
		for (len(b)-4)%8 != 0 {
			b = append(b, 0)
		}
	}
	b = append(b, "/usr/local/bin/"+name+"\x00"...)
	pad()
	for _, s := range argv {
		b = append(b, s+"\x00"...)
	}
	if hidden {
		return b
	}
	for _, s := range env {
		b = append(b, s+"\x00"...)
	}
	pad()
	b = append(b, "pfz=0x7ffc0000\x00stack_guard=0x1b2c3d4e00\x00ptr_munge=0x5e6f\x00main_stack=0x16f,0x80,0x16e,0x400\x00"...)
	pad()
	return b
}

// fakeMac is a macOS for macSys: processes by PID, their procargs2 (or
// the error reading it gives), and a log of every call in order.
type fakeMac struct {
	procs   map[int]MacProc
	args    map[int][]byte
	argsErr map[int]error
	oneErr  map[int]error // kern.proc.pid's error (default: EIO when absent)
	killErr map[int]error
	// uids: a process's unique ID where a test sets one; else one made
	// of its PID and start time (another process, another ID).
	uids  map[int]uint64
	calls []string
	// before runs at the start of each call, with its log entry: a test
	// changes the system there, as another process would.
	before func(call string)
	clock  time.Time
}

func newFakeMac(procs ...MacProc) *fakeMac {
	f := &fakeMac{procs: map[int]MacProc{}, args: map[int][]byte{}, argsErr: map[int]error{},
		oneErr: map[int]error{}, killErr: map[int]error{}, uids: map[int]uint64{}, clock: time.Unix(1700000000, 0)}
	for _, p := range procs {
		f.procs[p.PID] = p
	}
	return f
}

func (f *fakeMac) call(c string) {
	f.calls = append(f.calls, c)
	if f.before != nil {
		f.before(c)
	}
}

func (f *fakeMac) sys() *MacSys {
	return &MacSys{
		All: func() ([]MacProc, error) {
			f.call("all")
			var out []MacProc
			for pid := 0; pid < 100000; pid++ {
				if p, ok := f.procs[pid]; ok {
					out = append(out, p)
				}
			}
			return out, nil
		},
		one: func(pid int) (MacProc, error) {
			f.call("one " + strconv.Itoa(pid))
			if err := f.oneErr[pid]; err != nil {
				return MacProc{}, err
			}
			p, ok := f.procs[pid]
			if !ok {
				return MacProc{}, syscall.EIO
			}
			return p, nil
		},
		Args: func(pid int) ([]byte, error) {
			f.call("args " + strconv.Itoa(pid))
			if err := f.argsErr[pid]; err != nil {
				return nil, err
			}
			if _, ok := f.procs[pid]; !ok {
				return nil, syscall.EINVAL
			}
			return f.args[pid], nil
		},
		exists: func(pid int) error {
			f.call("exists " + strconv.Itoa(pid))
			if _, ok := f.procs[pid]; !ok {
				return syscall.ESRCH
			}
			return nil
		},
		kill: func(pid int, sig syscall.Signal) error {
			f.call(fmt.Sprintf("kill %d %d", pid, sig))
			if err := f.killErr[pid]; err != nil {
				return err
			}
			if _, ok := f.procs[pid]; !ok {
				return syscall.ESRCH
			}
			return nil
		},
		uniqueIDs: func(pid int) (MacIDs, error) {
			f.call("uid " + strconv.Itoa(pid))
			p, ok := f.procs[pid]
			switch {
			case !ok:
				return MacIDs{}, fmt.Errorf("proc_pidinfo(%d, PROC_PIDUNIQIDENTIFIERINFO): %w", pid, syscall.ESRCH)
			case f.uids[pid] != 0:
				return MacIDs{UniqueID: f.uids[pid]}, nil
			}
			return MacIDs{UniqueID: p.Start<<17 | uint64(pid)}, nil
		},
		User:  func(uid int) string { return "u" + strconv.Itoa(uid) },
		euid:  501,
		sleep: func(d time.Duration) { f.clock = f.clock.Add(d) },
		now:   func() time.Time { return f.clock },
	}
}

// kills lists the kill calls made.
func (f *fakeMac) kills() []string {
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "kill ") {
			out = append(out, c)
		}
	}
	return out
}

const tagged = "RUNNING_PROCESS_ORIGINATOR=CI:77"

func TestMacMicros(t *testing.T) {
	for _, c := range []struct {
		sec  int64
		usec int32
		want uint64
	}{
		{0, 0, 0},
		{1700000000, 123456, 1700000000123456},
		{1700000000, 999999, 1700000000999999},
		{-1, 0, 0},
	} {
		if got := macMicros(c.sec, c.usec); got != c.want {
			t.Errorf("macMicros(%d, %d) = %d, want %d", c.sec, c.usec, got, c.want)
		}
	}
	// Two processes forked within the same second are told apart.
	if macMicros(1700000000, 1) == macMicros(1700000000, 2) {
		t.Error("microseconds are lost")
	}
}

func TestMacComm(t *testing.T) {
	var b [17]byte
	copy(b[:], "sleep")
	if got := macComm(b[:]); got != "sleep" {
		t.Errorf("%q", got)
	}
	copy(b[:], "0123456789abcdefg")
	if got := macComm(b[:]); got != "0123456789abcdefg" {
		t.Errorf("no NUL: %q", got)
	}
}

// TestMacListTagged: ps lists the tagged processes with what kinfo_proc and
// procargs2 say of them, counts the ones it cannot read by reason, and
// leaves out kernel_task, zombies, untagged processes and those that end
// while they are read. launchd (PID 1), never signalled, is not counted.
func TestMacListTagged(t *testing.T) {
	me := MacProc{PPID: 1, PGID: 10, Start: 1700000000123456, Stat: 2, RUID: 501, EUID: 501, Comm: "node"}
	proc := func(pid int, mod func(*MacProc)) MacProc {
		p := me
		p.PID = pid
		if mod != nil {
			mod(&p)
		}
		return p
	}
	f := newFakeMac(
		proc(0, nil), // kernel_task
		proc(1, func(p *MacProc) { p.EUID, p.RUID, p.PPID = 0, 0, 0 }), // launchd
		proc(10, nil),
		proc(11, func(p *MacProc) { p.Stat = macSZOMB }),
		proc(12, nil),
		proc(13, func(p *MacProc) { p.EUID, p.RUID = 0, 0 }),
		proc(14, nil),
		proc(15, nil),
		proc(16, nil),
		proc(17, nil),
		proc(18, nil),
		proc(19, nil),
		proc(20, nil),
	)
	f.args[10] = procargs2([]string{"node", "server.js"}, []string{"HOME=/Users/a", tagged, "RUNNING_PROCESS_IS_DAEMON=1"}, false)
	f.args[12] = procargs2([]string{"make"}, []string{"HOME=/Users/a"}, false)
	f.argsErr[13] = syscall.EINVAL // root's, and contain is not root
	f.argsErr[1] = syscall.EINVAL  // launchd: never signalled, not counted
	f.args[14] = procargs2([]string{"sleep", "30"}, nil, true)
	f.argsErr[15] = syscall.EINVAL // ours, refused all the same
	f.argsErr[16] = syscall.EINVAL // ends while it is read
	f.args[17] = []byte{1, 0, 0, 0, 'x'}
	f.args[18] = []byte{1, 0, 0, 0, 'x'} // exec'd while read: right the second time
	f.args[19] = []byte{1, 0, 0, 0, 'x'} // ends while read
	f.argsErr[20] = syscall.EPERM
	reads := map[int]int{}
	f.before = func(c string) {
		var pid int
		if _, err := fmt.Sscanf(c, "args %d", &pid); err != nil {
			return
		}
		reads[pid]++
		switch {
		case pid == 16:
			delete(f.procs, 16)
		case pid == 18 && reads[pid] == 2:
			f.args[18] = procargs2([]string{"bash"}, []string{"RUNNING_PROCESS_ORIGINATOR=CI:78"}, false)
		case pid == 19:
			p := f.procs[19]
			p.Stat = macSZOMB
			f.procs[19] = p
		}
	}
	l, err := f.sys().listTagged()
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Process{
		{PID: 10, PPID: 1, Start: 1700000000123456, Started: time.UnixMicro(1700000000123456), UID: 501, User: "u501",
			Argv: []string{"node", "server.js"}, Comm: "node", Value: "CI:77", Daemon: true},
		{PID: 18, PPID: 1, Start: 1700000000123456, Started: time.UnixMicro(1700000000123456), UID: 501, User: "u501",
			Argv: []string{"bash"}, Comm: "node", Value: "CI:78"},
	}
	if !reflect.DeepEqual(l.Procs, want) {
		t.Errorf("procs:\n%+v\nwant\n%+v", l.Procs, want)
	}
	wantUnreadable := map[string]int{
		"permission denied":                  2, // 13 (EINVAL, another user), 20 (EPERM)
		"environment hidden by macOS":        1, // 14
		"refused by kern.procargs2 (EINVAL)": 1, // 15
		"unexpected content":                 1, // 17
	}
	if !reflect.DeepEqual(l.Unreadable, wantUnreadable) {
		t.Errorf("unreadable: %v, want %v", l.Unreadable, wantUnreadable)
	}
	if reads[0] != 0 || reads[11] != 0 {
		t.Errorf("read the arguments of kernel_task (%d) or of a zombie (%d)", reads[0], reads[11])
	}
	if l.Procs[0].Started.UnixMicro() != 1700000000123456 {
		t.Errorf("started %v: microseconds lost", l.Procs[0].Started)
	}
}

// TestMacListAsRoot: root is refused another user's process only for
// another reason than its user, and says so.
func TestMacListAsRoot(t *testing.T) {
	f := newFakeMac(MacProc{PID: 30, Start: 5, Stat: 2, RUID: 501, EUID: 501})
	f.argsErr[30] = syscall.EINVAL
	m := f.sys()
	m.euid, m.root = 0, true
	l, err := m.listTagged()
	if err != nil || len(l.Procs) != 0 || !reflect.DeepEqual(l.Unreadable, map[string]int{"refused by kern.procargs2 (EINVAL)": 1}) {
		t.Errorf("%+v, %v", l, err)
	}
}

// TestMacLookup: a PID is free only when kill(pid, 0) says ESRCH; a record
// that cannot be read for a PID that exists is an error (the session then
// counts as alive), never "gone".
func TestMacLookup(t *testing.T) {
	f := newFakeMac(MacProc{PID: 40, Start: 7, Stat: 2}, MacProc{PID: 41, Start: 8, Stat: macSZOMB}, MacProc{PID: 42, Start: 9, Stat: 2})
	m := f.sys()
	o, err := m.lookupOriginator(40)
	if err != nil || o != (session.Originator{Exists: true, Start: 7, Owned: true}) {
		t.Errorf("40: %+v %v", o, err)
	}
	o, err = m.lookupOriginator(41)
	if err != nil || o != (session.Originator{Exists: true, Zombie: true, Start: 8, Owned: true}) {
		t.Errorf("zombie: %+v %v", o, err)
	}
	o, err = m.lookupOriginator(43)
	if err != nil || o.Exists {
		t.Errorf("missing (EIO, then ESRCH): %+v %v", o, err)
	}
	f.oneErr[43] = syscall.ESRCH
	if o, err = m.lookupOriginator(43); err != nil || o.Exists {
		t.Errorf("missing (ESRCH): %+v %v", o, err)
	}
	f.oneErr[42] = syscall.EIO // a record that does not fit, say
	if o, err = m.lookupOriginator(42); err == nil {
		t.Errorf("EIO for a live PID taken for gone: %+v", o)
	}
	f.oneErr[42] = syscall.ENOMEM
	if _, err = m.lookupOriginator(42); !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("ENOMEM: %v", err)
	}
	delete(f.oneErr, 42)
	f.procs[44] = MacProc{PID: 45}
	if _, err = m.lookupOriginator(44); err == nil {
		t.Error("a record of another PID was accepted")
	}
}

func TestMacAncestors(t *testing.T) {
	f := newFakeMac(MacProc{PID: 50, PPID: 40}, MacProc{PID: 40, PPID: 1}, MacProc{PID: 1, PPID: 0})
	if got := f.sys().ancestors(50); !reflect.DeepEqual(got, map[int]bool{50: true, 40: true, 1: true}) {
		t.Errorf("%v", got)
	}
	f = newFakeMac(MacProc{PID: 60, PPID: 61}, MacProc{PID: 61, PPID: 60})
	if got := f.sys().ancestors(60); !reflect.DeepEqual(got, map[int]bool{60: true, 61: true}) {
		t.Errorf("a loop: %v", got)
	}
	f = newFakeMac(MacProc{PID: 70, PPID: 71})
	if got := f.sys().ancestors(70); !reflect.DeepEqual(got, map[int]bool{70: true, 71: true}) {
		t.Errorf("a parent gone: %v", got)
	}
}

// The tracker's scan from kern.proc.all records: no session, zombies
// marked.
func TestMacEntries(t *testing.T) {
	got := MacEntries([]MacProc{
		{PID: 80, PPID: 1, PGID: 80, Start: 100, Stat: 2, Comm: "sh"},
		{PID: 83, PPID: 80, PGID: 80, Start: 150, Stat: macSZOMB, Comm: "sleep"},
	})
	want := []Entry{
		{PID: 80, PPID: 1, Pgrp: 80, Start: 100, Comm: "sh"},
		{PID: 83, PPID: 80, Pgrp: 80, Start: 150, Zombie: true, Comm: "sleep"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries = %+v, want %+v", got, want)
	}
}

// readTag: a hidden environment is an error, never "no tag".
func TestMacReadTag(t *testing.T) {
	f := newFakeMac(MacProc{PID: 90, Start: 1}, MacProc{PID: 91, Start: 1}, MacProc{PID: 92, Start: 1})
	f.args[90] = procargs2([]string{"node"}, []string{tagged}, false)
	f.args[91] = procargs2([]string{"sleep"}, nil, true)
	f.args[92] = procargs2([]string{"node"}, []string{"HOME=/"}, false)
	m := f.sys()
	if v, ok, err := m.readTag(90); err != nil || !ok || v != "CI:77" {
		t.Errorf("tagged: %q %v %v", v, ok, err)
	}
	if _, _, err := m.readTag(91); !errors.Is(err, errEnvHidden) {
		t.Errorf("hidden: %v", err)
	}
	if _, ok, err := m.readTag(92); err != nil || ok {
		t.Errorf("untagged: %v %v", ok, err)
	}
	if _, _, err := m.readTag(93); err == nil {
		t.Error("no such process: no error")
	}
}

// signalSeen signals the process seen, and only it.
func TestMacSignalSeen(t *testing.T) {
	f := newFakeMac(MacProc{PID: 90, Start: 1000, Stat: 2})
	m := f.sys()
	if err := m.signalSeen(90, 999, macSIGKILL, nil); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("recycled PID: %v, want ESRCH", err)
	}
	if err := m.signalSeen(90, 1000, macSIGKILL, func() error { return errors.New("no") }); err == nil {
		t.Error("verify failed, yet signalled")
	}
	kills := func() (n int) {
		for _, c := range f.calls {
			if strings.HasPrefix(c, "kill ") {
				n++
			}
		}
		return n
	}
	if kills() != 0 {
		t.Fatalf("signals sent: %v", f.calls)
	}
	if err := m.signalSeen(90, 1000, macSIGKILL, nil); err != nil {
		t.Fatal(err)
	}
	if kills() != 1 {
		t.Errorf("signals sent: %v, want one", f.calls)
	}
}

// macPinCase sets up one process for a pin: PID 90, started at 1000,
// tagged CI:77.
func macPinCase() (*fakeMac, *MacPin) {
	f := newFakeMac(MacProc{PID: 90, PGID: 90, Start: 1000, Stat: 2, RUID: 501, EUID: 501})
	f.args[90] = procargs2([]string{"node"}, []string{tagged}, false)
	m := f.sys()
	return f, &MacPin{sys: m, pid: 90, start: 1000, verify: m.TagCheck("CI:77")}
}

// TestMacPinChecksBeforeEveryKill: every kill(2) comes right after a read
// of the process (kern.proc.pid, then its tag, then its unique ID), in the
// same call, and none without.
func TestMacPinChecksBeforeEveryKill(t *testing.T) {
	f, p := macPinCase()
	for _, step := range []func() error{p.Stop, func() error { return p.Signal(15) }, p.Resume, p.Kill} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"uid 90", // the unique ID, read at the first check: its identity
		"one 90", "args 90", "uid 90", "kill 90 17",
		"one 90", "args 90", "uid 90", "kill 90 15",
		"one 90", "uid 90", "kill 90 19", // SIGCONT: the identity only
		"one 90", "args 90", "uid 90", "kill 90 9",
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls:\n%q\nwant\n%q", f.calls, want)
	}
}

// TestMacPinRefuses: what the check finds, and what the pin does then.
func TestMacPinRefuses(t *testing.T) {
	for _, c := range []struct {
		name    string
		change  func(f *fakeMac)
		stopped bool   // reap stopped it before
		want    string // the error's text, or "gone"
		kills   []string
	}{
		{"its PID names a later process", func(f *fakeMac) { p := f.procs[90]; p.Start++; f.procs[90] = p }, false, "gone", nil},
		{"a zombie", func(f *fakeMac) { p := f.procs[90]; p.Stat = macSZOMB; f.procs[90] = p }, false, "gone", nil},
		{"gone", func(f *fakeMac) { delete(f.procs, 90) }, false, "gone", nil},
		{"gone after the check", func(f *fakeMac) { f.killErr[90] = syscall.ESRCH }, false, "gone", []string{"kill 90 15"}},
		{"unreadable", func(f *fakeMac) { f.oneErr[90] = syscall.ENOMEM }, false, "cannot be checked: " + syscall.ENOMEM.Error(), nil},
		{"another tag", func(f *fakeMac) {
			f.args[90] = procargs2([]string{"x"}, []string{"RUNNING_PROCESS_ORIGINATOR=CI:78"}, false)
		},
			false, `its tag changed to "CI:78"`, nil},
		{"no tag", func(f *fakeMac) { f.args[90] = procargs2([]string{"x"}, []string{"A=1"}, false) },
			false, "it no longer carries RUNNING_PROCESS_ORIGINATOR", nil},
		{"another tag, once stopped", func(f *fakeMac) {
			f.args[90] = procargs2([]string{"x"}, []string{"RUNNING_PROCESS_ORIGINATOR=CI:78"}, false)
		},
			true, `its tag changed to "CI:78" once stopped; resumed it`, []string{"kill 90 19"}},
		{"environment refused", func(f *fakeMac) { f.argsErr[90] = syscall.EINVAL },
			false, "its environment cannot be read again: " + syscall.EINVAL.Error(), nil},
		{"environment hidden: the start time decides", func(f *fakeMac) { f.args[90] = procargs2([]string{"sleep"}, nil, true) },
			false, "", []string{"kill 90 15"}},
		{"the same", func(*fakeMac) {}, false, "", []string{"kill 90 15"}},
	} {
		f, p := macPinCase()
		p.stoppedIt = c.stopped
		c.change(f)
		err := p.Signal(15)
		switch {
		case c.want == "gone" && !errors.Is(err, ErrGone),
			c.want == "" && err != nil,
			c.want != "gone" && c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		wantAlone := c.want != "gone" && c.want != "" && !strings.HasPrefix(c.want, "cannot be checked")
		if isAlone := errors.As(err, new(*LeftAlone)); isAlone != wantAlone {
			t.Errorf("%s: %v is a leftAlone: %v, want %v", c.name, err, isAlone, wantAlone)
		}
		if got := f.kills(); !reflect.DeepEqual(got, c.kills) {
			t.Errorf("%s: sent %q, want %q", c.name, got, c.kills)
		}
	}
}

// TestMacPinUniqueID: a process whose unique ID is not the one read when
// it was identified is another, whatever its PID, start time, state and
// tag say: it is not signalled, and counts as gone. Its unique ID changes
// at each moment a read can see it: between the pin's making and its
// first signal, between the check of its start time and the kill, and
// between two signals. A unique ID that cannot be read stops the signal
// too; one that says the process is gone, likewise.
func TestMacPinUniqueID(t *testing.T) {
	const other = 0xbad
	for _, c := range []struct {
		name  string
		at    string // the call before which it changes ("": when the pin is made)
		nth   int    // at its nth occurrence
		sigs  int    // signals asked for
		kills int
	}{
		{"the same process", "none", 0, 2, 2},
		{"changed after the pin was made", "", 0, 1, 0},
		{"changed between the check of its start time and the kill", "args 90", 1, 1, 0},
		{"changed between two signals", "one 90", 2, 2, 1},
	} {
		f := newFakeMac(MacProc{PID: 90, PGID: 90, Start: 1000, Stat: 2, RUID: 501, EUID: 501})
		f.args[90] = procargs2([]string{"node"}, []string{tagged}, false)
		m := f.sys()
		n := 0
		f.before = func(call string) {
			if call == c.at {
				if n++; n == c.nth {
					f.uids[90] = other
				}
			}
		}
		p := m.Pin(90, 1000, m.TagCheck("CI:77"))
		if c.at == "" {
			f.uids[90] = other
		}
		var err error
		for i := 0; i < c.sigs && err == nil; i++ {
			err = p.Signal(15)
		}
		if c.kills == c.sigs && err != nil || c.kills < c.sigs && !errors.Is(err, ErrGone) {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := len(f.kills()); got != c.kills {
			t.Errorf("%s: %d kills, want %d: %q", c.name, got, c.kills, f.calls)
		}
	}

	// signalSeen, contain run's and the guard's signal: the unique ID is
	// read at its start and again right before the kill.
	f := newFakeMac(MacProc{PID: 90, Start: 1000, Stat: 2})
	m := f.sys()
	f.before = func(call string) {
		if call == "one 90" { // between the two reads
			f.uids[90] = other
		}
	}
	if err := m.signalSeen(90, 1000, macSIGKILL, nil); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("signalSeen of a process whose unique ID changed: %v, want ESRCH", err)
	}
	if len(f.kills()) != 0 {
		t.Errorf("signalSeen signalled: %q", f.calls)
	}

	// A unique ID that cannot be read: checked, not signalled.
	f = newFakeMac(MacProc{PID: 90, Start: 1000, Stat: 2})
	m = f.sys()
	uids, reads := m.uniqueIDs, 0
	m.uniqueIDs = func(pid int) (MacIDs, error) {
		if reads++; reads > 1 {
			return MacIDs{}, syscall.EPERM
		}
		return uids(pid)
	}
	var fail *PinFailure
	if err := m.Pin(90, 1000, nil).Signal(15); !errors.As(err, &fail) {
		t.Errorf("unreadable unique ID: %v, want a PinFailure", err)
	}
	if len(f.kills()) != 0 {
		t.Errorf("signalled with an unreadable unique ID: %q", f.calls)
	}
}

// TestMacPinCheck: what reap's first check of a target (not yet confirmed)
// reports: errIdentity for a recycled PID, which the core leaves alone.
func TestMacPinCheck(t *testing.T) {
	f, p := macPinCase()
	if err := p.Check(true); err != nil {
		t.Fatal(err)
	}
	pr := f.procs[90]
	pr.Start = 2000
	f.procs[90] = pr
	if err := p.Check(true); !errors.Is(err, ErrIdentity) {
		t.Errorf("recycled: %v", err)
	}
	var fail *PinFailure
	f.oneErr[90] = syscall.ENOMEM
	if err := p.Check(true); !errors.As(err, &fail) {
		t.Errorf("unreadable: %v", err)
	}
}

// TestMacTagCheckEnded: an environment that cannot be read because the
// process just ended is errGone, not a reason to leave it alone.
func TestMacTagCheckEnded(t *testing.T) {
	f, p := macPinCase()
	f.before = func(c string) {
		if c == "args 90" {
			delete(f.procs, 90)
		}
	}
	if err := p.Check(true); !errors.Is(err, ErrGone) {
		t.Errorf("%v", err)
	}
}

func TestMacExitedPins(t *testing.T) {
	f := newFakeMac(MacProc{PID: 1, Start: 1}, MacProc{PID: 2, Start: 2, Stat: macSZOMB}, MacProc{PID: 3, Start: 4})
	m := f.sys()
	f.oneErr[5] = syscall.ENOMEM
	f.procs[5] = MacProc{PID: 5, Start: 5}
	pins := []Pin{&MacPin{sys: m, pid: 1, start: 1}, &MacPin{sys: m, pid: 2, start: 2}, &MacPin{sys: m, pid: 3, start: 3},
		&MacPin{sys: m, pid: 4, start: 4}, &MacPin{sys: m, pid: 5, start: 5}}
	// 1 runs; 2 is a zombie; 3's PID is another's; 4 is gone; 5 cannot be
	// read: not taken for ended.
	if got := m.exitedPins(pins); !reflect.DeepEqual(got, []bool{false, true, true, true, false}) {
		t.Errorf("%v", got)
	}
}

// TestMacWaitStopped: processes that show as stopped (or end) are waited
// for; one that does not within the time is returned.
func TestMacWaitStopped(t *testing.T) {
	f := newFakeMac(MacProc{PID: 1, Start: 1, Stat: 2}, MacProc{PID: 2, Start: 2, Stat: 2}, MacProc{PID: 3, Start: 3, Stat: 2}, MacProc{PID: 4, Start: 4, Stat: 2})
	m := f.sys()
	n := 0
	f.before = func(c string) {
		if c != "one 1" {
			return
		}
		n++
		if n == 3 {
			p := f.procs[1]
			p.Stat = macSSTOP
			f.procs[1] = p
			delete(f.procs, 2)
			p = f.procs[3]
			p.Stat = macSZOMB
			f.procs[3] = p
		}
	}
	start := f.clock
	got := m.WaitStopped([]int{1, 2, 3, 4}, []uint64{1, 2, 3, 4})
	if !reflect.DeepEqual(got, []int{4}) {
		t.Errorf("still running: %v", got)
	}
	if waited := f.clock.Sub(start); waited < stopWaitMac || waited > stopWaitMac+100*time.Millisecond {
		t.Errorf("waited %v", waited)
	}
}

// TestMacTagCheckExiting: a process whose arguments are refused while it
// exits, and which is a zombie a moment later, is errGone; one that stays
// refused is left alone after the short wait.
func TestMacTagCheckExiting(t *testing.T) {
	f, p := macPinCase()
	f.argsErr[90] = syscall.EINVAL
	lookups := 0
	f.before = func(c string) {
		if c == "one 90" {
			if lookups++; lookups == 4 {
				pr := f.procs[90]
				pr.Stat = macSZOMB
				f.procs[90] = pr
			}
		}
	}
	if err := p.Signal(15); !errors.Is(err, ErrGone) || len(f.kills()) != 0 {
		t.Errorf("exiting: %v, sent %q", err, f.kills())
	}
	f, p = macPinCase()
	f.argsErr[90] = syscall.EINVAL
	start := f.clock
	if err := p.Signal(15); err == nil || errors.Is(err, ErrGone) || len(f.kills()) != 0 {
		t.Errorf("refused: %v, sent %q", err, f.kills())
	}
	if waited := f.clock.Sub(start); waited < 20*time.Millisecond || waited > 100*time.Millisecond {
		t.Errorf("waited %v", waited)
	}
}

// readProcArgs2 reads once into a buffer as large as the kernel allows,
// and asks the whole size only when the buffer came back full: an area
// that is larger is told as such, one exactly as large is taken.
func TestMacReadProcArgs2(t *testing.T) {
	buf := make([]byte, 16)
	for _, c := range []struct {
		name  string
		area  int // the length the whole would take
		err   error
		sized bool // size was asked
	}{
		{"fits", 10, nil, false},
		{"exactly the buffer", 16, nil, true},
		{"larger than ARG_MAX", 17, errArgsTooLarge, true},
	} {
		sized := false
		got, err := readProcArgs2(buf,
			func(b []byte) (int, error) { return copy(b, bytes.Repeat([]byte{'a'}, c.area)), nil },
			func() (int, error) { sized = true; return c.area, nil })
		if !errors.Is(err, c.err) || sized != c.sized || err == nil && len(got) != c.area {
			t.Errorf("%s: %d bytes, %v, size asked %v", c.name, len(got), err, sized)
		}
	}
	if _, err := readProcArgs2(buf, func([]byte) (int, error) { return 0, syscall.EINVAL }, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a refusal: %v", err)
	}
}

// A process whose strings area is larger than ARG_MAX is counted at once
// under its own reason, not waited for 20 ms as one that might be exiting
// and then counted as refused (EINVAL), as it was when x/sys's SysctlRaw
// asked for the whole area.
func TestMacArgsTooLarge(t *testing.T) {
	f := newFakeMac(MacProc{PID: 40, Start: 5, Stat: 2, RUID: 501, EUID: 501, Comm: "ld"})
	f.argsErr[40] = errArgsTooLarge
	l, err := f.sys().listTagged()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{reasonTooLarge: 1}; !reflect.DeepEqual(l.Unreadable, want) {
		t.Errorf("unreadable %v, want %v", l.Unreadable, want)
	}
	if !f.clock.Equal(time.Unix(1700000000, 0)) || !reflect.DeepEqual(f.calls, []string{"all", "args 40"}) {
		t.Errorf("waited %v; calls %q", f.clock.Sub(time.Unix(1700000000, 0)), f.calls)
	}
}

// A process that executes another program while its strings are read can
// give the tail of the new program's area, which decodes all the same: a
// tag taken for an argument, none in the environment. The result is
// checked (argv on an 8-byte boundary, the executable's name the
// process's p_comm), read again, and the whole area found: the process is
// listed with its tag; and reap's check before a signal reads it the same
// way.
func TestMacExecWhileRead(t *testing.T) {
	argv := []string{"env", "A=1", "B=2", "sh", "-c", "make all"}
	whole := procargs2(argv, []string{"HOME=/Users/a", tagged, "PATH=/usr/bin:/bin"}, false)
	// The tail from an 8-byte boundary of the area on, with argc first as
	// the kernel writes it: the first that decodes and hides the tag.
	var tail []byte
	for cut := 12; cut < len(whole) && tail == nil; cut += 8 {
		b := append(binary.LittleEndian.AppendUint32(nil, uint32(len(argv))), whole[cut:]...)
		if a, err := procargs2Parse(b); err == nil {
			if _, ok := procargs.Getenv(a.Env, "RUNNING_PROCESS_ORIGINATOR"); !ok {
				tail = b
				if a.Plausible("env") {
					t.Fatalf("the tail %+v is plausible", a)
				}
			}
		}
	}
	if tail == nil {
		t.Fatal("no tail hides the tag: not the case this test is about")
	}
	f := newFakeMac(MacProc{PID: 50, PPID: 1, Start: 7, Stat: 2, RUID: 501, EUID: 501, Comm: "env"})
	reads := 0
	f.before = func(c string) {
		if c == "args 50" {
			if reads++; reads == 1 {
				f.args[50] = tail
			} else {
				f.args[50] = whole
			}
		}
	}
	l, err := f.sys().listTagged()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Procs) != 1 || l.Procs[0].Value != "CI:77" || reads != 2 {
		t.Errorf("listed %+v after %d reads; want PID 50 with its tag, after 2", l.Procs, reads)
	}
	reads = 0
	if err := f.sys().TagCheck("CI:77")(f.procs[50]); err != nil || reads != 2 {
		t.Errorf("reap's check: %v after %d reads", err, reads)
	}
	// A buffer that stays the same is taken as it is, even when its
	// executable's name is not p_comm (started through a symbolic link).
	f.before = nil
	f.procs[50] = MacProc{PID: 50, PPID: 1, Start: 7, Stat: 2, RUID: 501, EUID: 501, Comm: "python3.12"}
	f.args[50] = procargs2([]string{"python3", "x.py"}, []string{tagged}, false)
	f.calls = nil
	if l, _ := f.sys().listTagged(); len(l.Procs) != 1 || len(f.calls) != 3 {
		t.Errorf("listed %+v with calls %q", l.Procs, f.calls)
	}
}
