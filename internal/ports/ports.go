// Package ports tells which TCP and UDP ports a process listens on, and
// which processes listen on a port: what contain ps shows (PORTS), what
// ps/stop/reap --port look up, and what the report says each leftover
// held. Each OS reads it its own way (Linux: the socket tables of
// /proc/PID/net matched to the socket inodes of /proc/PID/fd; macOS:
// proc_pidfdinfo's socket info; Windows: the IP Helper's tables with
// their owning PIDs). It is read only where asked: nothing of it runs in
// contain run unless leftovers are ended.
package ports

import (
	"cmp"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/contain-cli/contain/report"
)

// ErrUnsupported: this OS has no way written to map sockets to processes.
var ErrUnsupported = errors.New("ports: not written for this OS")

// Port is a socket a process listens on: a TCP socket in LISTEN, or a
// bound UDP socket that is connected to no peer.
type Port struct {
	Proto string // "tcp" or "udp"
	Addr  string // the local address (proc.FormatIP's text); 0.0.0.0 or ::: every address
	Port  uint16
}

// String says p as people read it: ":3000" for TCP on every address,
// "127.0.0.1:3000", "[::1]:3000", and "/udp" after a UDP one
// (":5353/udp").
func (p Port) String() string {
	s := ":" + strconv.Itoa(int(p.Port))
	switch {
	case p.Addr == "" || p.Addr == "0.0.0.0" || p.Addr == "::":
	case strings.Contains(p.Addr, ":"):
		s = "[" + p.Addr + "]" + s
	default:
		s = p.Addr + s
	}
	if p.Proto == "udp" {
		s += "/udp"
	}
	return s
}

// Words says ports as one word each, sorted, each once (a process that
// listens on 0.0.0.0:3000 and [::]:3000 shows ":3000"): what the PORTS
// column and the log lines show. "": none.
func Words(ports []Port) []string {
	var w []string
	for _, p := range ports {
		w = append(w, p.String())
	}
	slices.SortFunc(w, compareWords)
	return slices.Compact(w)
}

// compareWords orders by port number, then by the word.
func compareWords(a, b string) int {
	na, nb := portOf(a), portOf(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

func portOf(w string) int {
	w = strings.TrimSuffix(w, "/udp")
	n, _ := strconv.Atoi(w[strings.LastIndexByte(w, ':')+1:])
	return n
}

// Join says ports in one field: "-" when there is none.
func Join(ports []Port) string {
	if len(ports) == 0 {
		return "-"
	}
	return strings.Join(Words(ports), ",")
}

// JSON is a port as contain's JSON outputs give it (ps, the report).
type JSON = report.Port

// ToJSON gives ports as JSON (never nil: [] when none), in the order
// Words says them: by port number, then protocol and address.
func ToJSON(ports []Port) []JSON {
	out := make([]JSON, 0, len(ports))
	for _, p := range ports {
		out = append(out, JSON{Proto: p.Proto, Address: p.Addr, Port: p.Port})
	}
	slices.SortStableFunc(out, func(a, b JSON) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), strings.Compare(a.Proto, b.Proto), strings.Compare(a.Address, b.Address))
	})
	return out
}

// Reading is what Listening read: the ports of each process it could
// read (a process listed with none listens on nothing), and why it could
// not read the others.
type Reading struct {
	By      map[int][]Port
	Unknown map[int]string
}

// Known reports whether pid's ports were read, and what they are.
func (r Reading) Known(pid int) ([]Port, bool) {
	if _, ok := r.Unknown[pid]; ok {
		return nil, false
	}
	if r.By == nil {
		return nil, false
	}
	p, ok := r.By[pid]
	return p, ok
}

func (r *Reading) set(pid int, p []Port) {
	if r.By == nil {
		r.By = map[int][]Port{}
	}
	r.By[pid] = append(r.By[pid], p...)
}

func (r *Reading) unknown(pid int, why string) {
	if r.Unknown == nil {
		r.Unknown = map[int]string{}
	}
	r.Unknown[pid] = why
}

// Holder is a process that listens on a port. PID 0: a socket listens
// there whose process could not be seen (another user's, without root).
type Holder struct {
	PID  int
	Port Port
}

// Unseen is what a Holder of PID 0 means, in words.
const Unseen = "a process contain cannot see (another user's: only root can tell which)"

// why says an error reading a process's descriptors in words.
func why(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return "it ended"
	}
	return err.Error()
}
