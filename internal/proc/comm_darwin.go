package proc

import "path/filepath"

// CommOf is pid's name, read now: its executable's, from its arguments;
// "?" when they cannot be read.
func CommOf(pid int) string {
	if argv := ArgvOf(pid); len(argv) > 0 && argv[0] != "" {
		return filepath.Base(argv[0])
	}
	return "?"
}
