package daemon

import "github.com/contain-cli/contain/internal/proc"

// MarkOf reads pid's daemon mark from its kern.procargs2: the environment
// it was exec'd with (or, before its first exec, its parent's).
func MarkOf(pid int, _ []byte) (Mark, error) {
	env, err := proc.EnvOf(pid)
	if err != nil {
		return Mark{}, err
	}
	return MarkOfEnv(env), nil
}
