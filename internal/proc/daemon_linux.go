package proc

import "bytes"

// MarkOf reads pid's daemon mark from /proc/PID/environ: the environment
// it was exec'd with (or, before its first exec, its parent's).
func MarkOf(pid int, buf []byte) (Mark, error) {
	env, err := FS.Environ(pid, buf)
	if err != nil {
		return Mark{}, err
	}
	return markOf(func(yield func(string) bool) {
		for len(env) > 0 {
			var kv []byte
			kv, env, _ = bytes.Cut(env, []byte{0})
			if len(kv) > 0 && !yield(string(kv)) {
				return
			}
		}
	}), nil
}
