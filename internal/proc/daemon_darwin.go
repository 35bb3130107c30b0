package proc

// MarkOf reads pid's daemon mark from its kern.procargs2: the environment
// it was exec'd with (or, before its first exec, its parent's).
func MarkOf(pid int, _ []byte) (Mark, error) {
	a, err := Darwin.decodeArgs(pid, "")
	switch {
	case err != nil:
		return Mark{}, err
	case a.EnvHidden:
		return Mark{}, errEnvHidden
	}
	return MarkOfEnv(a.Env), nil
}
