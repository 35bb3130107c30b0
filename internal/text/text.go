// Package text holds what contain's commands share about showing text from
// other programs: a tag, a command line, an option as typed.
package text

import (
	"strconv"
	"unicode/utf8"
)

// Printable shows s as it is when every character of it is visible, and
// otherwise as a Go string literal without its quotes: control characters
// (C1 ones such as U+009B CSI and U+0085 NEL included), format characters
// and invalid UTF-8 are escaped, printable Unicode is kept.
func Printable(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsGraphic(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
