// Package scope asks systemd for a transient scope unit to run contain's
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
// It talks to the manager over its private socket (/run/systemd/private,
// /run/user/UID/systemd/private): no bus daemon is needed for it, and only
// the manager's own user can connect there.
package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
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

// fromUnit is the unit of the same manager that pid is in now ("": none,
// or another manager's: a login session's scope is the system's, never a
// user manager's).
func fromUnit(pid int) string {
	rel, err := cgroupOf(pid)
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

// cgroupOf is pid's cgroup v2 path, as /proc/PID/cgroup shows it.
func cgroupOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok {
			return r, nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/" + strconv.Itoa(pid) + "/cgroup")
}

// managerSocket is the private socket of the manager that may make a
// scope for this user.
func managerSocket() (path, manager string) {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/systemd/private", "system"
	}
	return fmt.Sprintf("/run/user/%d/systemd/private", uid), "user " + strconv.Itoa(uid)
}

// timeout bounds the whole conversation with systemd.
const timeout = 5 * time.Second

// Start makes contain-PID.scope, delegated, and has systemd move the
// calling process (contain, PID pid) into it; it returns once systemd
// says the scope is active and the kernel shows contain in its cgroup.
func Start(pid int, description string) (*Scope, error) {
	sock, manager := managerSocket()
	var st unix.Stat_t
	if err := unix.Stat(sock, &st); err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", ErrNoManager, sock, err)
	}
	// Only the manager's own user can have made its socket there: root's
	// in /run/systemd, the user's in its runtime directory.
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%w (%s is not a socket of this user's)", ErrNoManager, sock)
	}
	s := &Scope{Unit: cgroup.Prefix + strconv.Itoa(pid) + cgroup.ScopeSuffix, Manager: manager, From: fromUnit(pid)}
	if err := s.ask(sock, pid, description); err != nil {
		return nil, err
	}
	return s, nil
}

type property struct {
	Name  string
	Value dbus.Variant
}

type auxUnit struct {
	Name  string
	Props []property
}

// ask asks the manager at sock for the scope, with pid in it, and waits
// for its job.
func (s *Scope) ask(sock string, pid int, description string) error {
	conn, err := dbus.Dial("unix:path=" + sock)
	if err != nil {
		return fmt.Errorf("cannot reach the systemd manager (%s): %w", s.Manager, err)
	}
	defer conn.Close()
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Geteuid()))}); err != nil {
		return fmt.Errorf("the systemd manager (%s) refused contain: %w", s.Manager, err)
	}
	mgr := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	props := []property{
		{"Description", dbus.MakeVariant(description)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(pid)})},
		{"Delegate", dbus.MakeVariant(true)},
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	if s.From != "" {
		// Stopping the unit contain was started in (a CI runner's
		// service) stops the scope too, as it would have stopped contain
		// where it was. (No After=: the scope would wait for a unit that
		// is still starting, as a oneshot service is while it runs.)
		props = append(props, property{"PartOf", dbus.MakeVariant([]string{s.From})})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var job dbus.ObjectPath
	err = mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0, s.Unit, "fail", props, []auxUnit{}).Store(&job)
	if err != nil {
		return fmt.Errorf("systemd (%s) would not make %s: %w", s.Manager, s.Unit, err)
	}
	// The scope is started when systemd has moved contain into its
	// cgroup: the kernel says when (no subscription to systemd's signals,
	// one round trip fewer).
	b := backoff{}
	for {
		err := s.find(pid)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("systemd (%s) did not start %s within %v: %w", s.Manager, s.Unit, timeout, err)
		}
		time.Sleep(b.next())
	}
}

// backoff waits 0.1 ms, then twice as long each time, up to 10 ms.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	b.d = min(max(2*b.d, 100*time.Microsecond), 10*time.Millisecond)
	return b.d
}

// find checks, from the kernel, that contain is in the scope's cgroup now,
// and where that is.
func (s *Scope) find(pid int) error {
	rel, err := cgroupOf(pid)
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
