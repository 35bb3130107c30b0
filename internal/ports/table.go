package ports

// The socket tables of Linux's /proc/PID/net/{tcp,tcp6,udp,udp6}, parsed
// over bytes, so that they are tested on every OS.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/contain-cli/contain/internal/proc"
)

// Linux's socket states (include/net/tcp_states.h) that mean listening:
// TCP_LISTEN for TCP; TCP_CLOSE for UDP, an unconnected bound socket
// (a connected one is TCP_ESTABLISHED).
const (
	tcpListen = 0x0A
	udpUnconn = 0x07
)

// parseTable reads one /proc/net table: the listening sockets by inode.
// proto is "tcp" or "udp"; the addresses are IPv4 (tcp, udp) or IPv6
// (tcp6, udp6) as their hexadecimal length says.
func parseTable(b []byte, proto string, into map[uint64]Port) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 512), 1<<16)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := bytes.Fields(sc.Bytes())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 {
			continue
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			continue
		}
		switch {
		case proto == "tcp" && st == tcpListen:
		case proto == "udp" && st == udpUnconn:
		default:
			continue
		}
		addr, port, ok := parseAddr(f[1])
		if !ok || port == 0 {
			continue
		}
		ino, err := strconv.ParseUint(string(f[9]), 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		into[ino] = Port{Proto: proto, Addr: addr, Port: port}
	}
}

// parseAddr reads "0100007F:0BB8": the address as the kernel's 32-bit
// words in the machine's order (one for IPv4, four for IPv6), each
// printed as a hexadecimal number, then the port, a number in hex.
func parseAddr(s []byte) (string, uint16, bool) {
	i := bytes.IndexByte(s, ':')
	if i < 0 {
		return "", 0, false
	}
	port, err := strconv.ParseUint(string(s[i+1:]), 16, 16)
	if err != nil {
		return "", 0, false
	}
	raw, err := hex.DecodeString(string(s[:i]))
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", 0, false
	}
	// Each word was printed as a number: its bytes in memory, the
	// address's own order, are that number in the machine's order.
	var mem [16]byte
	for w := 0; w < len(raw); w += 4 {
		hostOrder.PutUint32(mem[w:], binary.BigEndian.Uint32(raw[w:]))
	}
	return proc.FormatIP(mem[:len(raw)]), uint16(port), true
}

// hostOrder is the machine's byte order (every Linux Go runs on here is
// little-endian but s390x and ppc64, big-endian).
var hostOrder = binary.NativeEndian
