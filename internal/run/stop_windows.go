package run

import (
	"os"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

// ctrlStop is contain stop's request, passed to the run through the
// channel of console events as one more event (no console control event
// has this number): the run takes it as CTRL_BREAK_EVENT.
const ctrlStop = 0x10000

// listenStop creates the event through which contain stop reaches this
// run (proc.StopEventName: an auto-reset event in the Local namespace,
// with the default security of contain's user), before COMMAND starts,
// and waits on it: each time it is set, the run is told to stop, as by
// CTRL_BREAK_EVENT (a second time while the group closes ends it at
// once). It returns the function that stops waiting and closes the
// event, when the run ends. An event of that name that exists already is
// someone else's: it is not used, and contain stop cannot reach this run.
func (r *winRunner) listenStop() (done func()) {
	name := proc.StopEventName(os.Getpid())
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return func() {}
	}
	ev, err := windows.CreateEvent(nil, 0, 0, p)
	if err != nil {
		if ev != 0 {
			windows.CloseHandle(ev) // ERROR_ALREADY_EXISTS
		}
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
