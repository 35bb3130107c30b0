package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contain-cli/contain/internal/testtool"
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

// bashComplete completes words (the last one being completed) with the bash
// script, as bash would on Tab.
func bashComplete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	prog := `source "$1"; COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _contain; printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command(needShell(t, "bash"), "-c", prog, "bash", script).CombinedOutput()
	if err != nil {
		t.Fatalf("completing %q: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	script := completionScript(t, "bash")
	for _, c := range []struct {
		words []string
		want  []string // all of these, in any order
		not   []string
	}{
		{[]string{"contain", "r"}, []string{"run", "reap"}, []string{"ps"}},
		{[]string{"contain", ""}, []string{"run", "ps", "reap", "completion"}, nil},
		{[]string{"contain", "run", "--ti"}, []string{"--timeout"}, nil},
		{[]string{"contain", "run", "-t", "5", "sle"}, []string{"sleep"}, []string{"--timeout"}},
		{[]string{"contain", "run", "--", "sle"}, []string{"sleep"}, nil},
		{[]string{"contain", "ps", "--format", ""}, []string{"table", "json"}, nil},
		{[]string{"contain", "reap", "--"}, []string{"--dry-run", "--include-daemons", "--session", "--grace"}, []string{"--timeout"}},
		{[]string{"contain", "completion", ""}, []string{"bash", "zsh", "fish"}, nil},
	} {
		got := bashComplete(t, script, c.words...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q<Tab> offers %q, not %q", c.words, got, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("%q<Tab> offers %q", c.words, w)
			}
		}
	}
}

func TestFishCompletion(t *testing.T) {
	fish := needShell(t, "fish")
	script := completionScript(t, "fish")
	out, err := exec.Command(fish, "-c", `source $argv[1]; complete -C "contain r"; echo ---; complete -C "contain ps --format "`, script).CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"run\t", "reap\t", "json\t", "table\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("fish completion lacks %q:\n%s", want, got)
		}
	}
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

// TestZshCompletion drives zsh's own completion in a pseudo-terminal
// (zsh/zpty): Tab completes options and values, and lists the commands.
// The completed line is run, through a stand-in contain that prints its
// arguments, so that the test reads what the completion produced.
func TestZshCompletion(t *testing.T) {
	zsh := needShell(t, "zsh")
	dir := t.TempDir()
	b, err := os.ReadFile(completionScript(t, "zsh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_contain"), b, 0o644); err != nil {
		t.Fatal(err)
	}
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
waitfor 'ARGS:run --timeout 5 sleep 1:END'
zpty -w -n z $'contain ps --format j\t\n'
waitfor 'ARGS:ps --format json:END'
zpty -w -n z $'contain reap --sig\tK\t\n'
waitfor 'ARGS:reap --signal KILL:END'
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
