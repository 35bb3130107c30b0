// Package scope asks systemd for a transient scope unit that holds a
// run's tree with the kernel's limits, where contain could not enable the
// controllers itself: a login session's scope, a CI runner's service, any
// cgroup that holds other processes too. systemd owns those cgroups and
// can make a new one beside them, with MemoryMax, TasksMax and CPUQuota,
// for root (the system manager) and for an ordinary user (the user's own
// manager, user@UID.service, which current distributions delegate memory,
// pids and cpu to): what `systemd-run --scope -p MemoryMax=` does.
//
// It talks to the manager over its private socket (/run/systemd/private,
// /run/user/UID/systemd/private): no bus daemon is needed, and only the
// manager's own user can connect there. A scope must hold a process when
// it is made: a placeholder holds it until COMMAND has been started into
// its cgroup, then leaves.
package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
)

// ErrNoManager: no systemd manager of this user to ask.
var ErrNoManager = errors.New("no systemd manager to ask for a scope")

// Suffix ends a scope's unit name: contain-PID.scope.
const Suffix = ".scope"

// Limits are what the scope holds; zero fields ask nothing.
type Limits struct {
	Memory uint64  // MemoryMax, with MemorySwapMax 0
	Pids   int     // TasksMax
	CPUs   float64 // CPUQuota, CPUs × 100%
}

// Scope is a transient scope made for a run, active, holding a
// placeholder until Release.
type Scope struct {
	Unit     string // contain-PID.scope
	Manager  string // "system", or "user UID"
	Group    *cgroup.Group
	hold     int           // the placeholder's PID
	release  chan struct{} // closed: the placeholder is to end
	released chan struct{} // closed: it has ended
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

// Start makes contain-PID.scope with limits l, holding a placeholder
// process (a child of the caller), and returns it once systemd says it is
// active and its cgroup shows the limits. The caller starts COMMAND into
// s.Group (CLONE_INTO_CGROUP), then calls Release.
func Start(pid int, l Limits, description string) (*Scope, error) {
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
	s := &Scope{Unit: "contain-" + strconv.Itoa(pid) + Suffix, Manager: manager}
	if err := s.startHold(); err != nil {
		return nil, err
	}
	if err := s.ask(sock, l, description); err != nil {
		s.Release()
		return nil, err
	}
	return s, nil
}

// startHold starts the placeholder: a shell that waits for its standard
// input to close (one task, where a Go program would count several
// against TasksMax), or contain itself without one. It is the child of a
// thread of its own, which lives until Release: contain's reaper, which
// waits only for the children of its thread, never sees it, and its
// Pdeathsig fires only when contain dies.
func (s *Scope) startHold() error {
	started := make(chan error)
	s.release, s.released = make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		pid, w, err := forkHold()
		started <- err
		if err != nil {
			return
		}
		s.hold = pid
		<-s.release
		w.Close()
		unix.Kill(pid, unix.SIGKILL) // a child not yet waited for: the PID is still its
		for {
			if _, err := unix.Wait4(pid, nil, 0, nil); err != unix.EINTR {
				break
			}
		}
		close(s.released)
	}()
	if err := <-started; err != nil {
		return err
	}
	return nil
}

func forkHold() (int, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return 0, nil, err
	}
	defer null.Close()
	path, argv := "/bin/sh", []string{"sh", "-c", "read _"}
	if unix.Access(path, unix.X_OK) != nil {
		exe, err := os.Executable()
		if err != nil {
			w.Close()
			return 0, nil, err
		}
		path, argv = exe, []string{"contain", HoldArg}
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   []string{"PATH=/usr/bin:/bin"},
		Files: []uintptr{r.Fd(), null.Fd(), null.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		w.Close()
		return 0, nil, fmt.Errorf("cannot start the scope's placeholder: %w", err)
	}
	return pid, w, nil
}

// HoldArg is argv[1] of contain as the placeholder where there is no
// /bin/sh: it waits for its standard input to close.
const HoldArg = "__hold"

// Hold is the placeholder's main.
func Hold() int {
	var b [64]byte
	for {
		if n, err := os.Stdin.Read(b[:]); n == 0 && err != nil {
			return 0
		}
	}
}

type property struct {
	Name  string
	Value dbus.Variant
}

type auxUnit struct {
	Name  string
	Props []property
}

// ask asks the manager at sock for the scope and waits for its job.
func (s *Scope) ask(sock string, l Limits, description string) error {
	conn, err := dbus.Dial("unix:path=" + sock)
	if err != nil {
		return fmt.Errorf("cannot reach the systemd manager (%s): %w", s.Manager, err)
	}
	defer conn.Close()
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Geteuid()))}); err != nil {
		return fmt.Errorf("the systemd manager (%s) refused contain: %w", s.Manager, err)
	}
	signals := make(chan *dbus.Signal, 64)
	conn.Signal(signals)
	mgr := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	call := func(method string, args ...any) *dbus.Call {
		ctx, cancel := contextWithTimeout()
		defer cancel()
		return mgr.CallWithContext(ctx, "org.freedesktop.systemd1.Manager."+method, 0, args...)
	}
	if err := call("Subscribe").Err; err != nil {
		return fmt.Errorf("systemd (%s): Subscribe: %w", s.Manager, err)
	}
	props := []property{
		{"Description", dbus.MakeVariant(description)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(s.hold)})},
		{"Delegate", dbus.MakeVariant(true)},
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	if l.Memory > 0 {
		props = append(props, property{"MemoryMax", dbus.MakeVariant(l.Memory)}, property{"MemorySwapMax", dbus.MakeVariant(uint64(0))})
	}
	if l.Pids > 0 {
		props = append(props, property{"TasksMax", dbus.MakeVariant(uint64(l.Pids))})
	}
	if l.CPUs > 0 {
		props = append(props, property{"CPUQuotaPerSecUSec", dbus.MakeVariant(uint64(l.CPUs * 1e6))})
	}
	var job dbus.ObjectPath
	if err := call("StartTransientUnit", s.Unit, "fail", props, []auxUnit{}).Store(&job); err != nil {
		return fmt.Errorf("systemd (%s) would not make %s: %w", s.Manager, s.Unit, err)
	}
	deadline := time.After(timeout)
	for {
		select {
		case sig := <-signals:
			if sig == nil || sig.Name != "org.freedesktop.systemd1.Manager.JobRemoved" || len(sig.Body) < 4 {
				continue
			}
			if path, _ := sig.Body[1].(dbus.ObjectPath); path != job {
				continue
			}
			if result, _ := sig.Body[3].(string); result != "done" {
				return fmt.Errorf("systemd (%s) could not start %s: %s", s.Manager, s.Unit, result)
			}
			return s.open(l)
		case <-deadline:
			return fmt.Errorf("systemd (%s) did not start %s within %v", s.Manager, s.Unit, timeout)
		}
	}
}

// open finds the scope's cgroup where the kernel shows the placeholder,
// and checks that it holds the limits asked: what contain says of them is
// read from the kernel, not taken from systemd's word.
func (s *Scope) open(l Limits) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.hold))
	if err != nil {
		return fmt.Errorf("the scope's placeholder is gone: %w", err)
	}
	var rel string
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok {
			rel = r
		}
	}
	if filepath.Base(rel) != s.Unit {
		return fmt.Errorf("systemd put the placeholder in %q, not in %s", rel, s.Unit)
	}
	g, err := cgroup.OpenRel(rel)
	if err != nil {
		return err
	}
	for file, want := range map[string]string{"memory.max": num(l.Memory &^ 4095), "pids.max": num(uint64(l.Pids)), "cpu.max": cpuMax(l.CPUs)} {
		if want == "" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(g.Dir, file))
		if err != nil || string(got) != want {
			g.Close()
			return fmt.Errorf("%s in %s reads %q, not %q as asked of systemd: %v", file, g.Dir, strings.TrimSpace(string(got)), strings.TrimSpace(want), err)
		}
	}
	if l.Memory > 0 {
		// The OOM killer ends the whole tree, as in contain's own groups.
		os.WriteFile(filepath.Join(g.Dir, "memory.oom.group"), []byte("1"), 0)
	}
	s.Group = g
	return nil
}

func num(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10) + "\n"
}

// cpuMax is how cpu.max reads X CPUs as systemd sets them: a quota per
// 100 ms period.
func cpuMax(cpus float64) string {
	if cpus <= 0 {
		return ""
	}
	return strconv.FormatUint(uint64(cpus*1e6)/10, 10) + " 100000\n"
}

// Release ends the placeholder, once COMMAND is in the scope (or the
// scope is not used): systemd stops a scope that holds nothing.
func (s *Scope) Release() {
	if s.release == nil {
		return
	}
	close(s.release)
	<-s.released
	s.release = nil
}

// contextWithTimeout bounds one call to systemd.
func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// PIDOf parses the PID out of a scope's unit name, contain-PID.scope.
func PIDOf(unit string) (int, bool) {
	n, ok := strings.CutPrefix(unit, "contain-")
	if !ok {
		return 0, false
	}
	n, ok = strings.CutSuffix(n, Suffix)
	pid, err := strconv.Atoi(n)
	return pid, ok && err == nil && pid > 0 && n[0] != '0'
}
