//go:build linux || darwin

package registry

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/tag"
)

// A registry is the file in which contain run lists the processes of its
// session as it finds them: COMMAND, then each member, by PID and start
// time (the facts it also tells its crash guard), and each daemon the run
// spared (--allow-daemons). It is kept where contain reap can read it
// after contain died, and removed by contain at a clean end, unless a
// daemon it spared still runs: the registry is then kept, closed by an end
// line, so that contain reap --include-daemons finds that daemon whatever
// its environment shows (redis writes its title over it). reap uses it for sessions whose contain run is gone, to find their
// processes even when the environment no longer shows the tag: written
// over by a process title (redis-server, nginx, postgres), unreadable
// (ssh-agent and gpg-agent make themselves undumpable), or cleared (env
// -i). A registry whose contain still runs is never used to signal
// anything.
//
// The file, one line per fact, appended with O_APPEND (a line is one
// write; a line cut short by a crash, with no newline, is ignored):
//
//	contain registry 1
//	session TOOL:PID START     the tag; PID and START are contain run's
//	command PID START          COMMAND
//	member PID START           each process found since, once
//	spared PID START           a daemon the run let go (--allow-daemons),
//	                           and each process that daemon started
//	end                        the run ended cleanly: nothing else was
//	                           left, and nothing is written after
//
// reap takes a spared process, and what it starts, for a daemon: left
// alone unless --include-daemons. A registry with an end line is the whole
// session: reap looks there for nothing it could not tell (FindUnsure).
// Older contains skip the spared and end lines, as any line of a kind
// they do not know.
//
// START is the start time in the OS's unit (clock ticks after boot on
// Linux, microseconds on macOS). The directory is per user:
// $XDG_RUNTIME_DIR/contain when XDG_RUNTIME_DIR is set, else
// $TMPDIR/contain-UID ($TMPDIR: os.TempDir, /tmp when unset); contain
// makes it 0700 and refuses one that is a symbolic link, is not owned by
// the user, or that group or others may write (registryDirs,
// openRegistryDir). Another user can make /tmp/contain-UID first: contain
// then says so on stderr, once, and keeps the registry in a directory of
// its own with a name no one can guess, $TMPDIR/contain-UID.RANDOM, made
// 0700 (or one such it made before), so that reap still finds it. reap
// reads every place: both directories, /tmp/contain-UID when $TMPDIR is
// elsewhere, and each /tmp/contain-UID.* (and $TMPDIR's) that is a
// directory of the user's that group and others may not write; each file
// it reads must be a regular file of the user's that group and others may
// not write.
//
// Windows has no registry: a job object ends every process of the session
// when contain ends, however it ends (registry_none.go).
type Registry struct {
	mu      sync.Mutex
	dir     int    // the directory, opened and checked once; -1 when closed
	fd      int    // the file; -1 when closed
	path    string // for people: where it is
	name    string
	touched time.Time
}

const (
	registryHeader  = "contain registry 1"
	registryPrefix  = "session."
	registrySession = "session"
	registryCommand = "command"
	registryMember  = "member"
	registrySpared  = "spared"
	registryEnd     = "end"
	registryMarker  = "marker"
	registryLineage = "lineage"
	// maxRegistry caps what is read of one registry: a line per process
	// that ever ran in the session, 30 bytes each.
	maxRegistry = 64 << 20
)

// ErrNoCommand: the registry names COMMAND by its PID and start time, and
// COMMAND had ended before its start time could be read.
var ErrNoCommand = errors.New("COMMAND ended before its start time could be read")

// OpenRegistry makes the registry of session value, which names this
// contain run (TOOL:PID, PID this process), with COMMAND (commandPID,
// started at commandStart) as its first process. It fails when no
// registry directory is safe to use; the run goes on without one.
func OpenRegistry(value string, commandPID int, commandStart uint64) (*Registry, error) {
	_, pid, err := tag.Parse(value)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if pid != os.Getpid() {
		return nil, fmt.Errorf("registry: %s does not name this contain (PID %d)", value, os.Getpid())
	}
	if commandPID <= 1 || commandStart == 0 {
		return nil, fmt.Errorf("%w (PID %d)", ErrNoCommand, commandPID)
	}
	start := proc.StartOf(pid)
	if start == 0 {
		return nil, fmt.Errorf("registry: cannot read contain's own start time")
	}
	name := registryName(pid, start)
	head := fmt.Sprintf("%s\n%s %s %d\n%s %d %d\n", registryHeader, registrySession, value, start, registryCommand, commandPID, commandStart)
	var errs []error
	var unsafe []string
	try := func(dir string, dfd int, err error) *Registry {
		if err != nil {
			errs = append(errs, err)
			if u := (*unsafeDirError)(nil); errors.As(err, &u) {
				unsafe = append(unsafe, err.Error())
			}
			return nil
		}
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			unix.Close(dfd)
			errs = append(errs, &os.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err})
			return nil
		}
		r := &Registry{dir: dfd, fd: fd, name: name, path: filepath.Join(dir, name)}
		if err := r.write(head); err != nil {
			r.Remove()
			errs = append(errs, &os.PathError{Op: "write", Path: filepath.Join(dir, name), Err: err})
			return nil
		}
		return r
	}
	var r *Registry
	var where string
	for _, dir := range registryDirs() {
		dfd, err := openRegistryDir(dir, true)
		if r = try(dir, dfd, err); r != nil {
			where = dir
			break
		}
	}
	if r == nil && len(unsafe) > 0 {
		// A directory another user made, or a link: contain's own, under
		// a name no one could have made first.
		dir, dfd, err := fallbackRegistryDir(os.TempDir())
		if r = try(dir, dfd, err); r != nil {
			where = dir
		}
	}
	if len(unsafe) > 0 && RegistryWarnings != nil {
		then := "running without a registry for contain reap"
		if r != nil {
			then = "the registry is kept in " + where
		}
		text.Fprintf(RegistryWarnings, "contain: registry: %s; %s\n", strings.Join(unsafe, "; "), then)
	}
	if r == nil {
		return nil, fmt.Errorf("registry: %w", errors.Join(errs...))
	}
	return r, nil
}

// RegistryWarnings is where OpenRegistry says, once and without -v, that
// a registry directory was refused as unsafe (another user's, a link, one
// others may write): a sign that someone tried to make contain write where
// they could read or remove it. nil says nothing.
var RegistryWarnings io.Writer = os.Stderr

// unsafeDirError is a registry directory refused for what it is, not for
// being absent or out of reach.
type unsafeDirError struct{ dir, why string }

func (e *unsafeDirError) Error() string { return e.dir + ": refused: " + e.why }

// Member adds a process of the session (PID and start time). A nil
// registry (none could be made) takes nothing and says nothing.
func (r *Registry) Member(pid int, start uint64) error {
	if r == nil {
		return nil
	}
	return r.write(registryMember + " " + strconv.Itoa(pid) + " " + strconv.FormatUint(start, 10) + "\n")
}

// Marker records the identity of the session's marker (package marker):
// reap finds every process that still holds it. A nil registry takes
// nothing.
func (r *Registry) Marker(ino uint64) error {
	if r == nil {
		return nil
	}
	return r.write(registryMarker + " " + strconv.FormatUint(ino, 10) + "\n")
}

// Lineage records a member's lineage as the kernel keeps it (macOS: its
// unique ID and pidversion): reap finds what it forked, re-parented to
// launchd since. A nil registry takes nothing.
func (r *Registry) Lineage(uniqueID uint64, idVersion int32) error {
	if r == nil {
		return nil
	}
	return r.write(registryLineage + " " + strconv.FormatUint(uniqueID, 10) + " " + strconv.FormatInt(int64(idVersion), 10) + "\n")
}

// Spared adds a daemon the run let go (--allow-daemons), by PID and
// start time: reap finds it there, as a daemon, once the run has ended,
// even when its environment shows no tag. A nil registry takes nothing.
func (r *Registry) Spared(pid int, start uint64) error {
	if r == nil {
		return nil
	}
	return r.write(registrySpared + " " + strconv.Itoa(pid) + " " + strconv.FormatUint(start, 10) + "\n")
}

// Close ends the registry at a clean end of its run. When one of spared
// (the daemons the run let go) still runs, the registry is kept, with an
// end line, for contain reap --include-daemons, and Close returns its
// path; else it is removed, and Close returns "". A nil registry is
// nothing to close.
func (r *Registry) Close(spared []proc.ID) string {
	if r == nil || !anyLives(spared) {
		r.Remove()
		return ""
	}
	// Kept even when the end line cannot be written: without it, reap
	// also names what it cannot tell, the safer side.
	r.write(registryEnd + "\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return ""
	}
	unix.Close(r.fd)
	unix.Close(r.dir)
	r.fd, r.dir = -1, -1
	return r.path
}

// touchEvery bounds how often Touch changes the file's time.
const touchEvery = 100 * time.Millisecond

// Touch sets the registry's modification time to now, at most every
// touchEvery: contain's scans call it, so that the time says until when
// contain ran (within a scan's pause, at most 200 ms) should it be killed,
// and reap knows which processes started while it could still have seen
// them (FindUnsure). A nil registry does nothing.
func (r *Registry) Touch() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.fd < 0 || now.Sub(r.touched) < touchEvery {
		return
	}
	r.touched = now
	tv := unix.NsecToTimeval(now.UnixNano())
	unix.Futimes(r.fd, []unix.Timeval{tv, tv})
}

// write appends s in one write (a short write, which a full disk can
// cause, is completed).
func (r *Registry) write(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return errors.New("registry: removed")
	}
	b := []byte(s)
	for len(b) > 0 {
		n, err := unix.Write(r.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Remove deletes the registry: the session is closed, nothing of it is
// left for reap to find. A nil registry is nothing to remove.
func (r *Registry) Remove() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return
	}
	unix.Unlinkat(r.dir, r.name, 0)
	unix.Close(r.fd)
	unix.Close(r.dir)
	r.fd, r.dir = -1, -1
}
