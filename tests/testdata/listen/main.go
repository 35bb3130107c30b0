// Command listen is a test program: it listens on ports the kernel picks
// (so that no command line names them), writes them to the file its first
// argument names, one "PROTO ADDRESS PORT" line each, and waits to be
// ended. The other arguments say which sockets: tcp4 (127.0.0.1), tcp6
// ([::1]), udp4 (0.0.0.0), udp6 ([::]); "-" instead of the file writes
// them to stdout.
package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: listen FILE tcp4|tcp6|udp4|udp6...")
		os.Exit(2)
	}
	var lines []string
	for _, kind := range os.Args[2:] {
		var line string
		switch kind {
		case "tcp4", "tcp6":
			addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[kind]
			l, err := net.Listen(kind, addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "listen:", err)
				os.Exit(1)
			}
			a := l.Addr().(*net.TCPAddr).AddrPort()
			line = fmt.Sprintf("tcp %s %d", a.Addr(), a.Port())
		case "udp4", "udp6":
			addr := map[string]string{"udp4": "0.0.0.0:0", "udp6": "[::]:0"}[kind]
			c, err := net.ListenPacket(kind, addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "listen:", err)
				os.Exit(1)
			}
			a := c.LocalAddr().(*net.UDPAddr).AddrPort()
			line = fmt.Sprintf("udp %s %d", a.Addr(), a.Port())
		default:
			fmt.Fprintln(os.Stderr, "listen: unknown socket", kind)
			os.Exit(2)
		}
		lines = append(lines, line)
	}
	out := strings.Join(lines, "\n") + "\n"
	if os.Args[1] == "-" {
		os.Stdout.WriteString(out)
	} else {
		// Whole or not at all: written beside, then renamed.
		tmp := os.Args[1] + ".tmp"
		if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil || os.Rename(tmp, os.Args[1]) != nil {
			fmt.Fprintln(os.Stderr, "listen: cannot write", os.Args[1])
			os.Exit(1)
		}
	}
	time.Sleep(time.Hour)
}
