//go:build linux

package tests

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLeftoverNotice: a CI step whose script forgot its servers passes,
// and contain run says, in one line on stderr, what it ended: how many,
// their names. -q says nothing; contain timeout stays as silent as GNU
// timeout; a run that left nothing says nothing; -v says more instead.
// As root (the cgroup holds them) and as nobody (the shim and the
// tracking), with real daemons: redis writes its title over its argv,
// nginx leaves a master and its workers.
func TestLeftoverNotice(t *testing.T) {
	t.Parallel()
	const left = `sleep 300 & (setsid sleep 301 &) ; exit 0`
	for _, who := range []struct {
		name string
		o    runOpts
	}{{"root", runOpts{}}, {"nobody", runOpts{asNobody: true}}} {
		t.Run(who.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, who.o, "run", "--", "sh", "-c", left)
			// setsid's child may not have exec'd sleep yet when the
			// close names it.
			want := regexp.MustCompile(`^contain: ended 2 processes that sh left running \((2 sleep|sleep, setsid|setsid, sleep)\); -v says more, -q nothing\n$`)
			if res.code != 0 || !want.MatchString(res.stderr) {
				t.Errorf("status %d, stderr %q; want 0, %s", res.code, res.stderr, want)
			}
			for _, c := range [][]string{
				{"run", "-q", "--", "sh", "-c", left},
				{"run", "--quiet", "--", "sh", "-c", left},
				{"timeout", "60", "sh", "-c", left},
				{"run", "--", "sh", "-c", "exit 0"},
			} {
				if res := run(t, who.o, c...); res.code != 0 || res.stderr != "" {
					t.Errorf("%q: status %d, stderr %q; want 0 and nothing", c, res.code, res.stderr)
				}
			}
			// Ended by the timeout, not left running: the status says it.
			if res := run(t, who.o, "run", "-t", "0.3", "--", "sh", "-c", "sleep 300 & (setsid sleep 301 &); sleep 300"); res.code != 124 || res.stderr != "" {
				t.Errorf("timed out: status %d, stderr %q; want 124 and nothing", res.code, res.stderr)
			}
			res = run(t, who.o, "run", "-v", "--", "sh", "-c", left)
			if res.code != 0 || strings.Contains(res.stderr, "left running") || !strings.Contains(res.stderr, "leftover") {
				t.Errorf("-v: status %d, stderr %q; want -v's own lines only", res.code, res.stderr)
			}
		})
	}
	t.Run("redis and nginx", func(t *testing.T) {
		t.Parallel()
		var script []string
		var names []string
		for _, d := range crashDaemons {
			if d.name != "redis" && d.name != "nginx" {
				continue
			}
			if !needTool(t, d.bin, d.pkg) {
				return
			}
			script = append(script, d.start)
		}
		names = append(names, "redis-server", "nginx")
		dir := t.TempDir()
		res := run(t, runOpts{env: []string{"D=" + dir, "ROOT=1"}}, "run", "--", "sh", "-c", strings.Join(script, "\n")+"\nexit 0")
		lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
		if res.code != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: ended ") || !strings.Contains(lines[0], "that sh left running") {
			t.Fatalf("status %d, stderr %q; want 0 and one line", res.code, res.stderr)
		}
		for _, n := range names {
			if !strings.Contains(lines[0], n) {
				t.Errorf("the line does not name %s: %q", n, lines[0])
			}
		}
	})
}

// TestVerboseNamesEachOnce: with -v, a process that a request to stop
// sent SIGTERM, and that was still ending when COMMAND had ended, is not
// sent SIGTERM again by the close, nor named twice; the report still says
// it ended after SIGTERM.
func TestVerboseNamesEachOnce(t *testing.T) {
	t.Parallel()
	if !needTool(t, "perl", "perl-base") {
		return
	}
	dir := t.TempDir()
	// perl ends half a second after SIGTERM, in its own process (a
	// shell's trap would start a sleep, a new process for the close).
	script := `perl -e '$SIG{TERM} = sub { select(undef, undef, undef, 0.5); exit 0 }; open(F, ">", "` + dir + `/slow"); print F "$$\n"; close(F); sleep 300' & sleep 300`
	cmd, wait := startContain(t, runOpts{}, "run", "-v", "--", "sh", "-c", script)
	slow := readPID(t, dir, "slow")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := wait()
	wantCode(t, res, 128+15)
	lines := 0
	for _, l := range strings.Split(res.stderr, "\n") {
		if strings.Contains(l, "sending SIGTERM to ") && strings.Contains(l, " "+strconv.Itoa(slow)+" (") {
			lines++
		}
	}
	if lines != 1 {
		t.Errorf("%d lines send SIGTERM to %d, want 1:\n%s", lines, slow, res.stderr)
	}
	if !strings.Contains(res.stderr, "exited 0 after SIGTERM") {
		t.Errorf("the summary does not say the slow one exited after SIGTERM:\n%s", res.stderr)
	}
}
