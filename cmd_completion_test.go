package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
	"github.com/contain-cli/contain/tag"
)

// completionScript writes contain's script for shell into a temporary file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errOut strings.Builder
	if code := runApp([]string{"contain", "completion", shell}, &out, &errOut); code != 0 {
		t.Fatalf("contain completion %s: status %d, %s", shell, code, errOut.String())
	}
	path := filepath.Join(t.TempDir(), "contain."+shell)
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// needShell finds a shell, or skips the test naming its Debian package
// (bash, zsh, fish: the shells' own names); in CI, which installs all
// three, a missing one fails it (internal/testtool).
func needShell(t *testing.T, shell string) string {
	t.Helper()
	return testtool.Need(t, shell, shell)
}

func TestCompletionScriptsParse(t *testing.T) {
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			sh := needShell(t, shell)
			script := completionScript(t, shell)
			if out, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
				t.Fatalf("%s -n rejects the script: %v\n%s", shell, err, out)
			}
		})
	}
}

// TestMain lets this test binary play contain for the completion scripts,
// which run contain to list the live sessions (contain completion
// __sessions): the shells find it on PATH as contain (newCompWorld), with
// CONTAIN_TEST_AS_CONTAIN set. One binary plays every helper, as in Go's
// os/exec tests.
func TestMain(m *testing.M) {
	if os.Getenv("CONTAIN_TEST_AS_CONTAIN") == "1" {
		os.Exit(runApp(os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestSleeper is testtool's sleeper: the process of compWorld's live
// session.
func TestSleeper(t *testing.T) { testtool.Sleep(t) }

// compWorld is where the shells complete: a PATH whose first directory
// holds contain (this test binary) and probecmd, a command whose own
// completion (set up by each shell's test) offers --alpha and --alpine; a
// working directory with one file, afile.txt; and a live session.
type compWorld struct {
	env     []string
	dir     string
	session string // TOOL:PID
}

func newCompWorld(t *testing.T) compWorld {
	t.Helper()
	if runtime.GOOS == "windows" {
		// Its contain (a symbolic link to this test binary, no .exe)
		// and probecmd (a #! script) are Unix commands.
		t.Skip("completing commands and sessions is tested with the shells of Linux and macOS")
	}
	bin, dir := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "contain")); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{filepath.Join(bin, "probecmd"): "#!/bin/sh\n", filepath.Join(dir, "afile.txt"): ""} {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The session's originator is this test, which runs as long as the
	// completion does and started before the sleeper: alive.
	session := tag.Format("comptest", os.Getpid())
	testtool.StartSleeper(t, nil, tag.Var+"="+session)
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CONTAIN_TEST_AS_CONTAIN=1")
	return compWorld{env: env, dir: dir, session: session}
}

// compCase is a line completed (the cursor at its end) and what must, and
// must not, be offered.
type compCase struct {
	line string
	want []string
	not  []string
	// own: want is what the command's own completion offers, which
	// plain bash (without bash-completion) does not hand over to.
	own bool
}

// completionCases are the lines every shell completes alike. A shell may
// offer a value without what comes before it in the word (bash, after
// "=" or ":"; zsh, after -s): each of want is offered when some offer is
// a suffix of it.
func completionCases(w compWorld) []compCase {
	alpha := []string{"--alpha", "--alpine"}
	daemons := []string{"--allow-daemons"}
	cases := []compCase{
		// A GNU timeout user's habits (issue 39, 4): after contain
		// timeout DURATION the command, then its own completion.
		{line: "contain timeout 5 slee", want: []string{"sleep"}},
		{line: "contain timeout 5 probec", want: []string{"probecmd"}},
		{line: "contain timeout 5 probecmd --al", want: alpha, not: daemons, own: true},
		{line: "contain timeout -v 5 probecmd --al", want: alpha, not: daemons, own: true},
		{line: "contain run -v probecmd --al", want: alpha, not: daemons, own: true},
		{line: "contain run -- probecmd --al", want: alpha, not: daemons, own: true},
		{line: "contain timeout -k 5 -sKILL 10 probec", want: []string{"probecmd"}},
		{line: "contain timeout --signal KILL --kill-after=1 10 probec", want: []string{"probecmd"}},
		{line: "contain timeout -- 5 probec", want: []string{"probecmd"}},
		// Where run's COMMAND begins: past each option's value.
		{line: "contain run -t 5 probec", want: []string{"probecmd"}},
		{line: "contain run -t5 probec", want: []string{"probecmd"}},
		{line: "contain run -vt 5 probec", want: []string{"probecmd"}},
		{line: "contain run --timeout=5 probec", want: []string{"probecmd"}},
		{line: "contain run --timeout 5 probec", want: []string{"probecmd"}},
		{line: "contain run -sKILL probec", want: []string{"probecmd"}},
		{line: "contain run --kill-after 5 probec", want: []string{"probecmd"}},
		{line: "contain run -vd probec", want: []string{"probecmd"}},
		{line: "contain run -- probec", want: []string{"probecmd"}},
		{line: "contain run -t 5 -- probec", want: []string{"probecmd"}},
		// No command in place of DURATION, nor of an option's value.
		{line: "contain timeout probec", not: []string{"probecmd"}},
		{line: "contain run -t probec", not: []string{"probecmd"}},
		// contain timeout takes DURATION, never -t.
		{line: "contain timeout -", want: []string{"--kill-after", "--signal", "-k"}, not: []string{"--timeout", "-t"}},
		{line: "contain run -", want: []string{"--timeout", "-t", "--allow-daemons"}},
		// Signals, in every form the options take.
		{line: "contain run --signal=K", want: []string{"--signal=KILL"}},
		{line: "contain run -sK", want: []string{"-sKILL"}},
		{line: "contain run -vsH", want: []string{"-vsHUP"}},
		{line: "contain timeout -s ", want: []string{"KILL", "TERM", "USR1"}},
		{line: "contain stop --signal=", want: []string{"--signal=TERM", "--signal=INT"}},
		{line: "contain stop -sI", want: []string{"-sINT"}},
		// stop and wait take live sessions.
		{line: "contain stop ", want: []string{w.session}},
		{line: "contain wait -t 5 ", want: []string{w.session}},
		{line: "contain stop comptest:", want: []string{w.session}},
		{line: "contain stop -t ", not: []string{w.session}},
	}
	if runtime.GOOS == "linux" {
		// GNU ls, whose options each shell's completion knows.
		cases = append(cases, compCase{line: "contain timeout 5 ls --al", want: []string{"--all", "--almost-all"}, not: daemons, own: true})
	}
	return cases
}

// checkOffers checks what a shell offered for each case (got, by line).
func checkOffers(t *testing.T, shell string, cases []compCase, got map[string][]string, handsOver bool) {
	t.Helper()
	offered := func(offers []string, w string) bool {
		return slices.ContainsFunc(offers, func(o string) bool { return o != "" && strings.HasSuffix(w, o) })
	}
	for _, c := range cases {
		offers := got[c.line]
		if !c.own || handsOver {
			for _, w := range c.want {
				if !offered(offers, w) {
					t.Errorf("%s: %q<Tab> offers %q, not %q", shell, c.line, offers, w)
				}
			}
		}
		for _, w := range c.not {
			if slices.Contains(offers, w) {
				t.Errorf("%s: %q<Tab> offers %q", shell, c.line, w)
			}
		}
	}
}

// bashWords splits line as bash splits the line it completes into
// COMP_WORDS: at blanks, and each run of "=" or ":" (of COMP_WORDBREAKS) a
// word of its own; a line that ends in a blank completes an empty word.
func bashWords(line string) []string {
	isBreak := func(c byte) bool { return c == '=' || c == ':' }
	var words []string
	for _, f := range strings.Fields(line) {
		start := 0
		for i := 1; i <= len(f); i++ {
			if i == len(f) || isBreak(f[i]) != isBreak(f[i-1]) {
				words = append(words, f[start:i])
				start = i
			}
		}
	}
	if line == "" || strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	return words
}

// bashQuote quotes s for bash.
func bashQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// bashComplete completes each line in w (the cursor at its end) with the
// bash script, as bash would on Tab: COMP_LINE, COMP_POINT, COMP_WORDS and
// COMP_CWORD set, contain's function called. It returns COMPREPLY by
// line. setup runs first (loads bash-completion, or nothing); w, if not
// nil, is where.
func bashComplete(t *testing.T, script, setup string, w *compWorld, lines ...string) map[string][]string {
	t.Helper()
	var prog strings.Builder
	prog.WriteString(setup + "\nsource \"$1\"\ncomplete -W '--alpha --alpine' probecmd\n")
	for _, line := range lines {
		words := bashWords(line)
		quoted := make([]string, len(words))
		for i, word := range words {
			quoted[i] = bashQuote(word)
		}
		fmt.Fprintf(&prog, "COMP_LINE=%s; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=()\n", bashQuote(line), strings.Join(quoted, " "), len(words)-1)
		fmt.Fprintf(&prog, "printf '\\n== %%s\\n' %s\n", bashQuote(line))
		prog.WriteString("_contain contain \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\" 2>/dev/null\n")
		prog.WriteString("printf '%s\\n' \"${COMPREPLY[@]}\"\n")
	}
	cmd := exec.Command(needShell(t, "bash"), "-c", prog.String(), "bash", script)
	if w != nil {
		cmd.Env, cmd.Dir = w.env, w.dir
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return offersByLine(string(out))
}

// offersByLine reads "== LINE" headers, each followed by the offers for
// LINE, one a line (a tab and a description after it, for fish).
func offersByLine(out string) map[string][]string {
	got := map[string][]string{}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, "== "); ok {
			line = h
			got[line] = []string{}
			continue
		}
		if o, _, _ := strings.Cut(l, "\t"); o != "" {
			got[line] = append(got[line], o)
		}
	}
	return got
}

func caseLines(cases []compCase) []string {
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	return lines
}

// TestBashCompletion: bash as a bare bash has it (no bash-completion), in
// the test's own environment.
func TestBashCompletion(t *testing.T) {
	script := completionScript(t, "bash")
	cases := []compCase{
		{line: "contain r", want: []string{"run", "reap"}, not: []string{"ps"}},
		{line: "contain ", want: []string{"run", "ps", "reap", "completion"}},
		{line: "contain run --ti", want: []string{"--timeout"}},
		{line: "contain run -t 5 sle", want: []string{"sleep"}, not: []string{"--timeout"}},
		{line: "contain run -- sle", want: []string{"sleep"}},
		{line: "contain timeout 5 slee", want: []string{"sleep"}},
		{line: "contain timeout -k5 5 slee", want: []string{"sleep"}},
		{line: "contain timeout 5 ls --al", not: []string{"--allow-daemons"}},
		{line: "contain run -v ls --al", not: []string{"--allow-daemons"}},
		{line: "contain timeout --", want: []string{"--kill-after"}, not: []string{"--timeout"}},
		{line: "contain run --signal=K", want: []string{"KILL"}},
		{line: "contain run -sK", want: []string{"-sKILL"}},
		{line: "contain ps --format ", want: []string{"table", "json"}},
		{line: "contain ps --format=j", want: []string{"json"}},
		{line: "contain reap --", want: []string{"--dry-run", "--include-daemons", "--session", "--grace"}, not: []string{"--timeout"}},
		{line: "contain reap --sig=K", want: []string{"KILL"}},
		{line: "contain completion ", want: []string{"bash", "zsh", "fish"}},
	}
	checkOffers(t, "bash", cases, bashComplete(t, script, "", nil, caseLines(cases)...), false)
}

// TestBashCompletionCommands: without bash-completion, COMMAND is
// completed from PATH and its arguments are files.
func TestBashCompletionCommands(t *testing.T) {
	script := completionScript(t, "bash")
	w := newCompWorld(t)
	cases := append(completionCases(w), []compCase{
		{line: "contain timeout 5 probecmd ", want: []string{"afile.txt"}},
		{line: "contain run -v probecmd af", want: []string{"afile.txt"}},
	}...)
	checkOffers(t, "bash", cases, bashComplete(t, script, "", &w, caseLines(cases)...), false)
}

// bashCompletionScript finds bash-completion's main script, or skips the
// test (fails it in CI).
func bashCompletionScript(t *testing.T) string {
	t.Helper()
	for _, p := range []string{
		"/usr/share/bash-completion/bash_completion",          // Debian, Fedora
		"/usr/local/share/bash-completion/bash_completion",    // built from source, FreeBSD
		"/opt/homebrew/share/bash-completion/bash_completion", // Homebrew
	} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testtool.Missing(t, "bash-completion is not installed (Debian package bash-completion)")
	return ""
}

// TestBashCompletionHandsOver: with bash-completion loaded, COMMAND's
// arguments are completed by COMMAND's own completion (_command_offset).
func TestBashCompletionHandsOver(t *testing.T) {
	bc := bashCompletionScript(t)
	script := completionScript(t, "bash")
	w := newCompWorld(t)
	cases := completionCases(w)
	checkOffers(t, "bash with bash-completion", cases, bashComplete(t, script, "source "+bashQuote(bc), &w, caseLines(cases)...), true)
}

// TestFishCompletion completes with fish's own complete -C.
func TestFishCompletion(t *testing.T) {
	fish := needShell(t, "fish")
	script := completionScript(t, "fish")
	w := newCompWorld(t)
	cases := append(completionCases(w), []compCase{
		{line: "contain r", want: []string{"run", "reap"}},
		{line: "contain ps --format ", want: []string{"json", "table"}},
	}...)
	prog := `source $argv[1]
complete -c probecmd -l alpha
complete -c probecmd -l alpine
for l in $argv[2..-1]
	echo "== $l"
	complete -C"$l"
end`
	cmd := exec.Command(fish, append([]string{"-c", prog, script}, caseLines(cases)...)...)
	cmd.Env, cmd.Dir = w.env, w.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	checkOffers(t, "fish", cases, offersByLine(string(out)), true)
}

// TestCompletionNamesEveryFlag: the scripts come from the app's own
// definitions, so every option of every command is in each of them.
func TestCompletionNamesEveryFlag(t *testing.T) {
	for _, shell := range completionShells {
		b, err := os.ReadFile(completionScript(t, shell))
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range newApp(nil, nil).Commands {
			for _, f := range cmd.Flags {
				for _, n := range flagNames(f) {
					want := "--" + n
					if len(n) == 1 {
						want = "-" + n
					}
					if shell == "fish" {
						want = map[bool]string{true: "-s " + n, false: "-l " + n}[len(n) == 1]
					}
					if !strings.Contains(string(b), want) {
						t.Errorf("%s script: no %s (of contain %s)", shell, want, cmd.Name)
					}
				}
			}
		}
	}
}

func TestCompletionBadShell(t *testing.T) {
	for _, args := range [][]string{{"contain", "completion"}, {"contain", "completion", "tcsh"}, {"contain", "completion", "bash", "zsh"}} {
		var out, errOut strings.Builder
		code := runApp(args, &out, &errOut)
		if code != 2 || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), "contain: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// zshDir writes the zsh script as _contain, for fpath.
func zshDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(completionScript(t, "zsh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_contain"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestZshCompletion drives zsh's own completion in a pseudo-terminal
// (zsh/zpty): Tab completes options and values, and lists the commands.
// The completed line is run, through a stand-in contain that prints its
// arguments, so that the test reads what the completion produced.
func TestZshCompletion(t *testing.T) {
	zsh := needShell(t, "zsh")
	dir := zshDir(t)
	driver := `
zmodload zsh/zpty || exit 3
acc=
waitfor() {
	local deadline=$((SECONDS + 20)) l
	while ((SECONDS < deadline)); do
		while zpty -r -t z l; do acc+=${l//$'\r'/}; done
		[[ $acc == *$1* ]] && return 0
		sleep 0.05
	done
	print -r -- "timed out waiting for: $1"
	print -r -- "$acc"
	exit 1
}
zpty -b z 'zsh -f -i'
zpty -w z 'PS1="> "; fpath=(` + dir + ` $fpath); autoload -Uz compinit; compinit -u -D; setopt nobeep; contain() { print -r -- "AR""GS:$*:END" }; print RE""ADY'
waitfor READY
zpty -w -n z $'contain run --timeo\t5 sleep 1\n'
waitfor 'ARGS:run --timeout=5 sleep 1:END'
zpty -w -n z $'contain ps --format j\t\n'
waitfor 'ARGS:ps --format json:END'
zpty -w -n z $'contain reap --sig\tK\t\n'
waitfor 'ARGS:reap --signal=KILL:END'
zpty -w -n z $'contain r\t\t'
waitfor 'kill orphaned sessions'
waitfor 'run COMMAND in a kill-on-close group'
zpty -d z
print ok
`
	out, err := exec.Command(zsh, "-f", "-c", driver).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("zsh completion: %v\n%s", err, out)
	}
}

// zshOffers is a zsh script that completes each of its arguments after the
// first (a line, the cursor at its end) in an interactive zsh in a
// pseudo-terminal, and prints "== LINE" and then what the completion
// offered: the matches each compadd call added (compadd -O), read by a
// compadd function in front of the builtin. Its first argument is the
// directory of _contain.
const zshOffers = `
zmodload zsh/zpty || exit 3
dir=$1; shift
capf=$(mktemp) || exit 3
zpty -b z 'zsh -f -i'
zpty -w z "PS1='> '; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D; setopt nobeep; capf=$capf"
zpty -w z '_probecmd() { compadd -- --alpha --alpine }; compdef _probecmd probecmd'
zpty -w z 'compadd() { local a; for a; do case $a in (-[OAD]*) builtin compadd "$@"; return;; (-|--) break;; esac; done; local -a m; builtin compadd -O m "$@"; (($#m)) && print -rl -- "${m[@]}" >> $capf; builtin compadd "$@"; }'
zpty -w z 'offers() { zle complete-word; print -r -- "--done--" >> $capf; BUFFER=; }; zle -N offers; bindkey "^T" offers; print RE""ADY'
acc=
deadline=$((SECONDS + 20))
while [[ $acc != *READY* ]]; do
	((SECONDS < deadline)) || { print -r -- "zsh did not start: $acc"; exit 1; }
	zpty -r -t z l && acc+=$l || sleep 0.05
done
for line; do
	: >| $capf
	zpty -w -n z "$line"$'\C-t'
	deadline=$((SECONDS + 20))
	until [[ $(<$capf) == *--done--* ]]; do
		((SECONDS < deadline)) || { print -r -- "no completion for: $line"; exit 1; }
		while zpty -r -t z l; do :; done
		sleep 0.05
	done
	print -r -- "== $line"
	grep -v -e --done-- $capf
done
zpty -d z
rm -f $capf
`

// TestZshCompletionOffers: what zsh's completion offers for each line.
func TestZshCompletionOffers(t *testing.T) {
	zsh := needShell(t, "zsh")
	dir := zshDir(t)
	w := newCompWorld(t)
	cases := completionCases(w)
	cmd := exec.Command(zsh, append([]string{"-f", "-c", zshOffers, "zsh", dir}, caseLines(cases)...)...)
	cmd.Env, cmd.Dir = w.env, w.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	checkOffers(t, "zsh", cases, offersByLine(string(out)), true)
}
