//go:build unix

package proc

import (
	"os"
	"strconv"
	"sync"
)

// PrivilegeName is what Privileged asks for, for messages.
const PrivilegeName = "root"

// Privileged reports whether contain may act on other users' processes:
// root.
func Privileged() bool { return os.Geteuid() == 0 }

// CurrentOwner is empty on Unix: users are told apart by UID.
func CurrentOwner() string { return "" }

var users struct {
	once  sync.Once
	names map[int]string
}

// userName names uid from /etc/passwd, or gives the number. (os/user would
// link the C library in.) On macOS /etc/passwd holds only a few system
// accounts (users live in Directory Services): the others show as numbers.
func userName(uid int) string {
	users.once.Do(func() {
		b, _ := os.ReadFile("/etc/passwd")
		users.names = parsePasswd(b)
	})
	if n, ok := users.names[uid]; ok {
		return n
	}
	return strconv.Itoa(uid)
}
