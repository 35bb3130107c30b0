//go:build linux

package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestVerboseNested: inside another session every -v line names its
// contain, so that whose "done:" is whose is plain; the outer one, in no
// session, keeps the plain prefix. Before, both said "contain:".
func TestVerboseNested(t *testing.T) {
	res := run(t, runOpts{}, "run", "-v", "--", bin, "run", "-v", "--", "sh", "-c", "sleep 30 & exit 0")
	wantCode(t, res, 0)
	inner := regexp.MustCompile(`(?m)^contain\[(\d+)\]: done: exit 0, .*, 1 leftover \(1 ended by SIGTERM\)$`).FindStringSubmatch(res.stderr)
	if inner == nil {
		t.Fatalf("no inner summary naming its contain:\n%s", res.stderr)
	}
	if pid, _ := strconv.Atoi(inner[1]); pid == res.pid || pid <= 1 {
		t.Errorf("the inner summary names %d (the outer contain is %d)", pid, res.pid)
	}
	if !regexp.MustCompile(`(?m)^contain: done: exit 0, .*, no leftovers$`).MatchString(res.stderr) {
		t.Errorf("no outer summary with the plain prefix:\n%s", res.stderr)
	}
}

// TestVerboseSIGINTIgnored: a contain started with SIGINT ignored (a
// background job of a shell without job control) keeps it ignored, as GNU
// timeout does, and -v says so at the start, with the way out.
func TestVerboseSIGINTIgnored(t *testing.T) {
	res := run(t, runOpts{}, "run", "--", "sh", "-c", `trap "" INT; exec "$0" run -v -- true`, bin)
	wantCode(t, res, 0)
	if !strings.Contains(res.stderr, "SIGINT was ignored when contain started") || !strings.Contains(res.stderr, "SIGTERM") {
		t.Errorf("-v did not say that SIGINT stays ignored:\n%s", res.stderr)
	}
	res = run(t, runOpts{}, "run", "-v", "--", "true")
	if strings.Contains(res.stderr, "SIGINT was ignored") {
		t.Errorf("said with SIGINT not ignored:\n%s", res.stderr)
	}
}
