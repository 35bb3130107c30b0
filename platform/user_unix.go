//go:build linux || darwin

package platform

import "os"

// PrivilegeName is what Privileged asks for, for messages.
const PrivilegeName = "root"

// Privileged reports whether contain may act on other users' processes:
// root.
func Privileged() bool { return os.Geteuid() == 0 }

// CurrentOwner is empty on Unix: users are told apart by UID.
func CurrentOwner() string { return "" }
