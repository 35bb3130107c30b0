package ports

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// listener is a socket the kernel gave a port, and the file a child
// inherits it as.
type listener struct {
	port Port
	file *os.File
}

func listen(t *testing.T, network, addr string) (listener, bool) {
	t.Helper()
	var f *os.File
	var p Port
	switch network {
	case "tcp4", "tcp6":
		l, err := net.Listen(network, addr)
		if err != nil {
			return listener{}, false
		}
		t.Cleanup(func() { l.Close() })
		a := l.Addr().(*net.TCPAddr).AddrPort()
		p = Port{Proto: "tcp", Addr: a.Addr().Unmap().String(), Port: a.Port()}
		f, err = l.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
	default:
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			return listener{}, false
		}
		t.Cleanup(func() { c.Close() })
		a := c.LocalAddr().(*net.UDPAddr).AddrPort()
		p = Port{Proto: "udp", Addr: a.Addr().Unmap().String(), Port: a.Port()}
		f, err = c.(*net.UDPConn).File()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { f.Close() })
	return listener{port: p, file: f}, true
}

// TestListeningAndHolders: sockets on ports the kernel picked, IPv4 and
// IPv6, TCP and UDP, held by a child that inherited them (and this
// process), are the child's ports; Holders of each port names both; a
// connected UDP socket is no listener.
func TestListeningAndHolders(t *testing.T) {
	var ls []listener
	for _, c := range [][2]string{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}, {"udp4", "0.0.0.0:0"}, {"udp6", "[::1]:0"}} {
		l, ok := listen(t, c[0], c[1])
		if !ok {
			if strings.HasSuffix(c[0], "6") {
				t.Logf("%s: no IPv6 here", c[0])
				continue
			}
			t.Fatalf("cannot listen on %s %s", c[0], c[1])
		}
		ls = append(ls, l)
	}
	conn, err := net.Dial("udp4", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cf, _ := conn.(*net.UDPConn).File()
	defer cf.Close()

	cmd := exec.Command("sleep", "60")
	for _, l := range ls {
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.file)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, cf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	r := Listening([]int{cmd.Process.Pid})
	got, ok := r.Known(cmd.Process.Pid)
	if !ok {
		t.Fatalf("Listening: child's ports unknown: %v", r.Unknown)
	}
	for _, l := range ls {
		if !slices.Contains(got, l.port) {
			t.Errorf("Listening: %v missing from %v", l.port, got)
		}
	}
	if len(got) != len(ls) {
		t.Errorf("Listening = %v, want exactly %d ports (a connected UDP socket listens on nothing)", got, len(ls))
	}
	for _, l := range ls {
		hs, err := Holders(l.port.Port)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int
		for _, h := range hs {
			if h.Port == l.port {
				pids = append(pids, h.PID)
			}
		}
		if !slices.Contains(pids, cmd.Process.Pid) || !slices.Contains(pids, os.Getpid()) {
			t.Errorf("Holders(%d) = %v, want the child %d and this process %d", l.port.Port, hs, cmd.Process.Pid, os.Getpid())
		}
	}
	// A process that ended: its ports are not guessed.
	r = Listening([]int{1 << 22})
	if _, ok := r.Known(1 << 22); ok || r.Unknown[1<<22] == "" {
		t.Errorf("Listening of no process: %+v", r)
	}
}
