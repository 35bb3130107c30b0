package proc

import (
	"strconv"
	"strings"
)

// FormatIP says an IPv4 (4 bytes) or IPv6 (16 bytes) address as text:
// dotted for IPv4 and for an IPv4-mapped IPv6 address (::ffff:a.b.c.d),
// else RFC 5952's form (lower-case hex, no leading zeros, the longest run
// of two or more zero groups, the first of equals, as ::). Written here
// rather than with net/netip, which contain run's packages must not
// import (package earlyrun says why). "" for another length.
func FormatIP(b []byte) string {
	switch {
	case len(b) == 4:
		return dotted(b)
	case len(b) != 16:
		return ""
	}
	mapped := b[10] == 0xff && b[11] == 0xff
	for _, x := range b[:10] {
		mapped = mapped && x == 0
	}
	if mapped {
		return dotted(b[12:])
	}
	var g [8]int
	for i := range g {
		g[i] = int(b[2*i])<<8 | int(b[2*i+1])
	}
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if g[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && g[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	var s strings.Builder
	for i := 0; i < 8; i++ {
		if i == best {
			s.WriteString("::")
			i += bestLen - 1
			continue
		}
		if i > 0 && i != best+bestLen {
			s.WriteByte(':')
		}
		s.WriteString(strconv.FormatUint(uint64(g[i]), 16))
	}
	return s.String()
}

func dotted(b []byte) string {
	return strconv.Itoa(int(b[0])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[3]))
}
