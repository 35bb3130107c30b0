package ports

// Runs only on macOS (the CI workflow's runners).

import (
	"net"
	"os"
	"slices"
	"testing"
)

// TestDarwinListening: what this process listens on, on ports the kernel
// picked, IPv4 and IPv6, TCP and UDP, as proc_pidfdinfo says.
func TestDarwinListening(t *testing.T) {
	want := tcpListeners(t)
	u4, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u4.Close()
	ua := u4.LocalAddr().(*net.UDPAddr).AddrPort()
	want = append(want, Port{Proto: "udp", Addr: ua.Addr().String(), Port: ua.Port()})

	wantOwn(t, want)
	hs, err := Holders(want[0].Port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(hs, func(h Holder) bool { return h.PID == os.Getpid() }) {
		t.Errorf("Holders(%d) = %v, without this process", want[0].Port, hs)
	}
}
