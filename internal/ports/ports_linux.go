package ports

import (
	"os"
	"strconv"
	"strings"
)

// procRoot is where /proc is (tests keep it).
var procRoot = "/proc"

// tables reads the listening sockets of the network namespace that pid
// is in (/proc/PID/net; "self" for contain's own), by inode.
func tables(pid string) map[uint64]Port {
	t := map[uint64]Port{}
	for _, f := range []struct{ file, proto string }{{"tcp", "tcp"}, {"tcp6", "tcp"}, {"udp", "udp"}, {"udp6", "udp"}} {
		if b, err := os.ReadFile(procRoot + "/" + pid + "/net/" + f.file); err == nil {
			parseTable(b, f.proto, t)
		}
	}
	return t
}

// netNS names pid's network namespace ("net:[4026531840]").
func netNS(pid string) (string, error) {
	return os.Readlink(procRoot + "/" + pid + "/ns/net")
}

// socketInodes lists the inodes of pid's sockets (/proc/PID/fd: links
// "socket:[INODE]"). Another user's descriptors: permission denied,
// without root.
func socketInodes(pid string) ([]uint64, error) {
	dir := procRoot + "/" + pid + "/fd"
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, n := range names {
		l, err := os.Readlink(dir + "/" + n)
		if err != nil || !strings.HasPrefix(l, "socket:[") || !strings.HasSuffix(l, "]") {
			continue
		}
		if ino, err := strconv.ParseUint(l[len("socket:["):len(l)-1], 10, 64); err == nil {
			out = append(out, ino)
		}
	}
	return out, nil
}

// Listening reads what each of pids listens on: its sockets matched to
// the tables of its network namespace, each namespace's read once.
func Listening(pids []int) Reading {
	var r Reading
	byNS := map[string]map[uint64]Port{}
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		socks, err := socketInodes(p)
		if err != nil {
			r.unknown(pid, why(err))
			continue
		}
		var mine []Port
		if len(socks) > 0 {
			// Its namespace's tables, read once for all its processes.
			ns, err := netNS(p)
			if err != nil {
				r.unknown(pid, why(err))
				continue
			}
			t, ok := byNS[ns]
			if !ok {
				t = tables(p)
				byNS[ns] = t
			}
			for _, ino := range socks {
				if port, ok := t[ino]; ok {
					mine = append(mine, port)
				}
			}
		}
		r.set(pid, mine)
	}
	return r
}

// Holders finds every process that listens on port n, TCP or UDP, in
// any network namespace whose processes it can see; a socket of
// contain's own namespace on n whose process it cannot see (another
// user's, without root) is a Holder of PID 0.
func Holders(n uint16) ([]Holder, error) {
	d, err := os.Open(procRoot)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	self, _ := netNS("self")
	wanted := map[string]map[uint64]Port{} // by namespace: the sockets on n
	onN := func(pid, ns string) map[uint64]Port {
		w, ok := wanted[ns]
		if !ok {
			w = map[uint64]Port{}
			for ino, p := range tables(pid) {
				if p.Port == n {
					w[ino] = p
				}
			}
			wanted[ns] = w
		}
		return w
	}
	ownNS := onN("self", self)
	found := map[uint64]bool{}
	var out []Holder
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		ns, err := netNS(name)
		if err != nil {
			continue
		}
		w := onN(name, ns)
		if len(w) == 0 {
			continue
		}
		socks, err := socketInodes(name)
		if err != nil {
			continue
		}
		for _, ino := range socks {
			if p, ok := w[ino]; ok {
				out = append(out, Holder{PID: pid, Port: p})
				found[ino] = true
			}
		}
	}
	for ino, p := range ownNS {
		if !found[ino] {
			out = append(out, Holder{Port: p})
		}
	}
	return out, nil
}
