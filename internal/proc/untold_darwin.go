package proc

import "errors"

// EnvUntellable says why pid's environment cannot tell which session it
// is in: hidden (Apple-signed binaries) or unreadable; "" when it can be
// read.
func EnvUntellable(pid int) string {
	_, _, err := Darwin.readTag(pid)
	switch {
	case err == nil, errors.Is(err, ErrGone):
		return ""
	case errors.Is(err, errEnvHidden):
		return "macOS hides its environment"
	}
	return "its environment cannot be read (" + err.Error() + ")"
}
