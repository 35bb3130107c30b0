package builtin

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Spawn starts a built-in program without Go's fork and exec: a clone3
// with CLONE_VM, whose child runs a few system calls of contain's own
// (spawn_linux_amd64.s) and executes the program from its descriptor
// (execveat). The caller goes on at once, while the child
// executes beside it; Executed waits for that. Go's syscall.ForkExec
// would have the calling thread wait for the exec, have the child reset
// each of the runtime's 60-odd signal handlers one system call at a time,
// and close one by one the descriptors a program is not given.
//
// What the child shares with contain, it shares only until it executes:
// it reads its arguments and runs on its stack in a mapping of its own
// (no Go memory), writes nothing there but its errno, and never runs Go
// code. It starts with every handler reset to the default
// (CLONE_CLEAR_SIGHAND: no Go handler can run in it) and every signal
// blocked (Spawn blocks them on the cloning thread); it joins its own
// session or process group, puts its descriptors in place, restores the
// thread's signal mask and executes. A descriptor of contain's that it
// is not given is close-on-exec (every one Go opens is), so it is gone
// once the program runs; one contain inherited open stays at its number,
// as for Go's children.
//
// As with Go's children, the child shares contain's memory until it has
// executed, so a kill of contain by the OOM killer in that moment (tens
// of microseconds) kills it too; and a child killed by a signal before
// it executed reads as executed.

// maxMoves bounds Spec.Moves.
const maxMoves = 16

// spawnArgs is what the child reads (spawn_linux_amd64.s uses its offsets
// through go_asm.h), at the start of its mapping.
type spawnArgs struct {
	clone     cloneArgs // clone3's arguments
	setsid    int64
	nmoves    int64
	src       [maxMoves]int64
	dst       [maxMoves]int64
	all       uint64 // every signal: blocked on the cloning thread across the clone
	mask      uint64 // that thread's mask before: the child's when it executes
	prog      int64
	path      uintptr // Spec.Path, NUL-terminated; 0: prog
	ctty      int64   // the terminal to take the foreground of; -1: none
	pgrp      int64   // the child's: its process group, for TIOCSPGRP
	ppid      int64   // the parent's PID, for the Pdeathsig check
	pdeathsig int64
	argv      uintptr // NULL-terminated
	envp      uintptr
	empty     [8]byte // "" for execveat
	// pending, ign and old: the child drops the signals pending before it
	// unblocks them (struct kernel_sigaction: SIG_IGN, then the one before).
	pending uint64
	ign     [4]uint64
	old     [4]uint64
	delay   [2]int64 // a test's pause before it joins its session or group (spawnDelay), a timespec
	delayfg [2]int64 // and after it took the terminal's foreground (spawnDelayForeground)
	errno   int64    // the child's, if it could not execute
	tid     uint32   // CLONE_CHILD_CLEARTID: 0 once the child executed or ended
	_       uint32
}

// cloneArgs is the kernel's struct clone_args (its third version, with
// cgroup).
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64
	setTID, setTIDSize, cgroup                                           uint64
}

// clone blocks every signal on the calling thread, clones the child
// (clone3 with a.clone), and restores the thread's mask: it returns the
// child's PID, or an errno.
func clone(a *spawnArgs) (pid, errno uintptr)

// spawnDelay and spawnDelayForeground, set by a test, pause the child
// before it joins its own session or group, and after it took the
// terminal's foreground (at most a second).
var spawnDelay, spawnDelayForeground time.Duration

// spawnStack is the child's stack, at the end of its mapping: it pushes
// nothing (no calls, every signal blocked), so this is margin.
const spawnStack = 1024

// Child is a program that Spawn started.
type Child struct {
	Pid  int
	area []byte // the child's mapping, until it executed
	a    *spawnArgs
	err  error
}

// ErrNoSpawn: the kernel lacks what Spawn needs (clone3 and
// CLONE_CLEAR_SIGHAND, Linux 5.5), or a seccomp filter refuses it.
var ErrNoSpawn = errors.New("no clone3 with CLONE_CLEAR_SIGHAND")

// Spawn starts s, a child of the calling thread that ends with SIGCHLD.
func Spawn(s Spec) (*Child, error) {
	p, err := NewSpawner(s)
	if err != nil {
		return nil, err
	}
	return p.Start()
}

// Spawner is a Spawn made ready, to start from another thread: what it
// starts is that thread's child.
type Spawner struct {
	area []byte // the child's mapping
	a    *spawnArgs
	tmp  []int // the copies of sources moved out of the way
}

// NewSpawner makes s ready to start: the child's mapping, with its
// arguments and environment, and its descriptors.
func NewSpawner(s Spec) (*Spawner, error) {
	if len(s.Moves) > maxMoves {
		return nil, errors.New("too many descriptors")
	}
	if s.Path == "" && !slices.ContainsFunc(s.Moves, func(m Move) bool { return m.Dst == s.Prog }) {
		return nil, errors.New("the program's descriptor is none of the moves' destinations")
	}
	for _, ss := range [][]string{s.Argv, s.Env, {s.Path}} {
		for _, x := range ss {
			if strings.IndexByte(x, 0) >= 0 {
				return nil, unix.EINVAL // as Go's ForkExec
			}
		}
	}
	p := &Spawner{}
	// Every source that is another move's destination is copied out of
	// the way first (close-on-exec, closed once the child has its own).
	top := 0
	for _, m := range s.Moves {
		top = max(top, m.Dst+1)
	}
	moves := make([]Move, len(s.Moves))
	copy(moves, s.Moves)
	for i, m := range moves {
		clash := false
		for j, o := range moves {
			if j != i && o.Dst == m.Src {
				clash = true
			}
		}
		if !clash {
			continue
		}
		fd, err := unix.FcntlInt(uintptr(m.Src), unix.F_DUPFD_CLOEXEC, top)
		if err != nil {
			p.Drop()
			return nil, err
		}
		p.tmp = append(p.tmp, fd)
		moves[i].Src = fd
	}
	size := int(unsafe.Sizeof(spawnArgs{})) + len(s.Path) + 1
	for _, ss := range [][]string{s.Argv, s.Env} {
		size += 8 * (len(ss) + 1)
		for _, x := range ss {
			size += len(x) + 1
		}
	}
	size = (size + 15) &^ 15
	size += spawnStack
	size = (size + 4095) &^ 4095
	area, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		p.Drop()
		return nil, err
	}
	a := (*spawnArgs)(unsafe.Pointer(&area[0]))
	p.area, p.a = area, a
	if s.Setsid {
		a.setsid = 1
	}
	a.nmoves = int64(len(moves))
	for i, m := range moves {
		a.src[i], a.dst[i] = int64(m.Src), int64(m.Dst)
	}
	a.prog = int64(s.Prog)
	// The pointer arrays, then the strings.
	free := area[unsafe.Sizeof(*a):]
	ptrs := func(n int) []uintptr {
		p := unsafe.Slice((*uintptr)(unsafe.Pointer(&free[0])), n+1)
		free = free[8*(n+1):]
		return p
	}
	argv, envp := ptrs(len(s.Argv)), ptrs(len(s.Env))
	str := func(x string) uintptr {
		p := uintptr(unsafe.Pointer(&free[0]))
		n := copy(free, x)
		free[n] = 0
		free = free[n+1:]
		return p
	}
	for i, x := range s.Argv {
		argv[i] = str(x)
	}
	for i, x := range s.Env {
		envp[i] = str(x)
	}
	if s.Path != "" {
		a.path = str(s.Path)
	}
	a.ctty = -1
	if s.Foreground {
		a.ctty = int64(s.Ctty)
	}
	a.ppid = int64(os.Getpid())
	a.pdeathsig = int64(s.Pdeathsig)
	a.argv, a.envp = uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envp[0]))
	a.tid = ^uint32(0)
	a.all = ^uint64(0)
	a.ign[0] = 1 // SIG_IGN
	a.delay[1] = int64(spawnDelay)
	a.delayfg[1] = int64(spawnDelayForeground)
	flags := uint64(unix.CLONE_VM | unix.CLONE_CLEAR_SIGHAND | unix.CLONE_CHILD_CLEARTID)
	if s.Vfork {
		flags |= unix.CLONE_VFORK
	}
	var cgroup uint64
	if s.UseCgroupFD {
		flags |= unix.CLONE_INTO_CGROUP
		cgroup = uint64(s.CgroupFD)
	}
	a.clone = cloneArgs{
		flags:      flags,
		cgroup:     cgroup,
		childTID:   uint64(uintptr(unsafe.Pointer(&a.tid))),
		exitSignal: uint64(unix.SIGCHLD),
		stack:      uint64(uintptr(unsafe.Pointer(&area[0]))) + uint64(size-spawnStack),
		stackSize:  spawnStack,
	}
	return p, nil
}

// Start starts the child, once.
func (p *Spawner) Start() (*Child, error) {
	if p.a == nil {
		return nil, errors.New("spawned already")
	}
	area, a := p.area, p.a
	p.area, p.a = nil, nil
	defer p.Drop()
	// clone blocks every signal on this thread across the clone3 (no Go
	// code runs between: no other goroutine can take the thread), so that
	// the child starts with them blocked; it restores the mask before it
	// executes. ForkLock: no descriptor is opened meanwhile without
	// close-on-exec (Go's own forks take it too).
	syscall.ForkLock.Lock()
	pid, errno := clone(a)
	syscall.ForkLock.Unlock()
	if errno != 0 {
		unix.Munmap(area)
		if e := syscall.Errno(errno); e == unix.ENOSYS || e == unix.EINVAL || e == unix.EPERM {
			return nil, ErrNoSpawn
		}
		return nil, syscall.Errno(errno)
	}
	return &Child{Pid: int(pid), area: area, a: a}, nil
}

// Drop releases what a Spawner that will not start holds.
func (p *Spawner) Drop() {
	for _, fd := range p.tmp {
		unix.Close(fd)
	}
	p.tmp = nil
	if p.area != nil {
		unix.Munmap(p.area)
		p.area, p.a = nil, nil
	}
}

// Executed waits until the child has executed its program, and returns
// nil; or the errno for which it could not (it then exits 127, and the
// caller reaps it).
func (c *Child) Executed() error {
	if c.area == nil {
		return c.err
	}
	for {
		v := atomic.LoadUint32(&c.a.tid)
		if v == 0 {
			break
		}
		// FUTEX_WAIT, not private: the kernel's wake at the exec is not.
		_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&c.a.tid)), 0, uintptr(v), 0, 0, 0)
		if e != 0 && e != unix.EAGAIN && e != unix.EINTR {
			return e
		}
	}
	if n := atomic.LoadInt64(&c.a.errno); n != 0 {
		c.err = syscall.Errno(n)
	}
	unix.Munmap(c.area)
	c.area, c.a = nil, nil
	return c.err
}

// Ended releases what a child that was killed and reaped before Executed
// was called held.
func (c *Child) Ended() {
	if c.area != nil {
		unix.Munmap(c.area)
		c.area, c.a = nil, nil
	}
}
