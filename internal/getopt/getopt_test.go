package getopt

import (
	"slices"
	"testing"
)

// TestModes: Leading stops at the first argument that is not an option
// (GNU timeout's "+"); Anywhere reads options between and after the
// arguments, as getopt_long permutes them; "--" ends both.
func TestModes(t *testing.T) {
	n := &Option{Names: []string{"dry-run", "n"}, Bool: true}
	v := &Option{Names: []string{"verbose", "v"}, Bool: true}
	tm := &Option{Names: []string{"timeout", "t"}}
	opts := []*Option{n, v, tm}
	for _, c := range []struct {
		args  []string
		mode  Mode
		given []string
		rest  []string
	}{
		{[]string{"-nv", "X:1", "-t1s"}, Leading, []string{"dry-run=true", "verbose=true"}, []string{"X:1", "-t1s"}},
		{[]string{"-nv", "X:1", "-t1s"}, Anywhere, []string{"dry-run=true", "verbose=true", "timeout=1s"}, []string{"X:1"}},
		{[]string{"X:1", "--time", "2", "Y:2", "--", "-v"}, Anywhere, []string{"timeout=2"}, []string{"X:1", "Y:2", "-v"}},
		{[]string{"-", "-v"}, Anywhere, []string{"verbose=true"}, []string{"-"}},
		{[]string{"--verbose=false", "-t=3"}, Anywhere, []string{"verbose=false", "timeout=3"}, nil},
	} {
		given, rest, err := Parse(opts, c.args, c.mode)
		var got []string
		for _, g := range given {
			got = append(got, g.Option.Name()+"="+g.Value)
		}
		if err != nil || !slices.Equal(got, c.given) || !slices.Equal(rest, c.rest) {
			t.Errorf("%q (mode %d): %q, %q, %v; want %q, %q", c.args, c.mode, got, rest, err, c.given, c.rest)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"X", "--x"}, "unknown option --x"},
		{[]string{"X", "-nx"}, "unknown option -x in -nx"},
		{[]string{"X", "-t"}, "option -t needs a value"},
	} {
		if _, _, err := Parse(opts, c.args, Anywhere); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}
