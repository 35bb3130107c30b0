package proc

// CommOf is pid's name (comm), read now; "?" when it cannot be read.
func CommOf(pid int) string {
	if e, ok := EntryOf(pid); ok && e.Comm != "" {
		return e.Comm
	}
	return "?"
}
