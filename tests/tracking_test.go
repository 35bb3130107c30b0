//go:build linux

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The portable containment core alone: no cgroup, no subreaper, no shim
// and no Pdeathsig (CONTAIN_DISABLE=macos), so that what is left is the
// process group, the tracking of descendants by scans, the tag and the
// crash guard — exactly what contain has on macOS. Every test runs as root
// and as nobody.

// trackingOnly turns the cgroup and contain's own subreaper off: the shim
// (a subreaper above COMMAND) still holds the session, as for an ordinary
// user whose contain could not be a subreaper.
var trackingOnly = "CONTAIN_DISABLE=cgroup,subreaper"

// macOSLayers leaves exactly macOS's layers.
var macOSLayers = "CONTAIN_DISABLE=macos"

// trackingModes are the users the tests run as, with macOS's layers.
func trackingModes(t *testing.T) []runOpts {
	if os.Geteuid() != 0 {
		return []runOpts{{env: []string{macOSLayers}}}
	}
	return []runOpts{{env: []string{macOSLayers}}, {env: []string{macOSLayers}, asNobody: true}}
}

func modeName(o runOpts) string {
	if o.asNobody {
		return "nobody"
	}
	return fmt.Sprintf("uid %d", os.Geteuid())
}

// TestTrackingClosesTheGroup: COMMAND exits, leaving every kind of
// escapee; contain returns only once none is left, and says it had only
// the tracking.
func TestTrackingClosesTheGroup(t *testing.T) {
	t.Parallel()
	for _, o := range trackingModes(t) {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			res := run(t, o, "run", "-v", "-g", "0.5", "--", "sh", "-c", escapees(dir))
			pids := map[string]int{}
			for _, kind := range escapeeKinds {
				pids[kind] = readPID(t, dir, kind)
				killOnCleanup(t, pids[kind])
			}
			wantCode(t, res, 0)
			for _, kind := range escapeeKinds {
				if alive(pids[kind]) {
					t.Errorf("%s %d is still there after contain returned", kind, pids[kind])
				}
			}
			// What macOS has, and nothing more: no Pdeathsig, no shim.
			if !strings.Contains(res.stderr, "containment: process group, tracking\n") || strings.Contains(res.stderr, "shim:") {
				t.Errorf("verbose output does not show the tracking alone:\n%s", res.stderr)
			}
			if left := tagged(fmt.Sprintf("CONTAIN:%d", res.pid)); len(left) > 0 {
				t.Errorf("processes tagged with this session are left: %v", left)
			}
			if want := fmt.Sprintf("killed %d", pids["ignoresterm"]); !strings.Contains(res.stderr, want) {
				t.Errorf("verbose output does not say %q:\n%s", want, res.stderr)
			}
		})
	}
	// Without contain the same escapees survive: the checks above can fail,
	// and the cleared one is beyond every other means (no tag, no group).
	t.Run("control without contain", func(t *testing.T) {
		pids := survivors(t, escapees, escapeeKinds)
		if env := environOf(t, pids["cleared"]); env["PATH"] != "" || env["HOME"] != "" {
			t.Errorf("control: the cleared escapee's environment was not cleared: %v", env)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// TestTrackingTimeout: the timeout closes the whole group too (124), a
// leftover that forks all the time included.
func TestTrackingTimeout(t *testing.T) {
	t.Parallel()
	for _, o := range trackingModes(t) {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			script := fmt.Sprintf(`setsid env -i /bin/sh -c 'echo $$ > %s/forker; trap "" TERM; while :; do (sleep 300 &); sleep 0.01; done' & sleep 300`, dir)
			res := run(t, o, "run", "-t", "0.5", "-g", "0.2", "--", "sh", "-c", script)
			forker := readPID(t, dir, "forker")
			killOnCleanup(t, forker)
			wantCode(t, res, 124)
			if alive(forker) {
				t.Errorf("the forking escapee %d survived", forker)
			}
			if left := sessionMembers(forker); len(left) > 0 {
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Errorf("%d processes of the escapee's session survived: %v", len(left), left)
			}
		})
	}
}

// sessionMembers lists the live processes of session sid.
func sessionMembers(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestTrackingCrash: contain killed with SIGKILL; the guard, told of every
// process the tracking found, ends them all within a second, the cleared
// double fork included.
func TestTrackingCrash(t *testing.T) {
	t.Parallel()
	for _, o := range trackingModes(t) {
		t.Run(modeName(o), func(t *testing.T) {
			dir := sharedDir(t)
			cmd, stderr, wait := startContainLive(t, o, "run", "-v", "--", "sh", "-c", crashTree(dir, "cleared"))
			waitFor(t, "the tree to be ready", 10*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "ready"))
				return len(b) > 0
			})
			pids := map[string]int{"command": readPID(t, dir, "ready")}
			for _, kind := range append(crashKinds, "cleared") {
				pids[kind] = readPID(t, dir, kind)
			}
			for _, pid := range pids {
				killOnCleanup(t, pid)
			}
			guard := guardPID(t, stderr)
			killOnCleanup(t, guard)
			// The cleared one's parent must have exited: then only what
			// contain saw links it to the session.
			parent := readPID(t, dir, "clearedparent")
			waitFor(t, "the cleared escapee to be orphaned", 5*time.Second, func() bool { return !alive(parent) })
			killAndWaitGone(t, cmd, wait, pids, fmt.Sprintf("CONTAIN:%d", cmd.Process.Pid))
			waitFor(t, "the guard to exit", 2*time.Second, func() bool { return !alive(guard) })
		})
	}
}
