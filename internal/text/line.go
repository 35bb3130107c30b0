package text

import (
	"fmt"
	"io"
	"time"
)

// contain's own lines ("contain: ...", -v's, the guard's, the shim's)
// carry what other processes say about themselves: a name (comm, which
// any process sets), an argv, a tag, an executable's path, a cgroup's
// path. Each may hold a terminal's escape or a newline that forges a line
// of contain's own. So every line goes through Fprintf, Sprintf or a
// Logger, which show each argument Printable; the format, contain's own,
// is written as it is. A line that writes its arguments through these
// cannot forget to escape one.

// Fprintf is fmt.Fprintf with every argument shown Printable (Args).
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(args)...)
}

// Sprintf is fmt.Sprintf with every argument shown Printable (Args).
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, Args(args)...)
}

// Logger returns a printf-like function that writes prefix, the line
// formatted as Sprintf does and a newline to w, in one write.
func Logger(w io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) {
		io.WriteString(w, prefix+Sprintf(format, args...)+"\n")
	}
}

// Line writes prefix, s shown Printable and a newline to w, in one write:
// a line made before it is written, such as a reason kept for the report.
func Line(w io.Writer, prefix, s string) {
	io.WriteString(w, prefix+Printable(s)+"\n")
}

// Args wraps each argument so that fmt shows it Printable: it is
// formatted with its verb, flags, width and precision as fmt would, and
// the result escaped. Numbers and booleans, which cannot carry a
// control character, are left as they are (a %*d width stays an int).
// %T shows the wrapper's type: contain's lines do not use it.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch a.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
			float32, float64, bool, time.Duration:
			out[i] = a
		default:
			out[i] = shown{a}
		}
	}
	return out
}

// shown is an argument that fmt shows Printable.
type shown struct{ v any }

func (s shown) Format(f fmt.State, verb rune) {
	io.WriteString(f, Printable(fmt.Sprintf(fmt.FormatString(f, verb), s.v)))
}
