//go:build linux && containvm

package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// helper runs this binary as one of the programs the tests start inside
// contain (CONTAIN_VM_HELPER=name, its arguments after it). Each writes
// its PID to a file in the directory it is given before anything else.
//
//	escapee DIR MIB  COMMAND: a double fork in a new session whose
//	                 grandchild allocates MIB MiB; COMMAND then waits
//	mid DIR MIB      the escapee's middle: starts the hog, exits
//	hog DIR MIB      allocates MIB MiB, touching every page, then waits
//	grow DIR MIB RATE  the same at RATE MiB a second, its count in DIR/mib
//	tree DIR         COMMAND: a background sleep and a setsid escapee
//	setsid DIR       the escapee: becomes sleep 301
//	spin DURATION    spins on one CPU for DURATION of wall time
//	forker           starts a sleep 30 every 10 ms, a refused start
//	                 and all, until it is ended (make -j, a test runner)
//	libgroup PIDS    a program of package containment: one command in a
//	                 Group with a --pids limit of PIDS (0: none); prints
//	                 what it saw (library_test.go)
func helper(name string, args []string) int {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	writePID := func(file string) {
		os.WriteFile(filepath.Join(arg(0), file), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	self := func(h string, setsid bool, a ...string) *exec.Cmd {
		self, _ := os.Executable()
		cmd := exec.Command(self, a...)
		cmd.Env = append(os.Environ(), helperVar+"="+h)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
		return cmd
	}
	switch name {
	case "escapee":
		writePID("command")
		mid := self("mid", true, arg(0), arg(1))
		if err := mid.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "escapee:", err)
			return 1
		}
		sleepForever()
	case "mid":
		if err := self("hog", false, arg(0), arg(1)).Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mid:", err)
			return 1
		}
		return 0
	case "forker":
		for {
			exec.Command("sleep", "30").Start() // a refused fork: tried again
			time.Sleep(10 * time.Millisecond)
		}
	case "hog":
		writePID("hog")
		mib, _ := strconv.Atoi(arg(1))
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			held = append(held, b)
		}
		fmt.Fprintf(os.Stderr, "hog: %d MiB allocated, past any limit the test set\n", mib)
		sleepForever()
	case "grow":
		// MIB MiB at RATE MiB a second, one MiB at a time, the count
		// written after each: what the tree held when it was killed.
		mib, _ := strconv.Atoi(arg(1))
		rate, _ := strconv.Atoi(arg(2))
		step := time.Second / time.Duration(rate)
		next := time.Now()
		for i := 1; i <= mib; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			held = append(held, b)
			os.WriteFile(filepath.Join(arg(0), "mib"), []byte(strconv.Itoa(i)), 0o644)
			next = next.Add(step)
			time.Sleep(time.Until(next))
		}
		sleepForever()
	case "tree":
		writePID("command")
		bg := exec.Command("sleep", "300")
		if err := bg.Start(); err != nil {
			return 1
		}
		os.WriteFile(filepath.Join(arg(0), "background"), []byte(strconv.Itoa(bg.Process.Pid)), 0o644)
		if err := self("setsid", true, arg(0)).Start(); err != nil {
			return 1
		}
		sleepForever()
	case "setsid":
		writePID("setsid")
		sleep, _ := exec.LookPath("sleep")
		syscall.Exec(sleep, []string{"sleep", "301"}, os.Environ())
		return 1
	case "libgroup":
		return libGroup(arg(0))
	case "nsspawn", "nsinit", "nsmemspawn", "nsmeminit":
		return containerHelper(name, args)
	case "spin":
		d, _ := time.ParseDuration(arg(0))
		for end := time.Now().Add(d); time.Now().Before(end); {
			for i := 0; i < 1e6; i++ {
				spun++
			}
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "no helper %q\n", name)
	return 2
}

// sleepForever waits to be killed (select{} would be a deadlock to the
// runtime).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

var (
	held [][]byte // the hog's memory, kept from the collector
	spun int
)
