// Command titled is a daemon that writes its process title over its
// environment, as redis-server and nginx do (setproctitle): its
// environment shows no tag afterwards, only the title.
//
//	titled daemon PIDFILE   start "titled run PIDFILE" in a new session and exit
//	titled run PIDFILE      write the title over the environment, then PIDFILE, and sleep
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: titled daemon|run PIDFILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "daemon":
		exe, _ := os.Executable()
		p, err := os.StartProcess(exe, []string{"titled", "run", os.Args[2]},
			&os.ProcAttr{Env: os.Environ(), Sys: &syscall.SysProcAttr{Setsid: true}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		p.Release()
	case "run":
		if err := title("titled: master process"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		time.Sleep(300 * time.Second)
	}
}

// title writes s over the environment block, padded with NULs, through
// /proc/self/mem (the Go runtime has its own copy of the environment).
func title(s string) error {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	st := string(b)
	f := strings.Fields(st[strings.LastIndexByte(st, ')')+2:])
	// Fields 50 and 51 of stat (env_start, env_end); f starts at field 3.
	start, err1 := strconv.ParseInt(f[50-3], 10, 64)
	end, err2 := strconv.ParseInt(f[51-3], 10, 64)
	if err1 != nil || err2 != nil || end <= start {
		return fmt.Errorf("no environment block in /proc/self/stat")
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	buf := make([]byte, end-start)
	copy(buf, s)
	_, err = mem.WriteAt(buf, start)
	return err
}
