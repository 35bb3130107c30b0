package proc

// What proc_pidfdinfo(PROC_PIDFDSOCKETINFO) says of a macOS socket, over
// bytes, so that it is tested on every OS (socketinfo_test.go).
//
// Read in xnu-11417.101.15's bsd/sys/proc_info.h: struct socket_fdinfo
// is struct proc_fileinfo (24 bytes) and struct socket_info, which is
// struct vinfo_stat (136 bytes), soi_so @136, soi_pcb @144, soi_type
// @152, soi_protocol @156, soi_family @160, eight shorts and soi_oobmark
// to @184, two struct sockbuf_info (24 bytes each), soi_kind @232,
// rfu_1, then the union soi_proto @240, whose largest member, struct
// un_sockinfo, makes it 528 bytes: 768 in all, 792 with the file info.
// struct in_sockinfo: insi_fport @0, insi_lport @4 (an int holding the
// port in network order, as inp_lport has it), insi_gencnt, insi_flags,
// insi_flow, insi_vflag @24 (INI_IPV4 1, INI_IPV6 2), insi_ip_ttl,
// rfu_1, insi_faddr @32 and insi_laddr @48 (16 bytes each: an IPv6
// address, or an IPv4 one in its last 4), insi_v4, insi_v6: 80 bytes.
// struct tcp_sockinfo is a struct in_sockinfo, then tcpsi_state @80
// (TSI_S_LISTEN 1).

import (
	"encoding/binary"
	"fmt"
)

const (
	macPIDFDSocketInfo     = 3   // PROC_PIDFDSOCKETINFO: struct socket_fdinfo
	macSocketFDInfoSize    = 792 // sizeof(struct socket_fdinfo)
	MacFDTypeSocket        = 2   // PROX_FDTYPE_SOCKET, a proc_fdtype
	macSockinfoIn          = 1   // SOCKINFO_IN: soi_proto is a struct in_sockinfo
	macSockinfoTCP         = 2   // SOCKINFO_TCP: a struct tcp_sockinfo
	macTCPListen           = 1   // TSI_S_LISTEN
	macSockDgram           = 2   // SOCK_DGRAM
	macINIv4, macINIv6     = 1, 2
	macSoiType, macSoiKind = 24 + 152, 24 + 232
	macSoiProto            = 24 + 240
)

// MacListener is what a socket descriptor listens on: Proto "" when it
// listens on nothing (a TCP socket not in LISTEN, a connected UDP one,
// a socket of another family).
type MacListener struct {
	Proto string // "tcp" or "udp"
	Addr  string // FormatIP's text
	Port  uint16
}

// ParseMacSocket decodes the struct socket_fdinfo that proc_pidfdinfo
// copied out.
func ParseMacSocket(b []byte) (MacListener, error) {
	if len(b) < macSocketFDInfoSize {
		return MacListener{}, fmt.Errorf("proc_pidfdinfo(PROC_PIDFDSOCKETINFO): %d bytes, not %d", len(b), macSocketFDInfoSize)
	}
	le := binary.LittleEndian
	kind := int32(le.Uint32(b[macSoiKind:]))
	in := b[macSoiProto:]
	var proto string
	switch {
	case kind == macSockinfoTCP && int32(le.Uint32(in[80:])) == macTCPListen:
		proto = "tcp"
	case kind == macSockinfoIn && int32(le.Uint32(b[macSoiType:])) == macSockDgram && le.Uint32(in[0:]) == 0:
		proto = "udp" // bound, connected to no peer (insi_fport 0)
	default:
		return MacListener{}, nil
	}
	port := binary.BigEndian.Uint16(in[4:]) // network order, in the int's first bytes
	if port == 0 {
		return MacListener{}, nil
	}
	var addr string
	// An IPv6 socket that takes IPv4 too (not IPV6_V6ONLY) has both
	// flags: its address is the IPv6 one.
	switch vflag := in[24]; {
	case vflag&macINIv6 != 0:
		addr = FormatIP(in[48 : 48+16])
	case vflag&macINIv4 != 0:
		addr = FormatIP(in[48+12 : 48+16])
	default:
		return MacListener{}, nil
	}
	return MacListener{Proto: proto, Addr: addr, Port: port}, nil
}
