//go:build linux || windows

package platform

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/contain-cli/contain/session"
)

// Reap kills what plan names, safely and completely. The steps are the same
// on every OS; how a process is pinned, stopped and signalled is the OS's
// (pinned; reap_linux.go, reap_windows.go):
//
//  1. every process is pinned (a pidfd, a process handle), then its start
//     time and tag are read again; one whose identity changed is left
//     alone;
//  2. the session is stopped (SIGSTOP or a frozen cgroup, a suspended
//     process); a rescan finds what was started meanwhile, until nothing
//     new appears (a stopped process starts nothing, so a child either
//     exists before the stop, and the rescan finds it, or not at all);
//  3. the first signal goes to everything, which is resumed;
//  4. after the grace period, a kill to what is left;
//  5. one more rescan: anything new is killed too.
//
// Every signal goes through the pin: a PID reused meanwhile is never hit.
func Reap(plan ReapPlan) ReapReport {
	e := &reaper{plan: plan, log: plan.Log, seen: map[identity]bool{}}
	if e.log == nil {
		e.log = nopLog
	}
	defer e.closeAll()
	e.prepare()
	e.addChoices(plan.Targets)
	e.addUntagged()
	for round := 0; round < 1000 && e.rescan(); round++ {
	}
	for _, t := range e.targets {
		e.do(t, opSignal)
		e.do(t, opResume)
	}
	e.resumeGroups()
	e.waitExit(time.Now().Add(plan.Grace))
	// Kill until nothing is left and a rescan finds nothing new.
	for round := 0; round < 100; round++ {
		e.killAll()
		e.waitExit(time.Now().Add(time.Second))
		if !e.rescan() {
			break
		}
	}
	return e.report()
}

// errGone: the process ended while it was being checked.
var errGone = errors.New("process ended")

// errIdentity means the PID now names another process than the one seen.
var errIdentity = errors.New("process changed identity")

// identity tells processes apart across PID reuse.
type identity struct {
	pid   int
	start uint64
}

type reaper struct {
	plan    ReapPlan
	log     Logger
	targets []*target
	seen    map[identity]bool
	reaperOS
}

// target is one process being reaped.
type target struct {
	out    Outcome
	pin    pinned // nil once done with
	frozen bool   // stopped with its whole group (a frozen cgroup)
	termed bool
	killed bool
	done   bool // ended, or left alone
}

// op is what reap does to a pinned process.
type op int

const (
	opStop   op = iota // stop it, so that it starts nothing
	opResume           // let it run again
	opSignal           // the first signal (plan.Signal)
	opKill             // the end
)

func (t *target) finish(result string, alive bool) {
	t.out.Result, t.out.Alive, t.done = result, alive, true
	if t.pin != nil {
		t.pin.close()
		t.pin = nil
	}
}

// pinned is one process held so that its PID cannot name another while
// reap acts on it: a pidfd on Linux, a process handle on Windows. Each
// call returns errGone once the process has ended.
type pinned interface {
	stop() error
	resume() error
	signal(sig syscall.Signal) error
	kill() error
	close()
}

// pinFailure is a process reap could not pin or check: it may still run.
type pinFailure struct {
	what string // "cannot be pinned", "cannot be checked"
	err  error
}

func (f *pinFailure) Error() string { return f.what + ": " + f.err.Error() }

// settle keeps or finishes t as the OS's pin found it: err is nil (pinned
// and verified: pin is kept), errGone, errIdentity (the PID names another
// process now), a *pinFailure, or why the process is left alone.
func (t *target) settle(pin pinned, err error) *target {
	var f *pinFailure
	switch {
	case err == nil:
		t.pin = pin
		return t
	case errors.Is(err, errGone):
		t.finish("was already gone", false)
	case errors.Is(err, errIdentity):
		t.finish(fmt.Sprintf("left alone: PID %d now names another process (started later)", t.out.PID), false)
	case errors.As(err, &f):
		t.finish(f.Error(), true)
	default:
		t.finish("left alone: "+err.Error(), false)
	}
	if pin != nil {
		pin.close()
	}
	return t
}

// add takes a target and stops it.
func (e *reaper) add(t *target) {
	e.targets = append(e.targets, t)
	if !t.done && !t.frozen {
		e.do(t, opStop)
	}
}

func (e *reaper) addChoices(choices []session.Choice) (added bool) {
	for _, c := range choices {
		id := identity{c.PID, c.Start}
		if c.Skip != "" || e.seen[id] {
			continue
		}
		e.seen[id] = true
		e.add(e.pinChoice(c))
		added = true
	}
	return added
}

// rescan looks for processes of the chosen sessions (and the OS's other
// sources) not seen yet, pins and stops them, and reports whether it found
// any.
func (e *reaper) rescan() bool {
	added := e.addUntagged()
	if e.plan.Rescan == nil {
		return added
	}
	choices, err := e.plan.Rescan()
	if err != nil {
		e.log("cannot rescan: %v", err)
		return added
	}
	return e.addChoices(choices) || added
}

// do applies o to t through its pin.
func (e *reaper) do(t *target, o op) {
	if t.done {
		return
	}
	var err error
	switch o {
	case opStop:
		err = t.pin.stop()
	case opResume:
		err = t.pin.resume()
	case opSignal:
		err = t.pin.signal(e.plan.Signal)
	case opKill:
		err = t.pin.kill()
	}
	what := opName(o, e.plan.Signal)
	switch {
	case err == nil:
		e.log("sent %s to %d (%s)", what, t.out.PID, t.out.Comm)
	case errors.Is(err, errGone):
		t.finish(t.endedAfter(), false)
	default:
		t.finish(fmt.Sprintf("cannot send %s: %v", what, err), true)
	}
	if o == opKill || o == opSignal && firstSignalEnds(e.plan.Signal) {
		t.termed = true
	}
}

// endedAfter says what ended t, from what it was sent.
func (t *target) endedAfter() string {
	switch {
	case t.killed:
		return "killed with " + opName(opKill, 0)
	case t.termed:
		return "ended after the first signal"
	}
	return "was already gone"
}

// killAll kills the OS's groups and every process still alive.
func (e *reaper) killAll() {
	e.killGroups()
	e.pollExited()
	for _, t := range e.targets {
		if !t.done {
			t.killed = true
			e.do(t, opKill)
		}
	}
}

// pollExited marks the targets that have exited and counts the others.
func (e *reaper) pollExited() (alive int) {
	var live []*target
	var pins []pinned
	for _, t := range e.targets {
		if !t.done {
			live = append(live, t)
			pins = append(pins, t.pin)
		}
	}
	for i, ended := range exitedPins(pins) {
		if ended {
			live[i].finish(live[i].endedAfter(), false)
		} else {
			alive++
		}
	}
	return alive
}

// waitExit waits until every target has exited or the deadline passes.
func (e *reaper) waitExit(deadline time.Time) {
	b := newBackoff()
	for e.pollExited() > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(b.next(), left))
	}
}

// report closes the books: every target says what became of it, and the
// OS's groups are removed.
func (e *reaper) report() ReapReport {
	var r ReapReport
	e.pollExited()
	for _, t := range e.targets {
		if !t.done {
			t.finish("still alive after "+opName(opKill, 0)+" (in uninterruptible sleep, or traced)", true)
		}
		r.Processes = append(r.Processes, t.out)
	}
	r.Cgroups = e.removeGroups()
	return r
}

func (e *reaper) closeAll() {
	for _, t := range e.targets {
		if t.pin != nil {
			t.pin.close()
			t.pin = nil
		}
	}
}
