//go:build linux || darwin

package reap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
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
	// maxRegistry caps what is read of one registry: a line per process
	// that ever ran in the session, 30 bytes each.
	maxRegistry = 64 << 20
)

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
		return nil, fmt.Errorf("registry: no COMMAND (PID %d, start %d)", commandPID, commandStart)
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

// registryName is the file name of contain run PID's registry:
// session.PID.START, and .nsINODE after it outside the host's PID
// namespace (proc.NSName): the PIDs in it are that namespace's.
func registryName(pid int, start uint64) string {
	name := registryPrefix + strconv.Itoa(pid) + "." + strconv.FormatUint(start, 10)
	if ns := proc.NSName(); ns != "" {
		name += "." + ns
	}
	return name
}

// registryOrigin reads the contain run that a registry's name names. ok
// is false for a name that is not one, and for a registry of another PID
// namespace (a container's, in a /tmp it shares with its host, or the
// host's, seen from a container): its PIDs name other processes here,
// and it is never read.
func registryOrigin(name string) (proc.ID, bool) {
	pid, rest, ok := strings.Cut(strings.TrimPrefix(name, registryPrefix), ".")
	if !ok {
		return proc.ID{}, false
	}
	start, nsPart, _ := strings.Cut(rest, ".")
	if ns, ok := proc.NSOfName(nsPart); !ok || ns != 0 {
		return proc.ID{}, false
	}
	id, err := proc.ParseID(pid, start)
	return id, err == nil
}

// registryDirs lists where this user's registries are kept, the one
// contain run writes to first: $XDG_RUNTIME_DIR/contain (set to an
// absolute path), then $TMPDIR/contain-UID (/tmp/contain-UID).
func registryDirs() []string {
	var dirs []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "contain"))
	}
	return append(dirs, filepath.Join(os.TempDir(), registryBase()))
}

// registryBase is the name of this user's directory in /tmp: contain-UID.
func registryBase() string { return "contain-" + strconv.Itoa(os.Geteuid()) }

// readDirs lists every place reap reads: registryDirs, /tmp/contain-UID
// when $TMPDIR is elsewhere, and the fallbacks (contain-UID.*) of this
// user's in both.
func readDirs() []string {
	dirs := registryDirs()
	bases := []string{os.TempDir()}
	if filepath.Clean(bases[0]) != "/tmp" {
		bases = append(bases, "/tmp")
		dirs = append(dirs, filepath.Join("/tmp", registryBase()))
	}
	for _, b := range bases {
		dirs = append(dirs, fallbackDirs(b)...)
	}
	return dirs
}

// fallbackDirs lists base's contain-UID.* entries that may be this user's
// fallback registry directories: directories (not links) of this user that
// group and others may not write. Others are passed over without a word:
// another user can make as many such names as they like.
func fallbackDirs(base string) []string {
	d, err := os.Open(base)
	if err != nil {
		return nil
	}
	defer d.Close()
	prefix := registryBase() + "."
	var out []string
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			p := filepath.Join(base, n)
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil && registryDirSafe(uint32(st.Mode), int(st.Uid), os.Geteuid()) == nil {
				out = append(out, p)
			}
		}
		if err != nil {
			return out
		}
	}
}

// fallbackRegistryDir opens this user's fallback registry directory in
// base: one it made before (fallbackDirs), else a new one, base/
// contain-UID.RANDOM, made 0700 by mkdir, which fails on any name that
// exists: no one can have made it for this user, or link it elsewhere.
func fallbackRegistryDir(base string) (string, int, error) {
	for _, dir := range fallbackDirs(base) {
		if fd, err := openRegistryDir(dir, false); err == nil {
			return dir, fd, nil
		}
	}
	var err error
	for range 16 {
		dir := filepath.Join(base, registryBase()+"."+strconv.FormatUint(rand.Uint64(), 36))
		if err = unix.Mkdir(dir, 0o700); err == unix.EEXIST {
			continue
		}
		if err != nil {
			return dir, -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		fd, err := openRegistryDir(dir, false)
		return dir, fd, err
	}
	return base, -1, &os.PathError{Op: "mkdir", Path: filepath.Join(base, registryBase()+".*"), Err: err}
}

// openRegistryDir opens dir, made first (0700) when create is set, and
// checks what it opened: a directory, not a symbolic link, owned by this
// user, that neither group nor others may write. Another user can make
// /tmp/contain-UID before this user does, or a link there; such a
// directory is refused, never used. Everything after goes through the
// descriptor returned.
func openRegistryDir(dir string, create bool) (int, error) {
	if create {
		if err := unix.Mkdir(dir, 0o700); err != nil && err != unix.EEXIST {
			return -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return -1, &unsafeDirError{dir, "a symbolic link or not a directory"}
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if err := registryDirSafe(uint32(st.Mode), int(st.Uid), os.Geteuid()); err != nil {
		unix.Close(fd)
		return -1, &unsafeDirError{dir, err.Error()}
	}
	return fd, nil
}

// registryDirSafe checks the mode and owner of a registry directory.
func registryDirSafe(mode uint32, owner, me int) error {
	switch {
	case mode&unix.S_IFMT != unix.S_IFDIR:
		return errors.New("not a directory")
	case owner != me:
		return fmt.Errorf("owned by uid %d, not by this user (uid %d)", owner, me)
	case mode&0o022 != 0:
		return fmt.Errorf("group or others may write it (mode %03o)", mode&0o777)
	}
	return nil
}

// registryFile is one registry as read.
type registryFile struct {
	dir     string
	name    string
	value   string    // the session's tag
	origin  proc.ID   // contain run
	members []proc.ID // COMMAND first, the spared daemons too
	spared  map[proc.ID]bool
	// ended: the run ended cleanly (its end line), the registry kept for
	// the daemons it spared. It lists the whole session.
	ended   bool
	touched time.Time // its modification time: contain ran until about then
	// headless: contain died between creating the file and writing its
	// header. It names no process; PruneRegistries removes it.
	headless bool
}

// errHeadless is a registry whose header was never written whole.
var errHeadless = errors.New("its header was never written")

// parseRegistry reads a registry's lines. The first two must be the
// header and the session; a line cut short (no newline: contain died
// while writing it) or malformed is left out, and so is a line of a kind
// this contain does not know (a later one's).
func parseRegistry(b []byte) (registryFile, error) {
	var r registryFile
	lines := strings.Split(string(b), "\n")
	lines = lines[:len(lines)-1] // the last is "" or cut short
	if len(lines) == 0 && strings.HasPrefix(registryHeader, string(b)) ||
		len(lines) == 1 && lines[0] == registryHeader && !strings.Contains(string(b[len(registryHeader)+1:]), "\n") {
		return r, errHeadless
	}
	if len(lines) < 2 || lines[0] != registryHeader {
		return r, errors.New("not a contain registry")
	}
	f := strings.Fields(lines[1])
	if len(f) != 3 || f[0] != registrySession {
		return r, errors.New("no session line")
	}
	_, pid, err := tag.Parse(f[1])
	if err != nil {
		return r, fmt.Errorf("session: %w", err)
	}
	start, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil || start == 0 {
		return r, fmt.Errorf("session: bad start time %q", f[2])
	}
	r.value, r.origin = f[1], proc.ID{PID: pid, Start: start}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == registryEnd {
			r.ended = true
			continue
		}
		if len(f) != 3 || f[0] != registryCommand && f[0] != registryMember && f[0] != registrySpared {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		start, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || pid <= 1 || pid > tag.MaxPID || start == 0 {
			continue
		}
		id := proc.ID{PID: pid, Start: start}
		r.members = append(r.members, id)
		if f[0] == registrySpared {
			if r.spared == nil {
				r.spared = map[proc.ID]bool{}
			}
			r.spared[id] = true
		}
	}
	return r, nil
}

// readRegistries reads this user's registries, in every place they are
// kept. A place that does not exist, or that this user may not open, holds
// none; one that is unsafe, and a file that is not a registry, are skipped
// and said in the error.
func readRegistries() ([]registryFile, error) {
	var out []registryFile
	var errs []error
	seen := map[string]bool{}
	for _, dir := range readDirs() {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		regs, err := readRegistryDir(dir)
		out = append(out, regs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// readRegistryDir reads the registries in dir.
func readRegistryDir(dir string) ([]registryFile, error) {
	fd, err := openRegistryDir(dir, false)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		// None there, or none this user could have written (an
		// XDG_RUNTIME_DIR inherited from another user).
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []registryFile
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, registryPrefix) {
			continue
		}
		id, ok := registryOrigin(name)
		if !ok {
			continue // another PID namespace's, or no registry
		}
		b, touched, err := readRegistryAt(fd, name)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile: its run ended
		}
		var r registryFile
		if err == nil {
			r, err = parseRegistry(b)
		}
		if errors.Is(err, errHeadless) {
			if proc.Lives(id) {
				continue // its contain is alive, and writing it
			}
			out = append(out, registryFile{dir: dir, name: name, origin: id, headless: true})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, name), err))
			continue
		}
		r.dir, r.name, r.touched = dir, name, touched
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// readRegistryAt reads the regular file name in directory dfd, of this
// user, not through a link.
func readRegistryAt(dfd int, name string) ([]byte, time.Time, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, time.Time{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, time.Time{}, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		return nil, time.Time{}, errors.New("not a regular file of this user")
	}
	if st.Mode&0o022 != 0 {
		return nil, time.Time{}, fmt.Errorf("group or others may write it (mode %03o)", st.Mode&0o777)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRegistry+1))
	if err == nil && len(b) > maxRegistry {
		err = fmt.Errorf("larger than %d bytes", maxRegistry)
	}
	mtime := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
	return b, mtime, err
}

// registryAlive reports whether r's contain run still runs: its PID names
// a process that is not a zombie and started when it did. When that
// cannot be told, it counts as running: a registry is never used to
// signal anything while its contain may live.
func registryAlive(r registryFile) bool {
	o, err := proc.LookupOriginator(0, r.origin.PID)
	return err != nil || o.Exists && !o.Zombie && o.Start == r.origin.Start
}

// envRead is what a process's environment says of sessions.
type envRead struct {
	readable bool   // read, and not written over by a title
	tagged   bool   // it carries the tag
	value    string // the tag's value
	daemon   bool   // RUNNING_PROCESS_IS_DAEMON=1
}

// envFrom reads an environ block as /proc gives it (NUL-terminated
// entries).
func envFrom(env []byte) envRead {
	if procfs.Overwritten(env) {
		return envRead{}
	}
	value, ok := procfs.Getenv(env, tag.Var)
	daemon, _ := procfs.Getenv(env, tag.DaemonVar)
	return envRead{readable: true, tagged: ok, value: value, daemon: daemon == "1"}
}

// registeredCheck is what reap checks of a process found through a
// registry, through its pin, besides its PID and start time: that it has
// not since taken another session's tag (an exec).
func registeredCheck(env envRead, value string) error {
	if env.tagged && env.value != value {
		return fmt.Errorf("it now carries another session's tag %q", env.value)
	}
	return nil
}

// registered lists what the registries of this user name of sessions
// whose contain run has ended: each process listed that still runs (the
// same PID and start time) and, by parentage, the processes those started
// since, with the session's value as their tag and Registered set.
// Processes in known (found by their tag) are not listed again. A process
// that carries another session's tag, the originator of a live session
// (live, and the contain runs whose registries show them running), and
// what those started (a nested contain run's processes, even where the
// registry lists them), are that other session's: neither listed nor
// followed. A daemon's children count as daemons, and so does a process the
// registry lists as spared (--allow-daemons).
func registered(known []session.Process, live map[int]string) ([]session.Process, error) {
	regs, err := readRegistries()
	if len(regs) == 0 {
		return nil, err
	}
	stop := make(map[int]bool, len(live))
	for pid := range live {
		stop[pid] = true
	}
	var orphaned []registryFile
	for _, r := range regs {
		switch {
		case r.headless:
		case registryAlive(r):
			stop[r.origin.PID] = true
		default:
			orphaned = append(orphaned, r)
		}
	}
	if len(orphaned) == 0 {
		return nil, err
	}
	entries, serr := proc.Scan()
	if serr != nil {
		return nil, errors.Join(err, serr)
	}
	return walkRegistered(orphaned, entries, known, stop, envOf, describeEntry), err
}

// walkRegistered is registered's choice over one scan of every process:
// env reads a process's environment, describe what ps shows of it.
func walkRegistered(orphaned []registryFile, entries []proc.Entry, known []session.Process, stop map[int]bool,
	env func(pid int) envRead, describe func(proc.Entry) (session.Process, bool)) []session.Process {
	byPID := make(map[int]proc.Entry, len(entries))
	children := map[int][]proc.Entry{}
	for _, e := range entries {
		byPID[e.PID] = e
		children[e.PPID] = append(children[e.PPID], e)
	}
	isKnown := make(map[proc.ID]bool, len(known))
	for _, p := range known {
		isKnown[proc.ID{PID: p.PID, Start: p.Start}] = true
	}
	listed := map[proc.ID]bool{}
	var out []session.Process
	type step struct {
		e      proc.Entry
		daemon bool // a daemon's descendant
	}
	// inside tells whether e is in the subtree of the originator of a live
	// session started inside r's (no earlier than r's contain run): a
	// nested contain run that still runs, whose processes r's run also
	// listed. Such a process is that session's. A live originator that
	// started before r's run (an outer contain run, the subreaper that
	// adopted r's orphans) holds r's session, and does not make its
	// processes its own.
	inside := func(r registryFile, e proc.Entry) bool {
		// A scan is not one instant: parents read at different moments
		// could make a loop; no chain is longer than the scan.
		p, ok := byPID[e.PPID]
		for n := 0; ok && p.PID > 1 && n < len(entries); n++ {
			if stop[p.PID] && p.Start >= r.origin.Start {
				return true
			}
			p, ok = byPID[p.PPID]
		}
		return false
	}
	for _, r := range orphaned {
		var queue []step
		for _, m := range r.members {
			if e, ok := byPID[m.PID]; ok && e.Start == m.Start && !e.Zombie && !inside(r, e) {
				queue = append(queue, step{e: e, daemon: r.spared[m]})
			}
		}
		visited := map[proc.ID]bool{}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			id := proc.ID{PID: s.e.PID, Start: s.e.Start}
			if visited[id] || stop[s.e.PID] || s.e.PID <= 1 {
				continue
			}
			visited[id] = true
			ev := env(s.e.PID)
			if ev.tagged && ev.value != r.value {
				continue // another session's
			}
			daemon := s.daemon || ev.daemon
			if !isKnown[id] && !listed[id] {
				p, ok := describe(s.e)
				if !ok {
					continue // gone
				}
				p.Value, p.Registered, p.Daemon = r.value, true, daemon
				out = append(out, p)
				listed[id] = true
			}
			for _, c := range children[s.e.PID] {
				if !c.Zombie && c.Start >= s.e.Start {
					queue = append(queue, step{e: c, daemon: daemon})
				}
			}
		}
	}
	return out
}

// ListForReap lists the tagged processes, as ListTagged does, and adds
// what the registries of contain's own sessions name of sessions whose
// contain run has ended (Registered processes): reap finds those even
// when their environment cannot show the tag. A registry that cannot be
// read is said in Listing.Registry; the rest is used.
func ListForReap() (proc.Listing, error) {
	l, err := proc.ListTagged()
	if err != nil {
		return l, err
	}
	live := session.LiveOriginators(session.Group(l.Procs, l.Lookup))
	reg, err := registered(l.Procs, live)
	l.Procs = append(l.Procs, reg...)
	l.Registry = err
	return l, nil
}

// PruneRegistries removes this user's registries that name nothing any
// more: their contain run has ended and none of the processes they list
// runs. It returns how many it removed.
func PruneRegistries() (int, error) {
	regs, err := readRegistries()
	n := 0
	for _, r := range regs {
		if registryAlive(r) || anyLives(r.members) {
			continue
		}
		dfd, derr := openRegistryDir(r.dir, false)
		if derr != nil {
			err = errors.Join(err, derr)
			continue
		}
		if uerr := unix.Unlinkat(dfd, r.name, 0); uerr == nil {
			n++
		} else if uerr != unix.ENOENT {
			err = errors.Join(err, &os.PathError{Op: "remove", Path: filepath.Join(r.dir, r.name), Err: uerr})
		}
		unix.Close(dfd)
	}
	return n, err
}

// anyLives reports whether one of ids runs.
func anyLives(ids []proc.ID) bool {
	for _, id := range ids {
		if proc.Lives(id) {
			return true
		}
	}
	return false
}

// joinEnv makes an environ block of entries (macOS gives them split).
func joinEnv(env []string) []byte {
	var b bytes.Buffer
	for _, kv := range env {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	return b.Bytes()
}
