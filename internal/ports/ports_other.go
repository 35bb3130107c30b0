//go:build !linux && !darwin && !windows

package ports

// Listening: no way is written for this OS; every process's ports are
// unknown, and say why.
func Listening(pids []int) Reading {
	var r Reading
	for _, pid := range pids {
		r.unknown(pid, ErrUnsupported.Error())
	}
	return r
}

// Holders: no way is written for this OS.
func Holders(uint16) ([]Holder, error) { return nil, ErrUnsupported }
