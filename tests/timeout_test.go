//go:build linux

package tests

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// gnuTimeoutCases are the cases of coreutils' own tests of GNU timeout
// (tests/timeout/timeout.sh and timeout-parameters.sh: exit statuses,
// durations, the kill delay, bad input), and the option forms its
// getopt_long accepts, in GNU timeout's syntax: each runs as
// `contain timeout ARGS`, and against GNU timeout itself where it is
// installed, and the two must exit alike.
//
// newer: what later coreutils do, where the one installed (Debian 12's
// 9.1) differs: -f and -p came with 9.6, and 9.1 took 1e-10000 as 0.
var gnuTimeoutCases = []struct {
	name  string
	args  []string
	want  int
	newer bool
}{
	{"no timeout", []string{"10", "true"}, 0, false},
	{"no timeout, with a unit", []string{"1d", "true"}, 0, false},
	{"timeout 0 disables", []string{"0", "true"}, 0, false},
	{"status passed on", []string{"10", "sh", "-c", "exit 2"}, 2, false},
	{"timed out", []string{".1", "sleep", "10"}, 124, false},
	{"--preserve-status", []string{"--preserve-status", ".1", "sleep", "10"}, 128 + 15, false},
	{"--kill-after not needed", []string{"--kill-after=1", ".1", "sleep", "10"}, 124, false},
	{"-s KILL", []string{"-s", "KILL", ".1", "sleep", "10"}, 137, false},
	{"-k when TERM is ignored", []string{"-k", ".1", ".1", "sh", "-c", "trap '' TERM; sleep 10"}, 137, false},
	{"killed by its own signal", []string{"10", "sh", "-c", "kill -USR1 $$"}, 128 + 10, false},
	{"invalid duration", []string{"invalid", "sleep", "0"}, 125, false},
	{"invalid kill delay", []string{"--kill-after=invalid", "1", "sleep", "0"}, 125, false},
	{"invalid unit", []string{"42D", "sleep", "0"}, 125, false},
	{"a fraction", []string{"10.34", "sleep", "0"}, 0, false},
	{"nanoseconds", []string{"9.999999999", "sleep", "0"}, 0, false},
	{"an underflow rounds up to 1 ns", []string{"1e-10000", "sleep", "10"}, 124, true},
	{"invalid signal", []string{"--signal=invalid", "1", "sleep", "0"}, 125, false},
	{"cannot execute", []string{"10", "."}, 126, false},
	{"not found", []string{"10", "no_such_command_anywhere"}, 127, false},
	{"missing COMMAND", []string{"10"}, 125, false},
	// getopt_long's forms
	{"-k5 -sKILL", []string{"-k5", "-sKILL", ".1", "sleep", "10"}, 137, false},
	{"--kill-after=.1 when TERM is ignored", []string{"--kill-after=.1", ".1", "sh", "-c", "trap '' TERM; sleep 10"}, 137, false},
	{"--kill-after .1, its value apart", []string{"--kill-after", ".1", ".1", "sh", "-c", "trap '' TERM; sleep 10"}, 137, false},
	{"bundled -vs KILL", []string{"-vs", "KILL", ".1", "sleep", "10"}, 137, false},
	{"bundled -vsKILL", []string{"-vsKILL", ".1", "sleep", "10"}, 137, false},
	{"bundled -pk1", []string{"-pk1", ".1", "sleep", "10"}, 128 + 15, true},
	{"abbreviated --sig=KILL", []string{"--sig=KILL", ".1", "sleep", "10"}, 137, false},
	{"abbreviated --preserve", []string{"--preserve", ".1", "sleep", "10"}, 128 + 15, false},
	{"-f", []string{"-f", ".1", "sleep", "10"}, 124, true},
	{"--foreground", []string{"--foreground", ".1", "sleep", "10"}, 124, false},
	{"-- before DURATION", []string{"--", ".1", "sleep", "10"}, 124, false},
	{"COMMAND's options stay COMMAND's", []string{"10", "sh", "-c", "exit $#", "sh", "-k", "5", "--bogus"}, 3, false},
	{"unknown option", []string{"--bogus", "1", "true"}, 125, false},
	{"options after COMMAND are COMMAND's", []string{"1", "true", "-s"}, 0, false},
}

// TestTimeoutCommandAsGNUTimeout: contain timeout exits as GNU timeout
// does on coreutils' own cases, in every option form getopt_long takes.
func TestTimeoutCommandAsGNUTimeout(t *testing.T) {
	t.Parallel()
	gnu, _ := exec.LookPath("timeout")
	for _, c := range gnuTimeoutCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, runOpts{}, append([]string{"timeout"}, c.args...)...)
			if res.code != c.want {
				t.Errorf("contain timeout %q: status %d, want %d (stderr %q)", c.args, res.code, c.want, res.stderr)
			}
			if c.want == 125 && (strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "contain: ")) {
				t.Errorf("contain timeout %q: stderr %q, want one line", c.args, res.stderr)
			}
			if gnu == "" || c.newer {
				return
			}
			if code := exitOf(exec.Command(gnu, c.args...).Run()); code != c.want {
				t.Errorf("GNU timeout %q: status %d, want %d: the case is wrong", c.args, code, c.want)
			}
		})
	}
}

// exitOf is the status a shell would see of a command that ended with err.
func exitOf(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// TestRunTakesGetoptForms: contain run takes its options in every form
// GNU getopt_long takes (attached values, bundles, --name=value,
// abbreviations), and Docker's names for the limits; an ambiguous
// abbreviation and an unknown letter in a bundle are refused in one line.
func TestRunTakesGetoptForms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"-k5", "-sKILL", "-t.1", "--", "sleep", "10"}, 137, ""},
		{[]string{"-t1", "--kill-after=.1", "--", "sh", "-c", "trap '' TERM; sleep 10"}, 137, ""},
		{[]string{"-vt", ".1", "--", "sleep", "10"}, 124, "timeout after 100ms"},
		{[]string{"-vt.1", "sleep", "10"}, 124, "timeout after 100ms"},
		{[]string{"--time=.1", "--", "sleep", "10"}, 124, ""},
		{[]string{"-t=.1", "--", "sleep", "10"}, 124, ""},
		{[]string{"-timeout", ".1", "--", "sleep", "10"}, 124, ""},
		{[]string{"-oMINE", "--", "sh", "-c", `test "${RUNNING_PROCESS_ORIGINATOR%%:*}" = MINE`}, 0, ""},
		{[]string{"-m", "1G", "--pids-limit", "100", "--", "true"}, 0, ""},
		{[]string{"-m1G", "--pids-limit=100", "--", "true"}, 0, ""},
		{[]string{"--p", "5", "--", "true"}, 125, "contain: run: option --p is ambiguous (could be --preserve-status, --pids) (see contain run --help)\n"},
		{[]string{"--o", "X", "--", "true"}, 125, "contain: run: option --o is ambiguous (could be --originator, --on-timeout) (see contain run --help)\n"},
		{[]string{"-vx", "--", "true"}, 125, "contain: run: unknown option -x in -vx (see contain run --help)\n"},
		{[]string{"-vt"}, 125, "contain: run: option -t needs a value (see contain run --help)\n"},
		{[]string{"--verbose=maybe", "true"}, 125, "contain: run: option --verbose takes no value (given \"maybe\") (see contain run --help)\n"},
		{[]string{"-m", "-1", "true"}, 125, "--memory"},
	} {
		res := run(t, runOpts{}, append([]string{"run"}, c.args...)...)
		if res.code != c.want || (strings.HasSuffix(c.says, "\n") && res.stderr != c.says) || !strings.Contains(res.stderr, c.says) {
			t.Errorf("contain run %q: status %d, stderr %q; want %d and %q", c.args, res.code, res.stderr, c.want, c.says)
		}
	}
}

// TestRunDurationAsCommandHints: contain run 5 sleep 10, GNU timeout's
// habit, fails as COMMAND "5" not found (127) and says what was meant.
func TestRunDurationAsCommandHints(t *testing.T) {
	t.Parallel()
	res := run(t, runOpts{}, "run", "5", "sleep", "10")
	wantCode(t, res, 127)
	wantOneErrorLine(t, res.stderr, "did you mean contain run -t 5 -- sleep 10, or contain timeout 5 sleep 10?")
	// Not where the missing COMMAND is no duration.
	res = run(t, runOpts{}, "run", "no_such_command_anywhere", "10")
	wantCode(t, res, 127)
	if strings.Contains(res.stderr, "did you mean") {
		t.Errorf("stderr %q: a hint for a COMMAND that is no duration", res.stderr)
	}
}

// TestTimeoutTalksAsGNU: where scripts read contain timeout's stderr, it
// says what GNU timeout says. -v is one line per signal the timeout sends
// (none when COMMAND ends first), contain's own lines need -vv; a COMMAND
// that is empty or not found is GNU's 127 and one line naming it once,
// with no Go words; -t is not contain timeout's (DURATION is).
func TestTimeoutTalksAsGNU(t *testing.T) {
	t.Parallel()
	c := []string{"LANG=C", "LC_ALL=", "LC_CTYPE="}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"-v, timed out", []string{"-v", ".1", "sleep", "30"}, 124, "contain: sending signal TERM to command 'sleep'\n"},
		{"-v -s INT", []string{"-v", "-s", "INT", ".1", "sleep", "30"}, 124, "contain: sending signal INT to command 'sleep'\n"},
		{"-v, then killed", []string{"-v", "-k", ".2", ".1", "sh", "-c", "trap '' TERM; sleep 30"}, 137, "contain: sending signal TERM to command 'sh'\ncontain: sending signal KILL to command 'sh'\n"},
		{"-v, no timeout", []string{"-v", "10", "true"}, 0, ""},
		{"empty COMMAND", []string{"5", ""}, 127, "contain: failed to run command '': No such file or directory\n"},
		{"not found", []string{"5", "no_such_command_anywhere"}, 127, "contain: failed to run command 'no_such_command_anywhere': No such file or directory\n"},
		{"-t is refused", []string{"-t", "5", "5", "true"}, 125, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, runOpts{env: c}, append([]string{"timeout"}, tc.args...)...)
			if res.code != tc.code || (tc.stderr != "" || tc.code == 0) && res.stderr != tc.stderr {
				t.Errorf("contain timeout %q: status %d, stderr %q; want %d, %q", tc.args, res.code, res.stderr, tc.code, tc.stderr)
			}
		})
	}
	t.Run("UTF-8 quotes", func(t *testing.T) {
		t.Parallel()
		res := run(t, runOpts{env: []string{"LC_ALL=C.UTF-8"}}, "timeout", "-v", ".1", "sleep", "30")
		if want := "contain: sending signal TERM to command ‘sleep’\n"; res.code != 124 || res.stderr != want {
			t.Errorf("status %d, stderr %q; want 124, %q", res.code, res.stderr, want)
		}
	})
	t.Run("-vv adds contain's own lines", func(t *testing.T) {
		t.Parallel()
		res := run(t, runOpts{env: c}, "timeout", "-vv", ".1", "sleep", "30")
		if res.code != 124 || !strings.Contains(res.stderr, "contain: sending signal TERM to command 'sleep'\n") || !strings.Contains(res.stderr, "contain: done: ") {
			t.Errorf("status %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("a long name is said once", func(t *testing.T) {
		t.Parallel()
		name := strings.Repeat("n", 5000)
		for _, cmd := range []string{"timeout", "run"} {
			args := []string{cmd, "5", name}
			if cmd == "run" {
				args = []string{cmd, "--", name}
			}
			res := run(t, runOpts{env: c}, args...)
			if res.code != 127 || strings.Count(res.stderr, name) != 1 || strings.Count(res.stderr, "\n") != 1 || strings.Contains(res.stderr, "exec:") || len(res.stderr) > len(name)+100 {
				t.Errorf("contain %s 5 <5,000 characters>: status %d, stderr of %d bytes naming it %d times: %.120q", cmd, res.code, len(res.stderr), strings.Count(res.stderr, name), res.stderr)
			}
		}
	})
	t.Run("help lists no --timeout", func(t *testing.T) {
		t.Parallel()
		res := run(t, runOpts{}, "timeout", "--help")
		if res.code != 0 || strings.Contains(res.stdout, "--timeout") || !strings.Contains(res.stdout, "--kill-after") {
			t.Errorf("contain timeout --help: status %d:\n%s", res.code, res.stdout)
		}
	})
}
