package run

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc"
)

// TestStopEventSecurity: the event through which contain stop reaches a
// run lets only contain's user, SYSTEM and the Administrators open it (a
// protected DACL with those three entries and no other: no Everyone, no
// Users, no logon session), whatever the namespace's defaults; the
// event's owner is contain's user.
func TestStopEventSecurity(t *testing.T) {
	name := fmt.Sprintf(`Local\contain-stop-test-%d-security`, os.Getpid())
	ev, err := createStopEvent(name)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(ev)
	if err := proc.CheckOwnerOnly(ev, eventAllAccess); err != nil {
		t.Error(err)
	}
}

// TestStopEventTaken: an event of the name that exists already, made by
// someone else first, is never used: createStopEvent says so, and the
// squatter's event is not what the run waits on.
func TestStopEventTaken(t *testing.T) {
	name := fmt.Sprintf(`Local\contain-stop-test-%d-taken`, os.Getpid())
	p, _ := windows.UTF16PtrFromString(name)
	squat, err := windows.CreateEvent(nil, 0, 0, p)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(squat)
	ev, err := createStopEvent(name)
	if !errors.Is(err, errStopEventTaken) {
		if ev != 0 {
			windows.CloseHandle(ev)
		}
		t.Fatalf("createStopEvent over an existing event: %v, want errStopEventTaken", err)
	}
}
