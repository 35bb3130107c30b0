package proc

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// OwnerOnly is the security of the named and unnamed objects contain
// makes (internal/job's job objects, internal/run's stop event): a DACL,
// protected from inheritance, that grants mask (the object's all-access
// right) only to contain's own user, to SYSTEM and to the
// Administrators, who may end any process anyway (an administrator's
// contain stop of another user's run); no one else, whatever the
// namespace's or the token's defaults. The owner is contain's user.
func OwnerOnly(mask uint32) (*windows.SecurityAttributes, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("cannot read contain's user: %w", err)
	}
	me := u.User.Sid.String()
	sd, err := windows.SecurityDescriptorFromString(fmt.Sprintf("O:%[1]sD:P(A;;%#[2]x;;;%[1]s)(A;;%#[2]x;;;SY)(A;;%#[2]x;;;BA)", me, mask))
	if err != nil {
		return nil, fmt.Errorf("cannot make a security descriptor: %w", err)
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	return sa, nil
}

// CheckOwnerOnly reports what in h's security is not what OwnerOnly(mask)
// sets: an owner other than contain's user, no DACL, or an entry that
// grants anything but mask, or grants it to anyone but contain's user,
// SYSTEM and the Administrators. nil: none.
func CheckOwnerOnly(h windows.Handle, mask uint32) error {
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("reading the object's security: %w", err)
	}
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return err
	}
	var bad []error
	if owner, _, err := sd.Owner(); err != nil || owner == nil || !owner.Equals(u.User.Sid) {
		bad = append(bad, fmt.Errorf("owner %v (%v), want contain's user %v", owner, err, u.User.Sid))
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		return errors.Join(append(bad, fmt.Errorf("no DACL (%v): anyone could open the object", err))...)
	}
	system, _ := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	admins, _ := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	var who []string
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return errors.Join(append(bad, err)...)
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		who = append(who, sid.String())
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(u.User.Sid) && !sid.Equals(system) && !sid.Equals(admins) {
			bad = append(bad, fmt.Errorf("ACE %d grants %#x to %v (type %d): only contain's user, SYSTEM and the Administrators may open the object", i, ace.Mask, sid, ace.Header.AceType))
		}
		if uint32(ace.Mask) != mask {
			bad = append(bad, fmt.Errorf("ACE %d grants %#x to %v, want %#x", i, ace.Mask, sid, mask))
		}
	}
	if len(who) != 3 {
		bad = append(bad, fmt.Errorf("the DACL has entries for %s, want contain's user, SYSTEM and the Administrators", strings.Join(who, ", ")))
	}
	return errors.Join(bad...)
}
