package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/procfs"
)

// A hardened /proc: mounted hidepid=1 (another user's /proc/PID is there
// but cannot be read), hidepid=2 (it is not there at all), hidepid=4 (only
// what this user may ptrace is shown), or subset=pid (only the process
// directories are there: no /proc/stat). Root, and the members of the
// mount's gid= group, see every process. What /proc hides from this user
// runs all the same: kill(PID, 0) answers EPERM, not ESRCH. contain takes
// such a process for "cannot see", never for gone.

// ProcMount is what the options of a /proc mount say it hides.
type ProcMount struct {
	HidePID   int  // 0 (off), 1 (noaccess), 2 (invisible), 4 (ptraceable)
	GID       int  // gid=: its members see every process; -1 when not set
	SubsetPID bool // subset=pid: only the process directories
}

// Option says m's hidepid as it is typed: "hidepid=2"; "" when off.
func (m ProcMount) Option() string {
	if m.HidePID == 0 {
		return ""
	}
	return "hidepid=" + strconv.Itoa(m.HidePID)
}

// hidepidWords are the names newer kernels show (and take) for hidepid.
var hidepidWords = map[string]int{"off": 0, "noaccess": 1, "invisible": 2, "ptraceable": 4}

// ParseProcMount reads, from mountinfo (/proc/self/mountinfo), the
// options of the procfs mounted at mountPoint: the last such line, the
// mount on top. found is false when no procfs is mounted there.
func ParseProcMount(mountinfo []byte, mountPoint string) (m ProcMount, found bool) {
	for len(mountinfo) > 0 {
		var line []byte
		line, mountinfo, _ = bytes.Cut(mountinfo, []byte{'\n'})
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := bytes.Cut(line, []byte(" - "))
		if !ok {
			continue
		}
		f, g := bytes.Fields(pre), bytes.Fields(post)
		if len(f) < 5 || len(g) < 3 || string(g[0]) != "proc" || procfs.UnescapeMount(string(f[4])) != mountPoint {
			continue
		}
		m, found = ProcMount{GID: -1}, true
		for _, opt := range strings.Split(string(g[2]), ",") {
			key, val, _ := strings.Cut(opt, "=")
			switch key {
			case "hidepid":
				if n, ok := hidepidWords[val]; ok {
					m.HidePID = n
				} else if n, err := strconv.Atoi(val); err == nil && n >= 0 {
					m.HidePID = n
				}
			case "gid":
				if n, err := strconv.Atoi(val); err == nil && n >= 0 {
					m.GID = n
				}
			case "subset":
				m.SubsetPID = val == "pid"
			}
		}
	}
	return m, found
}

// HidesFrom reports whether m hides other users' processes from a
// process of euid in groups: hidepid is set, and it is neither root nor
// in the gid= group.
func (m ProcMount) HidesFrom(euid int, groups []int) bool {
	return m.HidePID > 0 && euid != 0 && (m.GID < 0 || !slices.Contains(groups, m.GID))
}

var procMount struct {
	once   sync.Once
	m      ProcMount
	hidden string
}

// readProcMount reads the options of the live /proc, once.
func readProcMount() {
	procMount.once.Do(func() {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return
		}
		m, found := ParseProcMount(b, FS.Root)
		if !found {
			return
		}
		procMount.m = m
		groups, _ := os.Getgroups()
		groups = append(groups, os.Getegid())
		if m.HidesFrom(os.Geteuid(), groups) {
			procMount.hidden = fmt.Sprintf("%s is mounted %s: other users' processes are hidden from this user", FS.Root, m.Option())
		}
	})
}

// Hidden says why other users' processes may be missing from what
// contain lists: /proc is mounted hidepid and this user is neither root
// nor in the mount's gid= group. "" when /proc shows every process (as
// far as its mount options tell).
func Hidden() string {
	readProcMount()
	return procMount.hidden
}

// HiddenError is a process that /proc does not show this user (its
// /proc/PID is absent or cannot be read) and that runs all the same:
// kill(PID, 0) answers EPERM. It is alive, and another user's.
type HiddenError struct {
	PID   int
	Mount string // /proc's hidepid option ("hidepid=2"), "" when its options do not say
}

func (e *HiddenError) Error() string {
	if e.Mount != "" {
		return fmt.Sprintf("PID %d runs as another user, and %s (mounted %s) hides it from this user", e.PID, FS.Root, e.Mount)
	}
	return fmt.Sprintf("PID %d runs as another user, and %s does not show it to this user", e.PID, FS.Root)
}

// Is makes a HiddenError an ErrHidden.
func (e *HiddenError) Is(target error) bool { return target == ErrHidden }

// signalZero is kill(pid, 0); tests replace it.
var signalZero = func(pid int) error { return unix.Kill(pid, 0) }

// hiddenErr tells, after reading /proc/PID failed with err, whether pid
// runs all the same, hidden from this user: a HiddenError, or nil.
func hiddenErr(pid int, err error) error {
	if pid <= 0 || err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return nil
	}
	if signalZero(pid) != unix.EPERM {
		return nil
	}
	readProcMount()
	return &HiddenError{PID: pid, Mount: procMount.m.Option()}
}

// hiddenUnseen is Unseen for an originator that /proc hides: why its
// session cannot be seen, or "".
func hiddenUnseen(err error) string {
	var h *HiddenError
	if !errors.As(err, &h) {
		return ""
	}
	if h.Mount != "" {
		return fmt.Sprintf("its originator, PID %d, runs as another user, whose processes %s (mounted %s) hides from this user", h.PID, FS.Root, h.Mount)
	}
	return fmt.Sprintf("its originator, PID %d, runs as another user, and %s does not show it to this user", h.PID, FS.Root)
}

// bootByClock is the boot time in whole seconds, as /proc/stat's btime
// gives it, from the clocks: the wall clock less the time since boot. A
// /proc mounted subset=pid has no /proc/stat.
func bootByClock() (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, err
	}
	return time.Now().Add(-time.Duration(ts.Nano())).Truncate(time.Second), nil
}
