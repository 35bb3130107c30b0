//go:build unix

package report

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestWriteReplacesLink: a symbolic link at the report's path is replaced
// by the report, never followed: its target keeps its content and mode;
// nothing else is left in the directory.
func TestWriteReplacesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("secret"), 0o600)
	path := filepath.Join(dir, "r.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := CheckPath(path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "secret" {
		t.Errorf("the link's target now holds %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the path is not a regular file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "{") {
		t.Errorf("report %q", b)
	}
	// A dangling link too.
	os.Remove(path)
	os.Symlink(filepath.Join(dir, "none", "x"), path)
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Errorf("a dangling link was not replaced: %v %v", st, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestWriteMode: a new report is 0644 less the umask; one that replaces a
// file of the user's keeps that file's permissions.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("new report: mode %v", st.Mode())
	}
	os.Chmod(path, 0o600)
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced report: mode %v, want the old file's 0600", st.Mode())
	}
}

// TestWriteDevices: a character device and the user's own FIFO are written
// in place, not replaced; a trusted link to a device is followed.
func TestWriteDevices(t *testing.T) {
	if err := CheckPath(os.DevNull); err != nil {
		t.Fatal(err)
	}
	if err := Write(os.DevNull, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	os.Symlink(os.DevNull, link)
	if err := Write(link, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Error("the user's own link to /dev/null was replaced")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := Write(fifo, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !strings.HasPrefix(s, "{") {
		t.Errorf("read from the FIFO: %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
}

// TestWriteInPlace: where the user may not create a file, an existing
// file of one link that the user may write is written in place; one of two
// links is refused.
func TestWriteInPlace(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may create files anywhere")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	os.WriteFile(path, []byte("old old old old old old old old old old old old old old"), 0o644)
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o755)
	if err := CheckPath(path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "{") || strings.Contains(string(b), "old") {
		t.Errorf("report %q", b)
	}
	os.Chmod(dir, 0o755)
	os.Link(path, filepath.Join(dir, "other"))
	os.Chmod(dir, 0o555)
	if err := CheckPath(path); err == nil || !strings.Contains(err.Error(), "2 links") {
		t.Errorf("CheckPath of a file of two links: %v", err)
	}
}

// TestFDPath: the paths that name contain's own file descriptors.
func TestFDPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, ok := fdPath("/dev/stderr"); ok {
			t.Error("fdPath outside Linux")
		}
		return
	}
	for in, want := range map[string]int{"/dev/stdout": 1, "/dev/stderr": 2, "/dev/stdin": 0, "/dev/fd/7": 7, "/proc/self/fd/2": 2, "/proc/thread-self/fd/1": 1, "/dev//stderr": 2} {
		if fd, ok := fdPath(in); !ok || fd != want {
			t.Errorf("fdPath(%q) = %d, %v; want %d", in, fd, ok, want)
		}
	}
	for _, in := range []string{"/dev/fd/x", "/dev/fd/-1", "/dev/fd/01", "/proc/1/fd/2", "/tmp/stderr", "/dev/fd"} {
		if fd, ok := fdPath(in); ok {
			t.Errorf("fdPath(%q) = %d", in, fd)
		}
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	path := "/dev/fd/" + strconv.Itoa(int(w.Fd()))
	if err := CheckPath(path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, New("contain"), nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b := make([]byte, 1)
	if n, _ := r.Read(b); n != 1 || b[0] != '{' {
		t.Errorf("read %q", b[:n])
	}
	if err := CheckPath("/dev/fd/999"); err == nil {
		t.Error("CheckPath of a closed descriptor")
	}
}
