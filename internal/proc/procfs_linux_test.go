package proc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid(), make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getppid() || st.Start == 0 || st.Zombie() {
		t.Fatalf("readStat(self) = %+v, want ppid %d", st, os.Getppid())
	}
}

// scanEntries shows this process as /proc/self/stat does, with its
// session.
func TestScanEntriesSelf(t *testing.T) {
	procs, err := Scan()
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := unix.Getsid(0)
	for _, p := range procs {
		if p.PID == os.Getpid() {
			if p.PPID != os.Getppid() || p.Pgrp != unix.Getpgrp() || p.Sid != sid || p.Start == 0 || p.Zombie {
				t.Fatalf("scanEntries: self is %+v; want parent %d, group %d, session %d", p, os.Getppid(), unix.Getpgrp(), sid)
			}
			return
		}
	}
	t.Fatalf("scanEntries: %d processes, not this one", len(procs))
}
