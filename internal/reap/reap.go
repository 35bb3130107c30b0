//go:build linux || windows || darwin

package reap

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/contain-cli/contain/internal/proc"
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
//     process), and once a process is seen stopped its tag is checked
//     once more: one that exec'd with another tag just before the stop is
//     resumed and left alone; a rescan finds what was started meanwhile,
//     until nothing new appears (a stopped process starts nothing, so a
//     child either exists before the stop, and the rescan finds it, or
//     not at all);
//  3. the first signal goes to everything, which is resumed;
//  4. after the grace period, a kill to what is left;
//  5. one more rescan: anything new is killed too.
//
// Every signal goes through the pin: a PID reused meanwhile is never hit.
// A pin costs a file descriptor on Linux, and a session can have more
// processes than the limit allows: each step works on as many processes
// at a time as the budget of pins allows (pinBudget). A pin closed to make
// room is opened again, and the process checked again through it (start
// time and tag), before anything more is done to it; a stopped process
// cannot exec meanwhile, and one that ended is not mistaken for the
// process that took its PID.
func Reap(plan Plan) Report {
	e := &reaper{plan: plan, log: plan.Log, seen: map[proc.ID]bool{}, budget: pinBudget()}
	if testBudget > 0 {
		e.budget = testBudget
	}
	if e.log == nil {
		e.log = func(string, ...any) {}
	}
	defer e.closeAll()
	e.prepare()
	// What the cgroup or the tracker holds first: checked by its identity
	// (start time, cgroup), not by its tag, which a process may have
	// written over since it was listed (redis, nginx: their title), so
	// that the guard and the shim never leave such a member alone.
	e.addUntagged()
	e.addChoices(plan.Targets)
	e.stopNew()
	for round := 0; round < 1000 && e.rescan(); round++ {
	}
	e.inBatches(e.live(), func(batch []*target) {
		for _, t := range batch {
			if spare := e.plan.Spare; spare.PID == 0 || t.out.PID != spare.PID || t.out.Start != spare.Start {
				e.do(t, opSignal)
			}
			e.do(t, opResume)
		}
	})
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

type reaper struct {
	plan    Plan
	log     func(format string, args ...any)
	targets []*target
	seen    map[proc.ID]bool
	stopped int // targets[:stopped] have been through stopNew
	budget  int // how many pins may be open at once
	cursor  int // where evict looks first
	reaperOS
}

// target is one process being reaped.
type target struct {
	out      Outcome
	pin      proc.Pin // nil when not pinned now: when done, or to save descriptors
	checked  bool     // pinned and checked once: its identity was confirmed
	frozen   bool     // stopped with its whole group (a frozen cgroup)
	stopped  bool     // stopped by reap itself
	unsure   bool     // its stop was not seen to take effect: checked again before each signal
	busy     bool     // in the batch being worked on: its pin stays open
	termed   bool
	killed   bool
	done     bool // ended, or left alone
	targetOS      // what the OS needs to pin and check it again
}

// op is what reap does to a pinned process.
type op int

const (
	opStop   op = iota // stop it, so that it starts nothing
	opResume           // let it run again
	opSignal           // the first signal (plan.Signal)
	opKill             // the end
)

// finish records how reap's work on t ended.
func (t *target) finish(ending Ending, detail string, alive bool) {
	t.out.Ending, t.out.Detail, t.out.Alive, t.done = ending, detail, alive, true
	if t.pin != nil {
		t.pin.Close()
		t.pin = nil
	}
}

// settle keeps or finishes t as the OS's pin and check found it: err is
// nil (pinned and verified: pin is kept), errGone, errIdentity (the PID
// names another process), a *pinFailure, or why the process is left alone.
// A process that was pinned and checked before and now fails the identity
// check has ended (its PID was reused); one whose tag changed after reap
// stopped it is resumed.
func (t *target) settle(pin proc.Pin, err error) {
	var f *proc.PinFailure
	if err == nil {
		t.pin, t.checked = pin, true
		return
	}
	// pin names the process seen if it was held since the process was
	// checked, or if the check found its start time right (a later step
	// failed).
	confirmed := pin != nil && (t.pin == pin || !errors.As(err, &f))
	if t.pin == pin {
		t.pin = nil // closed below, once
	}
	// A process reap stopped and now leaves alone runs again.
	resumed := ""
	if confirmed && t.stopped && !t.termed && !errors.Is(err, proc.ErrGone) && !errors.Is(err, proc.ErrIdentity) {
		resumed = " once stopped; resumed it"
		if rerr := pin.Resume(); rerr != nil && !errors.Is(rerr, proc.ErrGone) {
			resumed = " once stopped; cannot resume it: " + rerr.Error()
		}
	}
	switch {
	case errors.Is(err, proc.ErrGone):
		t.finish(t.endedAfter(), "", false)
	case errors.Is(err, proc.ErrIdentity) && t.checked:
		t.finish(t.endedAfter(), "", false)
	case errors.Is(err, proc.ErrIdentity):
		t.finish(LeftAlone, fmt.Sprintf("PID %d now names another process (started later)", t.out.PID), false)
	case errors.As(err, &f):
		t.finish(CannotSignal, f.Error()+resumed, true)
	default:
		t.finish(LeftAlone, err.Error()+resumed, false)
	}
	if pin != nil {
		pin.Close()
	}
}

// add takes a target, to be pinned, checked and stopped by stopNew.
func (e *reaper) add(t *target) {
	e.targets = append(e.targets, t)
}

func (e *reaper) addChoices(choices []session.Choice) (added bool) {
	for _, c := range choices {
		id := proc.ID{PID: c.PID, Start: c.Start}
		if c.Skip != "" || e.seen[id] {
			continue
		}
		e.seen[id] = true
		if c.Registered {
			e.add(e.registeredTarget(c))
		} else {
			e.add(e.choiceTarget(c))
		}
		added = true
	}
	return added
}

// rescan looks for processes of the chosen sessions (and the OS's other
// sources) not seen yet, pins and stops them, and reports whether it found
// any.
func (e *reaper) rescan() bool {
	added := e.addUntagged()
	if e.plan.Rescan != nil {
		if choices, err := e.plan.Rescan(); err != nil {
			e.log("cannot rescan: %v", err)
		} else if e.addChoices(choices) {
			added = true
		}
	}
	e.stopNew()
	return added
}

// testBudget, when set, replaces pinBudget.
var testBudget int

// testHookBeforeStop, when set, runs between the check of a newly pinned
// process and its stop: the window in which it may exec with another tag.
var testHookBeforeStop func(pid int)

// stopNew pins, checks and stops the targets added since the last call,
// as many at a time as there may be pins. Once the OS says a batch is
// stopped (a stopped process cannot exec), each is checked again: one that
// exec'd with another tag between the first check and the stop is resumed
// and left alone.
func (e *reaper) stopNew() {
	fresh := e.targets[e.stopped:]
	e.stopped = len(e.targets)
	e.inBatches(fresh, func(batch []*target) {
		var stopped []*target
		for _, t := range batch {
			if t.frozen {
				continue
			}
			if testHookBeforeStop != nil {
				testHookBeforeStop(t.out.PID)
			}
			e.do(t, opStop)
			if !t.done {
				t.stopped = true
				stopped = append(stopped, t)
			}
		}
		e.waitStopped(stopped)
		for _, t := range stopped {
			if !t.done {
				t.settle(t.pin, e.check(t, t.pin))
			}
		}
	})
}

// live lists the targets not done with.
func (e *reaper) live() []*target {
	var out []*target
	for _, t := range e.targets {
		if !t.done {
			out = append(out, t)
		}
	}
	return out
}

// inBatches calls f on ts, as many at a time as there may be pins, each
// of them pinned and checked (again, if its pin was closed to save
// descriptors); those that turn out gone or changed are left out.
func (e *reaper) inBatches(ts []*target, f func(batch []*target)) {
	for len(ts) > 0 {
		n := min(len(ts), max(e.budget, 1))
		batch := ts[:n]
		ts = ts[n:]
		for _, t := range batch {
			t.busy = true
		}
		var held []*target
		for _, t := range batch {
			if e.hold(t) {
				held = append(held, t)
			}
		}
		if len(held) > 0 {
			f(held)
		}
		for _, t := range batch {
			t.busy = false
		}
	}
}

// hold makes sure t is pinned, and checked through its pin: pinned again
// if its pin was closed, checked again if its stop was not seen to take
// effect. It reports whether t is still to be acted on.
func (e *reaper) hold(t *target) bool {
	if t.done {
		return false
	}
	if t.pin != nil {
		if t.unsure {
			t.settle(t.pin, e.check(t, t.pin))
		}
		return !t.done
	}
	for {
		e.makeRoom()
		pin, err := e.openPin(t)
		if err != nil && outOfDescriptors(err) && e.budget > 1 && e.evict() {
			// Fewer descriptors than counted: a smaller budget.
			e.budget = max(e.openPins(), 1)
			e.log("too many open files: at most %d processes pinned at a time", e.budget)
			continue
		}
		if err == nil {
			err = e.check(t, pin)
		}
		t.settle(pin, err)
		return !t.done
	}
}

// openPins counts the targets pinned now.
func (e *reaper) openPins() int {
	n := 0
	for _, t := range e.targets {
		if t.pin != nil {
			n++
		}
	}
	return n
}

// makeRoom closes pins until one more fits the budget.
func (e *reaper) makeRoom() {
	for e.openPins() >= e.budget && e.evict() {
	}
}

// evict closes the pin of one target not in the batch at work, and
// reports whether there was one. The target is pinned and checked again
// before anything more is done to it.
func (e *reaper) evict() bool {
	n := len(e.targets)
	for i := 0; i < n; i++ {
		k := (e.cursor + i) % n
		if t := e.targets[k]; t.pin != nil && !t.busy {
			t.pin.Close()
			t.pin = nil
			e.cursor = (k + 1) % n
			return true
		}
	}
	return false
}

// outOfDescriptors: the process or the system has no file descriptor left.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// do applies o to t through its pin.
func (e *reaper) do(t *target, o op) {
	if t.done {
		return
	}
	var err error
	switch o {
	case opStop:
		err = t.pin.Stop()
	case opResume:
		err = t.pin.Resume()
	case opSignal:
		err = t.pin.Signal(e.plan.Signal)
	case opKill:
		err = t.pin.Kill()
	}
	what := opName(o, e.plan.Signal)
	switch {
	case err == nil && o == opResume: // said with the stop or the signal
	case err == nil:
		e.log("sent %s to %d (%s)", what, t.out.PID, t.out.Comm)
	case errors.Is(err, proc.ErrGone):
		t.finish(t.endedAfter(), "", false)
	case errors.As(err, new(*proc.LeftAlone)):
		t.finish(LeftAlone, err.Error(), false)
	default:
		t.finish(CannotSignal, fmt.Sprintf("cannot send %s: %v", what, err), true)
	}
	if o == opKill || o == opSignal && firstSignalEnds(e.plan.Signal) {
		t.termed = true
	}
}

// endedAfter says what ended t, from what it was sent.
func (t *target) endedAfter() Ending {
	switch {
	case t.killed:
		return Killed
	case t.termed:
		return EndedByFirst
	}
	return WasGone
}

// killAll kills the OS's groups and every process still alive.
func (e *reaper) killAll() {
	e.killGroups()
	e.pollExited()
	live := e.live()
	for _, t := range live {
		t.killed = true
	}
	e.inBatches(live, func(batch []*target) {
		for _, t := range batch {
			e.do(t, opKill)
		}
	})
}

// pollExited marks the targets that have exited and counts the others:
// the pinned ones through their pins, the others by their identity.
func (e *reaper) pollExited() (alive int) {
	var live []*target
	var pins []proc.Pin
	for _, t := range e.targets {
		switch {
		case t.done:
		case t.pin != nil:
			live = append(live, t)
			pins = append(pins, t.pin)
		case e.ended(t):
			t.finish(t.endedAfter(), "", false)
		default:
			alive++
		}
	}
	for i, ended := range proc.ExitedPins(pins) {
		if ended {
			live[i].finish(live[i].endedAfter(), "", false)
		} else {
			alive++
		}
	}
	return alive
}

// waitExit waits until every target has exited or the deadline passes.
func (e *reaper) waitExit(deadline time.Time) {
	b := proc.NewBackoff()
	for e.pollExited() > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(b.Next(), left))
	}
}

// report closes the books: every target says what became of it, and the
// OS's groups are removed.
func (e *reaper) report() Report {
	var r Report
	e.pollExited()
	for _, t := range e.targets {
		if !t.done {
			t.finish(Survived, "", true)
		}
		r.Processes = append(r.Processes, t.out)
	}
	r.Cgroups = e.removeGroups()
	return r
}

func (e *reaper) closeAll() {
	for _, t := range e.targets {
		if t.pin != nil {
			t.pin.Close()
			t.pin = nil
		}
	}
}
