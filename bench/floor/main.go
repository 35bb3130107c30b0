//go:build linux

// Command floor is a yardstick for contain's start-up: the containment
// mechanisms of `contain run` and nothing else — signal subscription,
// subreaper, a cgroup v2 group when one can be made, a new process group,
// Pdeathsig from a locked thread, one reaper — with no options, no tag and
// no event loop. Built with -tags linkcli it also links urfave/cli, without
// parsing anything: the cost of the library itself.
package main

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// linkCLI is set by cli.go when built with -tags linkcli.
var linkCLI func()

func main() {
	if len(os.Args) > 100 && linkCLI != nil {
		linkCLI() // never: only makes the linker keep the library
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	dir := ""
	for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(mnt, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			continue
		}
		dir = mnt + "/floor-" + strconv.Itoa(os.Getpid())
		if unix.Mkdir(dir, 0o755) != nil {
			dir = ""
		} else if fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		}
		break
	}
	runtime.LockOSThread()
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		os.Exit(127)
	}
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
			break
		}
	}
	if dir != "" {
		unix.Rmdir(dir)
	}
}
