package entry

import (
	"os"

	"golang.org/x/sys/unix"
)

// atSecure is AT_SECURE's type in the auxiliary vector.
const atSecure = 23

// secure reads AT_SECURE from the auxiliary vector the runtime kept (no
// system call); where it cannot be read, real and effective ids that
// differ are the common case of it.
func secure() bool {
	if v, err := unix.Auxv(); err == nil {
		for _, kv := range v {
			if kv[0] == atSecure {
				return kv[1] != 0
			}
		}
	}
	return os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid()
}
