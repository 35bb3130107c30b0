package proc

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// macSocketFixture lays out a struct socket_fdinfo as socketinfo.go's
// offsets say xnu does.
func macSocketFixture(kind, typ, state int32, fport uint32, lport uint16, vflag byte, laddr netip.Addr) []byte {
	b := make([]byte, macSocketFDInfoSize)
	le := binary.LittleEndian
	le.PutUint32(b[macSoiKind:], uint32(kind))
	le.PutUint32(b[macSoiType:], uint32(typ))
	in := b[macSoiProto:]
	le.PutUint32(in[0:], fport)
	binary.BigEndian.PutUint16(in[4:], lport)
	in[24] = vflag
	if laddr.Is4() {
		a := laddr.As4()
		copy(in[48+12:], a[:])
	} else if laddr.IsValid() {
		a := laddr.As16()
		copy(in[48:], a[:])
	}
	le.PutUint32(in[80:], uint32(state))
	return b
}

func TestParseMacSocket(t *testing.T) {
	v4, v6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	for _, c := range []struct {
		name string
		b    []byte
		want MacListener
	}{
		{"tcp listen v4", macSocketFixture(macSockinfoTCP, 1, macTCPListen, 0, 3000, macINIv4, v4), MacListener{"tcp", "127.0.0.1", 3000}},
		{"tcp listen v6", macSocketFixture(macSockinfoTCP, 1, macTCPListen, 0, 8080, macINIv6, v6), MacListener{"tcp", "::1", 8080}},
		{"tcp listen dual stack", macSocketFixture(macSockinfoTCP, 1, macTCPListen, 0, 8081, macINIv4|macINIv6, netip.IPv6Unspecified()), MacListener{"tcp", "::", 8081}},
		{"tcp established", macSocketFixture(macSockinfoTCP, 1, 4, 0x5000, 3000, macINIv4, v4), MacListener{}},
		{"udp bound", macSocketFixture(macSockinfoIn, macSockDgram, 0, 0, 5353, macINIv4, netip.IPv4Unspecified()), MacListener{"udp", "0.0.0.0", 5353}},
		{"udp connected", macSocketFixture(macSockinfoIn, macSockDgram, 0, 0x3500, 5353, macINIv4, v4), MacListener{}},
		{"unix", macSocketFixture(3, 1, 0, 0, 0, 0, netip.Addr{}), MacListener{}},
	} {
		got, err := ParseMacSocket(c.b)
		if err != nil || got != c.want {
			t.Errorf("%s: ParseMacSocket = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := ParseMacSocket(make([]byte, 100)); err == nil {
		t.Error("a short buffer is no socket_fdinfo")
	}
}
