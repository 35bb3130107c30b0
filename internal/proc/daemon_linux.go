package proc

// MarkOf reads pid's daemon mark from /proc/PID/environ: the environment
// it was exec'd with (or, before its first exec, its parent's).
func MarkOf(pid int, buf []byte) (Mark, error) {
	env, err := FS.Environ(pid, buf)
	if err != nil {
		return Mark{}, err
	}
	return MarkOfEnviron(env), nil
}
