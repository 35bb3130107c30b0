package proc

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/contain-cli/contain/internal/proc/peb"
)

// errWOW64 marks a 32-bit process: its own (32-bit) process parameters are
// not read, so it is counted as unreadable rather than guessed at.
var errWOW64 = errors.New("32-bit (WOW64) process")

// errNoPEB: a process without a user-mode PEB (System, Registry, Memory
// Compression) has no environment, so no tag.
var errNoPEB = errors.New("no process environment block")

// ProcessParameters finds the address of another process's
// RTL_USER_PROCESS_PARAMETERS through its PEB.
func ProcessParameters(h windows.Handle) (uintptr, error) {
	var wow uintptr
	if err := windows.NtQueryInformationProcess(h, windows.ProcessWow64Information, unsafe.Pointer(&wow), uint32(unsafe.Sizeof(wow)), nil); err == nil && wow != 0 {
		return 0, errWOW64
	}
	var pbi windows.PROCESS_BASIC_INFORMATION
	if err := windows.NtQueryInformationProcess(h, windows.ProcessBasicInformation, unsafe.Pointer(&pbi), uint32(unsafe.Sizeof(pbi)), nil); err != nil {
		return 0, fmt.Errorf("NtQueryInformationProcess: %w", err)
	}
	if pbi.PebBaseAddress == nil {
		return 0, errNoPEB
	}
	var p windows.PEB
	var params uintptr
	if err := readMemory(h, uintptr(unsafe.Pointer(pbi.PebBaseAddress))+unsafe.Offsetof(p.ProcessParameters), unsafe.Pointer(&params), unsafe.Sizeof(params)); err != nil {
		return 0, err
	}
	if params == 0 {
		return 0, errNoPEB
	}
	return params, nil
}

// readMemory reads exactly n bytes at addr of process h into dst.
func readMemory(h windows.Handle, addr uintptr, dst unsafe.Pointer, n uintptr) error {
	var got uintptr
	if err := windows.ReadProcessMemory(h, addr, (*byte)(dst), n, &got); err != nil {
		return fmt.Errorf("ReadProcessMemory: %w", err)
	}
	if got != n {
		return fmt.Errorf("ReadProcessMemory: %d of %d bytes", got, n)
	}
	return nil
}

// CreationTime reads a process's creation time (FILETIME: 100 ns since
// 1601) and whether it has exited.
func CreationTime(h windows.Handle) (start uint64, exited bool, err error) {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
		return 0, false, fmt.Errorf("GetProcessTimes: %w", err)
	}
	ev, _ := windows.WaitForSingleObject(h, 0)
	return uint64(c.HighDateTime)<<32 | uint64(c.LowDateTime), ev == windows.WAIT_OBJECT_0, nil
}

// FiletimeToTime converts a FILETIME value to wall-clock time.
func FiletimeToTime(ft uint64) time.Time {
	f := windows.Filetime{LowDateTime: uint32(ft), HighDateTime: uint32(ft >> 32)}
	return time.Unix(0, f.Nanoseconds())
}

// ProcessGroup reads the console process group a process belongs to.
func ProcessGroup(pid int) (uint32, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ, false, uint32(pid))
	if err != nil {
		return 0, err
	}
	defer windows.CloseHandle(h)
	params, err := ProcessParameters(h)
	if err != nil {
		return 0, err
	}
	var pp windows.RTL_USER_PROCESS_PARAMETERS
	var gid uint32
	err = readMemory(h, params+unsafe.Offsetof(pp.ProcessGroupId), unsafe.Pointer(&gid), unsafe.Sizeof(gid))
	return gid, err
}

// ReadEnvironment reads the environment block and the command line of
// process h out of its memory. The process may be replacing its block
// meanwhile (SetEnvironmentVariable allocates a new one and swaps the
// pointer): a read counts only if the pointer and size are the same after
// it as before.
func ReadEnvironment(h windows.Handle) (env []string, cmdline string, err error) {
	params, err := ProcessParameters(h)
	if err != nil {
		return nil, "", err
	}
	var pp windows.RTL_USER_PROCESS_PARAMETERS
	for attempt := 0; attempt < 5; attempt++ {
		if err := readMemory(h, params, unsafe.Pointer(&pp), unsafe.Sizeof(pp)); err != nil {
			return nil, "", err
		}
		size := min(pp.EnvironmentSize, peb.MaxEnvironment)
		if pp.Environment == nil || size == 0 {
			return nil, "", errNoPEB
		}
		block := make([]byte, size)
		if err := readMemory(h, uintptr(pp.Environment), unsafe.Pointer(&block[0]), size); err != nil {
			continue // freed by a swap, or not yet written
		}
		// A size that lags behind the block would cut off its last
		// entries (the tag sorts late): read on until its end.
		for !peb.Terminated(block) && size < peb.MaxEnvironment {
			size = min(2*size, peb.MaxEnvironment)
			more := make([]byte, size)
			if readMemory(h, uintptr(pp.Environment), unsafe.Pointer(&more[0]), size) != nil {
				break
			}
			block = more
		}
		if !peb.Terminated(block) {
			return nil, "", errors.New("its environment block has no end within its size")
		}
		var after struct {
			env  unsafe.Pointer
			size uintptr
		}
		if readMemory(h, params+unsafe.Offsetof(pp.Environment), unsafe.Pointer(&after.env), unsafe.Sizeof(after.env)) != nil ||
			readMemory(h, params+unsafe.Offsetof(pp.EnvironmentSize), unsafe.Pointer(&after.size), unsafe.Sizeof(after.size)) != nil ||
			after.env != pp.Environment || after.size != pp.EnvironmentSize {
			continue
		}
		if n := uintptr(pp.CommandLine.Length); n > 0 && pp.CommandLine.Buffer != nil {
			b := make([]byte, min(n, 64<<10))
			if readMemory(h, uintptr(unsafe.Pointer(pp.CommandLine.Buffer)), unsafe.Pointer(&b[0]), uintptr(len(b))) == nil {
				cmdline = peb.UTF16(b)
			}
		}
		return peb.EnvBlock(block), cmdline, nil
	}
	return nil, "", errors.New("its environment kept changing while it was read")
}

// owner is a process's user: its SID, and DOMAIN\name for people.
type owner struct{ sid, name string }

var accounts struct {
	sync.Mutex
	names map[string]string
}

// processOwner reads the user a process runs as.
func processOwner(h windows.Handle) (owner, error) {
	var t windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &t); err != nil {
		return owner{}, err
	}
	defer t.Close()
	return tokenOwner(t)
}

func tokenOwner(t windows.Token) (owner, error) {
	u, err := t.GetTokenUser()
	if err != nil {
		return owner{}, err
	}
	sid := u.User.Sid.String()
	accounts.Lock()
	defer accounts.Unlock()
	if accounts.names == nil {
		accounts.names = map[string]string{}
	}
	name, ok := accounts.names[sid]
	if !ok {
		name = sid
		if acct, dom, _, err := u.User.Sid.LookupAccount(""); err == nil {
			name = acct
			if dom != "" {
				name = dom + `\` + acct
			}
		}
		accounts.names[sid] = name
	}
	return owner{sid: sid, name: name}, nil
}

var self struct {
	once     sync.Once
	owner    owner
	elevated bool
}

// currentUser is the user contain runs as, and whether its token is
// elevated (the Windows counterpart of root for reap's rules).
func currentUser() (owner, bool) {
	self.once.Do(func() {
		t := windows.GetCurrentProcessToken()
		self.owner, _ = tokenOwner(t)
		self.elevated = t.IsElevated()
	})
	return self.owner, self.elevated
}

// Calls x/sys does not wrap.
var (
	ntdll                = windows.NewLazySystemDLL("ntdll.dll")
	procNtResumeProcess  = ntdll.NewProc("NtResumeProcess")
	procNtSuspendProcess = ntdll.NewProc("NtSuspendProcess")
)

// ntCall calls an ntdll function that takes one handle and returns an
// NTSTATUS.
func ntCall(p *windows.LazyProc, h windows.Handle) error {
	if err := p.Find(); err != nil {
		return err
	}
	r, _, _ := p.Call(uintptr(h))
	if r != 0 {
		return windows.NTStatus(r)
	}
	return nil
}

// Resume resumes every thread of the process h (NtResumeProcess).
func Resume(h windows.Handle) error { return ntCall(procNtResumeProcess, h) }

// TerminateCode is the exit code of the processes contain terminates, as
// taskkill /F gives them.
const TerminateCode = 1

// Stopped is false: a suspended process shows no state that contain reads.
func Stopped(int) bool { return false }
