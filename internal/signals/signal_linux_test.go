package signals

import (
	"syscall"
	"testing"
)

func TestRealtimeSignals(t *testing.T) {
	good := map[string]syscall.Signal{"RTMIN": 34, "SIGRTMIN": 34, "RTMIN+1": 35, "rtmin+30": 64, "RTMAX": 64, "RTMAX-2": 62, "RTMAX-30": 34, "64": 64}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"RTMIN+31", "RTMAX+1", "RTMIN-1", "RTMIN+", "RTMIN+-1", "RTMIN++1", "RTMINX", "65"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("ParseSignal(%q) = %v, want an error", in, got)
		}
	}
	for sig, want := range map[syscall.Signal]string{34: "SIGRTMIN", 36: "SIGRTMIN+2", 64: "SIGRTMIN+30"} {
		if got := Name(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}
