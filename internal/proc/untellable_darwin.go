package proc

import "errors"

// EnvUntellable says why pid's environment cannot tell which session it
// is in: hidden (Apple-signed binaries) or unreadable; "" when it can be
// read.
func EnvUntellable(pid int) string {
	a, err := Darwin.decodeArgs(pid, "")
	switch {
	case err == nil && a.EnvHidden:
		return "macOS hides its environment"
	case err == nil && len(a.Env) == 0:
		return "its environment is empty (cleared, as env -i does)"
	case err == nil, errors.Is(err, ErrGone):
		return ""
	}
	return "its environment cannot be read (" + err.Error() + ")"
}
