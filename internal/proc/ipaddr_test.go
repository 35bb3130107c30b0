package proc

import (
	"net/netip"
	"testing"
)

// TestFormatIP: as net/netip says each address (which contain run's
// packages may not import), mapped IPv4 addresses unmapped.
func TestFormatIP(t *testing.T) {
	for _, s := range []string{"0.0.0.0", "127.0.0.1", "255.255.255.255", "::", "::1", "1::", "fe80::1", "2001:db8::ff00:42:8329",
		"2001:db8:0:0:1:0:0:1", "2001:0:0:1:0:0:0:1", "1:2:3:4:5:6:7:8", "1:0:3:4:5:6:7:8", "::ffff:10.1.2.3", "::1.2.3.4", "64:ff9b::102:304"} {
		a := netip.MustParseAddr(s)
		want := a.Unmap().String()
		var got string
		if a.Is4() {
			b := a.As4()
			got = FormatIP(b[:])
		} else {
			b := a.As16()
			got = FormatIP(b[:])
		}
		if got != want {
			t.Errorf("FormatIP(%s) = %q, want %q", s, got, want)
		}
	}
	if FormatIP([]byte{1, 2}) != "" {
		t.Error("two bytes are no address")
	}
}
