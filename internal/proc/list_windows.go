package proc

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc/peb"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// entry is one process of a Toolhelp snapshot.
type entry struct {
	pid, ppid int
	exe       string
}

// snapshot lists every process with its parent and executable name.
func snapshot() ([]entry, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var out []entry
	pe := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &pe); err == nil; err = windows.Process32Next(snap, &pe) {
		out = append(out, entry{pid: int(pe.ProcessID), ppid: int(pe.ParentProcessID), exe: windows.UTF16ToString(pe.ExeFile[:])})
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, err
	}
	return out, nil
}

// Parents maps every process to its parent's PID, as a snapshot shows
// them. Windows keeps a process's parent PID when its parent ends, so a
// link may name a PID since taken by another process: compare creation
// times before following one.
func Parents() (map[int]int, error) {
	procs, err := snapshot()
	if err != nil {
		return nil, err
	}
	out := make(map[int]int, len(procs))
	for _, e := range procs {
		out[e.pid] = e.ppid
	}
	return out, nil
}

// systemProcess: the Idle and System processes cannot be opened and have
// no environment.
func systemProcess(pid int) bool { return pid == 0 || pid == 4 }

// ReadAccess is what reading a process's identity and tag needs.
const ReadAccess = windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_VM_READ | windows.SYNCHRONIZE

// ListTagged reads the environment of every process this user may open
// (its PEB, through ReadProcessMemory) and returns those that carry
// RUNNING_PROCESS_ORIGINATOR. Processes that cannot be opened or read are
// counted by reason; 32-bit (WOW64) ones among them.
func ListTagged() (Listing, error) {
	procs, err := snapshot()
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Unreadable: map[string]int{}}
	for _, e := range procs {
		if systemProcess(e.pid) {
			continue
		}
		p, err := describeProcess(e)
		switch {
		case err == nil:
			l.Procs = append(l.Procs, p)
		case errors.Is(err, errUntagged), errors.Is(err, errNoPEB), errors.Is(err, ErrGone):
		default:
			l.Unreadable[unreadableReason(err)]++
		}
	}
	return l, nil
}

// unreadableReason names why a process could not be read, as ps counts it.
func unreadableReason(err error) string {
	switch {
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return "permission denied"
	case errors.Is(err, errWOW64):
		return errWOW64.Error()
	case errors.Is(err, windows.ERROR_PARTIAL_COPY):
		return "memory not readable"
	}
	return err.Error()
}

// errUntagged: the process does not carry RUNNING_PROCESS_ORIGINATOR.
var errUntagged = errors.New("not tagged")

// describeProcess opens e and reads what ps shows of it, or errUntagged.
func describeProcess(e entry) (session.Process, error) {
	h, err := windows.OpenProcess(ReadAccess, false, uint32(e.pid))
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return session.Process{}, ErrGone
		}
		return session.Process{}, err
	}
	defer windows.CloseHandle(h)
	return readProcess(h, e)
}

// readProcess reads, through h, the identity and tag of process e, and
// the usage of a tagged one.
func readProcess(h windows.Handle, e entry) (session.Process, error) {
	start, exited, err := CreationTime(h)
	if err != nil {
		return session.Process{}, err
	}
	if exited {
		return session.Process{}, ErrGone
	}
	env, cmdline, err := ReadEnvironment(h)
	if err != nil {
		return session.Process{}, err
	}
	value, tagged := tag.Lookup(env, tag.Var)
	if !tagged {
		return session.Process{}, errUntagged
	}
	p := session.Process{PID: e.pid, PPID: e.ppid, Start: start, Started: FiletimeToTime(start), UID: -1, Comm: e.exe, Value: value}
	d, _ := tag.Lookup(env, tag.DaemonVar)
	p.Daemon = d == "1"
	if cmdline != "" {
		p.Argv = peb.Args(cmdline)
	}
	if o, err := processOwner(h); err == nil {
		p.User, p.SID = o.name, o.sid
	}
	if p.Usage, err = UsageOfHandle(h); err != nil {
		p.Usage = session.Usage{Why: err.Error()}
	}
	return p, nil
}

// LookupOriginator tells what process PID names now: whether it exists,
// has exited (a process object kept by a handle), and when it started.
// Windows has no PID namespaces: ns is always 0, and another is an error.
func LookupOriginator(ns uint64, pid int) (session.Originator, error) {
	if ns != 0 {
		return session.Originator{}, ErrNoNamespaces
	}
	o, err := lookupOriginator(pid)
	if o.Exists {
		o.ViewPID = pid
	}
	return o, err
}

func lookupOriginator(pid int) (session.Originator, error) {
	if systemProcess(pid) {
		return session.Originator{Exists: true}, nil
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return session.Originator{}, nil
	}
	if err != nil {
		return session.Originator{}, err
	}
	defer windows.CloseHandle(h)
	start, exited, err := CreationTime(h)
	if err != nil {
		return session.Originator{}, err
	}
	o := session.Originator{Exists: true, Zombie: exited, Start: start}
	if ow, err := processOwner(h); err == nil && ow.sid != "" {
		o.Owned, o.SID = true, ow.sid
	}
	return o, nil
}

// Ancestors lists contain's parent, its parent, and so on. Windows keeps a
// parent's PID after the parent ended, and PIDs are reused soon: a parent
// that started after its child is not the parent, and the walk stops.
func Ancestors() map[int]bool {
	out := map[int]bool{}
	procs, err := snapshot()
	if err != nil {
		return out
	}
	parent := make(map[int]int, len(procs))
	for _, e := range procs {
		parent[e.pid] = e.ppid
	}
	child := os.Getpid()
	childStart, ok := StartOf(child)
	for ok {
		pid, known := parent[child]
		if !known || pid == 0 || out[pid] {
			break
		}
		start, ok2 := StartOf(pid)
		if !ok2 || start > childStart {
			break
		}
		out[pid] = true
		child, childStart = pid, start
	}
	return out
}

// StartOf reads a process's creation time.
func StartOf(pid int) (uint64, bool) {
	o, err := lookupOriginator(pid)
	return o.Start, err == nil && o.Exists
}

// PrivilegeName is what Privileged asks for, for messages.
const PrivilegeName = "an elevated (administrator) prompt"

// Privileged reports whether contain may act on other users' processes: an
// elevated token.
func Privileged() bool {
	_, elevated := currentUser()
	return elevated
}

// CurrentOwner is the user contain runs as, as session.Process.SID holds
// it. When it cannot be read, no process is taken for contain's user's.
func CurrentOwner() string {
	o, _ := currentUser()
	if o.sid == "" {
		return "(unknown user)"
	}
	return o.sid
}
