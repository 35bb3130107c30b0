package cgroup

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
	"github.com/contain-cli/contain/tag"
)

// Rel is dir as /proc/PID/cgroup shows it.
func Rel(dir string) string {
	mnt, root := MountOf(dir)
	rel := strings.TrimPrefix(dir, mnt)
	if root != "/" {
		rel = root + rel
	}
	if rel == "" {
		rel = "/"
	}
	return rel
}

// FindLeftovers walks the cgroup2 hierarchy for groups contain-PID
// whose contain run is gone (the PID does not exist, is a zombie, or
// started after the group's earliest process). Groups of running contains
// are not returned; groups this user cannot write are, marked skipped.
func FindLeftovers() ([]Leftover, error) {
	mnt, err := top()
	if err != nil {
		return nil, nil // no cgroup v2: contain never made one
	}
	var out []Leftover
	err = filepath.WalkDir(mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: nothing of ours can be there
		}
		if !d.IsDir() {
			return nil
		}
		pid, ns, ok := containCgroupPID(d.Name())
		if !ok {
			return nil
		}
		lc, leftover := inspectCgroup(path, pid, ns)
		if !leftover {
			return nil // a running contain's: a dead nested one may be below
		}
		out = append(out, lc)
		return fs.SkipDir // what is below goes with it
	})
	return out, err
}

// containCgroupPID parses the name contain gives its cgroups (RunName):
// the PID of its contain run, in the PID namespace ns (0: this contain's
// own; proc.NSOfName).
func containCgroupPID(name string) (pid int, ns uint64, ok bool) {
	n, ok := strings.CutPrefix(name, Prefix)
	// contain-PID.self: the leaf contain moved itself into to enable
	// controllers for its group (see Enable).
	n = strings.TrimSuffix(n, SelfSuffix)
	// contain-PID.scope: the systemd scope a run asked for its limits.
	n = strings.TrimSuffix(n, ScopeSuffix)
	n, nsPart, _ := strings.Cut(n, "-")
	if !ok || n == "" || n[0] == '0' {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(n)
	if err != nil || pid <= 0 || pid > tag.MaxPID {
		return 0, 0, false
	}
	if ns, ok = proc.NSOfName(nsPart); !ok {
		return 0, 0, false
	}
	return pid, ns, true
}

// inspectCgroup decides whether the group at dir of contain PID, of PID
// namespace ns, is left over.
func inspectCgroup(dir string, pid int, ns uint64) (Leftover, bool) {
	c := &Group{Dir: dir, FD: -1}
	procs, _ := c.Procs()
	lc := Leftover{Dir: dir, PID: pid, NS: ns, Procs: procs}
	var earliest uint64
	found := false
	for _, p := range procs {
		if st, err := proc.ReadStat(p, nil); err == nil && (!found || st.Start < earliest) {
			earliest, found = st.Start, true
		}
	}
	o, err := proc.LookupOriginator(ns, pid)
	switch {
	case err != nil:
		return lc, false // cannot tell: never reap
	case o.Exists && !o.Zombie && (!found || o.Start <= earliest):
		return lc, false // its contain runs (an empty group may be starting up)
	}
	if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil {
		lc.Skip = "not writable by this user"
	}
	return lc, true
}

// OfRun is the cgroup of contain run PID, if it is still there.
func OfRun(pid int) []Leftover {
	if dir, err := RunDir(pid); err == nil {
		if _, err := os.Stat(dir); err == nil {
			return []Leftover{{Dir: dir}}
		}
	}
	return nil
}

// At is the group at dir, found rather than made: not opened (no FD).
func At(dir string) *Group { return &Group{Dir: dir, rel: Rel(dir), FD: -1} }
