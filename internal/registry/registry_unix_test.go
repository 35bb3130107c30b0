//go:build linux || darwin

package registry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contain-cli/contain/internal/proc"
)

func TestParseRegistry(t *testing.T) {
	good := "contain registry 1\nsession CONTAIN:4242 900\ncommand 4300 910\nmember 4301 911\n" +
		"member 1 5\nmember 0 5\nmember x 5\nmember 4302 0\nmember 4303 -1\nmember 4304\nlater 4305 912\n" +
		"member 2147483648 913\nmember 4306 914\nmember 4307 9"
	r, err := parseRegistry([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []proc.ID{{PID: 4300, Start: 910}, {PID: 4301, Start: 911}, {PID: 4306, Start: 914}} // 4307's line was cut short
	if r.Value != "CONTAIN:4242" || r.Origin != (proc.ID{PID: 4242, Start: 900}) || !reflect.DeepEqual(r.Members, want) {
		t.Errorf("parseRegistry = %+v, want CONTAIN:4242 (4242, 900) and %v", r, want)
	}
	for what, bad := range map[string]string{
		"empty":                    "",
		"header only":              "contain registry 1\n",
		"another version":          "contain registry 2\nsession A:1 5\n",
		"no session":               "contain registry 1\ncommand 4300 910\n",
		"malformed tag":            "contain registry 1\nsession A:0 5\n",
		"no start":                 "contain registry 1\nsession A:12 0\n",
		"session cut short":        "contain registry 1\nsession A:12 5",
		"session with extra field": "contain registry 1\nsession A:12 5 6\n",
	} {
		if _, err := parseRegistry([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", what)
		}
	}
}

func TestRegistryDirSafe(t *testing.T) {
	const dir, file, link = 0o040000, 0o100000, 0o120000
	for _, c := range []struct {
		mode      uint32
		owner, me int
		ok        bool
	}{
		{dir | 0o700, 1000, 1000, true},
		{dir | 0o755, 1000, 1000, true},
		{dir | 0o1700, 1000, 1000, true},
		{dir | 0o770, 1000, 1000, false},
		{dir | 0o702, 1000, 1000, false},
		{dir | 0o1777, 1000, 1000, false},
		{dir | 0o700, 0, 1000, false},
		{dir | 0o700, 1001, 1000, false},
		{file | 0o600, 1000, 1000, false},
		{link | 0o777, 1000, 1000, false},
	} {
		if err := registryDirSafe(c.mode, c.owner, c.me); (err == nil) != c.ok {
			t.Errorf("mode %o, owner %d, me %d: %v", c.mode, c.owner, c.me, err)
		}
	}
}

// TestRegistryDirChecks: the directory is made 0700; a symbolic link, a
// directory others may write and one of another user are refused.
func TestRegistryDirChecks(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	fd, err := openRegistryDir(fresh, true)
	if err != nil {
		t.Fatal(err)
	}
	closeFD(fd)
	if st, err := os.Lstat(fresh); err != nil || st.Mode().Perm()&0o077 != 0 || !st.IsDir() {
		t.Errorf("made %v, %v; want a directory only its user may use", st.Mode(), err)
	}
	if err := os.Symlink(fresh, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	refused := []string{filepath.Join(base, "link"), open}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		refused = append(refused, theirs)
	}
	for _, d := range refused {
		for _, create := range []bool{false, true} {
			if fd, err := openRegistryDir(d, create); err == nil {
				closeFD(fd)
				t.Errorf("%s (create %v): accepted", d, create)
			} else if !strings.Contains(err.Error(), "refused") {
				t.Errorf("%s (create %v): %v, want a refusal", d, create, err)
			}
		}
	}
}

// TestRegistryWrite: contain run's side makes the file, appends members
// and removes it; reap's side reads it back.
func TestRegistryWrite(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	value := fmt.Sprintf("CONTAIN:%d", os.Getpid())
	if _, err := OpenRegistry("CONTAIN:1", 4300, 910); err == nil {
		t.Error("a registry for another contain's session was made")
	}
	if _, err := OpenRegistry(value, 0, 910); err == nil {
		t.Error("a registry without COMMAND was made")
	}
	r, err := OpenRegistry(value, 4300, 910)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []proc.ID{{PID: 4301, Start: 911}, {PID: 4302, Start: 912}} {
		if err := r.Member(m.PID, m.Start); err != nil {
			t.Fatal(err)
		}
	}
	// Only those in xdg: /tmp/contain-UID holds the registries of the
	// runs of other tests.
	mine := func() ([]File, error) {
		regs, err := Read()
		return slices.DeleteFunc(regs, func(r File) bool { return r.Dir != filepath.Join(xdg, "contain") }), err
	}
	regs, err := mine()
	if err != nil || len(regs) != 1 {
		t.Fatalf("Read = %+v, %v", regs, err)
	}
	me := proc.ID{PID: os.Getpid(), Start: proc.StartOf(os.Getpid())}
	want := File{Dir: filepath.Join(xdg, "contain"), Name: registryName(me.PID, me.Start), Value: value, Origin: me,
		Members: []proc.ID{{PID: 4300, Start: 910}, {PID: 4301, Start: 911}, {PID: 4302, Start: 912}}}
	// Its time says until when contain ran: written just now.
	if d := time.Since(regs[0].Touched); d < 0 || d > 5*time.Second {
		t.Errorf("touched %v, %v ago", regs[0].Touched, d)
	}
	regs[0].Touched = time.Time{}
	if !reflect.DeepEqual(regs[0], want) {
		t.Errorf("read back %+v, want %+v", regs[0], want)
	}
	if st, err := os.Stat(filepath.Join(want.Dir, want.Name)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the file: %v, %v", st.Mode(), err)
	}
	if !Alive(regs[0]) {
		t.Error("the registry of a running contain is taken as ended")
	}
	if _, err := PruneRegistries(); err != nil {
		t.Errorf("PruneRegistries: %v", err)
	}
	if _, err := os.Stat(filepath.Join(want.Dir, want.Name)); err != nil {
		t.Errorf("PruneRegistries removed it while its contain runs: %v", err)
	}
	r.Remove()
	r.Remove()
	if err := r.Member(4303, 913); err == nil {
		t.Error("a member was added to a removed registry")
	}
	if regs, err := mine(); len(regs) != 0 || err != nil {
		t.Errorf("after remove: %+v, %v", regs, err)
	}
	var none *Registry
	if err := none.Member(1, 2); err != nil {
		t.Error(err)
	}
	none.Remove()
}

func closeFD(fd int) { os.NewFile(uintptr(fd), "").Close() }

// TestRegistryOtherUsersXDG: an XDG_RUNTIME_DIR this user may not enter
// (inherited from another user) holds none of its registries: contain run
// writes to /tmp/contain-UID instead, and reap reads that without a word
// about the other.
func TestRegistryOtherUsersXDG(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may enter every directory")
	}
	t.Setenv("XDG_RUNTIME_DIR", "/root")
	if dirs := registryDirs(); len(dirs) != 2 || dirs[0] != "/root/contain" {
		t.Fatalf("registryDirs = %v", dirs)
	}
	if _, err := readRegistryDir("/root/contain"); err != nil {
		t.Errorf("reading /root/contain: %v", err)
	}
}

// TestRegistryHeadless: a registry without its whole header (contain
// creates the file, then writes the header) is passed over without a word
// while its contain lives; once it is gone, it is no error either, names
// no process, and PruneRegistries removes it. A file with another header
// is still reported.
func TestRegistryHeadless(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "contain")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	self := proc.ID{PID: os.Getpid(), Start: proc.StartOf(os.Getpid())}
	if self.Start == 0 {
		t.Fatal("cannot read this process's start time")
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(registryName(self.PID, self.Start), "")
	if got, err := readRegistryDir(dir); err != nil || len(got) != 0 {
		t.Fatalf("the registry of a live contain, still empty: %v, %v; want nothing", got, err)
	}
	for i, content := range []string{"", registryHeader[:5], registryHeader + "\n", registryHeader + "\n" + registrySession + " X:"} {
		write(registryName(self.PID, self.Start+1+uint64(i)), content) // the same PID, another start: gone
	}
	got, err := readRegistryDir(dir)
	if err != nil || len(got) != 4 {
		t.Fatalf("the registries of a contain that is gone, cut in their header: %+v, %v; want 4, headless", got, err)
	}
	for _, r := range got {
		if !r.Headless || r.Value != "" || len(r.Members) != 0 || r.Origin.PID != self.PID || r.Origin.Start <= self.Start {
			t.Errorf("%+v: want headless, naming only its contain", r)
		}
	}
	if n, err := PruneRegistries(); n < 4 || err != nil {
		t.Errorf("PruneRegistries = %d, %v; want the 4 headless ones removed", n, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left after pruning: %v, want only the live contain's", left)
	}
	write(registryName(self.PID, self.Start+9), "not a registry\n")
	if _, err := readRegistryDir(dir); err == nil || !strings.Contains(err.Error(), "not a contain registry") {
		t.Errorf("a file with another header: %v, want it reported", err)
	}
}

// TestRegistryFallback: a $TMPDIR/contain-UID that contain must refuse
// (here one others may write; another user's in tests/security_files_test.go)
// is said once on RegistryWarnings, and the registry goes to a new
// directory of the user's, contain-UID.RANDOM, 0700, which reap reads and
// the next run uses again; a contain-UID.* that others may write, or a
// link, is neither used nor read.
func TestRegistryFallback(t *testing.T) {
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	t.Setenv("XDG_RUNTIME_DIR", "")
	squat := filepath.Join(base, registryBase())
	if err := os.Mkdir(squat, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(squat, 0o777)
	// Decoys a run must not take: one others may write, a link to a
	// directory of the user's.
	decoy := filepath.Join(base, registryBase()+".decoy")
	os.Mkdir(decoy, 0o700)
	os.Chmod(decoy, 0o777)
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, filepath.Join(base, registryBase()+".link"))

	var warned strings.Builder
	defer func(w io.Writer) { RegistryWarnings = w }(RegistryWarnings)
	RegistryWarnings = &warned
	value := fmt.Sprintf("CONTAIN:%d", os.Getpid())
	r, err := OpenRegistry(value, 4300, 910)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Remove()
	lines := strings.Split(strings.TrimSuffix(warned.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "contain: registry: "+squat+": refused: group or others may write it (mode 777); the registry is kept in "+filepath.Join(base, registryBase())+".") {
		t.Fatalf("warned %q", warned.String())
	}
	dir := strings.TrimPrefix(lines[0][strings.LastIndex(lines[0], " "):], " ")
	if dir == decoy || filepath.Dir(dir) != base {
		t.Fatalf("kept in %s", dir)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o700 || int(st.Uid) != os.Geteuid() {
		t.Fatalf("%s: mode %o uid %d: %v", dir, st.Mode, st.Uid, err)
	}
	if ents, _ := os.ReadDir(squat); len(ents) != 0 {
		t.Errorf("written in the refused directory: %v", ents)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	regs, rerr := Read()
	found := false
	for _, reg := range regs {
		found = found || reg.Dir == dir && reg.Value == value
		if reg.Dir == decoy || strings.HasSuffix(reg.Dir, ".link") {
			t.Errorf("read %s", reg.Dir)
		}
	}
	if !found {
		t.Errorf("reap does not read the fallback: %+v", regs)
	}
	if rerr == nil || !strings.Contains(rerr.Error(), squat+": refused") || strings.Contains(rerr.Error(), "decoy") {
		t.Errorf("Read: %v", rerr)
	}
	// The next run finds the same fallback, and says so again.
	r.Remove()
	warned.Reset()
	r2, err := OpenRegistry(value, 4300, 910)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Remove()
	if !strings.HasSuffix(warned.String(), "kept in "+dir+"\n") {
		t.Errorf("second run: %q", warned.String())
	}
	if m, _ := filepath.Glob(filepath.Join(base, registryBase()+".*")); len(m) != 3 {
		t.Errorf("made another: %v", m)
	}
}

// TestRegistryFileUnsafe: a registry file that group or others may write
// is not read.
func TestRegistryFileUnsafe(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, registryName(4242, 1))
	os.WriteFile(path, []byte(registryHeader+"\n"+registrySession+" X:4242 1\n"), 0o600)
	os.Chmod(path, 0o622)
	if _, err := readRegistryDir(dir); err == nil || !strings.Contains(err.Error(), "group or others may write it") {
		t.Errorf("readRegistryDir: %v", err)
	}
}

// TestRegistryTouch: Touch moves the registry's time to now, at most every
// touchEvery, and reap reads it back: the bound on what contain could
// still have seen (FindUnsure).
func TestRegistryTouch(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	r, err := OpenRegistry(fmt.Sprintf("CONTAIN:%d", os.Getpid()), os.Getpid(), 42)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Remove()
	path := filepath.Join(xdg, "contain", r.name)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	r.Touch()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(st.ModTime()); d < 0 || d > 5*time.Second {
		t.Errorf("after Touch the registry's time is %v ago", d)
	}
	// At once again: not written (at most every touchEvery).
	os.Chtimes(path, old, old)
	r.Touch()
	if st, _ := os.Stat(path); !st.ModTime().Equal(old.Truncate(time.Microsecond)) && time.Since(st.ModTime()) < time.Minute {
		t.Errorf("a second Touch within %v wrote the time again", touchEvery)
	}
	regs, _ := Read()
	for _, reg := range regs {
		if reg.Name == r.name && time.Since(reg.Touched) < 59*time.Minute {
			t.Errorf("read back touched %v, want the hour-old time", reg.Touched)
		}
	}
}
