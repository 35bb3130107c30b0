package proc

import (
	"syscall"
	"testing"
)

func TestIgnoresIn(t *testing.T) {
	const mask = 0x1002 // SIGINT and SIGPIPE (procfs.ParseStatusSigIgn reads it)
	for sig, want := range map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: false, syscall.Signal(13): true, syscall.SIGHUP: false, 0: false, 65: false} {
		if got := ignoresIn(mask, sig); got != want {
			t.Errorf("signal %d: ignored %v, want %v", sig, got, want)
		}
	}
}
