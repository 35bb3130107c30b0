package run

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
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
	checkOwnerOnly(t, ev, eventAllAccess)
}

// checkOwnerOnly checks that h's owner is contain's user and its DACL
// grants mask to contain's user, SYSTEM and the Administrators, and
// nothing to anyone else.
func checkOwnerOnly(t *testing.T, h windows.Handle, mask uint32) {
	t.Helper()
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatalf("reading the object's security: %v", err)
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil || !owner.Equals(u.User.Sid) {
		t.Errorf("owner %v (%v), want contain's user %v", owner, err, u.User.Sid)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		t.Fatalf("no DACL (%v): anyone could open the object", err)
	}
	system, _ := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	admins, _ := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	var who []string
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			t.Fatal(err)
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		who = append(who, sid.String())
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(u.User.Sid) && !sid.Equals(system) && !sid.Equals(admins) {
			t.Errorf("ACE %d grants %#x to %v (type %d): only contain's user, SYSTEM and the Administrators may open the object", i, ace.Mask, sid, ace.Header.AceType)
		}
		if uint32(ace.Mask) != mask {
			t.Errorf("ACE %d grants %#x to %v, want %#x", i, ace.Mask, sid, mask)
		}
	}
	if len(who) != 3 {
		t.Errorf("the DACL has entries for %v, want contain's user, SYSTEM and the Administrators", who)
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
