package supervise

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeGroup is a group that empties when the test's script says: after
// so many asks, or kills; a request to stop may come at a given wait.
type fakeGroup struct {
	now     time.Time
	calls   []string
	asks    int
	kills   int
	goneAt  func(asks, kills int, at time.Duration) bool // the group is empty
	stopAt  int                                          // the wait at which contain is told to stop (0: never)
	waits   int
	started time.Time
}

func (g *fakeGroup) Left() bool { return !g.goneAt(g.asks, g.kills, g.now.Sub(g.started)) }
func (g *fakeGroup) Ask()       { g.asks++; g.calls = append(g.calls, "ask") }
func (g *fakeGroup) Kill()      { g.kills++; g.calls = append(g.calls, "kill") }
func (g *fakeGroup) Log(f string, a ...any) {
	g.calls = append(g.calls, "log "+fmt.Sprintf(f, a...))
}
func (g *fakeGroup) Wait(d time.Duration) bool {
	g.waits++
	g.now = g.now.Add(d)
	return g.waits == g.stopAt
}

// summary folds runs of the same call: "ask x3", "kill".
func summary(calls []string) string {
	var out []string
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s x%d", calls[i], j-i))
		} else {
			out = append(out, calls[i])
		}
		i = j
	}
	return strings.Join(out, ", ")
}

func TestClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grace  time.Duration
		goneAt func(asks, kills int, at time.Duration) bool
		stopAt int
		want   string
		// maxWait bounds the time the close took by the fake clock.
		maxWait time.Duration
	}{
		{
			name: "gone after the first ask", grace: time.Second,
			goneAt: func(asks, _ int, _ time.Duration) bool { return asks >= 1 },
			want:   "ask",
		},
		{
			name: "gone within the grace period: asked each round, never killed", grace: time.Second,
			goneAt: func(_, _ int, at time.Duration) bool { return at >= 300*time.Millisecond },
			want:   "ask x", // checked by prefix: as many rounds as the backoff takes
		},
		{
			name: "still running after the grace period: killed", grace: 200 * time.Millisecond,
			goneAt: func(_, kills int, _ time.Duration) bool { return kills >= 1 },
			want:   "log still running after the grace period of 200ms, kill", maxWait: 200*time.Millisecond + 51*time.Millisecond,
		},
		{
			name: "told to stop during the grace period: killed at once", grace: time.Hour, stopAt: 2,
			goneAt: func(_, kills int, _ time.Duration) bool { return kills >= 1 },
			want:   "ask x2, kill", maxWait: time.Second,
		},
		{
			name: "no grace period: killed at once, again until gone", grace: 0,
			goneAt: func(_, kills int, _ time.Duration) bool { return kills >= 3 },
			want:   "kill x3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGroup{now: time.Unix(1000, 0), goneAt: tc.goneAt, stopAt: tc.stopAt}
			g.started = g.now
			Close(tc.grace, g, func() time.Time { return g.now })
			got := summary(g.calls)
			if strings.HasSuffix(tc.want, " x") {
				if !strings.HasPrefix(got, "ask x") || slices.Contains(g.calls, "kill") {
					t.Errorf("the close did %s; want only asks", got)
				}
			} else if !strings.HasSuffix(got, tc.want) {
				t.Errorf("the close did %s; want it to end with %s", got, tc.want)
			}
			if tc.maxWait > 0 && g.now.Sub(g.started) > tc.maxWait {
				t.Errorf("the close took %v by the clock, want at most %v", g.now.Sub(g.started), tc.maxWait)
			}
			if g.Left() {
				t.Error("the close returned with the group still there")
			}
		})
	}
}
