//go:build linux || darwin

package run

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/account"
	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/track"
	"github.com/contain-cli/contain/report"
	"github.com/contain-cli/contain/tag"
)

// The close of the group (closeGroup, supervise.Close, killGroup) and the
// forwarding of signals (signalGroup), run on a process table of the
// test's own: no process is started, signalled or read. The PIDs are
// above any PID_MAX (Linux: 2^22; macOS: 99,999), so that what still
// reaches the machine directly (daemon.MarkOf's read of a leftover's
// environment, getsid of contain itself) finds nothing of the test's.

const (
	fakeSelf    = 5_000_000 // contain
	fakeCommand = 5_000_001 // COMMAND
	fakeSid     = 4_999_000 // contain's session, COMMAND's
	fakeSince   = 1000      // COMMAND's start; every member's is later
)

// fakeProc is one process of fakeTable.
type fakeProc struct {
	proc.Entry
	argv    []string
	tag     string           // its tag ("": none)
	ignores []syscall.Signal // caught or ignored; any other signal but the stops and SIGCONT ends it
	// dying is the signal that ended it: the process is gone from the
	// next scan on (a signal acts after the send returns, as the
	// kernel's does when the process next runs).
	dying syscall.Signal
}

// sent is one signal fakeTable delivered.
type sent struct {
	pid   int
	start uint64
	sig   syscall.Signal
}

// fakeTable is the runner's procTable, faked: what the processes are,
// which signals each got, and what each does on one.
type fakeTable struct {
	mu      sync.Mutex
	procs   map[int]*fakeProc
	sent    []sent
	refused []sent // not delivered: the PID names another process now
	// died is told of each process that ended of a signal, at the scan
	// that first misses it (the runner's reaper, for contain's children).
	died func(p fakeProc)
	// afterScan runs once a scan has read the table (what the machine
	// does between that scan and what the runner does with it), and
	// onDelivered after a signal was delivered (what the process does
	// then): nil, nothing.
	afterScan   func(t *fakeTable)
	onDelivered func(t *fakeTable, pid int, sig syscall.Signal)
}

func newFakeTable(ps ...fakeProc) *fakeTable {
	t := &fakeTable{procs: map[int]*fakeProc{}}
	for _, p := range ps {
		t.add(p)
	}
	return t
}

// add puts p in the table (in place of any process of its PID).
func (t *fakeTable) add(p fakeProc) {
	t.procs[p.PID] = &p
}

// endCommand: COMMAND exits and is reaped; its children are re-parented
// to contain, its subreaper (else PID 1: escapees).
func (t *fakeTable) endCommand(toInit ...int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.procs, fakeCommand)
	for _, p := range t.procs {
		if p.PPID == fakeCommand {
			p.PPID = fakeSelf
			if slices.Contains(toInit, p.PID) {
				p.PPID = 1
			}
		}
	}
}

// signals is what pid got, in order (of any process that had the PID).
func (t *fakeTable) signals(pid int) []syscall.Signal {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []syscall.Signal
	for _, s := range t.sent {
		if s.pid == pid {
			out = append(out, s.sig)
		}
	}
	return out
}

// count is how many times pid got sig.
func (t *fakeTable) count(pid int, sig syscall.Signal) int {
	n := 0
	for _, s := range t.signals(pid) {
		if s == sig {
			n++
		}
	}
	return n
}

func (t *fakeTable) scan() ([]proc.Entry, error) {
	t.mu.Lock()
	var gone []fakeProc
	out := make([]proc.Entry, 0, len(t.procs))
	for pid, p := range t.procs {
		if p.dying != 0 {
			gone = append(gone, *p)
			delete(t.procs, pid)
			continue
		}
		out = append(out, p.Entry)
	}
	died := t.died
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	for _, p := range gone {
		if died != nil {
			died(p)
		}
	}
	if t.afterScan != nil {
		t.afterScan(t)
	}
	return out, nil
}

// fatal: sig ends a process that does not catch it.
func fatal(sig syscall.Signal) bool {
	switch sig {
	case 0, unix.SIGCONT, unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGCHLD, unix.SIGWINCH, unix.SIGURG:
		return false
	}
	return true
}

func (t *fakeTable) signal(pid int, start uint64, sig syscall.Signal, in group) error {
	t.mu.Lock()
	p := t.procs[pid]
	switch {
	case p == nil:
		t.mu.Unlock()
		return proc.ErrGone
	case start != 0 && p.Start != start:
		t.refused = append(t.refused, sent{pid: pid, start: start, sig: sig})
		t.mu.Unlock()
		return proc.ErrIdentity
	}
	t.mu.Unlock()
	if start == 0 {
		if err := in.holds(pid); err != nil {
			return err
		}
	}
	t.mu.Lock()
	t.sent = append(t.sent, sent{pid: pid, start: p.Start, sig: sig})
	if p.dying == 0 && fatal(sig) && (sig == unix.SIGKILL || !slices.Contains(p.ignores, sig)) {
		p.dying = sig
	}
	t.mu.Unlock()
	if t.onDelivered != nil {
		t.onDelivered(t, pid, sig)
	}
	return nil
}

func (t *fakeTable) readTag(pid int) (string, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.procs[pid]
	if p == nil {
		return "", false, unix.ESRCH
	}
	return p.tag, p.tag != "", nil
}

func (t *fakeTable) entryOf(pid int) (proc.Entry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.procs[pid]; p != nil {
		return p.Entry, true
	}
	return proc.Entry{}, false
}

func (t *fakeTable) argvOf(pid int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.procs[pid]; p != nil {
		return slices.Clone(p.argv)
	}
	return nil
}

func (t *fakeTable) heldStdio(pid int) (out, err *bool, why string) {
	no := false
	return &no, &no, ""
}

func (t *fakeTable) lives(id proc.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.procs[id.PID]
	return p != nil && p.Start == id.Start && p.dying == 0
}

// tagOf is the tracker's tag reader over the table.
func (t *fakeTable) tagOf(value string) func(int) track.TagRead {
	return func(pid int) track.TagRead {
		v, ok, err := t.readTag(pid)
		switch {
		case err != nil:
			return track.TagUnknown
		case ok && v == value:
			return track.TagOurs
		}
		return track.TagOther
	}
}

// closeOS is the OS's part for the close: tracking alone (no cgroup to
// freeze, nothing that holds every process), as on macOS.
type closeOS struct{ osHooks }

func (closeOS) complete() bool  { return false }
func (closeOS) strong() bool    { return false }
func (closeOS) freezable() bool { return false }

// child is a process COMMAND started, in a process group of its own
// (not COMMAND's: killGroup would stop COMMAND's group by a real
// killpg), in contain's session.
func child(pid int, start uint64, argv ...string) fakeProc {
	return fakeProc{Entry: proc.Entry{PID: pid, PPID: fakeCommand, Pgrp: pid, Sid: fakeSid, Start: start, Comm: argv[0]}, argv: argv}
}

// lines is -v's log, kept.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) log(format string, a ...any) {
	l.mu.Lock()
	l.l = append(l.l, fmt.Sprintf(format, a...))
	l.mu.Unlock()
}

// index is the first line that contains s (-1: none).
func (l *lines) index(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.IndexFunc(l.l, func(x string) bool { return strings.Contains(x, s) })
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

// closeRunner is a runner whose COMMAND runs, over tab, with the grace
// period grace and a report: the null objects for what the close does not
// use, and one scan taken, as the watcher takes them while COMMAND runs,
// so that the tracker knows COMMAND's children as members.
func closeRunner(t *testing.T, tab *fakeTable, grace time.Duration) (*runner, *lines) {
	t.Helper()
	l := &lines{}
	noKids := make(chan struct{})
	close(noKids) // no child of contain: what is left, the scans find
	r := &runner{o: Options{Args: []string{"cmd"}, Grace: grace, Tag: tag.Format("contain", fakeSelf)}, log: l.log,
		grp: noGroup{}, lim: noLimits{}, guard: noGuard{}, shim: noShim{}, sys: closeOS{}, procs: tab,
		self: fakeSelf, pid: fakeCommand, noKids: noKids, sigs: make(chan os.Signal, 1)}
	r.daemons = noDaemons{log: r.log}
	r.rec = account.New(true)
	r.rec.Started([]string{"process group", "tracking"})
	r.track = track.New(r.self, r.pid, fakeSince, r.o.Tag)
	r.track.TagOf, r.track.SidOf, r.track.Owner = tab.tagOf(r.o.Tag), nil, nil
	r.told = map[proc.ID]bool{}
	tab.died = func(p fakeProc) {
		// contain reaps its children (the adopted orphans among them).
		if p.PPID == fakeSelf {
			r.rec.ReapedOne(p.PID, r.pid, unix.WaitStatus(p.dying), nil)
		}
	}
	tab.add(fakeProc{Entry: proc.Entry{PID: fakeCommand, PPID: fakeSelf, Pgrp: fakeCommand, Sid: fakeSid, Start: fakeSince, Comm: "cmd"}, argv: []string{"cmd"}})
	if live, _ := r.scanAll(); len(live) != len(tab.procs) {
		t.Fatalf("the first scan found %d members of %d processes", len(live), len(tab.procs))
	}
	return r, l
}

// commandEnded: COMMAND exits 0 and is reaped, as the main loop then
// records it.
func commandEnded(r *runner, tab *fakeTable, toInit ...int) {
	tab.endCommand(toInit...)
	r.status, r.mainDone = 0, true
	r.rec.CommandEnded()
}

// closeWithin runs the close of the group, failing the test if it has not
// returned after a generous while (a guard against a hang, not a timing).
func closeWithin(t *testing.T, r *runner, l *lines) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		r.closeGroup()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the close has not returned after 60 s; -v:\n%s", l)
	}
}

// leftover and ending find the report's entry of pid, and how many it has.
func leftover(f *account.Facts, pid int) (report.Leftover, int) {
	return entryOf(f.Leftovers, pid, func(l report.Leftover) int { return l.PID })
}

func ending(f *account.Facts, pid int) (report.Ended, int) {
	return entryOf(f.EndedByContain, pid, func(e report.Ended) int { return e.PID })
}

func entryOf[E any](list []E, pid int, pidOf func(E) int) (E, int) {
	var out E
	n := 0
	for _, e := range list {
		if pidOf(e) == pid {
			out, n = e, n+1
		}
	}
	return out, n
}

// TestCloseAllAnswerSIGTERM: leftovers that all end on SIGTERM are closed
// without SIGKILL, each sent SIGTERM once with SIGCONT after it, within a
// grace period that is never waited out; the report lists each once, as
// SIGTERM ended it (contain's own children by their status, an escapee
// re-parented to PID 1 with its status unknown), and ended_by_contain
// names SIGTERM, in the close's phase.
func TestCloseAllAnswerSIGTERM(t *testing.T) {
	const a, b, c = 5_000_010, 5_000_011, 5_000_012
	tab := newFakeTable(child(a, 1001, "sleep", "300"), child(b, 1002, "sh", "-c", "wait"), child(c, 1003, "escapee"))
	r, l := closeRunner(t, tab, time.Hour)
	commandEnded(r, tab, c)
	closeWithin(t, r, l)

	for _, pid := range []int{a, b, c} {
		if got := tab.signals(pid); !slices.Equal(got, []syscall.Signal{unix.SIGTERM, unix.SIGCONT}) {
			t.Errorf("%d got %v; want SIGTERM then SIGCONT, once each", pid, got)
		}
	}
	if i := l.index("still running after the grace period"); i >= 0 {
		t.Errorf("the grace period was waited out:\n%s", l)
	}
	f := r.finishFacts()
	if len(f.Leftovers) != 3 || len(f.EndedByContain) != 3 {
		t.Errorf("%d leftovers and %d ended by contain; want 3 each", len(f.Leftovers), len(f.EndedByContain))
	}
	for pid, how := range map[int]string{a: "SIGTERM", b: "SIGTERM", c: "SIGTERM, then ended, status unknown"} {
		lo, n := leftover(f, pid)
		if n != 1 || lo.EndedBy != how || lo.FoundBy != "descendant" || len(lo.Argv) == 0 || lo.Comm == "" {
			t.Errorf("leftover %d: %d entries, %+v; want one, found as a descendant, ended by %q", pid, n, lo, how)
		}
		e, n := ending(f, pid)
		if n != 1 || e.Signal != "SIGTERM" || e.EndedBy != how || e.Phase != report.PhaseClose || e.Command {
			t.Errorf("ended by contain %d: %d entries, %+v; want one, SIGTERM in the close, ended by %q", pid, n, e, how)
		}
	}
}

// TestCloseKillsWhatIgnoresSIGTERM: a leftover that ignores SIGTERM gets
// SIGKILL, once, only after the grace period (the -v lines' order, not a
// clock), and no second SIGTERM; one that answers SIGTERM gets no
// SIGKILL. The report says which signal ended each.
func TestCloseKillsWhatIgnoresSIGTERM(t *testing.T) {
	const a, b = 5_000_020, 5_000_021
	stubborn := child(b, 1002, "stubborn")
	stubborn.ignores = []syscall.Signal{unix.SIGTERM}
	tab := newFakeTable(child(a, 1001, "sleep", "300"), stubborn)
	r, l := closeRunner(t, tab, 20*time.Millisecond)
	commandEnded(r, tab)
	closeWithin(t, r, l)

	if got := tab.signals(a); !slices.Equal(got, []syscall.Signal{unix.SIGTERM, unix.SIGCONT}) {
		t.Errorf("%d, which answers SIGTERM, got %v; want SIGTERM then SIGCONT", a, got)
	}
	got := tab.signals(b)
	if tab.count(b, unix.SIGTERM) != 1 || tab.count(b, unix.SIGKILL) != 1 || slices.Index(got, unix.SIGKILL) < slices.Index(got, unix.SIGTERM) {
		t.Errorf("%d, which ignores SIGTERM, got %v; want SIGTERM once, then SIGKILL once", b, got)
	}
	term, grace, kill := l.index(fmt.Sprintf("sending SIGTERM to leftover %d", b)), l.index("still running after the grace period"), l.index(fmt.Sprintf("killed %d", b))
	if term < 0 || grace < term || kill < grace {
		t.Errorf("want SIGTERM, then the grace period out, then the kill; -v:\n%s", l)
	}
	f := r.finishFacts()
	for pid, sig := range map[int]string{a: "SIGTERM", b: "SIGKILL"} {
		lo, n := leftover(f, pid)
		e, m := ending(f, pid)
		if n != 1 || lo.EndedBy != sig || m != 1 || e.Signal != sig || e.EndedBy != sig {
			t.Errorf("%d: leftover %+v (%d), ended by contain %+v (%d); want one of each, ended by %s", pid, lo, n, e, m, sig)
		}
	}
}

// TestCloseGraceZero: without a grace period the leftovers are killed at
// once: no SIGTERM.
func TestCloseGraceZero(t *testing.T) {
	const a = 5_000_030
	tab := newFakeTable(child(a, 1001, "sleep", "300"))
	r, l := closeRunner(t, tab, 0)
	commandEnded(r, tab)
	closeWithin(t, r, l)
	if tab.count(a, unix.SIGTERM) != 0 || tab.count(a, unix.SIGKILL) != 1 {
		t.Errorf("%d got %v; want SIGKILL alone, once", a, tab.signals(a))
	}
	f := r.finishFacts()
	if e, n := ending(f, a); n != 1 || e.Signal != "SIGKILL" || e.EndedBy != "SIGKILL" {
		t.Errorf("ended by contain: %+v (%d); want SIGKILL", e, n)
	}
}

// TestCloseStopRequest: a request to stop (SIGINT) during the grace
// period kills what is left at once, however long the grace period.
func TestCloseStopRequest(t *testing.T) {
	const a = 5_000_040
	stubborn := child(a, 1001, "stubborn")
	stubborn.ignores = []syscall.Signal{unix.SIGTERM}
	tab := newFakeTable(stubborn)
	r, l := closeRunner(t, tab, time.Hour)
	commandEnded(r, tab)
	r.sigs <- unix.SIGINT
	closeWithin(t, r, l)
	if tab.count(a, unix.SIGTERM) != 1 || tab.count(a, unix.SIGKILL) != 1 || l.index("received SIGINT while closing") < 0 {
		t.Errorf("%d got %v; want SIGTERM, then SIGKILL when told to stop; -v:\n%s", a, tab.signals(a), l)
	}
}

// TestCloseNewMember: a process a leftover starts during the close (a
// shell's trap on SIGTERM) gets SIGTERM at the next round, once, and the
// report lists it as a leftover too; no process is listed twice, however
// many scans saw it.
func TestCloseNewMember(t *testing.T) {
	const a, late = 5_000_050, 5_000_051
	tab := newFakeTable(child(a, 1001, "sh", "-c", "trap cleanup TERM"))
	tab.onDelivered = func(t *fakeTable, pid int, sig syscall.Signal) {
		if pid == a && sig == unix.SIGTERM {
			// Its trap starts cleanup, which outlives it (re-parented to
			// contain at once).
			t.mu.Lock()
			t.add(fakeProc{Entry: proc.Entry{PID: late, PPID: fakeSelf, Pgrp: a, Sid: fakeSid, Start: 1005, Comm: "cleanup"}, argv: []string{"cleanup"}})
			t.mu.Unlock()
		}
	}
	r, l := closeRunner(t, tab, time.Hour)
	commandEnded(r, tab)
	closeWithin(t, r, l)
	for _, pid := range []int{a, late} {
		if got := tab.signals(pid); !slices.Equal(got, []syscall.Signal{unix.SIGTERM, unix.SIGCONT}) {
			t.Errorf("%d got %v; want SIGTERM then SIGCONT, once each", pid, got)
		}
	}
	f := r.finishFacts()
	if len(f.Leftovers) != 2 || len(f.EndedByContain) != 2 {
		t.Errorf("%d leftovers, %d ended by contain; want 2 each: %+v", len(f.Leftovers), len(f.EndedByContain), f.Leftovers)
	}
	if lo, n := leftover(f, late); n != 1 || lo.EndedBy != "SIGTERM" {
		t.Errorf("the late member: %+v (%d entries); want one, ended by SIGTERM", lo, n)
	}
}

// TestNestedSessionSpared: a signal forwarded to the group (signalGroup)
// goes to each member once, except a nested session's (its tag names
// another live member, its originator, which passes it on); a tag that
// names no live member nests nothing. The close spares nothing: the
// nested session's member gets its SIGTERM too.
func TestNestedSessionSpared(t *testing.T) {
	const inner, nested, stray = 5_000_060, 5_000_061, 5_000_062
	innerProc := child(inner, 1001, "contain", "run", "--", "sleep", "300")
	innerProc.tag = tag.Format("contain", fakeSelf) // our session's
	nestedProc := child(nested, 1002, "sleep", "300")
	nestedProc.PPID, nestedProc.tag = inner, tag.Format("contain", inner)
	strayProc := child(stray, 1003, "sleep", "300")
	strayProc.tag = tag.Format("contain", 4_999_999) // no such member
	for _, p := range []*fakeProc{&innerProc, &nestedProc, &strayProc} {
		p.ignores = []syscall.Signal{unix.SIGUSR1}
	}
	tab := newFakeTable(innerProc, nestedProc, strayProc)
	r, l := closeRunner(t, tab, time.Hour)
	tab.procs[fakeCommand].ignores = []syscall.Signal{unix.SIGUSR1}

	r.signalGroup(unix.SIGUSR1)
	for pid, want := range map[int]int{fakeCommand: 1, inner: 1, nested: 0, stray: 1} {
		if n := tab.count(pid, unix.SIGUSR1); n != want {
			t.Errorf("signalGroup: %d got SIGUSR1 %d times; want %d", pid, n, want)
		}
	}

	commandEnded(r, tab)
	closeWithin(t, r, l)
	for _, pid := range []int{inner, nested, stray} {
		if n := tab.count(pid, unix.SIGTERM); n != 1 {
			t.Errorf("the close: %d got SIGTERM %d times (%v); want once", pid, n, tab.signals(pid))
		}
	}
}

// TestCloseReusedPID: a leftover that ends right after the scan that
// lists it for its SIGTERM, its PID taken at once by another process
// (another start time), is not signalled: the SIGTERM goes to the
// process as the scan saw it, and is refused; the stranger gets nothing,
// and the report lists the leftover as ended by itself, not by contain.
func TestCloseReusedPID(t *testing.T) {
	const a, b = 5_000_070, 5_000_071
	tab := newFakeTable(child(a, 1001, "sleep", "1"), child(b, 1002, "sleep", "300"))
	r, l := closeRunner(t, tab, time.Hour)
	taken := false
	tab.afterScan = func(t *fakeTable) {
		// The scan after the one that made it a leftover: the close's
		// first round, which sends the SIGTERMs.
		if !taken && r.rec.Knows(proc.ID{PID: a, Start: 1001}) {
			taken = true
			t.mu.Lock()
			t.add(fakeProc{Entry: proc.Entry{PID: a, PPID: 1, Pgrp: a, Sid: a, Start: 1500, Comm: "stranger"}, argv: []string{"stranger"}})
			t.mu.Unlock()
		}
	}
	commandEnded(r, tab)
	closeWithin(t, r, l)
	tab.mu.Lock()
	refused := slices.Clone(tab.refused)
	tab.mu.Unlock()
	if !taken || !slices.Equal(refused, []sent{{pid: a, start: 1001, sig: unix.SIGTERM}}) {
		t.Fatalf("taken %v, refused %v; want the SIGTERM to %d as first seen, refused; -v:\n%s", taken, refused, a, l)
	}
	if got := tab.signals(a); len(got) != 0 {
		t.Errorf("the stranger that took PID %d got %v; want nothing", a, got)
	}
	if !tab.lives(proc.ID{PID: a, Start: 1500}) {
		t.Errorf("the stranger was ended")
	}
	if got := tab.signals(b); !slices.Equal(got, []syscall.Signal{unix.SIGTERM, unix.SIGCONT}) {
		t.Errorf("%d got %v; want SIGTERM then SIGCONT", b, got)
	}
	f := r.finishFacts()
	if lo, n := leftover(f, a); n != 1 || lo.EndedBy != "ended, status unknown" {
		t.Errorf("leftover %d: %+v (%d entries); want one, ended by itself", a, lo, n)
	}
	if e, n := ending(f, a); n != 0 {
		t.Errorf("ended by contain lists %d: %+v", a, e)
	}
}
