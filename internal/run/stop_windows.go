package run

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
)

// ctrlStop is contain stop's request, passed to the run through the
// channel of console events as one more event (no console control event
// has this number): the run takes it as CTRL_BREAK_EVENT.
const ctrlStop = 0x10000

// errStopEventTaken: an event of the stop event's name exists already,
// made by someone else before this run could make it.
var errStopEventTaken = errors.New("an object of that name exists already: someone else made it")

// eventAllAccess is an event's all-access right (winnt.h).
const eventAllAccess = 0x1F0003

// createStopEvent creates the stop event of name, an auto-reset event
// that only contain's user (and SYSTEM and the Administrators) may open
// (job.OwnerOnly, as the job objects). An event of that name that
// exists already is someone else's (errStopEventTaken): it is never
// used.
func createStopEvent(name string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return 0, err
	}
	sa, err := proc.OwnerOnly(eventAllAccess)
	if err != nil {
		return 0, err
	}
	ev, err := windows.CreateEvent(sa, 0, 0, p)
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		if ev != 0 {
			windows.CloseHandle(ev)
		}
		return 0, errStopEventTaken
	}
	return ev, err
}

// listenStop creates the event through which contain stop reaches this
// run (proc.StopEventName: an auto-reset event in the Local namespace
// that only contain's user may open, createStopEvent), before COMMAND
// starts, and waits on it: each time it is set, the run is told to stop,
// as by CTRL_BREAK_EVENT (a second time while the group closes ends it at
// once). It returns the function that stops waiting and closes the
// event, when the run ends. An event of that name that exists already is
// someone else's: it is not used, contain stop cannot reach this run, and
// contain says so without -v.
func (r *winRunner) listenStop() (done func()) {
	name := proc.StopEventName(os.Getpid())
	ev, err := createStopEvent(name)
	if errors.Is(err, errStopEventTaken) {
		text.Fprintf(os.Stderr, "contain: run: cannot make the event %s through which contain stop asks this run to stop: %v (contain stop -s KILL still ends it)\n", name, err)
		return func() {}
	}
	if err != nil {
		r.log("cannot create the event %s through which contain stop asks this run to stop: %v (contain stop -s KILL still ends it)", name, err)
		return func() {}
	}
	quit, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(ev)
		r.log("cannot wait for contain stop: %v", err)
		return func() {}
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			i, err := windows.WaitForMultipleObjects([]windows.Handle{ev, quit}, false, windows.INFINITE)
			if err != nil || i != windows.WAIT_OBJECT_0 {
				return
			}
			select {
			case console.events <- ctrlStop:
			default: // sixteen requests unread: one more adds nothing
			}
		}
	}()
	return func() {
		windows.SetEvent(quit)
		<-stopped
		windows.CloseHandle(ev)
		windows.CloseHandle(quit)
	}
}
