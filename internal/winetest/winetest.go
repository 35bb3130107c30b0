//go:build linux

// Package winetest prepares Wine to run contain's Windows builds on Linux,
// for the tests and the benchmarks: a prefix in which Go 1.26 programs run,
// one of its own per user of it, with a warm wineserver.
package winetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Wine is one prepared prefix.
type Wine struct {
	Prefix string
	Env    []string // the environment that runs programs in Prefix
}

// Missing names a tool Wine needs that is not installed, or is "".
func Missing() string {
	for _, tool := range []string{"wine", "wineserver", "x86_64-w64-mingw32-as", "x86_64-w64-mingw32-ld"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is not installed (apt-get install wine wine64 binutils-mingw-w64-x86-64, as .ci/run does)", tool)
		}
	}
	return ""
}

// Start makes a prefix of its own at dir/prefix, a copy of the template by
// hard links (so that ending its wineserver ends only what its user
// started), starts one warm wineserver for it (a cold start costs ~0.8 s)
// and runs a first program, which starts the prefix's services.
func Start(dir string) (*Wine, error) {
	template, err := prefixTemplate()
	if err != nil {
		return nil, err
	}
	w := &Wine{Prefix: filepath.Join(dir, "prefix")}
	if out, err := exec.Command("cp", "-al", template, w.Prefix).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cp -al %s: %v: %s", template, err, out)
	}
	w.Env = append(os.Environ(), "WINEPREFIX="+w.Prefix, "WINEDEBUG=-all")
	if err := w.run("wineserver", "-p"); err != nil {
		return nil, err
	}
	// The first program a new prefix runs starts its services; a test's
	// first start otherwise fails now and then ("Internal error"). Its
	// output goes nowhere: the services would hold a pipe open.
	if err := w.run("wine", "cmd", "/c", "exit", "0"); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Wine) run(args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = w.Env
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v", strings.Join(args, " "), err)
	}
	return nil
}

// Stop ends the prefix's wineserver, and with it whatever is left in it.
func (w *Wine) Stop() {
	w.run("wineserver", "-k")
	w.run("wineserver", "-w")
}

// Path is a Linux path as Wine's Windows programs see it.
func Path(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// BuildWindows runs go build (or go test -c) with args for windows/amd64.
func BuildWindows(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// prefixTemplate makes, once per machine, a Wine prefix in which Go
// 1.26 programs run: Wine 8 lacks bcryptprimitives.dll's ProcessPrng, which
// the Go runtime needs; a DLL whose one export forwards it to advapi32's
// SystemFunction036 (RtlGenRandom) is enough.
func prefixTemplate() (string, error) {
	base := os.Getenv("CONTAIN_WINE_TEMPLATE")
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir() // no $HOME
		}
		base = filepath.Join(cache, "contain", "wine-prefix")
	}
	dll := filepath.Join(base, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); err == nil {
		return base, nil
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(base), "wine-prefix-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	prefix := filepath.Join(tmp, "prefix")
	env := append(os.Environ(), "WINEPREFIX="+prefix, "WINEDEBUG=-all")
	steps := []struct {
		name string
		args []string
	}{
		{"wineboot", []string{"wineboot", "-i"}},
		{"wineserver", []string{"wineserver", "-w"}},
		{"as", []string{"x86_64-w64-mingw32-as", "-o", filepath.Join(tmp, "empty.o"), "/dev/null"}},
		{"ld", []string{"x86_64-w64-mingw32-ld", "--shared", "-e", "0", "-o", filepath.Join(tmp, "bcryptprimitives.dll"),
			filepath.Join(tmp, "empty.o"), filepath.Join(tmp, "bcryptprimitives.def")}},
	}
	def := "LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng = advapi32.SystemFunction036\n"
	if err := os.WriteFile(filepath.Join(tmp, "bcryptprimitives.def"), []byte(def), 0o644); err != nil {
		return "", err
	}
	for _, s := range steps {
		// Output to a file, not a pipe: the services wineboot starts
		// would hold a pipe open.
		log, err := os.Create(filepath.Join(tmp, s.name+".log"))
		if err != nil {
			return "", err
		}
		cmd := exec.Command(s.args[0], s.args[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		err = cmd.Run()
		log.Close()
		if err != nil {
			out, _ := os.ReadFile(log.Name())
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(s.args, " "), err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(tmp, "bcryptprimitives.dll"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), b, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(base) // a half-made one
	if err := os.Rename(prefix, base); err != nil {
		return "", err
	}
	return base, nil
}
