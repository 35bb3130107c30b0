package proc

// EnvOf reads pid's environment from its kern.procargs2: the one it was
// exec'd with (or, before its first exec, its parent's).
func EnvOf(pid int) ([]string, error) {
	a, err := Darwin.decodeArgs(pid, "")
	switch {
	case err != nil:
		return nil, err
	case a.EnvHidden:
		return nil, errEnvHidden
	}
	return a.Env, nil
}
