//go:build linux

package tests

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	commit    string
	artifacts []artifact
}

var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// loadRelease reads dist/ (or $CONTAIN_DIST). .ci/run makes it with
// `goreleaser release --snapshot --clean --skip=publish,sign` before the
// tests and sets CONTAIN_REQUIRE_RELEASE, so there the test never skips.
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
		testtool.Missing(t, fmt.Sprintf("no snapshot release in %s (make one with goreleaser v2 and syft, Go programs, not Debian packages: "+
			"go install github.com/goreleaser/goreleaser/v2@v2.16.0; go install github.com/anchore/syft/cmd/syft@v1.57.1; "+
			"goreleaser release --snapshot --clean --skip=publish,sign; .ci/run does): %v", dir, err))
	}
	r := release{dir: filepath.Dir(dir)}
	if err := json.Unmarshal(b, &r.artifacts); err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version, Commit string }
	mb, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil || json.Unmarshal(mb, &meta) != nil || meta.Version == "" {
		t.Fatalf("dist/metadata.json: %v %s", err, mb)
	}
	r.version = meta.Version
	r.commit = meta.Commit
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
	sums := checksumsTxt(t, r)
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

// checksumsTxt reads checksums.txt: a file's name to its SHA-256.
func checksumsTxt(t *testing.T, r release) map[string]string {
	t.Helper()
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
	return sums
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

// commitTime is the time of the commit the release was built from, which
// goreleaser.yaml makes every file's time.
func commitTime(t *testing.T, r release) time.Time {
	t.Helper()
	if r.commit == "" || r.commit == "none" {
		t.Fatal("dist/metadata.json names no commit: goreleaser read no git state " +
			"(it reads it only where the repository has a remote; .ci/run names one for it where there is none)")
	}
	git := testtool.Need(t, "git", "git")
	out, err := exec.Command(git, "-C", r.dir, "show", "-s", "--format=%ct", r.commit).Output()
	if err != nil {
		t.Fatalf("git show %s: %v", r.commit, err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("git show %s: %q", r.commit, out)
	}
	return time.Unix(sec, 0).UTC()
}

// entry is a file of an archive or package, as its header has it.
type entry struct {
	name         string
	mode         fs.FileMode // permission bits and fs.ModeDir
	mtime        time.Time
	uname, gname string // "" where the format keeps no names (zip)
}

func tarEntries(t *testing.T, what string, rd io.Reader) []entry {
	t.Helper()
	var es []entry
	tr := tar.NewReader(rd)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return es
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		es = append(es, entry{name: h.Name, mode: h.FileInfo().Mode() & (fs.ModePerm | fs.ModeDir), mtime: h.ModTime, uname: h.Uname, gname: h.Gname})
	}
}

func gunzip(t *testing.T, what string, b []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	out, err := io.ReadAll(gz)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return out
}

// machinePaths are the directories of this machine that a build without
// -trimpath writes into the binary (as the start of its source files'
// paths): the checkout, GOROOT, GOPATH, the module cache.
func machinePaths(t *testing.T, r release) []string {
	t.Helper()
	abs, err := filepath.Abs(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{abs}
	out, err := exec.Command("go", "env", "GOROOT", "GOPATH", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if len(p) > 1 {
			paths = append(paths, p)
		}
	}
	return paths
}

// TestReleaseReproducible: what makes two builds of one commit alike,
// read off the release (building it twice would take minutes). Every binary
// is built with -trimpath, without cgo or a VCS stamp, holds no path of this
// machine and has the commit's time; every file in every archive has the
// commit's time, owner root and mode 0755 (the binary) or 0644. The packages'
// files are checked by TestReleaseDeb, TestReleaseRPM and TestReleaseAPK.
func TestReleaseReproducible(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	when := commitTime(t, r)
	paths := machinePaths(t, r)
	for _, a := range r.of("Binary") {
		p := r.file(a)
		if fi, err := os.Stat(p); err != nil || !fi.ModTime().Equal(when) {
			t.Errorf("%s: time %v (%v), want the commit's, %v", a.Path, fi.ModTime().UTC(), err, when)
		}
		bi, err := buildinfo.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", a.Path, err)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
			if strings.HasPrefix(s.Key, "vcs.") {
				t.Errorf("%s has a VCS stamp: %s=%s", a.Path, s.Key, s.Value)
			}
		}
		if settings["-trimpath"] != "true" || settings["CGO_ENABLED"] != "0" {
			t.Errorf("%s: built with -trimpath=%q CGO_ENABLED=%q, want true and 0", a.Path, settings["-trimpath"], settings["CGO_ENABLED"])
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range append(paths, "/go-build") {
			if bytes.Contains(b, []byte(dir+"/")) {
				t.Errorf("%s holds a path of the machine that built it: %s", a.Path, dir)
			}
		}
	}
	for _, a := range r.of("Archive") {
		for _, e := range archiveEntries(t, r.file(a)) {
			mode := fs.FileMode(0o644)
			if e.name == "contain" || e.name == "contain.exe" {
				mode = 0o755
			}
			if !e.mtime.Equal(when) || e.mode != mode || (e.uname != "" || e.gname != "") && (e.uname != "root" || e.gname != "root") {
				t.Errorf("%s: %s is %v %s %s:%s, want %v %s root:root", a.Name, e.name, e.mode, e.mtime.UTC(), e.uname, e.gname, mode, when)
			}
		}
	}
}

// archiveEntries lists the files of a tar.gz or zip archive.
func archiveEntries(t *testing.T, p string) []entry {
	t.Helper()
	if strings.HasSuffix(p, ".zip") {
		z, err := zip.OpenReader(p)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		var es []entry
		for _, f := range z.File {
			es = append(es, entry{name: f.Name, mode: f.Mode() & (fs.ModePerm | fs.ModeDir), mtime: f.Modified})
		}
		return es
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tarEntries(t, p, bytes.NewReader(gunzip(t, p, b)))
}

// archiveContents reads the files of the linux tar.gz archive for goarch,
// the bytes the packages of that architecture must install.
func archiveContents(t *testing.T, r release, goarch string) map[string][]byte {
	t.Helper()
	for _, a := range r.of("Archive") {
		if a.GOOS != "linux" || a.GOARCH != goarch {
			continue
		}
		b, err := os.ReadFile(r.file(a))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		tr := tar.NewReader(bytes.NewReader(gunzip(t, a.Name, b)))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return files
			}
			if err != nil {
				t.Fatalf("%s: %v", a.Name, err)
			}
			files[h.Name], _ = io.ReadAll(tr)
		}
	}
	t.Fatalf("no linux/%s archive", goarch)
	return nil
}

// TestReleaseChecksums: checksums.txt names every archive, package and
// SBOM, with its SHA-256, and nothing else; the release workflow signs it
// and attests each file it names.
func TestReleaseChecksums(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	sums := checksumsTxt(t, r)
	named := map[string]bool{}
	for typ, n := range map[string]int{"Archive": len(platforms), "Linux Package": 6, "SBOM": len(platforms)} {
		as := r.of(typ)
		if len(as) != n {
			t.Errorf("%d of %s, want %d", len(as), typ, n)
		}
		for _, a := range as {
			named[a.Name] = true
			if got, want := sums[a.Name], sha256File(t, r.file(a)); got != want {
				t.Errorf("checksums.txt says %q for %s, which hashes to %s", got, a.Name, want)
			}
		}
	}
	for name := range sums {
		if !named[name] {
			t.Errorf("checksums.txt names %s, no archive, package or SBOM", name)
		}
	}
}

// TestReleaseSBOM: each archive has an SPDX SBOM that names the archive,
// every module the binary in it was built from (its build information's,
// with their versions) and Go's standard library, and the binary itself
// with its SHA-256.
func TestReleaseSBOM(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	sboms := map[string]artifact{}
	for _, a := range r.of("SBOM") {
		sboms[a.Name] = a
	}
	binaries := map[string]artifact{}
	for _, a := range r.of("Binary") {
		binaries[a.GOOS+"/"+a.GOARCH] = a
	}
	for _, a := range r.of("Archive") {
		s, ok := sboms[a.Name+".sbom.json"]
		if !ok {
			t.Errorf("no SBOM for %s (have %v)", a.Name, slices.Sorted(maps.Keys(sboms)))
			continue
		}
		b, err := os.ReadFile(r.file(s))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Name        string `json:"name"`
			Packages    []struct {
				Name        string `json:"name"`
				VersionInfo string `json:"versionInfo"`
			} `json:"packages"`
			Files []struct {
				FileName  string `json:"fileName"`
				Checksums []struct {
					Algorithm     string `json:"algorithm"`
					ChecksumValue string `json:"checksumValue"`
				} `json:"checksums"`
			} `json:"files"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if !strings.HasPrefix(doc.SPDXVersion, "SPDX-2.") || doc.Name != a.Name {
			t.Errorf("%s: %s document named %q", s.Name, doc.SPDXVersion, doc.Name)
		}
		have := map[string]string{}
		for _, p := range doc.Packages {
			have[p.Name] = p.VersionInfo
		}
		bin := binaries[a.GOOS+"/"+a.GOARCH]
		bi, err := buildinfo.ReadFile(r.file(bin))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"stdlib": bi.GoVersion}
		for _, d := range bi.Deps {
			want[d.Path] = d.Version
		}
		for mod, v := range want {
			if have[mod] != v {
				t.Errorf("%s: %s at %q, want %s", s.Name, mod, have[mod], v)
			}
		}
		binSum := sha256File(t, r.file(bin))
		found := false
		for _, f := range doc.Files {
			for _, c := range f.Checksums {
				if path.Base(f.FileName) == bin.Name && c.Algorithm == "SHA256" && c.ChecksumValue == binSum {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s does not name %s with its SHA-256 %s", s.Name, bin.Name, binSum)
		}
	}
}

// wingetFields reads the top-level "Key: value" lines of a winget manifest,
// and the installers' as one map each.
func wingetFields(text string) (top map[string]string, installers []map[string]string) {
	top = map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		indented := strings.HasPrefix(line, " ")
		item := strings.HasPrefix(strings.TrimSpace(line), "- ")
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
		switch {
		case !indented:
			top[k] = v
			cur = nil
		case item && k == "Architecture":
			cur = map[string]string{}
			installers = append(installers, cur)
			cur[k] = v
		case cur != nil:
			cur[k] = v
		}
	}
	return top, installers
}

// TestReleaseWinget: the three winget manifests (version, installer,
// default locale) of contain-cli.contain at this version, under the path
// winget-pkgs keeps them; the installer offers the Windows zips, with their
// checksums, from which winget installs contain.exe as the portable command
// contain.
func TestReleaseWinget(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	const id = "contain-cli.contain"
	manifests := map[string]map[string]string{}
	var installers []map[string]string
	for _, a := range r.of("Winget Manifest") {
		if want := "/manifests/c/contain-cli/contain/" + r.version + "/" + a.Name; !strings.HasSuffix(a.Path, want) {
			t.Errorf("winget manifest at %s, want it to end in %s", a.Path, want)
		}
		b, err := os.ReadFile(r.file(a))
		if err != nil {
			t.Fatal(err)
		}
		top, ins := wingetFields(string(b))
		manifests[a.Name] = top
		if top["ManifestType"] == "installer" {
			installers = ins
		}
		if top["PackageIdentifier"] != id || top["PackageVersion"] != r.version {
			t.Errorf("%s: package %s %s, want %s %s", a.Name, top["PackageIdentifier"], top["PackageVersion"], id, r.version)
		}
	}
	version, installer, locale := manifests[id+".yaml"], manifests[id+".installer.yaml"], manifests[id+".locale.en-US.yaml"]
	if len(manifests) != 3 || version == nil || installer == nil || locale == nil {
		t.Fatalf("winget manifests %v, want %s.yaml, .installer.yaml and .locale.en-US.yaml", slices.Sorted(maps.Keys(manifests)), id)
	}
	for name, want := range map[string]string{id + ".yaml": "version", id + ".installer.yaml": "installer", id + ".locale.en-US.yaml": "defaultLocale"} {
		if m := manifests[name]; m["ManifestType"] != want || m["ManifestVersion"] == "" || m["ManifestVersion"] != version["ManifestVersion"] {
			t.Errorf("%s: ManifestType %q ManifestVersion %q, want %s and one version for all three", name, m["ManifestType"], m["ManifestVersion"], want)
		}
	}
	if version["DefaultLocale"] != "en-US" || locale["PackageLocale"] != "en-US" {
		t.Errorf("default locale %q, locale manifest's %q", version["DefaultLocale"], locale["PackageLocale"])
	}
	for k, want := range map[string]string{"PackageName": "contain", "Publisher": "contain-cli", "License": "MIT", "Moniker": "contain"} {
		if locale[k] != want {
			t.Errorf("locale manifest: %s %q, want %q", k, locale[k], want)
		}
	}
	if locale["ShortDescription"] == "" {
		t.Error("locale manifest: no ShortDescription")
	}
	if installer["InstallerType"] != "zip" {
		t.Errorf("InstallerType %q, want zip", installer["InstallerType"])
	}
	sums := archiveSums(t, r)
	var archs []string
	for _, in := range installers {
		goarch := map[string]string{"x64": "amd64", "arm64": "arm64"}[in["Architecture"]]
		archs = append(archs, in["Architecture"])
		name := fmt.Sprintf("contain_%s_windows_%s.zip", r.version, goarch)
		url := in["InstallerUrl"]
		if !strings.HasPrefix(url, releaseURL) || path.Base(url) != name {
			t.Errorf("%s: InstallerUrl %s, want the release's %s", in["Architecture"], url, name)
		}
		if !strings.EqualFold(in["InstallerSha256"], sums[name]) {
			t.Errorf("%s: InstallerSha256 %s, the archive hashes to %s", in["Architecture"], in["InstallerSha256"], sums[name])
		}
		if in["NestedInstallerType"] != "portable" || in["RelativeFilePath"] != "contain.exe" || in["PortableCommandAlias"] != "contain" {
			t.Errorf("%s: nested installer %q %q alias %q, want portable contain.exe as contain", in["Architecture"], in["NestedInstallerType"], in["RelativeFilePath"], in["PortableCommandAlias"])
		}
	}
	slices.Sort(archs)
	if !slices.Equal(archs, []string{"arm64", "x64"}) {
		t.Errorf("installers for %v, want arm64 and x64", archs)
	}
}

// packaged maps where a package of format installs each file to the file
// of the archive it is: the binary in /usr/bin, the man page (gzipped, as
// distributions install it), the completions where bash-completion, fish
// and zsh look for a distribution's (zsh: Debian's vendor-completions,
// site-functions on Fedora and Alpine), the licence where each keeps it.
func packaged(format string) map[string]string {
	m := map[string]string{
		"/usr/bin/contain":                                  "contain",
		"/usr/share/man/man1/contain.1.gz":                  "man/contain.1",
		"/usr/share/bash-completion/completions/contain":    "completions/contain.bash",
		"/usr/share/fish/vendor_completions.d/contain.fish": "completions/contain.fish",
	}
	if format == "deb" {
		m["/usr/share/zsh/vendor-completions/_contain"] = "completions/contain.zsh"
		m["/usr/share/doc/contain/copyright"] = "LICENSE"
	} else {
		m["/usr/share/zsh/site-functions/_contain"] = "completions/contain.zsh"
		m["/usr/share/licenses/contain/LICENSE"] = "LICENSE"
	}
	return m
}

// checkPayload: a package's files are packaged(format)'s, and every one
// of them and every directory has the commit's time, owner root and mode
// 0755 (the binary, directories) or 0644.
func checkPayload(t *testing.T, pkg, format string, es []entry, when time.Time) {
	t.Helper()
	want := packaged(format)
	var files []string
	for _, e := range es {
		name := "/" + strings.TrimPrefix(strings.TrimPrefix(e.name, "."), "/")
		mode := fs.FileMode(0o644)
		switch {
		case e.mode.IsDir():
			mode = 0o755 | fs.ModeDir
		case name == "/usr/bin/contain":
			mode = 0o755
		}
		if !e.mode.IsDir() {
			files = append(files, name)
		}
		if !e.mtime.Equal(when) || e.mode != mode || e.uname != "root" || e.gname != "root" {
			t.Errorf("%s: %s is %v %s %s:%s, want %v %s root:root", pkg, name, e.mode, e.mtime.UTC(), e.uname, e.gname, mode, when)
		}
	}
	slices.Sort(files)
	if wantFiles := slices.Sorted(maps.Keys(want)); !slices.Equal(files, wantFiles) {
		t.Errorf("%s installs %v, want %v", pkg, files, wantFiles)
	}
}

// checkRoot: root holds packaged(format)'s files with the bytes of the
// archive's (the man page gzipped).
func checkRoot(t *testing.T, root, format string, archive map[string][]byte) {
	t.Helper()
	for dst, src := range packaged(format) {
		b, err := os.ReadFile(filepath.Join(root, dst))
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if strings.HasSuffix(dst, ".gz") {
			b = gunzip(t, dst, b)
		}
		if !bytes.Equal(b, archive[src]) {
			t.Errorf("%s is not the archive's %s", dst, src)
		}
	}
}

// useInstalled uses what a package installed in root as a user would:
// contain --version run in root as its / (where there is nothing but what
// was installed), man contain with root's man pages for MANPATH, and the
// bash completion loaded by bash.
func useInstalled(t *testing.T, root string, r release) {
	t.Helper()
	cmd := exec.Command("/usr/bin/contain", "--version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin"}
	out, err := cmd.CombinedOutput()
	if want := "contain version " + r.version + "\n"; err != nil || string(out) != want {
		t.Errorf("the installed contain --version: %q (%v), want %q", out, err, want)
	}
	man := testtool.Need(t, "man", "man-db")
	env := append(os.Environ(), "MANPATH="+filepath.Join(root, "usr/share/man"), "MANPAGER=cat", "MANWIDTH=80")
	cmd = exec.Command(man, "-w", "contain")
	cmd.Env = env
	out, err = cmd.Output()
	if want := filepath.Join(root, "usr/share/man/man1/contain.1.gz"); err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("man -w contain: %q (%v), want %s", out, err, want)
	}
	cmd = exec.Command(man, "contain")
	cmd.Env = env
	out, err = cmd.Output()
	if err != nil {
		t.Errorf("man contain: %v", err)
	}
	for _, want := range []string{"contain run", "contain ps", "EXIT STATUS"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("man contain shows no %q:\n%s", want, out)
		}
	}
	bash := testtool.Need(t, "bash", "bash")
	out, err = exec.Command(bash, "-c", `source "$1" && complete -p contain`, "bash", filepath.Join(root, "usr/share/bash-completion/completions/contain")).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), " contain") {
		t.Errorf("bash, the installed completion: %q (%v)", out, err)
	}
}

// checkInstalled checks the package (format) that manager's run
// installed into root: --verify finds it intact, root holds the
// archive's files, contain runs from there, and remove (the manager's
// option) leaves nothing.
func checkInstalled(t *testing.T, root string, r release, manager, format string, run func(args ...string) string, remove string) {
	t.Helper()
	if out := run("--verify", "contain"); out != "" {
		t.Errorf("%s --verify contain:\n%s", manager, out)
	}
	checkRoot(t, root, format, archiveContents(t, r, runtime.GOARCH))
	useInstalled(t, root, r)
	run(remove, "contain")
	if left := leftInRoot(t, root); len(left) > 0 {
		t.Errorf("%s %s contain left %v", manager, remove, left)
	}
}

// leftInRoot lists the files under root's /usr.
func leftInRoot(t *testing.T, root string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(filepath.Join(root, "usr"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// linuxPackages: the release's packages of format (deb, rpm, apk), by GOARCH.
func linuxPackages(t *testing.T, r release, format string) map[string]artifact {
	t.Helper()
	m := map[string]artifact{}
	for _, a := range r.of("Linux Package") {
		if strings.HasSuffix(a.Name, "."+format) {
			m[a.GOARCH] = a
		}
	}
	if _, ok := m["amd64"]; !ok || len(m) != 2 {
		t.Fatalf(".%s packages for %v, want amd64 and arm64", format, slices.Sorted(maps.Keys(m)))
	}
	return m
}

// needRoot skips a test that installs into a root of its own, which needs
// root: chroot, and files owned by root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("installing into a root of its own and running there (chroot) needs root")
	}
}

// rpmArch is the architecture rpm and apk name goarch by.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// arMember is a member of an ar archive (a .deb).
type arMember struct {
	name  string
	mtime int64
	data  []byte
}

func readAr(t *testing.T, p string) []arMember {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("!<arch>\n")) {
		t.Fatalf("%s is no ar archive", p)
	}
	b = b[8:]
	var ms []arMember
	for len(b) >= 60 {
		h := string(b[:60])
		mtime, err1 := strconv.ParseInt(strings.TrimSpace(h[16:28]), 10, 64)
		size, err2 := strconv.Atoi(strings.TrimSpace(h[48:58]))
		if err1 != nil || err2 != nil || h[58:60] != "`\n" || 60+size > len(b) {
			t.Fatalf("%s: bad ar header %q", p, h)
		}
		ms = append(ms, arMember{strings.TrimSuffix(strings.TrimSpace(h[:16]), "/"), mtime, b[60 : 60+size]})
		b = b[60+size:]
		if size%2 == 1 && len(b) > 0 {
			b = b[1:]
		}
	}
	return ms
}

// TestReleaseDeb: the two .deb packages (amd64, arm64): control fields,
// files and, for reproducibility, every member's and file's time the
// commit's. Then the one of this machine's architecture is installed by
// dpkg (its install: unpack, configure, its database) into a root of its
// own, never this machine's, and used from there: contain --version, man
// contain, the bash completion; dpkg --verify finds its files intact, and
// dpkg --remove leaves nothing.
func TestReleaseDeb(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	when := commitTime(t, r)
	debVersion := strings.Replace(r.version, "-", "~", 1)
	debs := linuxPackages(t, r, "deb")
	for goarch, a := range debs {
		ms := readAr(t, r.file(a))
		var names []string
		for _, m := range ms {
			names = append(names, m.name)
			if m.mtime != when.Unix() {
				t.Errorf("%s: %s has time %d, want the commit's, %d", a.Name, m.name, m.mtime, when.Unix())
			}
		}
		if !slices.Equal(names, []string{"debian-binary", "control.tar.gz", "data.tar.gz"}) {
			t.Fatalf("%s: members %v", a.Name, names)
		}
		control := gunzip(t, a.Name, ms[1].data)
		for _, e := range tarEntries(t, a.Name+" control.tar.gz", bytes.NewReader(control)) {
			if !e.mtime.Equal(when) {
				t.Errorf("%s: control.tar.gz's %s has time %s, want %s", a.Name, e.name, e.mtime.UTC(), when)
			}
		}
		tr := tar.NewReader(bytes.NewReader(control))
		var fields string
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			if h.Name == "./control" {
				b, _ := io.ReadAll(tr)
				fields = string(b)
			}
		}
		for _, want := range []string{"Package: contain\n", "Version: " + debVersion + "\n", "Architecture: " + goarch + "\n", "Maintainer: ", "Homepage: https://github.com/contain-cli/contain\n"} {
			if !strings.Contains(fields, want) {
				t.Errorf("%s: control lacks %q:\n%s", a.Name, want, fields)
			}
		}
		checkPayload(t, a.Name, "deb", tarEntries(t, a.Name+" data.tar.gz", bytes.NewReader(gunzip(t, a.Name, ms[2].data))), when)
	}

	t.Run("installed by dpkg", func(t *testing.T) {
		needRoot(t)
		dpkg := testtool.Need(t, "dpkg", "dpkg")
		a, ok := debs[runtime.GOARCH]
		if !ok {
			t.Skipf("no .deb for this machine's %s", runtime.GOARCH)
		}
		root := t.TempDir()
		admin := filepath.Join(root, "var/lib/dpkg")
		for _, d := range []string{"info", "updates"} {
			if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(admin, "status"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(args ...string) string {
			t.Helper()
			out, err := exec.Command(dpkg, append([]string{"--root=" + root, "--log=/dev/null"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		run("--install", r.file(a))
		if st := run("--status", "contain"); !strings.Contains(st, "Status: install ok installed\n") || !strings.Contains(st, "Version: "+debVersion+"\n") {
			t.Errorf("dpkg --status contain:\n%s", st)
		}
		checkInstalled(t, root, r, "dpkg", "deb", run, "--remove")
	})
}

// TestReleaseRPM: the two .rpm packages (x86_64, aarch64): name, version,
// architecture, files, and for reproducibility the build's time the
// commit's and its host no machine's name (rpm -qp). Then the one of this
// machine's architecture is installed by rpm into a root of its own (its
// own database there) and used from there as the .deb is; rpm --verify
// finds it intact, rpm --erase leaves nothing.
func TestReleaseRPM(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	when := commitTime(t, r)
	rpm := testtool.Need(t, "rpm", "rpm")
	rpms := linuxPackages(t, r, "rpm")
	query := func(p, format string) string {
		t.Helper()
		out, err := exec.Command(rpm, "-qp", "--qf", format, p).Output()
		if err != nil {
			t.Fatalf("rpm -qp %s: %v", p, err)
		}
		return string(out)
	}
	for goarch, a := range rpms {
		head := query(r.file(a), "%{NAME} %{VERSION} %{ARCH} %{BUILDTIME} %{BUILDHOST}")
		want := fmt.Sprintf("contain %s %s %d contain-cli.invalid", strings.Replace(r.version, "-", "~", 1), rpmArch[goarch], when.Unix())
		if head != want {
			t.Errorf("%s: name version arch build time and host %q, want %q", a.Name, head, want)
		}
		var es []entry
		for _, line := range strings.Split(strings.TrimSpace(query(r.file(a), "[%{FILENAMES}\t%{FILEMODES:octal}\t%{FILEUSERNAME}\t%{FILEGROUPNAME}\t%{FILEMTIMES}\n]")), "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 5 {
				t.Fatalf("%s: rpm -qp: %q", a.Name, line)
			}
			mode, err1 := strconv.ParseUint(f[1], 8, 32)
			sec, err2 := strconv.ParseInt(f[4], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: rpm -qp: %q", a.Name, line)
			}
			m := fs.FileMode(mode) & fs.ModePerm
			if mode&0o170000 == 0o040000 {
				m |= fs.ModeDir
			}
			es = append(es, entry{name: f[0], mode: m, uname: f[2], gname: f[3], mtime: time.Unix(sec, 0)})
		}
		checkPayload(t, a.Name, "rpm", es, when)
	}

	t.Run("installed by rpm", func(t *testing.T) {
		needRoot(t)
		a, ok := rpms[runtime.GOARCH]
		if !ok {
			t.Skipf("no .rpm for this machine's %s", runtime.GOARCH)
		}
		root := t.TempDir()
		run := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(rpm, append([]string{"--root", root, "--dbpath", "/var/lib/rpm"}, args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("rpm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
			}
			return string(out)
		}
		run("--initdb")
		run("--install", "--nosignature", r.file(a))
		if got := run("-q", "contain"); !strings.HasPrefix(got, "contain-") {
			t.Errorf("rpm -q contain: %q", got)
		}
		checkInstalled(t, root, r, "rpm", "rpm", run, "--erase")
	})
}

// TestReleaseAPK: the two .apk packages (x86_64, aarch64): .PKGINFO's
// name, version and architecture, and the files with the commit's time (the
// control segment's .PKGINFO has nfpm's fixed time, the Unix epoch). Then
// the one of this machine's architecture is unpacked in a busybox root, as
// Alpine's userland is, by busybox's tar (an .apk is gzipped tar segments),
// and used from there as the .deb is. It is not installed by apk: see the
// subtest's skip.
func TestReleaseAPK(t *testing.T) {
	t.Parallel()
	r := loadRelease(t)
	when := commitTime(t, r)
	apks := linuxPackages(t, r, "apk")
	core, _, _ := strings.Cut(r.version, "-")
	for goarch, a := range apks {
		b, err := os.ReadFile(r.file(a))
		if err != nil {
			t.Fatal(err)
		}
		// gzip reads the segments' members as one stream, and they are
		// one tar without end blocks between them.
		plain := gunzip(t, a.Name, b)
		var data []entry
		for _, e := range tarEntries(t, a.Name, bytes.NewReader(plain)) {
			if strings.HasPrefix(e.name, ".") {
				if !e.mtime.Equal(when) && e.mtime.Unix() != 0 {
					t.Errorf("%s: %s has time %s, want the commit's or the Unix epoch", a.Name, e.name, e.mtime.UTC())
				}
				continue
			}
			data = append(data, e)
		}
		checkPayload(t, a.Name, "apk", data, when)
		tr := tar.NewReader(bytes.NewReader(plain))
		info := map[string]string{}
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			if h.Name == ".PKGINFO" {
				b, _ := io.ReadAll(tr)
				for _, line := range strings.Split(string(b), "\n") {
					if k, v, ok := strings.Cut(line, " = "); ok {
						info[k] = v
					}
				}
			}
		}
		if info["pkgname"] != "contain" || info["arch"] != rpmArch[goarch] || !strings.HasPrefix(info["pkgver"], core) || info["license"] != "MIT" {
			t.Errorf("%s: .PKGINFO %v, want contain %s… for %s, MIT", a.Name, info, core, rpmArch[goarch])
		}
	}

	t.Run("unpacked in a busybox root", func(t *testing.T) {
		needRoot(t)
		a, ok := apks[runtime.GOARCH]
		if !ok {
			t.Skipf("no .apk for this machine's %s", runtime.GOARCH)
		}
		busybox := testtool.StaticBusybox(t)
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		installBusybox(t, busybox, root)
		copyIntoRoot(t, r.file(a), filepath.Join(root, "contain.apk"))
		cmd := exec.Command("/bin/tar", "-xzf", "/contain.apk", "-C", "/")
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("busybox tar -xzf contain.apk: %v\n%s", err, out)
		}
		checkRoot(t, root, "apk", archiveContents(t, r, runtime.GOARCH))
		useInstalled(t, root, r)
	})

	t.Run("installed by apk", func(t *testing.T) {
		t.Skip("apk-tools, Alpine's package manager, is packaged by neither Debian 12 (CI's system) nor Debian 13, " +
			"and is no Go module, so no test installs the .apk with it; " +
			"the busybox root above has its files unpacked by busybox's tar instead")
	})
}
