package ports

// Runs on Windows (under Wine here, tests/wine_test.go).

import (
	"net"
	"os"
	"slices"
	"testing"
)

// TestWindowsListening: what this process listens on, on ports the kernel
// picked, IPv4 and IPv6, TCP and UDP, as the IP Helper tables say.
func TestWindowsListening(t *testing.T) {
	var want []Port
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l4.Close()
	a := l4.Addr().(*net.TCPAddr).AddrPort()
	want = append(want, Port{Proto: "tcp", Addr: a.Addr(), Port: a.Port()})
	if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		defer l6.Close()
		a := l6.Addr().(*net.TCPAddr).AddrPort()
		want = append(want, Port{Proto: "tcp", Addr: a.Addr(), Port: a.Port()})
	}
	u4, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u4.Close()
	ua := u4.LocalAddr().(*net.UDPAddr).AddrPort()
	want = append(want, Port{Proto: "udp", Addr: ua.Addr(), Port: ua.Port()})

	r := Listening([]int{os.Getpid()})
	got, ok := r.Known(os.Getpid())
	if !ok {
		t.Fatalf("own ports unknown: %v", r.Unknown)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%v missing from %v", w, got)
		}
	}
	hs, err := Holders(a.Port())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(hs, func(h Holder) bool { return h.PID == os.Getpid() }) {
		t.Errorf("Holders(%d) = %v, without this process", a.Port(), hs)
	}
}
