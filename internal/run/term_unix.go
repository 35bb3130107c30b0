//go:build linux || darwin

package run

import "golang.org/x/sys/unix"

// terminal is contain's controlling terminal, when it has one. contain hands
// the terminal's foreground to COMMAND's process group so that COMMAND can
// read it and gets Ctrl-C and Ctrl-Z, and takes it back when COMMAND stops
// or ends.
type terminal struct {
	fd int
}

// openTerminal returns the controlling terminal, or nil when there is none
// (CI, cron, a pipe): then nothing about terminals is done.
func openTerminal() *terminal {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if _, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
		unix.Close(fd)
		return nil
	}
	return &terminal{fd: fd}
}

// foreground is the terminal's foreground process group, or -1.
func (t *terminal) foreground() int {
	pg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return pg
}

func (t *terminal) close() { unix.Close(t.fd) }

func (t *terminal) ctty() int { return t.fd }

// settings reads the terminal's settings (its termios: echo, canonical
// mode, the special characters, ...).
func (t *terminal) settings() (*unix.Termios, error) { return unix.IoctlGetTermios(t.fd, getSettings) }
