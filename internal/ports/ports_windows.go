package ports

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	iphlpapi            = windows.NewLazySystemDLL("iphlpapi.dll")
	getExtendedTcpTable = iphlpapi.NewProc("GetExtendedTcpTable")
	getExtendedUdpTable = iphlpapi.NewProc("GetExtendedUdpTable")
)

const (
	tcpTableOwnerPIDListener = 3 // TCP_TABLE_OWNER_PID_LISTENER
	udpTableOwnerPID         = 1 // UDP_TABLE_OWNER_PID
	afInet, afInet6          = 2, 23
)

// readTable calls one of the two IP Helper functions until its buffer
// holds the table (it grows between the calls).
func readTable(proc *windows.LazyProc, af, class uint32) ([]byte, error) {
	if err := proc.Find(); err != nil {
		return nil, err
	}
	size := uint32(4096)
	for range 8 {
		buf := make([]byte, size)
		r, _, _ := proc.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0, uintptr(af), uintptr(class), 0)
		switch windows.Errno(r) {
		case 0:
			return buf[:min(int(size), len(buf))], nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			size += 4096
			continue
		default:
			return nil, fmt.Errorf("%s: %w", proc.Name, windows.Errno(r))
		}
	}
	return nil, fmt.Errorf("%s: the table kept growing", proc.Name)
}

// all reads every listening TCP socket and bound UDP socket with its
// owning process. Windows gives the owner of every user's socket.
func all() ([]Holder, error) {
	var out []Holder
	var errs []error
	for _, t := range []struct {
		proc      *windows.LazyProc
		af, class uint32
		table     winTable
	}{
		{getExtendedTcpTable, afInet, tcpTableOwnerPIDListener, winTCP4},
		{getExtendedTcpTable, afInet6, tcpTableOwnerPIDListener, winTCP6},
		{getExtendedUdpTable, afInet, udpTableOwnerPID, winUDP4},
		{getExtendedUdpTable, afInet6, udpTableOwnerPID, winUDP6},
	} {
		b, err := readTable(t.proc, t.af, t.class)
		if err == nil {
			var hs []Holder
			if hs, err = parseWinTable(b, t.table); err == nil {
				out = append(out, hs...)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 4 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Listening reads what each of pids listens on, from the tables of every
// socket (one read of each, whatever the number of pids).
func Listening(pids []int) Reading {
	var r Reading
	hs, err := all()
	if err != nil {
		for _, pid := range pids {
			r.unknown(pid, err.Error())
		}
		return r
	}
	by := map[int][]Port{}
	for _, h := range hs {
		by[h.PID] = append(by[h.PID], h.Port)
	}
	for _, pid := range pids {
		r.set(pid, by[pid])
	}
	return r
}

// Holders finds every process that listens on port n.
func Holders(n uint16) ([]Holder, error) {
	hs, err := all()
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, h := range hs {
		if h.Port.Port == n {
			out = append(out, h)
		}
	}
	return out, nil
}
