// Package procfs reads what contain needs of a Linux /proc tree: the stat,
// environment, command line, owner and ignored signals (SigIgn) of a
// process, and the boot time. The root is a parameter, so that the parsers
// are tested on fixture trees under testdata/ without touching the live
// system. The code is plain Go and builds everywhere; only Linux has a
// /proc to point it at.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrFormat is wrapped by every error about a file's content.
var ErrFormat = errors.New("unexpected /proc file format")

// TicksPerSecond is USER_HZ, the unit of start times in /proc/PID/stat. The
// kernel exports it as 100 on every architecture Go supports.
const TicksPerSecond = 100

// maxFile caps what is read of one file: an environment or command line is
// at most a few MiB (ARG_MAX); a larger file is not what it claims to be.
const maxFile = 16 << 20

// FS is a /proc tree.
type FS struct {
	Root string // "/proc" on a live system
}

// Stat is what contain uses of /proc/PID/stat.
type Stat struct {
	PID     int
	Comm    string // may hold spaces and parentheses
	State   byte   // 'R', 'S', 'D', 'T', 'Z', ...
	PPID    int
	PGRP    int
	Session int
	Start   uint64 // clock ticks after boot: with the PID, the process's identity
	// CPU time in clock ticks: the process's own (all its threads), and
	// that of the children it has waited for.
	UTime, STime, CUTime, CSTime uint64
	RSS                          uint64 // resident set, in pages
}

// Zombie reports whether the process has ended and waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat parses a stat line. comm sits between the first '(' and the
// last ')', since it may itself hold ") (".
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return Stat{}, fmt.Errorf("%w: stat: no (comm)", ErrFormat)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid < 0 {
		return Stat{}, fmt.Errorf("%w: stat: bad pid %q", ErrFormat, b[:open])
	}
	st := Stat{PID: pid, Comm: string(b[open+1 : closing])}
	// After ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime — starttime is the 20th field.
	f := bytes.Fields(b[closing+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: stat: %d fields after comm", ErrFormat, len(f))
	}
	st.State = f[0][0]
	ints := []*int{&st.PPID, &st.PGRP, &st.Session}
	for i, dst := range ints {
		n, err := strconv.Atoi(string(f[1+i]))
		if err != nil {
			return Stat{}, fmt.Errorf("%w: stat: field %d is %q", ErrFormat, 2+i, f[1+i])
		}
		*dst = n
	}
	if st.Start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("%w: stat: starttime is %q", ErrFormat, f[19])
	}
	// utime stime cutime cstime are fields 14 to 17, rss 24: read as
	// they are, 0 where a field is missing or negative (a zombie's rss).
	for i, dst := range []*uint64{&st.UTime, &st.STime, &st.CUTime, &st.CSTime} {
		*dst, _ = strconv.ParseUint(string(f[11+i]), 10, 64)
	}
	if len(f) > 21 {
		st.RSS, _ = strconv.ParseUint(string(f[21]), 10, 64)
	}
	return st, nil
}

// ReadFile reads a whole /proc file into buf (grown as needed) and returns
// it. It does not stat the file first: /proc sizes lie.
func ReadFile(path string, buf []byte) ([]byte, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxFile {
				return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrFormat, path, maxFile)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		want := cap(buf) - len(buf)
		n, err := f.read(buf[len(buf):cap(buf)])
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		buf = buf[:len(buf)+n]
		// A /proc file gives all it has left to one read that asks for
		// more (stat and status are generated whole, environ and cmdline
		// are copied until the buffer or the data ends): a short read is
		// the end, and a second read, a quarter of a scan's system calls,
		// is saved.
		if n < want {
			return buf, nil
		}
	}
}

func (fs FS) path(pid int, name string) string {
	return fs.Root + "/" + strconv.Itoa(pid) + "/" + name
}

// Stat reads /proc/PID/stat, using buf.
func (fs FS) Stat(pid int, buf []byte) (Stat, error) {
	b, err := ReadFile(fs.path(pid, "stat"), buf)
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err == nil && st.PID != pid {
		err = fmt.Errorf("%w: %s names PID %d", ErrFormat, fs.path(pid, "stat"), st.PID)
	}
	return st, err
}

// Environ reads /proc/PID/environ into buf: NUL-terminated KEY=VALUE
// entries. Another user's process gives a permission error without root;
// a kernel thread or a zombie has none (ESRCH or empty).
func (fs FS) Environ(pid int, buf []byte) ([]byte, error) {
	return ReadFile(fs.path(pid, "environ"), buf)
}

// Cmdline reads /proc/PID/cmdline as an argument list. A process may have
// rewritten it (then it is one string with spaces) or emptied it. Trailing
// empty strings are left out (TrimArgv).
func (fs FS) Cmdline(pid int, buf []byte) ([]string, error) {
	b, err := ReadFile(fs.path(pid, "cmdline"), buf)
	if err != nil {
		return nil, err
	}
	return TrimArgv(SplitNUL(b)), nil
}

// TrimArgv drops the empty strings at the end of argv. A process that
// writes its title over its arguments (redis-server, nginx, postgres, sshd)
// pads the rest of the area with NULs, which read as dozens of empty
// arguments (redis-server: 106 of 107); they are not shown. An empty last
// argument that a program was really given cannot be told apart from that
// padding, and is not shown either.
func TrimArgv(argv []string) []string {
	n := len(argv)
	for n > 0 && argv[n-1] == "" {
		n--
	}
	if n == 0 {
		return nil
	}
	return argv[:n:n]
}

// SplitNUL splits NUL-terminated strings; a missing final NUL is tolerated
// (a process that rewrote its arguments).
func SplitNUL(b []byte) []string {
	var out []string
	for len(b) > 0 {
		var s []byte
		s, b, _ = bytes.Cut(b, []byte{0})
		out = append(out, string(s))
	}
	return out
}

// Getenv finds key in an environ block. The first entry wins, as for
// getenv(3).
func Getenv(environ []byte, key string) (string, bool) {
	for len(environ) > 0 {
		var kv []byte
		kv, environ, _ = bytes.Cut(environ, []byte{0})
		if len(kv) > len(key) && kv[len(key)] == '=' && string(kv[:len(key)]) == key {
			return string(kv[len(key)+1:]), true
		}
	}
	return "", false
}

// Overwritten reports whether an environ block no longer holds the
// environment the process was started with, because the process wrote
// over it: programs that set their process title (redis-server, nginx,
// postgres, perl's $0) take the environment's memory, next to the
// arguments', for a longer title, and fill what the title leaves with NULs
// or spaces. /proc/PID/environ shows that memory as it is now, and the
// process's tag, if it had one, is gone from it.
//
// What execve(2) leaves there is a run of NAME=value strings, each ended by
// a NUL. A block is taken as written over when it does not end in a NUL,
// has an empty string (two NULs in a row, or one at the start: the padding
// of a title), or has a string whose name (what comes before the first
// '=', or all of it when there is none) is empty or holds a space or a
// control character (a title: "nginx: worker process", perl's padding of
// spaces). A string with no '=' whose name is otherwise plain ("FOO") is
// left as an environment: execve takes it, and a title is not that. An
// empty block is an empty environment (env -i, a kernel thread, a zombie),
// not one written over.
func Overwritten(env []byte) bool {
	if len(env) == 0 {
		return false
	}
	if env[len(env)-1] != 0 {
		return true
	}
	for _, kv := range bytes.Split(env[:len(env)-1], []byte{0}) {
		name, _, _ := bytes.Cut(kv, []byte{'='})
		if len(name) == 0 {
			return true
		}
		for _, c := range name {
			if c <= ' ' || c == 0x7f {
				return true
			}
		}
	}
	return false
}

// ReasonOverwritten is why ScanTagged skips a process whose environment
// was written over (Overwritten).
const ReasonOverwritten = "environment overwritten by its process title"

// UID reads the real user ID from /proc/PID/status.
func (fs FS) UID(pid int, buf []byte) (int, error) {
	b, err := ReadFile(fs.path(pid, "status"), buf)
	if err != nil {
		return 0, err
	}
	return ParseStatusUID(b)
}

// ParseStatusUID finds the real UID in a status file ("Uid:\treal\teffective\tsaved\tfs").
func ParseStatusUID(b []byte) (int, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			uid, err := strconv.ParseUint(string(f[0]), 10, 32)
			if err != nil {
				break
			}
			return int(uid), nil
		}
	}
	return 0, fmt.Errorf("%w: status has no Uid line", ErrFormat)
}

// SigIgn reads the signals pid ignores from /proc/PID/status
// (ParseStatusSigIgn).
func (fs FS) SigIgn(pid int, buf []byte) (uint64, error) {
	b, err := ReadFile(fs.path(pid, "status"), buf)
	if err != nil {
		return 0, err
	}
	return ParseStatusSigIgn(b)
}

// ParseStatusSigIgn finds the SigIgn line of a status file: 16 hex
// digits, the signals the process ignores (its disposition SIG_IGN), bit
// N-1 for signal N.
func ParseStatusSigIgn(b []byte) (uint64, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if rest, ok := bytes.CutPrefix(line, []byte("SigIgn:")); ok {
			mask, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("%w: status: SigIgn: %w", ErrFormat, err)
			}
			return mask, nil
		}
	}
	return 0, fmt.Errorf("%w: status has no SigIgn line", ErrFormat)
}

// ParseStatusNSpid reads the NSpid line of a status file: the process's
// PID in each PID namespace, outermost (the /proc's) first; nil when the
// line is missing or malformed.
func ParseStatusNSpid(b []byte) []int {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		rest, ok := bytes.CutPrefix(line, []byte("NSpid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		out := make([]int, 0, len(f))
		for _, x := range f {
			n, err := strconv.Atoi(string(x))
			if err != nil || n < 1 {
				return nil
			}
			out = append(out, n)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return nil
}

// NSpid reads a process's NSpid line (ParseStatusNSpid) and its real
// user.
func (fs FS) NSpid(pid int, buf []byte) (nspid []int, uid int, err error) {
	b, err := ReadFile(fs.path(pid, "status"), buf)
	if err != nil {
		return nil, 0, err
	}
	uid, err = ParseStatusUID(b)
	if err != nil {
		return nil, 0, err
	}
	nspid = ParseStatusNSpid(b)
	if nspid == nil {
		return nil, 0, fmt.Errorf("%w: %s has no NSpid line", ErrFormat, fs.path(pid, "status"))
	}
	return nspid, uid, nil
}

// PIDNamespace names the PID namespace a process runs in: the inode of
// /proc/PID/ns/pid ("pid:[4026531836]"). Reading another user's needs the
// right to trace it, as its environment does.
func (fs FS) PIDNamespace(pid int) (uint64, error) {
	l, err := os.Readlink(fs.path(pid, "ns/pid"))
	if err != nil {
		return 0, err
	}
	return ParseNSLink(l)
}

// ParseNSLink reads the inode out of a namespace link's text ("pid:[N]").
func ParseNSLink(l string) (uint64, error) {
	_, rest, ok := strings.Cut(l, ":[")
	num, ok2 := strings.CutSuffix(rest, "]")
	if !ok || !ok2 {
		return 0, fmt.Errorf("%w: namespace link %q", ErrFormat, l)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: namespace link %q", ErrFormat, l)
	}
	return n, nil
}

// BootTime reads btime, the boot time in whole seconds, from /proc/stat.
func (fs FS) BootTime() (time.Time, error) {
	b, err := ReadFile(fs.Root+"/stat", make([]byte, 0, 4096))
	if err != nil {
		return time.Time{}, err
	}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			s, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			if err != nil {
				break
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s/stat has no btime line", ErrFormat, fs.Root)
}

// StartTime turns a start time in ticks into wall-clock time.
func StartTime(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks) * (time.Second / TicksPerSecond))
}

// PIDs lists the numeric entries of the root: every visible process.
func (fs FS) PIDs() ([]int, error) {
	d, err := os.Open(fs.Root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Tagged is a process whose environment holds the variable a scan looks for.
type Tagged struct {
	Stat
	UID    int
	Argv   []string
	Value  string // the variable's value, as found
	Daemon bool   // the daemon variable is "1"
	// NSpid is its PID in each PID namespace from the one this /proc
	// belongs to down to its own (status's NSpid line): one entry when
	// it runs in /proc's own namespace, nil where the kernel has no such
	// line (before 4.1).
	NSpid []int
}

// Scan is the result of ScanTagged.
type Scan struct {
	Procs []Tagged
	// Unreadable counts the processes whose environment could not be read,
	// or was written over by the process (ReasonOverwritten), by reason:
	// they may carry the variable, and are not guessed at.
	Unreadable map[string]int
}

// ScanTagged reads the environment of every visible process and returns
// those that hold key (with their stat, owner and command line). A process
// that vanishes while it is read, a kernel thread and a zombie (none has an
// environment to read) are left out; one that cannot be read for another
// reason, or whose environment it wrote over with its title (Overwritten)
// and holds no key, is counted.
func (fs FS) ScanTagged(key, daemonKey string) (Scan, error) {
	pids, err := fs.PIDs()
	if err != nil {
		return Scan{}, err
	}
	// The reads are system calls that the kernel answers on the CPU that
	// makes them: one worker per CPU, each on a share of the PIDs.
	workers := min(runtime.GOMAXPROCS(0), 8, len(pids)/64+1)
	parts := make([]Scan, workers)
	var wg sync.WaitGroup
	for w := range parts {
		lo, hi := w*len(pids)/workers, (w+1)*len(pids)/workers
		wg.Go(func() { parts[w] = fs.scanPIDs(pids[lo:hi], key, daemonKey) })
	}
	wg.Wait()
	sc := Scan{Unreadable: map[string]int{}}
	for _, p := range parts {
		sc.Procs = append(sc.Procs, p.Procs...)
		for r, n := range p.Unreadable {
			sc.Unreadable[r] += n
		}
	}
	return sc, nil
}

func (fs FS) scanPIDs(pids []int, key, daemonKey string) Scan {
	sc := Scan{Unreadable: map[string]int{}}
	buf := make([]byte, 0, 8192)
	for _, pid := range pids {
		// PID 1 is never signalled, asked or waited for (an ancestor of
		// every process, never an originator): an init that cannot be
		// read (a VM's or a sandbox's, even by root) hides nothing that
		// matters, and is not counted.
		count := pid != 1
		env, err := fs.Environ(pid, buf)
		if err != nil {
			if r := unreadable(err); r != "" && count {
				sc.Unreadable[r]++
			}
			continue
		}
		buf = env[:0]
		value, ok := Getenv(env, key)
		if !ok {
			// Either no tag, or one the process wrote over: the latter
			// is counted, as it may have carried one.
			if Overwritten(env) && count {
				sc.Unreadable[ReasonOverwritten]++
			}
			continue
		}
		daemon, _ := Getenv(env, daemonKey)
		t, err := fs.describe(pid, buf)
		if err != nil {
			if r := unreadable(err); r != "" && count {
				sc.Unreadable[r]++
			}
			continue
		}
		t.Value, t.Daemon = value, daemon == "1"
		sc.Procs = append(sc.Procs, t)
	}
	return sc
}

// describe reads the stat, owner and command line of pid.
func (fs FS) describe(pid int, buf []byte) (Tagged, error) {
	st, err := fs.Stat(pid, buf)
	if err != nil {
		return Tagged{}, err
	}
	status, err := ReadFile(fs.path(pid, "status"), buf)
	if err != nil {
		return Tagged{}, err
	}
	uid, err := ParseStatusUID(status)
	if err != nil {
		return Tagged{}, err
	}
	nspid := ParseStatusNSpid(status)
	argv, err := fs.Cmdline(pid, buf)
	if err != nil {
		return Tagged{}, err
	}
	return Tagged{Stat: st, UID: uid, Argv: argv, NSpid: nspid}, nil
}

// unreadable names why a process could not be read, or returns "" when it
// simply is not there any more (or never had an environment: a kernel thread,
// a zombie).
func unreadable(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist), isESRCH(err):
		return ""
	case errors.Is(err, os.ErrPermission):
		return "permission denied"
	case errors.Is(err, ErrFormat):
		return "unexpected content"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// UnescapeMount undoes the octal escapes (\040 for a space) of
// /proc/PID/mountinfo's paths and options.
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
