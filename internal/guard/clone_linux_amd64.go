package guard

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/signals"
)

// The cloned waiter: the crash guard waits in a child that contain makes
// with clone3(CLONE_VM) and that runs code of contain's own
// (clone_linux_amd64.s) on a stack of its own, in contain's memory, until
// contain is gone; then it executes contain __guard, as builtin.Waiter
// does. It saves builtin.Waiter's image memfd and exec (start-up: see
// bench/README.md). The child shares contain's memory but nothing the Go
// runtime uses: it reads cloneArgs and writes its stack and status, all
// in a mapping of its own that nothing unmaps; it never runs Go code. If
// contain dies, that memory stays the child's until it executes.
//
// It starts with every signal blocked (contain blocks them all on the
// thread that clones) and every handler the Go runtime installed reset to
// the default (CLONE_CLEAR_SIGHAND): no Go handler, which would take the
// cloning thread's state for its own, can run in it. It puts its
// descriptors in place (0 and 1 /dev/null, 2 contain's stderr, 3 the
// pipe, 4 the orders, 5 contain's binary) and closes every other copy the
// clone gave it (close_range): among them can be the write end of a pipe
// whose hang-up says that contain died (its own, the shim's). Then it
// unblocks every signal but those the guard ignores (signals.Fatal), and
// waits. Before it executes contain __guard it ignores those, which also
// drops any that came meanwhile. contain does not wait for it to be set
// up: it goes on doing so beside contain, and does its work even if
// contain dies first. Its setup cannot fail short of a kernel refusing
// what was checked; should it, it says so in its status (Guard.Failed),
// and contain starts another waiter before COMMAND. A kernel without
// close_range (before 5.9) gets the image waiter instead.
// CONTAIN_DISABLE=clone skips it; CONTAIN_DISABLE=waiter skips it with
// the image waiter.

// cloneArgs is what the child reads (clone_linux_amd64.s uses its offsets
// through go_asm.h).
type cloneArgs struct {
	clone  cloneArgsKernel // clone3's arguments
	fds    [6]int64        // the descriptors that become 0 to 5
	fatal  uint64          // the signals.Fatal set: blocked while it waits, ignored before the exec
	name   [16]byte        // the child's name (PR_SET_NAME)
	pfd    [2]int32        // the pollfd: fd 3, no events (POLLHUP is always reported)
	ign    [4]uint64       // a kernel struct sigaction: SIG_IGN
	none   uint64          // an empty signal set
	argv   uintptr         // contain __guard's argv (NULL-terminated)
	envp   uintptr         // and environment
	empty  [8]byte         // "" for execveat
	status int32           // the child's: 1 once it waits, 2 if it could not (then it exits)
	_      int32
}

// cloneFault, set by a test, hands the child a descriptor that is not open.
var cloneFault bool

// cloneArgsKernel is the kernel's struct clone_args (its first version).
type cloneArgsKernel struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64
}

// cloneGuard clones the child (clone3 with args, the cloneArgs.clone
// that begins cloneArgs): it returns its PID, or an errno.
func cloneGuard(args uintptr) (pid, errno uintptr)

// cloneArea is the child's mapping: cloneArgs, then its strings, then
// its stack at the end.
const cloneArea = 64 << 10

// closeRangeWorks reports whether the kernel has close_range (5.9).
func closeRangeWorks() bool {
	// A range with nothing open in it: ENOSYS or nothing.
	_, _, e := unix.RawSyscall(unix.SYS_CLOSE_RANGE, 1<<30, 1<<30, 0)
	return e == 0
}

// startCloned starts the guard waiting in a clone of contain.
func startCloned() (*Guard, error) {
	if !closeRangeWorks() {
		return nil, errors.New("no close_range")
	}
	f, err := openWaiterFiles()
	if err != nil {
		return nil, err
	}
	defer f.closeChilds()
	// Never unmapped: the child may outlive contain in it (it then execs).
	mem, err := unix.Mmap(-1, 0, cloneArea, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		f.closeContains()
		return nil, err
	}
	a := (*cloneArgs)(unsafe.Pointer(&mem[0]))
	// Each descriptor copied above 5 here, so that the child's dup3 onto 0
	// to 5 cannot overwrite one it has yet to copy (an error here is
	// contain's, and the next waiter is tried); the copies are closed once
	// the child has its own.
	srcs := []int{int(f.null.Fd()), int(f.null.Fd()), 2, int(f.r.Fd()), int(f.orders.Fd()), int(f.self.Fd())}
	if _, err := unix.FcntlInt(2, unix.F_GETFD, 0); err != nil {
		srcs[2] = int(f.null.Fd()) // no stderr: /dev/null, as for 0 and 1
	}
	for i, fd := range srcs {
		high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 6)
		if err != nil {
			f.closeContains()
			return nil, err
		}
		defer unix.Close(high)
		a.fds[i] = int64(high)
	}
	if cloneFault {
		a.fds[5] = 1 << 20
	}
	for _, s := range signals.Fatal() {
		a.fatal |= 1 << (s.(syscall.Signal) - 1)
	}
	a.ign[0] = 1 // SIG_IGN
	copy(a.name[:], "contain-guard")
	a.pfd[0] = 3
	// The strings and the two arrays of pointers go after the struct.
	free := mem[unsafe.Sizeof(*a):]
	str := func(s string) uintptr {
		p := uintptr(unsafe.Pointer(&free[0]))
		n := copy(free, s)
		free[n] = 0
		free = free[n+1:]
		return p
	}
	ptrs := func(ss []string) uintptr {
		ps := make([]uintptr, 0, len(ss)+1)
		for _, s := range ss {
			ps = append(ps, str(s))
		}
		ps = append(ps, 0)
		for uintptr(unsafe.Pointer(&free[0]))%8 != 0 {
			free = free[1:]
		}
		p := uintptr(unsafe.Pointer(&free[0]))
		for _, q := range ps {
			*(*uintptr)(unsafe.Pointer(&free[0])) = q
			free = free[8:]
		}
		return p
	}
	env := append(os.Environ(), "GOMAXPROCS=1")
	room := len(free) - 16<<10 // the stack's share
	need := 0
	for _, s := range env {
		need += len(s) + 1 + 8
	}
	if need+256 > room {
		f.closeContains()
		return nil, errors.New("the environment is too large for the cloned waiter")
	}
	a.argv = ptrs([]string{"contain-guard", Arg, strconv.Itoa(os.Getpid()), ordersArg})
	a.envp = ptrs(env)
	// CLONE_CLEAR_SIGHAND: the child starts with every handler the Go
	// runtime installed reset to the default (5.5; close_range is 5.9).
	a.clone = cloneArgsKernel{flags: unix.CLONE_VM | unix.CLONE_CLEAR_SIGHAND, exitSignal: uint64(unix.SIGCHLD),
		stack: uint64(uintptr(unsafe.Pointer(&mem[0]))), stackSize: cloneArea}
	// Every signal blocked on this thread across the clone: the child
	// starts with them blocked, and unblocks all but the forwarded ones
	// once it has set itself up.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		f.closeContains()
		return nil, err
	}
	pid, errno := cloneGuard(uintptr(unsafe.Pointer(&a.clone)))
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	runtime.KeepAlive(mem)
	if errno != 0 {
		f.closeContains()
		return nil, syscall.Errno(errno)
	}
	// Not waited for: it goes on setting itself up while contain does,
	// and does its work even if contain dies first (their memory is its
	// own then). Its setup cannot fail (every descriptor it copies is open
	// and above the ones it makes); should it anyway, it says so in
	// status, which Failed reads before COMMAND starts.
	return &Guard{pid: int(pid), w: f.orders, hold: f.w, waiter: "a clone of contain", cloned: &a.status}, nil
}
