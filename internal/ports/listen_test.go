package ports

import (
	"net"
	"os"
	"slices"
	"testing"
)

// tcpListeners listens on TCP ports the kernel picks, on 127.0.0.1 and,
// where the machine has IPv6, on [::1], until the test ends, and returns
// them as Ports.
func tcpListeners(t *testing.T) []Port {
	t.Helper()
	var out []Port
	for _, c := range [][2]string{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		l, err := net.Listen(c[0], c[1])
		if err != nil {
			if c[0] == "tcp4" {
				t.Fatal(err)
			}
			t.Logf("no IPv6 here: %v", err)
			continue
		}
		t.Cleanup(func() { l.Close() })
		a := l.Addr().(*net.TCPAddr).AddrPort()
		out = append(out, Port{Proto: "tcp", Addr: a.Addr().Unmap().String(), Port: a.Port()})
	}
	return out
}

// wantOwn checks that Listening says this process listens on each of
// want.
func wantOwn(t *testing.T, want []Port) {
	t.Helper()
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
}
