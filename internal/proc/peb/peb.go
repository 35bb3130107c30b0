// Package peb decodes what contain reads out of another Windows process's
// memory (its PEB's process parameters): the environment block and the
// command line. The decoders are pure functions over bytes, so that they
// are tested on every OS; only the reading itself is Windows code.
package peb

import (
	"strings"
	"unicode/utf16"
)

// MaxEnvironment caps how much of an environment block is read: a hostile
// or corrupt EnvironmentSize must not make contain allocate gigabytes.
const MaxEnvironment = 1 << 20

// UTF16 decodes little-endian UTF-16 bytes; an odd last byte is dropped and
// unpaired surrogates become U+FFFD.
func UTF16(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return string(utf16.Decode(u))
}

// Terminated reports whether b holds a whole environment block: its
// entries and the empty string that ends it.
func Terminated(b []byte) bool {
	start := 0
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] != 0 || b[i+1] != 0 {
			continue
		}
		if i == start {
			return true
		}
		start = i + 2
	}
	return false
}

// EnvBlock splits an environment block (NAME=value strings, each ending in
// a NUL, the block ending in an empty string) into its entries. Whatever
// follows the empty string is not part of it; a block cut short (a read of
// EnvironmentSize bytes that ends mid-string) keeps its complete entries.
func EnvBlock(b []byte) []string {
	var env []string
	start := 0
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] != 0 || b[i+1] != 0 {
			continue
		}
		if i == start {
			break // the empty string ends the block
		}
		env = append(env, UTF16(b[start:i]))
		start = i + 2
	}
	return env
}

// Args splits a command line into arguments as the Microsoft C runtime
// (2008 and later) does for a program's argv: the program name runs to the first blank, or
// between the quotes that open it (no escapes there); after it, blanks
// separate arguments outside quotes, 2n backslashes before a quote give n
// backslashes and the quote opens or closes quoting, 2n+1 give n and a
// literal quote, other backslashes are literal, and inside quotes a doubled
// quote gives one literal quote.
func Args(cmdline string) []string {
	var args []string
	s := cmdline
	// The program name.
	if strings.HasPrefix(s, `"`) {
		name, rest, _ := strings.Cut(s[1:], `"`)
		args = append(args, name)
		s = rest
	} else {
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		args = append(args, s[:i])
		s = s[i:]
	}
	var b strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == ' ' || c == '\t') && !quoted:
			if inArg {
				args = append(args, b.String())
				b.Reset()
				inArg = false
			}
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			inArg = true
			if i < len(s) && s[i] == '"' {
				b.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					b.WriteByte('"')
					continue
				}
			} else {
				b.WriteString(strings.Repeat(`\`, n))
			}
			i-- // the quote, or whatever follows, is looked at next
		case c == '"':
			inArg = true
			if quoted && i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			quoted = !quoted
		default:
			inArg = true
			b.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, b.String())
	}
	return args
}
