package ports

// Runs on Windows (under Wine here, tests/wine_test.go).

import (
	"slices"
	"testing"

	"golang.org/x/sys/windows"
)

// TestWindowsListening: what this process listens on, on ports the kernel
// picked, IPv4 and IPv6, TCP and UDP, as the IP Helper tables say.
func TestWindowsListening(t *testing.T) {
	want := tcpListeners(t)
	// A UDP socket made without Go's net, which sets SIO_UDP_CONNRESET,
	// an ioctl Wine refuses.
	u4, err := windows.Socket(windows.AF_INET, windows.SOCK_DGRAM, windows.IPPROTO_UDP)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.Closesocket(u4)
	if err := windows.Bind(u4, &windows.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := windows.Getsockname(u4)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, Port{Proto: "udp", Addr: "127.0.0.1", Port: uint16(sa.(*windows.SockaddrInet4).Port)})

	// Every port is in the tables, whoever owns it.
	for _, w := range want {
		hs, err := Holders(w.Port)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(hs, func(h Holder) bool { return h.Port == w }) {
			t.Errorf("Holders(%d) = %v, without %v", w.Port, hs, w)
		}
	}
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		t.Skip("TestWindowsListening under Wine: Wine's tables give every socket owner PID 0, so which process listens is checked on Windows alone")
	}
	wantOwn(t, want)
}
