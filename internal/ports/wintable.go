package ports

// The IP Helper's tables of sockets with their owning processes
// (GetExtendedTcpTable with TCP_TABLE_OWNER_PID_LISTENER,
// GetExtendedUdpTable with UDP_TABLE_OWNER_PID), parsed over bytes, so
// that they are tested on every OS. Each is a DWORD count, then rows of
// DWORDs and bytes (iprtrmib.h, tcpmib.h, udpmib.h):
//   - MIB_TCPROW_OWNER_PID: state, local address, local port, remote
//     address, remote port, owning PID (24 bytes);
//   - MIB_TCP6ROW_OWNER_PID: local address [16], scope, local port,
//     remote address [16], scope, remote port, state, owning PID (56);
//   - MIB_UDPROW_OWNER_PID: local address, local port, owning PID (12);
//   - MIB_UDP6ROW_OWNER_PID: local address [16], scope, local port,
//     owning PID (28).
// An address is in network order as it lies in memory; a port is a
// DWORD whose first two bytes are the port in network order.

import (
	"encoding/binary"
	"fmt"

	"github.com/contain-cli/contain/internal/proc"
)

// winTable says how to read one of the four tables.
type winTable struct {
	proto         string
	row           int // the row's size
	addr, addrLen int // where the local address is, 4 or 16 bytes
	port, pid     int
}

var (
	winTCP4 = winTable{proto: "tcp", row: 24, addr: 4, addrLen: 4, port: 8, pid: 20}
	winTCP6 = winTable{proto: "tcp", row: 56, addr: 0, addrLen: 16, port: 20, pid: 52}
	winUDP4 = winTable{proto: "udp", row: 12, addr: 0, addrLen: 4, port: 4, pid: 8}
	winUDP6 = winTable{proto: "udp", row: 28, addr: 0, addrLen: 16, port: 20, pid: 24}
)

// parseWinTable reads a table's rows (the listener table has only
// listening TCP sockets; every UDP socket it lists is bound).
func parseWinTable(b []byte, t winTable) ([]Holder, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%s table of %d bytes", t.proto, len(b))
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 0 || 4+n*t.row > len(b) {
		return nil, fmt.Errorf("%s table: %d rows of %d bytes in %d bytes", t.proto, n, t.row, len(b))
	}
	out := make([]Holder, 0, n)
	for i := range n {
		r := b[4+i*t.row : 4+(i+1)*t.row]
		a := proc.FormatIP(r[t.addr : t.addr+t.addrLen])
		port := binary.BigEndian.Uint16(r[t.port:])
		if port == 0 {
			continue
		}
		out = append(out, Holder{PID: int(binary.LittleEndian.Uint32(r[t.pid:])), Port: Port{Proto: t.proto, Addr: a, Port: port}})
	}
	return out, nil
}
