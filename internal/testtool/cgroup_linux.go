package testtool

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/contain-cli/contain/internal/cgroup"
)

// DelegatedCgroup makes a cgroup below the caller's own, named
// prefix-RANDOM, delegated to uid as systemd delegates one (the directory
// and its cgroup.procs, cgroup.threads and cgroup.subtree_control are
// the user's), and removes it when tb's test (or benchmark) and its
// subtests are done, killing what is left in it first. It needs root and
// a writable cgroup v2 hierarchy.
func DelegatedCgroup(tb testing.TB, prefix string, uid int) (string, error) {
	own, err := cgroup.OwnDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(own, prefix+"-")
	if err != nil {
		return "", err
	}
	tb.Cleanup(func() {
		if err := RemoveCgroup(dir); err != nil {
			tb.Errorf("cannot remove the delegated cgroup: %v", err)
		}
	})
	for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
		if err := os.Chown(filepath.Join(dir, f), uid, uid); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// RemoveCgroup kills what is left in cgroup dir and below it, and
// removes it, its children first, waiting up to 2 s for each to empty.
// It says the first that could not be removed.
func RemoveCgroup(dir string) error {
	os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var subs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			subs = append(subs, p)
		}
		return nil
	})
	var first error
	for i := len(subs) - 1; i >= 0; i-- {
		err := syscall.Rmdir(subs[i])
		for try := 0; err == syscall.EBUSY && try < 100; try++ {
			time.Sleep(20 * time.Millisecond)
			err = syscall.Rmdir(subs[i])
		}
		if err != nil && err != syscall.ENOENT && first == nil {
			first = fmt.Errorf("cannot remove %s: %w", subs[i], err)
		}
	}
	return first
}
