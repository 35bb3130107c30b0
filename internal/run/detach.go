//go:build linux || windows || darwin

package run

import "os/exec"

// runDetached starts COMMAND outside any group of contain's (detachAttr
// says where) and returns at once. Its standard streams are the null
// device, so that a caller reading contain's output (pid=$(contain run -d
// ...)) is not held open by the daemon.
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
	cmd.Process.Release()
	return Result{Pid: pid, Exited: true}, nil
}
