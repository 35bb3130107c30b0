package proc

import (
	"bytes"
	"strconv"
)

// parsePasswd maps user IDs to names from /etc/passwd text; the first entry
// of a UID wins, as for getpwuid(3).
func parsePasswd(b []byte) map[int]string {
	names := map[int]string{}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.SplitN(line, []byte{':'}, 4)
		if len(f) < 4 || len(f[0]) == 0 || f[0][0] == '#' {
			continue
		}
		uid, err := strconv.Atoi(string(f[2]))
		if err != nil {
			continue
		}
		if _, dup := names[uid]; !dup {
			names[uid] = string(f[0])
		}
	}
	return names
}
