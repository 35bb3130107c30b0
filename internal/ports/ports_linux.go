package ports

import (
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
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
// without root. One directory descriptor, its entries read into buf and
// each link read relative to it (readlinkat): what ps pays per process
// it lists, kept to the system calls themselves.
func socketInodes(pid string, buf *fdBuffers) ([]uint64, error) {
	dir, err := unix.Open(procRoot+"/"+pid+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: procRoot + "/" + pid + "/fd", Err: err}
	}
	defer unix.Close(dir)
	var out []uint64
	for {
		n, err := unix.Getdents(dir, buf.dents)
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: procRoot + "/" + pid + "/fd", Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		_, _, names := unix.ParseDirent(buf.dents[:n], -1, buf.names[:0])
		buf.names = names[:0]
		// procfs fills the buffer until the next entry does not fit; an
		// entry here is a descriptor's number, 32 bytes at most: with
		// room for two more left, this was the last of them (one
		// getdents the fewer per process).
		last := n <= len(buf.dents)-64
		for _, name := range names {
			m, err := unix.Readlinkat(dir, name, buf.link)
			if err != nil {
				continue // closed since
			}
			l := buf.link[:m]
			const pre = "socket:["
			if len(l) < len(pre)+2 || string(l[:len(pre)]) != pre || l[len(l)-1] != ']' {
				continue
			}
			if ino, err := strconv.ParseUint(string(l[len(pre):len(l)-1]), 10, 64); err == nil {
				out = append(out, ino)
			}
		}
		if last {
			return out, nil
		}
	}
}

// fdBuffers are socketInodes' buffers, reused from one process to the
// next.
type fdBuffers struct {
	dents, link []byte
	names       []string
}

func newFDBuffers() *fdBuffers {
	return &fdBuffers{dents: make([]byte, 8192), link: make([]byte, 256)}
}

// Listening reads what each of pids listens on: its sockets matched to
// the tables of its network namespace, each namespace's read once. The
// processes are read by a few goroutines at once: on a machine of many
// processes the descriptor tables are most of what ps reads.
func Listening(pids []int) Reading {
	type one struct {
		ports []Port
		why   string
	}
	res := make([]one, len(pids))
	var mu sync.Mutex
	byNS := map[string]map[uint64]Port{}
	tablesOf := func(ns, pid string) map[uint64]Port {
		mu.Lock()
		defer mu.Unlock()
		t, ok := byNS[ns]
		if !ok {
			t = tables(pid)
			byNS[ns] = t
		}
		return t
	}
	workers := min(max(runtime.GOMAXPROCS(0), 1), 4, (len(pids)+63)/64)
	var wg sync.WaitGroup
	for w := range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := newFDBuffers()
			for i := w; i < len(pids); i += max(workers, 1) {
				p := strconv.Itoa(pids[i])
				socks, err := socketInodes(p, buf)
				if err != nil {
					res[i].why = why(err)
					continue
				}
				if len(socks) == 0 {
					continue
				}
				// Its namespace's tables, read once for all its processes.
				ns, err := netNS(p)
				if err != nil {
					res[i].why = why(err)
					continue
				}
				t := tablesOf(ns, p)
				for _, ino := range socks {
					if port, ok := t[ino]; ok {
						res[i].ports = append(res[i].ports, port)
					}
				}
			}
		}()
	}
	wg.Wait()
	var r Reading
	for i, pid := range pids {
		if res[i].why != "" {
			r.unknown(pid, res[i].why)
		} else {
			r.set(pid, res[i].ports)
		}
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
	buf := newFDBuffers()
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
		socks, err := socketInodes(name, buf)
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
