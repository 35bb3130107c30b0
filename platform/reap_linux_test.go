package platform

// sleeper runs long, for the tests that reap it.
var sleeper = []string{"sleep", "30"}

// stopped reports whether pid is stopped (state T).
func stopped(pid int) bool {
	s, _ := readStat(pid, nil)
	return s.State == 'T'
}
