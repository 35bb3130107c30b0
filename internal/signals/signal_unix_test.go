//go:build unix

package signals

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseSignal(t *testing.T) {
	good := map[string]syscall.Signal{
		"TERM": unix.SIGTERM, "SIGTERM": unix.SIGTERM, "term": unix.SIGTERM, "sigterm": unix.SIGTERM,
		"15": unix.SIGTERM, "9": unix.SIGKILL, "KILL": unix.SIGKILL, "0": 0, "HUP": unix.SIGHUP,
		"INT": unix.SIGINT, "USR1": unix.SIGUSR1, "SIGUSR2": unix.SIGUSR2, "CONT": unix.SIGCONT,
		"WINCH": unix.SIGWINCH, "QUIT": unix.SIGQUIT, "ALRM": unix.SIGALRM,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := []string{"", "NOPE", "SIG", "-1", "+1", "1.5", "TERM ", " TERM", "SIGSIGTERM", "99999999999999999999"}
	for _, in := range bad {
		if got, err := Parse(in); err == nil {
			t.Errorf("ParseSignal(%q) = %v, want an error", in, got)
		}
	}
	if _, err := Parse("32"); maxSignal < 32 && err == nil {
		t.Errorf("ParseSignal(32) accepted above the OS's last signal %d", maxSignal)
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{unix.SIGTERM: "SIGTERM", unix.SIGKILL: "SIGKILL", 0: "0"} {
		if got := Name(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}
