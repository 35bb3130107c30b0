package entry

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProve: a pipe and a memfd of this user's pass as what they are;
// another kind, a closed descriptor and (as root) a pipe that another
// user made do not, each saying why.
func TestProve(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	mfd, err := unix.MemfdCreate("orders", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mfd)
	for _, c := range []struct {
		fd   int
		kind uint32
		want string // "": proved
	}{
		{int(r.Fd()), Pipe, ""},
		{int(w.Fd()), Anyhow, ""},
		{mfd, File, ""},
		{mfd, Anyhow, ""},
		{mfd, Pipe, "is not a pipe"},
		{int(r.Fd()), File, "is not a file"},
		{1 << 20, Pipe, "is not open"},
	} {
		err := Prove(c.fd, c.kind)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Prove(%d, %o): %v, want %q", c.fd, c.kind, err, c.want)
		}
	}
	if unix.Geteuid() != 0 {
		t.Skip("a pipe of another user's: needs root")
	}
	runtime.LockOSThread()
	unix.Setfsuid(65534)
	var p [2]int
	err = unix.Pipe2(p[:], unix.O_CLOEXEC)
	unix.Setfsuid(0)
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if err := Prove(p[0], Pipe); err == nil || !strings.Contains(err.Error(), "was made by uid 65534, not by this user (uid 0) or root") {
		t.Errorf("another user's pipe: %v", err)
	}
}

// TestSecure: this test is no set-user-ID program.
func TestSecure(t *testing.T) {
	if Secure() {
		t.Error("AT_SECURE set for the test binary")
	}
}
