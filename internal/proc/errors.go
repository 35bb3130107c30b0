package proc

import (
	"errors"
)

// ErrUnsupported is returned where an OS feature is not written yet. It is
// never hidden behind a silent half-measure.
var ErrUnsupported = errors.New("not supported on this OS yet")

// ErrNoNamespaces: a lookup in another PID namespace, on an OS that has
// none (macOS, Windows).
var ErrNoNamespaces = errors.New("this OS has no PID namespaces")
