package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/internal/testtool"
)

const manPage = "man/contain.1"

// TestManPageNamesEveryFlag: the man page is kept by hand; this fails when
// an option of any command is missing from it.
func TestManPageNamesEveryFlag(t *testing.T) {
	b, err := os.ReadFile(manPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, cmd := range newApp(nil, nil).Commands {
		if !strings.Contains(page, ".Ss contain "+cmd.Name+"\n") {
			t.Errorf("no section for contain %s", cmd.Name)
		}
		for _, f := range cmd.Flags {
			if f == cli.HelpFlag {
				continue // urfave/cli adds it to a command once run; the page says --help once
			}
			for _, n := range flagNames(f) {
				// mdoc: .Fl t is -t, .Fl \-timeout is --timeout, and so
				// is the second argument of .Fl t , \-timeout.
				want := `Fl ` + n + `\b`
				if len(n) > 1 {
					want = `(Fl|Fl \w ,) \\-` + regexp.QuoteMeta(strings.ReplaceAll(n, "-", `\-`)) + `\b`
				}
				if !regexp.MustCompile(want).MatchString(page) {
					t.Errorf("contain %s: %q is not in %s", cmd.Name, want, manPage)
				}
			}
		}
	}
	for _, want := range []string{"RUNNING_PROCESS_ORIGINATOR", "RUNNING_PROCESS_IS_DAEMON", "CONTAIN_ORIGINATOR",
		".Sh EXIT STATUS", ".It 124", ".It 125", ".It 126", ".It 127", ".Sh EXAMPLES",
		".Xr timeout 1", ".Xr setsid 1", ".Xr pkill 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("%s lacks %q", manPage, want)
		}
	}
}

// TestManPageLints: mandoc reports no error and no warning (style notes,
// such as a referenced page this machine lacks, are not warnings), and man
// renders it. Without them it is skipped, naming the Debian packages
// mandoc and man-db; CI installs both (internal/testtool).
func TestManPageLints(t *testing.T) {
	mandoc := testtool.Need(t, "mandoc", "mandoc")
	man := testtool.Need(t, "man", "man-db")
	out, err := exec.Command(mandoc, "-Tlint", "-W", "warning", manPage).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("mandoc -Tlint: %v\n%s", err, out)
	}
	cmd := exec.Command(man, "-l", manPage)
	cmd.Env = append(os.Environ(), "MANPAGER=cat", "MANWIDTH=80")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("man -l: %v", err)
	}
	for _, want := range []string{"contain run", "contain ps", "contain reap", "EXIT STATUS", "SEE ALSO"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("man -l output lacks %q", want)
		}
	}
}

// TestManSynopsisHoldsEveryOption: the SYNOPSIS line of each command names
// every option of it (a short one alone or in a bundle, .Op Fl dfpv, a
// long one by its name), and contain timeout takes run's; EXIT STATUS
// names every status contain run's help names, with the limits' 137 and
// --cpu-time's 124.
func TestManSynopsisHoldsEveryOption(t *testing.T) {
	b, err := os.ReadFile(manPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	start, end := strings.Index(page, ".Sh SYNOPSIS\n"), strings.Index(page, ".Sh DESCRIPTION\n")
	if start < 0 || end < start {
		t.Fatal("no SYNOPSIS before DESCRIPTION")
	}
	synopsis := map[string]string{}
	for _, entry := range strings.Split(page[start:end], ".Nm\n")[1:] {
		if name, ok := strings.CutPrefix(entry, ".Cm "); ok {
			name, _, _ = strings.Cut(name, "\n")
			synopsis[name] = entry
		}
	}
	bundle := regexp.MustCompile(`(?m)^\.Op Fl ([a-z]+)$`)
	for _, cmd := range newApp(nil, nil).Commands {
		entry, ok := synopsis[cmd.Name]
		if !ok {
			t.Errorf("SYNOPSIS has no line for contain %s", cmd.Name)
			continue
		}
		if cmd.Name == "timeout" {
			if !strings.Contains(entry, ".Op Ar run-options\n.Ar duration\n") {
				t.Errorf("SYNOPSIS of contain timeout: %q, want run's options then the duration", entry)
			}
			continue
		}
		var letters string
		for _, m := range bundle.FindAllStringSubmatch(entry, -1) {
			letters += m[1]
		}
		for _, f := range cmd.Flags {
			if f == cli.HelpFlag {
				continue // urfave/cli adds it once run; SYNOPSIS has contain --help
			}
			names := flagNames(f)
			found := false
			for _, n := range names {
				if len(n) == 1 {
					found = found || strings.Contains(letters, n) || strings.Contains(entry, ".Op Fl "+n+" ")
				} else {
					found = found || regexp.MustCompile(`\.Op Fl \\-`+regexp.QuoteMeta(strings.ReplaceAll(n, "-", `\-`))+`\b`).MatchString(entry)
				}
			}
			if !found {
				t.Errorf("SYNOPSIS of contain %s lacks %v", cmd.Name, names)
			}
		}
	}
	status := page[strings.Index(page, ".Sh EXIT STATUS\n"):]
	status = status[:strings.Index(status, "\n.Sh ")]
	for _, n := range regexp.MustCompile(`\b1[2-3]\d\b|128\+N`).FindAllString(runCommand.Description, -1) {
		if !strings.Contains(status, n) {
			t.Errorf("EXIT STATUS lacks %s, which contain run --help names", n)
		}
	}
	for _, want := range []string{`.It 124` + "\n" + `the timeout fired` + "\n" + `.Pf ( Fl t ,` + "\n" + `or` + "\n" + `.Fl \-cpu\-time`, `137 also when`, `a limit` + "\n" + `.Pf ( Fl \-memory`} {
		if !strings.Contains(status, want) {
			t.Errorf("EXIT STATUS lacks %q", want)
		}
	}
}
