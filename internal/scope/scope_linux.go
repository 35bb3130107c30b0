// Package scope has systemd make a transient scope unit to run contain's
// limits in, where contain cannot enable the controllers in its own cgroup:
// a login session's scope, a CI runner's service, any cgroup that holds
// other processes too, or one contain may not write to. systemd owns those
// cgroups and can make a new one, delegated to contain's user, for root
// (the system manager) and for an ordinary user (the user's own manager,
// user@UID.service, which current distributions delegate memory, pids and
// cpu to), and move contain into it, as `systemd-run --scope -p
// Delegate=yes` does with the command it runs. There contain does what it
// does in a cgroup of its own: it moves itself into a leaf, enables the
// controllers, and makes the run's group beside it, with the limits. The
// scope holds contain throughout, so that systemd keeps it until contain
// has read what the kernel did, and stops it once contain has exited.
//
// The request goes over the manager's private socket (/run/systemd/private,
// /run/user/UID/systemd/private): no bus daemon is needed for it, and only
// the manager's own user can connect there (dbus_linux.go).
package scope

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/internal/proc"
)

// ErrNoManager: no systemd manager of this user to ask.
var ErrNoManager = errors.New("no systemd manager to ask for a scope")

// Scope is a transient scope made for a run, active, holding contain.
type Scope struct {
	Unit    string // contain-PID.scope
	Manager string // "system", or "user UID"
	Dir     string // its cgroup
	From    string // the unit contain was in, which the scope is part of ("": none of this manager's)
}

// ManagerSocket is the private socket of the manager that may make a
// scope for this user, and that manager's name.
func ManagerSocket() (path, manager string) {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/systemd/private", "system"
	}
	return fmt.Sprintf("/run/user/%d/systemd/private", uid), "user " + strconv.Itoa(uid)
}

// timeout bounds the whole conversation with systemd.
const timeout = 10 * time.Second

// Start has systemd make contain-PID.scope, delegated, and move contain
// (PID pid, the caller) into it; it returns once the kernel shows contain
// in the scope's cgroup.
func Start(pid int, description string) (*Scope, error) {
	sock, manager := ManagerSocket()
	var st unix.Stat_t
	if err := unix.Stat(sock, &st); err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoManager, sock, err)
	}
	// Only the manager's own user can have made its socket there: root's
	// in /run/systemd, the user's in its runtime directory.
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%w (%s is not a socket of this user's)", ErrNoManager, sock)
	}
	s := &Scope{Unit: cgroup.RunName(pid) + cgroup.ScopeSuffix, Manager: manager, From: fromUnit(pid)}
	deadline := time.Now().Add(timeout)
	conn, err := dialManager(sock, deadline)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the systemd manager (%s): %w", manager, err)
	}
	defer conn.Close()
	props := []property{
		{"Description", "s", description},
		{"PIDs", "au", []uint32{uint32(pid)}},
		{"Delegate", "b", true},
		{"CollectMode", "s", "inactive-or-failed"},
	}
	if s.From != "" {
		// Stopping the unit contain was started in (a CI runner's
		// service) stops the scope too, as it would have stopped contain
		// where it was. (No After=: the scope would wait for a unit that
		// is still starting, as a oneshot service is while it runs.)
		props = append(props, property{"PartOf", "as", []string{s.From}})
	}
	if _, err := conn.startTransientUnit(s.Unit, "fail", props); err != nil {
		return nil, fmt.Errorf("systemd (%s) would not make %s: %w", manager, s.Unit, err)
	}
	// The scope is started when systemd has moved contain into its
	// cgroup: the kernel says when (no subscription to systemd's signals,
	// one round trip fewer).
	b := proc.NewBackoff()
	for {
		err := s.find(pid)
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("systemd (%s) did not start %s within %v: %w", s.Manager, s.Unit, timeout, err)
		}
		time.Sleep(b.Next())
	}
}

// fromUnit is the unit of the same manager that pid is in now ("": none,
// or another manager's: a login session's scope is the system's, never a
// user manager's).
func fromUnit(pid int) string {
	rel, err := cgroup.Of(pid)
	if err != nil {
		return ""
	}
	unit := filepath.Base(rel)
	if !strings.HasSuffix(unit, ".service") && !strings.HasSuffix(unit, ".scope") {
		return ""
	}
	userManager := fmt.Sprintf("/user@%d.service/", os.Geteuid())
	inUser := strings.Contains(rel+"/", userManager)
	if (os.Geteuid() == 0) == inUser || strings.HasSuffix(rel, userManager[:len(userManager)-1]) {
		return "" // another manager's unit, or the user manager itself
	}
	return unit
}

// find checks, from the kernel, that contain is in the scope's cgroup now,
// and where that is.
func (s *Scope) find(pid int) error {
	rel, err := cgroup.Of(pid)
	if err != nil {
		return err
	}
	if filepath.Base(rel) != s.Unit {
		return fmt.Errorf("systemd made %s, but contain is in %q", s.Unit, rel)
	}
	dir, err := cgroup.DirOf(rel)
	if err != nil {
		return err
	}
	s.Dir = dir
	return nil
}
