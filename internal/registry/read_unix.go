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
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/tag"
)

// File is one registry as read.
type File struct {
	Dir     string
	Name    string
	Value   string    // the session's tag
	Origin  proc.ID   // contain run
	Members []proc.ID // COMMAND first, the spared daemons too
	Spared  map[proc.ID]bool
	// Marker is the identity of the session's marker (package marker;
	// 0: none): every process that holds it is the session's.
	Marker uint64
	// Lineage are the members' lineages (macOS: unique ID and
	// pidversion), for what they forked.
	Lineage []proc.MacIDs
	// Ended: the run ended cleanly (its end line), the registry kept for
	// the daemons it spared. It lists the whole session.
	Ended   bool
	Touched time.Time // its modification time: contain ran until about then
	// Headless: contain died between creating the file and writing its
	// header. It names no process; PruneRegistries removes it.
	Headless bool
}

// errHeadless is a registry whose header was never written whole.
var errHeadless = errors.New("its header was never written")

// parseRegistry reads a registry's lines. The first two must be the
// header and the session; a line cut short (no newline: contain died
// while writing it) or malformed is left out, and so is a line of a kind
// this contain does not know (a later one's).
func parseRegistry(b []byte) (File, error) {
	var r File
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
	r.Value, r.Origin = f[1], proc.ID{PID: pid, Start: start}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == registryEnd {
			r.Ended = true
			continue
		}
		if len(f) == 3 && f[0] == registryLineage {
			uid, err1 := strconv.ParseUint(f[1], 10, 64)
			version, err2 := strconv.ParseInt(f[2], 10, 32)
			if err1 == nil && err2 == nil && uid != 0 {
				r.Lineage = append(r.Lineage, proc.MacIDs{UniqueID: uid, IDVersion: int32(version)})
			}
			continue
		}
		if len(f) == 2 && f[0] == registryMarker {
			if ino, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				r.Marker = ino
			}
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
		r.Members = append(r.Members, id)
		if f[0] == registrySpared {
			if r.Spared == nil {
				r.Spared = map[proc.ID]bool{}
			}
			r.Spared[id] = true
		}
	}
	return r, nil
}

// Read reads this user's registries, in every place they are
// kept. A place that does not exist, or that this user may not open, holds
// none; one that is unsafe, and a file that is not a registry, are skipped
// and said in the error.
func Read() ([]File, error) {
	var out []File
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
func readRegistryDir(dir string) ([]File, error) {
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
	var out []File
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
		var r File
		if err == nil {
			r, err = parseRegistry(b)
		}
		if errors.Is(err, errHeadless) {
			if proc.Lives(id) {
				continue // its contain is alive, and writing it
			}
			out = append(out, File{Dir: dir, Name: name, Origin: id, Headless: true})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, name), err))
			continue
		}
		r.Dir, r.Name, r.Touched = dir, name, touched
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

// Alive reports whether r's contain run still runs: its PID names
// a process that is not a zombie and started when it did. When that
// cannot be told, it counts as running: a registry is never used to
// signal anything while its contain may live.
func Alive(r File) bool {
	o, err := proc.LookupOriginator(0, r.Origin.PID)
	return err != nil || o.Exists && !o.Zombie && o.Start == r.Origin.Start
}
