//go:build linux || darwin

package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

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
