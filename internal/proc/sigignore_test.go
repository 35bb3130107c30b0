package proc

import (
	"syscall"
	"testing"
)

func TestParseSigIgn(t *testing.T) {
	status := []byte("Name:\tcontain\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001002\nSigCgt:\tfffffffd7fc3fefd\n")
	mask, err := parseSigIgn(status)
	if err != nil || mask != 0x1002 {
		t.Fatalf("mask %x, %v", mask, err)
	}
	for sig, want := range map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: false, syscall.Signal(13): true, syscall.SIGHUP: false, 0: false, 65: false} {
		if got := ignoresIn(mask, sig); got != want {
			t.Errorf("signal %d: ignored %v, want %v", sig, got, want)
		}
	}
	if _, err := parseSigIgn([]byte("Name:\tx\n")); err == nil {
		t.Error("a status with no SigIgn line parsed")
	}
}
