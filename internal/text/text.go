// Package text holds what contain's commands share about showing text from
// other programs: a tag, a command line, an option as typed.
package text

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
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

// CPUTime shows a CPU time as BSD's and macOS's ps do: minutes, seconds
// and hundredths (0:01.23, 125:04.50).
func CPUTime(d time.Duration) string {
	cs := int64(max(d, 0) / (10 * time.Millisecond))
	return fmt.Sprintf("%d:%02d.%02d", cs/6000, cs/100%60, cs%100)
}

// MemSize shows a number of bytes in binary units, to a tenth: 0.5K,
// 980.0K, 12.3M, 1.2G.
func MemSize(b uint64) string {
	const units = "KMGTPE"
	v, i := float64(b)/1024, 0
	for v >= 1023.95 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i:i+1]
}

// CommandLine shows argv as ps does, each argument Printable, or [comm]
// when argv is empty.
func CommandLine(argv []string, comm string) string {
	if len(argv) == 0 {
		if comm == "" {
			return ""
		}
		return "[" + Printable(comm) + "]"
	}
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = Printable(a)
	}
	return strings.Join(parts, " ")
}

// Table aligns columns for ps, reap, stop and wait; the last column is
// not padded. The cells of the padded columns are shortened to MaxCell
// characters.
type Table struct {
	rows [][]string // nil: a blank line
}

// Row adds a row. Every cell is shown Printable (a cell made Printable
// already stays as it is), so a table cannot forget to escape one.
func (t *Table) Row(cells ...string) {
	for i := range cells {
		cells[i] = Printable(cells[i])
	}
	for i := range len(cells) - 1 {
		cells[i] = Shorten(cells[i])
	}
	t.rows = append(t.rows, cells)
}

// Gap adds a blank line.
func (t *Table) Gap() { t.rows = append(t.rows, nil) }

// Write writes the table to w.
func (t *Table) Write(w io.Writer) {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))+2))
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// Quote puts s between the quotation marks GNU's tools use in messages: ‘s’
// where the locale's characters are UTF-8 (LC_ALL, else LC_CTYPE, else
// LANG), 's' otherwise, s made printable. The marks are safe to put in a
// format string; s is not (Fprintf escapes it again only if it must).
func Quote(s string) string {
	if utf8Locale() {
		return "‘" + Printable(s) + "’"
	}
	return "'" + Printable(s) + "'"
}

// utf8Locale reports whether the locale's character set is UTF-8.
func utf8Locale() bool {
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if l := os.Getenv(v); l != "" {
			l = strings.ToLower(l)
			return strings.Contains(l, "utf-8") || strings.Contains(l, "utf8")
		}
	}
	return false
}
