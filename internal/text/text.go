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

// MaxCell is the most characters a padded table column shows of a value:
// a tag contain writes (64 characters, a colon and a PID) fits. A longer
// value, such as a hostile 64 KB tag, is shortened in its middle, so that
// it cannot widen every row of the table; --format json has it whole.
const MaxCell = 80

// Shorten cuts s to MaxCell characters, keeping its start and its end (a
// tag's PID) around an ellipsis.
func Shorten(s string) string {
	if utf8.RuneCountInString(s) <= MaxCell {
		return s
	}
	r := []rune(s)
	head := (MaxCell - 1) / 2
	tail := MaxCell - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// Plural is n and the word for n of a thing: "1 process", "2 processes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
