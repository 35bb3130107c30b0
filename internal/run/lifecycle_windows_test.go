package run

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/report"
)

// The Windows run's decisions (what is delivered to which console process
// group, when the job is terminated, how a held session ends), run on a
// job of the test's own (fakeJob): no process is started, signalled or
// read. The PIDs are far above any Windows hands out, so that what
// still reaches the machine (opening a process by PID for -v and the
// report) finds nothing.

const fakeCmd = 0x7ff0_0000 // COMMAND, the leader of its console group

// fakeJob is winSys, faked: the job's processes and their groups, the
// events sent, whether COMMAND runs, whether the console can send an
// event at all (Wine cannot), and whether a termination ends the job.
type fakeJob struct {
	mu         sync.Mutex
	procs      map[int]uint32 // PID: console process group
	running    bool           // COMMAND
	noEvents   bool           // every event fails (Wine: error 6)
	events     [][2]uint32    // (event, group) sent
	terminated int            // TerminateJobObject calls
	// endOnEvent: the processes of a group an event reached end (they
	// honour Ctrl-Break).
	endOnEvent bool
}

func (f *fakeJob) pids() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for pid := range f.procs {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

func (f *fakeJob) active() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.procs), nil
}

func (f *fakeJob) terminate() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated++
	f.procs, f.running = map[int]uint32{}, false
	return nil
}

func (f *fakeJob) group(pid int) (uint32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.procs[pid]
	if !ok {
		return 0, windows.ERROR_INVALID_PARAMETER
	}
	return g, nil
}

func (f *fakeJob) event(ev, gid uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noEvents {
		return windows.ERROR_INVALID_HANDLE
	}
	f.events = append(f.events, [2]uint32{ev, gid})
	if f.endOnEvent {
		for pid, g := range f.procs {
			if g == gid {
				delete(f.procs, pid)
			}
		}
		if gid == fakeCmd {
			f.running = false
		}
	}
	return nil
}

func (f *fakeJob) unforward() {}

func (f *fakeJob) commandRunning() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running
}

// sentTo lists the groups an event reached.
func (f *fakeJob) sentTo() []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []uint32
	for _, e := range f.events {
		out = append(out, e[1])
	}
	return out
}

// fakeRunner is a winRunner on f, its COMMAND fakeCmd (none when hold).
func fakeRunner(t *testing.T, f *fakeJob, hold bool) (*winRunner, *strings.Builder) {
	var log strings.Builder
	var mu sync.Mutex
	r := &winRunner{o: Options{Grace: 20 * time.Millisecond, Hold: hold, Signal: syscall.SIGTERM}, sys: f, lim: noJobLimits{}, breaks: noBreakaways{},
		log: func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			log.WriteString(strings.TrimSpace(fmt.Sprintf(format, a...)) + "\n")
		}}
	if !hold {
		r.cmd = &exec.Cmd{Process: &os.Process{Pid: fakeCmd}}
	}
	return r, &log
}

// TestWinDeliver: a stop reaches COMMAND's console process group while
// the group has a member; an event the console cannot send (Wine), or a
// group with no member left, terminates the job instead: an event is
// never sent to a group that names nothing (Windows may take it for every
// process of the console). A termination while COMMAND runs counts as
// its end by the signal asked for.
func TestWinDeliver(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		f := &fakeJob{procs: map[int]uint32{fakeCmd: fakeCmd, fakeCmd + 4: fakeCmd}, running: true}
		r, _ := fakeRunner(t, f, false)
		did := r.deliver(signals.Break)
		if got := f.sentTo(); !slices.Equal(got, []uint32{fakeCmd}) || f.terminated != 0 || f.events[0][0] != windows.CTRL_BREAK_EVENT {
			t.Errorf("events %v, terminated %d: want CTRL_BREAK_EVENT to %d alone (%s)", f.events, f.terminated, fakeCmd, did)
		}
		r.deliver(syscall.SIGINT)
		if f.events[1][0] != windows.CTRL_C_EVENT {
			t.Errorf("SIGINT sent %v, want CTRL_C_EVENT", f.events[1])
		}
	})
	t.Run("no events", func(t *testing.T) {
		f := &fakeJob{procs: map[int]uint32{fakeCmd: fakeCmd}, running: true, noEvents: true}
		r, _ := fakeRunner(t, f, false)
		did := r.deliver(signals.Break)
		if f.terminated != 1 || r.killedBy != signals.Break || !strings.HasSuffix(did, "terminated the job") {
			t.Errorf("terminated %d, killedBy %v, said %q: want the job terminated, COMMAND ended by the signal asked", f.terminated, r.killedBy, did)
		}
	})
	t.Run("group empty", func(t *testing.T) {
		// COMMAND ended; what is left is in other groups.
		f := &fakeJob{procs: map[int]uint32{fakeCmd + 8: fakeCmd + 8}}
		r, _ := fakeRunner(t, f, false)
		r.deliver(signals.Break)
		if len(f.events) != 0 || f.terminated != 1 || r.killedBy != 0 {
			t.Errorf("events %v, terminated %d, killedBy %v: want no event, the job terminated, COMMAND's own end kept", f.events, f.terminated, r.killedBy)
		}
	})
	t.Run("kill", func(t *testing.T) {
		f := &fakeJob{procs: map[int]uint32{fakeCmd: fakeCmd}, running: true}
		r, _ := fakeRunner(t, f, false)
		r.deliver(syscall.SIGKILL)
		if len(f.events) != 0 || f.terminated != 1 || r.killedBy != syscall.SIGKILL {
			t.Errorf("events %v, terminated %d, killedBy %v: want the job terminated at once", f.events, f.terminated, r.killedBy)
		}
	})
}

// TestWinDeliverHeld: in a held session (no COMMAND, each command in a
// group of its own) a stop reaches every group of the job, once each,
// never group 0 (Wine shows 0 for every process; an event to it would
// reach the whole console); where no group can be read, the job is
// terminated.
func TestWinDeliverHeld(t *testing.T) {
	f := &fakeJob{procs: map[int]uint32{fakeCmd: fakeCmd, fakeCmd + 4: fakeCmd, fakeCmd + 8: fakeCmd + 8, fakeCmd + 12: 0}}
	r, _ := fakeRunner(t, f, true)
	r.deliver(signals.Break)
	got := f.sentTo()
	slices.Sort(got)
	if !slices.Equal(got, []uint32{fakeCmd, fakeCmd + 8}) || f.terminated != 0 {
		t.Errorf("events to %v, terminated %d: want one to each of %d and %d", got, f.terminated, fakeCmd, fakeCmd+8)
	}
	f = &fakeJob{procs: map[int]uint32{fakeCmd: 0, fakeCmd + 4: 0}}
	r, _ = fakeRunner(t, f, true)
	if did := r.deliver(signals.Break); len(f.events) != 0 || f.terminated != 1 {
		t.Errorf("with every group 0: events %v, terminated %d (%s): want no event, the job terminated", f.events, f.terminated, did)
	}
}

// TestWinCloseGroup: after COMMAND's end, what is left gets Ctrl-Break
// and the job is terminated after the grace period, unless the event
// ended it all; an empty job is not touched.
func TestWinCloseGroup(t *testing.T) {
	for _, tc := range []struct {
		name           string
		f              *fakeJob
		wantTerminated int
		wantEvents     int
	}{
		{"empty", &fakeJob{procs: map[int]uint32{}}, 0, 0},
		{"honours Ctrl-Break", &fakeJob{procs: map[int]uint32{fakeCmd + 4: fakeCmd}, endOnEvent: true}, 0, 1},
		{"ignores it", &fakeJob{procs: map[int]uint32{fakeCmd + 4: fakeCmd}}, 1, 1},
		{"no console (Wine)", &fakeJob{procs: map[int]uint32{fakeCmd + 4: fakeCmd}, noEvents: true}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, log := fakeRunner(t, tc.f, false)
			r.closeGroup(nil)
			if tc.f.terminated != tc.wantTerminated || len(tc.f.events) != tc.wantEvents {
				t.Errorf("terminated %d, events %v: want %d and %d events\n%s", tc.f.terminated, tc.f.events, tc.wantTerminated, tc.wantEvents, log)
			}
			if n, _ := tc.f.active(); n != 0 {
				t.Errorf("closeGroup returned with %d processes in the job", n)
			}
		})
	}
}

// TestWinHoldEnds: a held session's main loop ends at the program's
// request to close (Close) and at contain stop's event, once; the close
// then ends what is in the job, every group of it asked first. Ctrl-C
// does not end it (the console gave it to the commands too).
func TestWinHoldEnds(t *testing.T) {
	for _, how := range []string{"close", "contain stop", "Ctrl-C then close"} {
		t.Run(how, func(t *testing.T) {
			f := &fakeJob{procs: map[int]uint32{fakeCmd: fakeCmd, fakeCmd + 8: fakeCmd + 8}}
			r, log := fakeRunner(t, f, true)
			closeReq := make(chan struct{}, 1)
			events := make(chan uint32, 2)
			r.o.Close, r.events = closeReq, events
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.supervise()
			}()
			switch how {
			case "close":
				closeReq <- struct{}{}
			case "contain stop":
				events <- ctrlStop
			case "Ctrl-C then close":
				events <- windows.CTRL_C_EVENT
				select {
				case <-done:
					t.Fatalf("Ctrl-C ended the held session\n%s", log)
				case <-time.After(50 * time.Millisecond):
				}
				closeReq <- struct{}{}
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the held session did not end\n%s", log)
			}
			got := f.sentTo()
			slices.Sort(got)
			if !slices.Equal(got, []uint32{fakeCmd, fakeCmd + 8}) || f.terminated != 1 {
				t.Errorf("events to %v, terminated %d: want each group asked once, then the job terminated\n%s", got, f.terminated, log)
			}
			res := r.result()
			if res.Exited || res.Signaled || res.Pid != 0 {
				t.Errorf("a held session's result %+v says a COMMAND's end", res)
			}
			if !strings.Contains(log.String(), "closing the session") {
				t.Errorf("-v does not say the session closed:\n%s", log)
			}
			if r.phase != report.PhaseClose {
				t.Errorf("phase %q after the close, want %q", r.phase, report.PhaseClose)
			}
		})
	}
}
