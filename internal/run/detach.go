//go:build linux || darwin

package run

import "os/exec"

// runDetached starts COMMAND outside any group of contain's (detachAttr
// says where) and returns at once. Its standard streams are the null
// device, so that a caller reading contain's output (pid=$(contain run -d
// ...)) is not held open by the daemon. (Windows has its own, in
// run_windows.go: a job may refuse to let COMMAND leave it.)
func runDetached(o Options) (Result, error) {
	cmd := exec.Command(o.Args[0], o.Args[1:]...)
	if cmd.Err != nil {
		return Result{}, &StartError{Name: o.Args[0], Err: cmd.Err}
	}
	cmd.Env = o.Env
	cmd.SysProcAttr = detachAttr()
	if err := cmd.Start(); err != nil {
		return Result{}, &StartError{Name: o.Args[0], Err: err}
	}
	pid := cmd.Process.Pid
	o.logger()("started %s as PID %d %s, detached", o.Args[0], pid, detachedWhere)
	// Still contain's child, not waited for: its PID is its own.
	claimDaemon(pid, o.logger())
	cmd.Process.Release()
	return Result{Pid: pid, Exited: true}, nil
}
