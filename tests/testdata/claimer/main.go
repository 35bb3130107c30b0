// Command claimer plays the other side of contain run --allow-daemons'
// claim socket (@contain-daemons-PID) for tests/security_claim_test.go:
// an attacker of another user, or a member forging a claim.
//
//	claimer close PID                connect and hang up at once, 3 times
//	claimer trickle PID CONNS SECS   hold CONNS connections, a byte every 1.5 s each, for SECS
//	claimer squat N FILE             bind the names of the next N PIDs; what a connection sends goes to FILE, answered "ok"; until stdin ends
//	claimer forge DIR EMPTY CONTAIN  (a member) connect to the run, start "forged" as a child holding the socket, exec CONTAIN run -- sleep 1
//	claimer forged DIR CONTAIN       once its parent runs CONTAIN, claim itself; the answer to DIR/answer; granted, sleep
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: claimer close|trickle|squat|forge|forged ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "close":
		pid := atoi(os.Args[2])
		for i := 0; i < 3; i++ {
			fd := connect(pid, 5*time.Second)
			syscall.Close(fd)
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Println("done")
	case "trickle":
		trickle(atoi(os.Args[2]), atoi(os.Args[3]), time.Duration(atoi(os.Args[4]))*time.Second)
	case "squat":
		squat(atoi(os.Args[2]), os.Args[3])
	case "forge":
		forge(os.Args[2], os.Args[3] == "1", os.Args[4])
	case "forged":
		forged(os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "claimer: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		os.Exit(2)
	}
	return n
}

func addr(pid int) *syscall.SockaddrUnix {
	return &syscall.SockaddrUnix{Name: "@contain-daemons-" + strconv.Itoa(pid)}
}

// connect connects to contain run pid's socket, trying again until it
// listens.
func connect(pid int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "claimer:", err)
			os.Exit(1)
		}
		if err = syscall.Connect(fd, addr(pid)); err == nil {
			return fd
		}
		syscall.Close(fd)
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "claimer: cannot connect:", err)
			os.Exit(3)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// trickle holds conns connections, each sending a byte every 1.5 s, for
// d; a connection the run closes is made again.
func trickle(pid, conns int, d time.Duration) {
	end := time.Now().Add(d)
	for i := 0; i < conns; i++ {
		go func() {
			for time.Now().Before(end) {
				fd := connect(pid, time.Until(end))
				for time.Now().Before(end) {
					if _, err := syscall.SendmsgN(fd, []byte("1"), nil, nil, syscall.MSG_NOSIGNAL); err != nil {
						break
					}
					time.Sleep(1500 * time.Millisecond)
				}
				syscall.Close(fd)
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	time.Sleep(d)
}

// squat binds the names of the next n PIDs and prints "ready FIRST LAST".
func squat(n int, file string) {
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		os.Exit(1)
	}
	first := atoi(strings.TrimSpace(string(b))) + 1
	out, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		os.Exit(1)
	}
	bound := 0
	for pid := first; pid < first+n; pid++ {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			break
		}
		if syscall.Bind(fd, addr(pid)) != nil || syscall.Listen(fd, 4) != nil {
			syscall.Close(fd)
			continue
		}
		bound++
		go func() {
			for {
				c, _, err := syscall.Accept(fd)
				if err != nil {
					return
				}
				go func() {
					defer syscall.Close(c)
					tv := syscall.NsecToTimeval(int64(time.Second))
					syscall.SetsockoptTimeval(c, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
					buf := make([]byte, 256)
					n, _ := syscall.Read(c, buf)
					if n > 0 {
						fmt.Fprintf(out, "%d: %q\n", pid, buf[:n])
					}
					syscall.SendmsgN(c, []byte("ok\n"), nil, nil, syscall.MSG_NOSIGNAL)
				}()
			}
		}()
	}
	fmt.Printf("ready %d %d %d\n", first, first+n-1, bound)
	os.Stdin.Read(make([]byte, 1)) // until the test closes it
}

// forge is a member of the run (its tag names the run): it connects to
// the run, starts a child that holds the socket, and becomes contain.
func forge(dir string, empty bool, contain string) {
	_, p, _ := strings.Cut(os.Getenv("RUNNING_PROCESS_ORIGINATOR"), ":")
	fd := connect(atoi(p), 5*time.Second)
	syscall.CloseOnExec(fd) // the child gets it as fd 3
	var env []string
	if !empty {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "RUNNING_PROCESS_IS_DAEMON=") {
				env = append(env, kv)
			}
		}
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "forged", dir, contain)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(fd), "claim")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		os.Exit(1)
	}
	os.WriteFile(dir+"/forged", []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	err := syscall.Exec(contain, []string{"contain", "run", "--", "sleep", "1"}, os.Environ())
	fmt.Fprintln(os.Stderr, "claimer: exec:", err)
	os.Exit(1)
}

// forged waits until its parent runs contain, then claims itself through
// fd 3, the parent's connection.
func forged(dir, contain string) {
	var want, got syscall.Stat_t
	syscall.Stat(contain, &want)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if syscall.Stat(fmt.Sprintf("/proc/%d/exe", os.Getppid()), &got) == nil && got.Ino == want.Ino && got.Dev == want.Dev {
			break
		}
		if time.Now().After(deadline) {
			os.WriteFile(dir+"/answer", []byte("parent never ran contain\n"), 0o644)
			os.Exit(1)
		}
	}
	line := fmt.Sprintf("%d %d\n", os.Getpid(), startOf(os.Getpid()))
	syscall.SendmsgN(3, []byte(line), nil, nil, syscall.MSG_NOSIGNAL)
	tv := syscall.NsecToTimeval(int64(3 * time.Second))
	syscall.SetsockoptTimeval(3, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	var got2 []byte
	buf := make([]byte, 256)
	for {
		n, err := syscall.Read(3, buf)
		if n <= 0 || err != nil {
			break
		}
		got2 = append(got2, buf[:n]...)
	}
	os.WriteFile(dir+"/answer", append(got2, '\n'), 0o644)
	if !bytes.HasPrefix(got2, []byte("ok")) {
		return // refused: its parent, a contain run, waits for its children
	}
	time.Sleep(300 * time.Second)
}

// startOf is pid's start time in clock ticks (/proc/PID/stat field 22).
func startOf(pid int) uint64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
			n, _ := strconv.ParseUint(f[19], 10, 64)
			return n
		}
	}
	return 0
}
