package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procStat is what contain needs of /proc/PID/stat.
type procStat struct {
	pid   int
	comm  string
	state byte
	ppid  int
	start uint64 // clock ticks after boot: with the PID, the process's identity
}

var errStatFormat = errors.New("unexpected /proc/PID/stat format")

// parseStat reads a stat line. comm sits between the first '(' and the last
// ')' and may itself hold spaces and parentheses.
func parseStat(pid int, b []byte) (procStat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return procStat{}, errStatFormat
	}
	st := procStat{pid: pid, comm: string(b[open+1 : closing])}
	// After ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime — starttime is the 20th field.
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, errStatFormat
	}
	st.state = fields[0][0]
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procStat{}, errStatFormat
	}
	st.ppid = ppid
	st.start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, errStatFormat
	}
	return st, nil
}

// readFile reads a whole /proc or cgroup file into buf, growing it as
// needed. It does not stat the file first: their sizes lie.
func readFile(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readStat reads /proc/PID/stat, using buf.
func readStat(pid int, buf []byte) (procStat, error) {
	b, err := readFile("/proc/"+strconv.Itoa(pid)+"/stat", buf)
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

// scanProcs reads the stat of every visible process.
func scanProcs() (map[int]procStat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1024)
	procs := make(map[int]procStat, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, err := readStat(pid, buf)
		if err != nil {
			continue // gone since the listing
		}
		procs[pid] = st
	}
	return procs, nil
}

// descendants lists the live (non-zombie) processes below root. With contain
// a subreaper, every process the command started and that still runs is
// one of them, whether it left the process group or was double-forked.
func descendants(procs map[int]procStat, root int) []procStat {
	children := make(map[int][]int, len(procs))
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var out []procStat
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			queue = append(queue, c)
			if st := procs[c]; st.state != 'Z' {
				out = append(out, st)
			}
		}
	}
	return out
}

// errIdentity means the PID now names another process than the one seen.
var errIdentity = errors.New("process changed identity")

// signalPinned sends sig to pid through a pidfd opened first. verify runs
// after the pidfd pins the process; the send succeeding afterwards proves
// the PID was not recycled in between (a process keeps its PID until it is
// reaped).
func signalPinned(pid int, sig unix.Signal, verify func() error) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := verify(); err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal: %w", err)
	}
	return nil
}
