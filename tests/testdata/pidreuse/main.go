// Command pidreuse takes the ID of a process group that has just ended, as
// another user can between two of contain's scans: in a PID namespace
// whose pid_max is small, it forks until the PID handed out last is below
// G with every PID between them in use, then ends the group's last process (a line on DIR/fifo, which it reads),
// waits until PID G is free, and starts a shell that gets PID G, calls
// setsid (so that it leads a group and session of ID G), starts a sleep in
// them, and exits at once, reaped here. The sleep is what a scan then
// finds in a group and session of ID G, whose leader is gone.
//
//	pidreuse DIR    DIR/g holds G; writes DIR/c: the sleep's PID, or "missed N" (PID G went to another)
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pidreuse DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	g := readInt(filepath.Join(dir, "g"))
	// Let the scans see the group's leader for a while.
	time.Sleep(500 * time.Millisecond)
	attr := &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin"}}
	for i := 0; ; i++ {
		if i == 100000 {
			fail("never came round to PID %d", g)
		}
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, attr)
		if err != nil {
			fail("fork: %v", err)
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		if pid < g && inUse(pid+1, g) {
			break
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY, 0)
	if err != nil {
		fail("%v", err)
	}
	f.WriteString("end\n")
	f.Close()
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(g, 0) != syscall.ESRCH; {
		if time.Now().After(deadline) {
			fail("PID %d never ended", g)
		}
	}
	script := "sleep 60 & echo $! > " + filepath.Join(dir, "c.tmp")
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Env: attr.Env, Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		fail("fork: %v", err)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	out := "missed " + strconv.Itoa(pid)
	if pid == g {
		b, err := os.ReadFile(filepath.Join(dir, "c.tmp"))
		if err != nil {
			fail("%v", err)
		}
		out = strings.TrimSpace(string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "c"), []byte(out+"\n"), 0o644); err != nil {
		fail("%v", err)
	}
}

// inUse reports whether every PID from lo to hi-1 names a process: the
// next fork after lo-1 then gets PID hi, once hi is free.
func inUse(lo, hi int) bool {
	for pid := lo; pid < hi; pid++ {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return false
		}
	}
	return true
}

func readInt(path string) int {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
			return n
		}
		if time.Now().After(deadline) {
			fail("no %s", path)
		}
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "pidreuse: "+format+"\n", a...)
	os.Exit(1)
}
