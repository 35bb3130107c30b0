package run

// Who the kernel's OOM killer ended for the run's memory limit: read from
// the kernel's log where contain may read it (root; CAP_SYSLOG), else the
// members contain reaped that died of a SIGKILL it had not sent.

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/cgroup"
	"github.com/contain-cli/contain/report"
)

// openKmsg opens the kernel's log at its end, so that what is read later
// is what the kernel logged during the run; -1 where it cannot be read
// (an ordinary user, with kernel.dmesg_restrict).
func openKmsg() int {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return -1
	}
	return fd
}

// readKmsg reads the records logged since the last read, each record's
// text (after "PRIORITY,SEQ,TIME,FLAGS;").
func readKmsg(fd int) []string {
	var out []string
	buf := make([]byte, 8192)
	for range 1 << 16 {
		n, err := unix.Read(fd, buf)
		if err == unix.EPIPE {
			continue // overwritten while read: the next record follows
		}
		if n <= 0 || err != nil {
			break
		}
		rec := string(buf[:n])
		if _, text, ok := strings.Cut(rec, ";"); ok {
			rec = text
		}
		out = append(out, strings.TrimRight(rec, "\n"))
	}
	return out
}

// oomVictims finds in the kernel's records the processes the OOM killer
// ended for the memory cgroup memcg (its path in the hierarchy, as the
// kernel prints it): each "oom-kill:" record names the cgroup whose limit
// was hit (oom_memcg) and the victim (task, pid); the "Killed process"
// record that follows gives its resident memory (anon-rss, file-rss,
// shmem-rss, in kB).
func oomVictims(records []string, memcg string) []report.Holder {
	var out []report.Holder
	want := map[int]int{} // PID -> its index in out
	for _, rec := range records {
		if fields, ok := strings.CutPrefix(rec, "oom-kill:"); ok {
			kv := map[string]string{}
			for _, f := range strings.Split(fields, ",") {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			pid, err := strconv.Atoi(kv["pid"])
			if kv["oom_memcg"] != memcg || err != nil || pid <= 0 {
				continue
			}
			want[pid] = len(out)
			out = append(out, report.Holder{PID: pid, Comm: kv["task"]})
			continue
		}
		_, rest, ok := strings.Cut(rec, "Killed process ")
		if !ok {
			continue
		}
		pidText, rest, _ := strings.Cut(rest, " ")
		pid, err := strconv.Atoi(pidText)
		i, ours := want[pid]
		if err != nil || !ours {
			continue
		}
		var rss uint64
		for _, f := range strings.Fields(strings.NewReplacer(",", " ").Replace(rest)) {
			for _, k := range []string{"anon-rss:", "file-rss:", "shmem-rss:"} {
				if v, ok := strings.CutPrefix(f, k); ok {
					n, _ := strconv.ParseUint(strings.TrimSuffix(v, "kB"), 10, 64)
					rss += n << 10
				}
			}
		}
		if rss > 0 {
			out[i].RSSBytes = &rss
		}
	}
	return out
}

// memcgPath is dir's path in the cgroup hierarchy, as the kernel prints
// it: the mount's root, then dir below the mount point.
func memcgPath(dir string) string {
	mnt, root := cgroup.MountOf(dir)
	return path.Join("/", root, strings.TrimPrefix(dir, mnt))
}
