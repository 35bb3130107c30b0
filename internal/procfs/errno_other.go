//go:build !unix

package procfs

// isESRCH: no OS but a Unix has a /proc tree to give ESRCH.
func isESRCH(error) bool { return false }
