//go:build linux

package tests

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
)

// artifact is an entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	Type   string `json:"type"`
}

// release is what a snapshot release left in dist/.
type release struct {
	dir       string
	version   string
	artifacts []artifact
}

var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// loadRelease reads dist/ (or $CONTAIN_DIST). .ci/run makes it with
// `goreleaser release --snapshot --clean --skip=publish` before the tests
// and sets CONTAIN_REQUIRE_RELEASE, so there the test never skips.
func loadRelease(t *testing.T) release {
	t.Helper()
	dir := os.Getenv("CONTAIN_DIST")
	if dir == "" {
		dir = filepath.Join("..", "dist")
	}
	b, err := os.ReadFile(filepath.Join(dir, "artifacts.json"))
	if err != nil {
		if os.Getenv("CONTAIN_REQUIRE_RELEASE") != "" {
			t.Fatalf("no snapshot release in %s: %v", dir, err)
		}
		testtool.Missing(t, fmt.Sprintf("no snapshot release in %s (make one with goreleaser v2, a Go program, not a Debian package: "+
			"go install github.com/goreleaser/goreleaser/v2@v2.16.0; goreleaser release --snapshot --clean --skip=publish; .ci/run does): %v", dir, err))
	}
	r := release{dir: filepath.Dir(dir)}
	if err := json.Unmarshal(b, &r.artifacts); err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	mb, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil || json.Unmarshal(mb, &meta) != nil || meta.Version == "" {
		t.Fatalf("dist/metadata.json: %v %s", err, mb)
	}
	r.version = meta.Version
	return r
}

func (r release) of(typ string) []artifact {
	var out []artifact
	for _, a := range r.artifacts {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

func (r release) file(a artifact) string { return filepath.Join(r.dir, a.Path) }

func sha256File(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// machine reads the OS and architecture an executable is built for.
func machine(t *testing.T, p string) string {
	t.Helper()
	if f, err := elf.Open(p); err == nil {
		defer f.Close()
		return "linux/" + map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	}
	if f, err := macho.Open(p); err == nil {
		defer f.Close()
		return "darwin/" + map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	}
	if f, err := pe.Open(p); err == nil {
		defer f.Close()
		return "windows/" + map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
	}
	t.Fatalf("%s is no ELF, Mach-O or PE executable", p)
	return ""
}

// TestReleaseBinaries: six binaries, each for the platform it claims, and
// the version stamped into --version.
func TestReleaseBinaries(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	var got []string
	for _, a := range r.of("Binary") {
		plat := a.GOOS + "/" + a.GOARCH
		got = append(got, plat)
		if m := machine(t, r.file(a)); m != plat {
			t.Errorf("%s is built for %s, not %s", a.Path, m, plat)
		}
		if want := map[bool]string{true: "contain.exe", false: "contain"}[a.GOOS == "windows"]; path.Base(a.Path) != want {
			t.Errorf("%s: binary named %s, want %s", plat, path.Base(a.Path), want)
		}
		if plat == "linux/amd64" {
			out, err := exec.Command(r.file(a), "--version").Output()
			if want := "contain version " + r.version + "\n"; err != nil || string(out) != want {
				t.Errorf("--version: %q (%v), want %q", out, err, want)
			}
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(platforms))
	if !slices.Equal(got, want) {
		t.Errorf("binaries for %v, want %v", got, want)
	}
}

// archiveFiles lists an archive's files and hashes the binary inside.
func archiveFiles(t *testing.T, p string) (names []string, binSum string) {
	t.Helper()
	add := func(name string, r io.Reader) {
		names = append(names, name)
		if name == "contain" || name == "contain.exe" {
			h := sha256.New()
			io.Copy(h, r)
			binSum = hex.EncodeToString(h.Sum(nil))
		}
	}
	if strings.HasSuffix(p, ".zip") {
		z, err := zip.OpenReader(p)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			add(f.Name, rc)
			rc.Close()
		}
		return names, binSum
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		add(h.Name, tr)
	}
	return names, binSum
}

// TestReleaseArchives: tar.gz (zip on Windows) with the binary of its
// platform, README, the guide and the report schema, LICENSE, man page
// and completions; checksums.txt right.
func TestReleaseArchives(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	binaries := map[string]string{}
	for _, a := range r.of("Binary") {
		binaries[a.GOOS+"/"+a.GOARCH] = sha256File(t, r.file(a))
	}
	sums := map[string]string{}
	for _, c := range r.of("Checksum") {
		f, err := os.Open(r.file(c))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
				sums[name] = sum
			}
		}
		f.Close()
	}
	archives := r.of("Archive")
	if len(archives) != len(platforms) {
		t.Errorf("%d archives, want %d", len(archives), len(platforms))
	}
	for _, a := range archives {
		wantExt := map[bool]string{true: ".zip", false: ".tar.gz"}[a.GOOS == "windows"]
		if !strings.HasSuffix(a.Name, wantExt) || !strings.Contains(a.Name, "_"+r.version+"_"+a.GOOS+"_"+a.GOARCH) {
			t.Errorf("archive %s for %s/%s", a.Name, a.GOOS, a.GOARCH)
		}
		names, binSum := archiveFiles(t, r.file(a))
		bin := map[bool]string{true: "contain.exe", false: "contain"}[a.GOOS == "windows"]
		for _, want := range []string{bin, "README.md", "docs/GUIDE.md", "docs/REPORT.md", "LICENSE", "man/contain.1",
			"completions/contain.bash", "completions/contain.zsh", "completions/contain.fish"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s lacks %s (has %v)", a.Name, want, names)
			}
		}
		if binSum != binaries[a.GOOS+"/"+a.GOARCH] {
			t.Errorf("%s holds another binary than the %s/%s build", a.Name, a.GOOS, a.GOARCH)
		}
		if got := sums[a.Name]; got != sha256File(t, r.file(a)) {
			t.Errorf("checksums.txt says %q for %s, which hashes to %s", got, a.Name, sha256File(t, r.file(a)))
		}
	}
}

// archiveSums maps an archive's file name to its SHA-256.
func archiveSums(t *testing.T, r release) map[string]string {
	m := map[string]string{}
	for _, a := range r.of("Archive") {
		m[a.Name] = sha256File(t, r.file(a))
	}
	return m
}

const releaseURL = "https://github.com/contain-cli/contain/releases/download/"

// TestReleaseCask: the cask installs the contain binary, its man page and
// completions, from URLs that name the macOS and Linux archives, with their
// checksums.
func TestReleaseCask(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	casks := r.of("Homebrew Cask")
	if len(casks) != 1 {
		t.Fatalf("%d casks", len(casks))
	}
	b, err := os.ReadFile(r.file(casks[0]))
	if err != nil {
		t.Fatal(err)
	}
	cask := string(b)
	for _, want := range []string{`cask "contain" do`, `version "` + r.version + `"`, `binary "contain"`, `manpage "man/contain.1"`,
		`bash_completion "completions/contain.bash"`, `zsh_completion "completions/contain.zsh"`, `fish_completion "completions/contain.fish"`} {
		if !strings.Contains(cask, want) {
			t.Errorf("the cask lacks %s:\n%s", want, cask)
		}
	}
	sums := archiveSums(t, r)
	pairs := regexp.MustCompile(`sha256 "([0-9a-f]{64})"\s+url "([^"]+)"`).FindAllStringSubmatch(cask, -1)
	var covered []string
	for _, p := range pairs {
		url := strings.ReplaceAll(p[2], "#{version}", r.version)
		name := path.Base(url)
		if !strings.HasPrefix(url, releaseURL) {
			t.Errorf("cask URL %s is not a release download", url)
		}
		if got, ok := sums[name]; !ok || got != p[1] {
			t.Errorf("cask: %s with sha256 %s; the archive hashes to %q", name, p[1], got)
		}
		covered = append(covered, name)
	}
	for name := range sums {
		if !strings.Contains(name, "windows") && !slices.Contains(covered, name) {
			t.Errorf("the cask does not offer %s", name)
		}
	}
}

// TestReleaseScoop: the scoop manifest installs contain.exe from the Windows
// archives, with their checksums.
func TestReleaseScoop(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	manifests := r.of("Scoop Manifest")
	if len(manifests) != 1 {
		t.Fatalf("%d scoop manifests", len(manifests))
	}
	b, err := os.ReadFile(r.file(manifests[0]))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version      string
		Architecture map[string]struct {
			URL  string
			Bin  []string
			Hash string
		}
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != r.version {
		t.Errorf("scoop version %q, want %q", m.Version, r.version)
	}
	sums := archiveSums(t, r)
	for arch, goarch := range map[string]string{"64bit": "amd64", "arm64": "arm64"} {
		a, ok := m.Architecture[arch]
		name := path.Base(a.URL)
		switch {
		case !ok:
			t.Errorf("no %s architecture in the manifest", arch)
		case !slices.Equal(a.Bin, []string{"contain.exe"}):
			t.Errorf("%s: bin %v", arch, a.Bin)
		case !strings.HasPrefix(a.URL, releaseURL) || name != fmt.Sprintf("contain_%s_windows_%s.zip", r.version, goarch):
			t.Errorf("%s: url %s", arch, a.URL)
		case sums[name] != a.Hash:
			t.Errorf("%s: hash %s, the archive hashes to %s", arch, a.Hash, sums[name])
		}
	}
	t.Run("installs a contain that works", func(t *testing.T) {
		needWine(t)
		name := path.Base(m.Architecture["64bit"].URL)
		i := slices.IndexFunc(r.of("Archive"), func(a artifact) bool { return a.Name == name })
		if i < 0 {
			t.Fatalf("no archive %s", name)
		}
		exe := extractZipFile(t, r.file(r.of("Archive")[i]), "contain.exe")
		cmd := exec.Command("wine", exe, "run", "--", "cmd", "/c", "exit 3")
		cmd.Env = wine.env
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Fatalf("the scoop-installed contain.exe run -- cmd /c exit 3: %v\n%s", err, out)
		}
	})
}

// extractZipFile writes the file name of a zip archive to a new directory
// and returns its path.
func extractZipFile(t *testing.T, archive, name string) string {
	t.Helper()
	z, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		dst := filepath.Join(t.TempDir(), name)
		w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, rc); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return dst
	}
	t.Fatalf("%s has no %s", archive, name)
	return ""
}
