package platform

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/procfs"
)

// proc is the live /proc tree.
var proc = procfs.FS{Root: "/proc"}

// readFile reads a whole /proc or cgroup file into buf.
func readFile(path string, buf []byte) ([]byte, error) { return procfs.ReadFile(path, buf) }

// readStat reads /proc/PID/stat, using buf.
func readStat(pid int, buf []byte) (procfs.Stat, error) { return proc.Stat(pid, buf) }

// scanProcs reads the stat of every visible process.
func scanProcs() (map[int]procfs.Stat, error) {
	pids, err := proc.PIDs()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1024)
	procs := make(map[int]procfs.Stat, len(pids))
	for _, pid := range pids {
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
func descendants(procs map[int]procfs.Stat, root int) []procfs.Stat {
	children := make(map[int][]int, len(procs))
	for pid, st := range procs {
		children[st.PPID] = append(children[st.PPID], pid)
	}
	var out []procfs.Stat
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			queue = append(queue, c)
			if st := procs[c]; !st.Zombie() {
				out = append(out, st)
			}
		}
	}
	return out
}

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
