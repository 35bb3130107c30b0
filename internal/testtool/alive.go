//go:build linux || darwin

package testtool

// Living are those of pids that are Alive.
func Living(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
