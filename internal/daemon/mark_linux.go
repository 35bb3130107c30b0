package daemon

import "github.com/contain-cli/contain/internal/proc"

// MarkOf reads pid's daemon mark from /proc/PID/environ: the environment
// it was exec'd with (or, before its first exec, its parent's); buf, if
// not nil, is reused for the read.
func MarkOf(pid int, buf []byte) (Mark, error) {
	env, err := proc.FS.Environ(pid, buf)
	if err != nil {
		return Mark{}, err
	}
	return MarkOfEnviron(env), nil
}
