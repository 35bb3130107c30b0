package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/contain-cli/contain/internal/procfs"
	"github.com/contain-cli/contain/internal/text"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

// A tag's PID is a PID of the namespace the tag was made in: contain's
// own getpid(). Seen from a host, a run inside a container carries the
// container's PID, which names no process here, or another one. So each
// tagged process in a namespace below this /proc's is judged where its
// tag was made (judgeNS), and the originator is looked up there
// (lookupIn): the process of that namespace whose innermost PID is the
// tag's.

// maxWalk bounds a walk up the parents (a loop cannot happen: PIDs of
// ancestors only fall back to 0; this is a guard against a /proc that
// changes under the walk).
const maxWalk = 4096

// nsCache holds what one listing read of the processes it walked up
// through: each one's namespace and innermost PID, and its parent.
type nsCache struct {
	fs   procfs.FS
	seen map[int]nsInfo
	// candidates: what unsure read of each process here that has a
	// tag's PID, once for all the members that name it.
	candidates map[candidateKey]candidate
}

type candidateKey struct {
	contain bool // the tool is CONTAIN: the candidate must be a contain run
	pid     int
}

type candidate struct {
	ok    bool   // it could be an originator, if it started early enough
	start uint64 // its start
	comm  string
}

type nsInfo struct {
	ns    uint64 // 0: this /proc's own namespace
	inner int    // its PID in its own namespace
	ppid  int
	ok    bool
}

func (c *nsCache) info(pid int) nsInfo {
	if i, ok := c.seen[pid]; ok {
		return i
	}
	var i nsInfo
	buf := make([]byte, 0, 2048)
	if nspid, _, err := c.fs.NSpid(pid, buf); err == nil {
		i.inner = nspid[len(nspid)-1]
		if len(nspid) > 1 {
			i.ns, err = c.fs.PIDNamespace(pid)
		}
		if st, err2 := c.fs.Stat(pid, buf); err == nil && err2 == nil {
			i.ppid, i.ok = st.PPID, true
		}
	}
	c.seen[pid] = i
	return i
}

// judgeNS is the namespace whose PIDs p's tag names: that of the nearest
// of p and its ancestors whose own PID is the tag's PID (the originator,
// while it lives and the tree holds together: contain is a subreaper),
// else p's own namespace (and then unsure says why that may be wrong).
// 0: this /proc's own.
func (c *nsCache) judgeNS(p procfs.Tagged) (ns uint64, unsure string) {
	if len(p.NSpid) < 2 {
		return 0, ""
	}
	own, err := c.fs.PIDNamespace(p.PID)
	if err != nil {
		// Gone or unreadable since it was read: it is judged in a
		// namespace that is surely not this one, where nothing will
		// be found for it (unknown, or gone with it).
		own = ^uint64(0)
	}
	tool, pid, err := tag.Parse(p.Value)
	if err != nil {
		return own, ""
	}
	for a, n := p.PID, 0; a > 0 && n < maxWalk; n++ {
		i := c.info(a)
		if !i.ok {
			break
		}
		if i.inner == pid {
			return i.ns, ""
		}
		a = i.ppid
	}
	return own, c.unsure(tool, pid, p)
}

// unsure says why p's tag, judged in p's own namespace for want of an
// ancestor whose PID is the tag's, may have been made here after all: a
// process of this namespace has the tag's PID and could be its
// originator (not a kernel thread, started before p, and for CONTAIN a
// contain run), and the tree may have come apart (a tool that is no
// subreaper, whose child left). "" when no process here could be.
func (c *nsCache) unsure(tool string, pid int, p procfs.Tagged) string {
	k := candidateKey{tool == session.ContainTool, pid}
	cd, read := c.candidates[k]
	if !read {
		st, err := c.fs.Stat(pid, nil)
		cd = candidate{ok: err == nil && !st.Zombie() && pid != 2 && st.PPID != 2, start: st.Start, comm: st.Comm}
		if cd.ok && k.contain {
			exe, same := exeOf(pid)
			cd.ok = IsContainRun(same, exe, ArgvOf(pid))
		}
		c.candidates[k] = cd
	}
	if !cd.ok || cd.start > p.Start {
		return ""
	}
	return fmt.Sprintf("PID %d of this namespace, %s, may be its originator", pid, text.Printable(cd.comm))
}

// withNamespaces sets NS of each process in procs that runs in a PID
// namespace below this /proc's (raw[i] is procs[i] as read).
func withNamespaces(fs procfs.FS, raw []procfs.Tagged, procs []session.Process) {
	var c *nsCache
	for i, p := range raw {
		if len(p.NSpid) < 2 {
			continue
		}
		if c == nil {
			c = &nsCache{fs: fs, seen: map[int]nsInfo{}, candidates: map[candidateKey]candidate{}}
		}
		procs[i].NS, procs[i].NSUnsure = c.judgeNS(p)
	}
}

// ErrNamespaceHidden: some processes' namespaces cannot be read, so that
// the originator of a session in another namespace may be among them.
var ErrNamespaceHidden = errors.New("processes of that namespace cannot be seen from here")

// lookupIn finds the process of PID namespace ns whose own PID is pid.
// It reads every visible process: a process that cannot be read may be
// the one, and the answer is then an error (the session is unknown),
// never "gone".
func lookupIn(fs procfs.FS, ns uint64, pid int) (session.Originator, error) {
	return (&nsIndex{fs: fs}).lookup(ns, pid)
}

// newNSIndex is an index of the live /proc, read at its first lookup.
func newNSIndex() *nsIndex { return &nsIndex{fs: FS} }

// nsIndex is every visible process of a namespace below this /proc's, by
// namespace and its own PID there, read once.
type nsIndex struct {
	fs    procfs.FS
	built bool
	err   error
	byNS  map[nsKey][]int // the PIDs here of the processes of a namespace with that PID there
	count map[uint64]int  // processes seen of each namespace
	// Processes that could not be read: their status (hidepid) by
	// count, and the namespace of those of another namespace by their
	// PID there (the link is readable only by who may trace them).
	unreadStatus int
	unreadNS     map[int]int
}

type nsKey struct {
	ns  uint64
	pid int
}

func (ix *nsIndex) build() {
	ix.built = true
	pids, err := ix.fs.PIDs()
	if err != nil {
		ix.err = err
		return
	}
	ix.byNS, ix.count, ix.unreadNS = map[nsKey][]int{}, map[uint64]int{}, map[int]int{}
	buf := make([]byte, 0, 2048)
	for _, p := range pids {
		// status is readable by all; the namespace link is read only
		// of a process of a namespace below this one.
		nspid, _, err := ix.fs.NSpid(p, buf)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				ix.unreadStatus++
			}
			continue
		}
		if len(nspid) < 2 {
			continue
		}
		inner := nspid[len(nspid)-1]
		ns, err := ix.fs.PIDNamespace(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				ix.unreadNS[inner]++
			}
			continue
		}
		k := nsKey{ns, inner}
		ix.byNS[k] = append(ix.byNS[k], p)
		ix.count[ns]++
	}
}

// lookup finds the process of PID namespace ns whose own PID is pid, and
// reads it now: its namespace and PID there again (a PID here may have
// been handed out again since the index was read), and its stat.
func (ix *nsIndex) lookup(ns uint64, pid int) (session.Originator, error) {
	if ns == ^uint64(0) {
		return session.Originator{}, ErrNamespaceHidden
	}
	if !ix.built {
		ix.build()
	}
	if ix.err != nil {
		return session.Originator{}, ix.err
	}
	buf := make([]byte, 0, 2048)
	for _, p := range ix.byNS[nsKey{ns, pid}] {
		nspid, uid, err := ix.fs.NSpid(p, buf)
		if err != nil || nspid[len(nspid)-1] != pid {
			continue
		}
		if got, err := ix.fs.PIDNamespace(p); err != nil || got != ns {
			continue
		}
		st, err := ix.fs.Stat(p, buf)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return session.Originator{}, err
		}
		return session.Originator{Exists: true, Zombie: st.Zombie(), Start: st.Start, Owned: true, UID: uid, ViewPID: p}, nil
	}
	if n := ix.unreadStatus + ix.unreadNS[pid]; n > 0 {
		return session.Originator{}, fmt.Errorf("%w (%d cannot be read)", ErrNamespaceHidden, n)
	}
	if h := Hidden(); h != "" {
		// Other users' processes are not listed at all: the one may be
		// among them.
		return session.Originator{}, fmt.Errorf("%w (%s)", ErrNamespaceHidden, h)
	}
	if ix.count[ns] == 0 && OwnNS() != initPIDNS {
		// Only the host sees every namespace: from inside one, a
		// namespace with no visible process may be an ancestor's or a
		// sibling's, not an ended one.
		return session.Originator{}, fmt.Errorf("%w (it is not below this one)", ErrNamespaceHidden)
	}
	return session.Originator{}, nil
}

// initPIDNS is the inode of the first PID namespace, the host's: the
// kernel gives it this fixed number (PROC_PID_INIT_INO).
const initPIDNS = 0xEFFFFFFC

// OwnNS is the inode of this process's PID namespace; 0 where it cannot
// be read. A process never changes its own (setns changes its
// children's), so it is read once.
var OwnNS = sync.OnceValue(func() uint64 {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0
	}
	ns, _ := procfs.ParseNSLink(l)
	return ns
})

// InHostNS reports whether this process is in the host's PID namespace
// (the initial one), whose PIDs the kernel's log prints: in any other,
// a PID there names some other process, or none.
func InHostNS() bool { return OwnNS() == initPIDNS }

// NSName is what names made by this contain (its cgroup, its registry)
// carry to tell them from those of a contain of the same PID in another
// PID namespace: "" in the host's namespace, "nsINODE" in another. A name
// without it was made in the host's.
func NSName() string {
	ns := OwnNS()
	if ns == 0 || ns == initPIDNS {
		return ""
	}
	return "ns" + strconv.FormatUint(ns, 10)
}

// NSOfName reads the namespace a name's NSName part names, as this
// contain judges it: 0 for this contain's own namespace, the inode for
// another; ok false for a part that is not one.
func NSOfName(part string) (ns uint64, ok bool) {
	own := OwnNS()
	if part == "" {
		if own == initPIDNS || own == 0 {
			return 0, true
		}
		return initPIDNS, true
	}
	n, found := strings.CutPrefix(part, "ns")
	if !found || n == "" || n[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false
	}
	if v == own {
		return 0, true
	}
	return v, true
}
