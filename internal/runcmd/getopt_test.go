package runcmd

import (
	"slices"
	"testing"
)

// TestParseOptionsAsGetoptLong: each form GNU getopt_long takes gives the
// same values, and what it refuses is refused.
func TestParseOptionsAsGetoptLong(t *testing.T) {
	t.Setenv("CONTAIN_ORIGINATOR", "")
	t.Setenv("CONTAIN_REPORT", "")
	for _, c := range []struct {
		args []string
		want map[string]string
		rest []string
	}{
		{[]string{"-k5", "-sKILL", "-t1", "sleep", "9"}, map[string]string{"kill-after": "5", "signal": "KILL", "timeout": "1"}, []string{"sleep", "9"}},
		{[]string{"-k", "5", "-s", "KILL", "-t", "1", "--", "sleep"}, map[string]string{"kill-after": "5", "signal": "KILL", "timeout": "1"}, []string{"sleep"}},
		{[]string{"--kill-after=5", "--signal", "KILL", "x"}, map[string]string{"kill-after": "5", "signal": "KILL"}, []string{"x"}},
		{[]string{"-vt", "1", "x"}, map[string]string{"verbose": "true", "timeout": "1"}, []string{"x"}},
		{[]string{"-vdt1", "x"}, map[string]string{"verbose": "true", "detach": "true", "timeout": "1"}, []string{"x"}},
		{[]string{"--kill=2", "--pre", "--verb", "x"}, map[string]string{"kill-after": "2", "preserve-status": "true", "verbose": "true"}, []string{"x"}},
		{[]string{"--pids-limit", "7", "-m512M", "x"}, map[string]string{"pids": "7", "memory": "512M"}, []string{"x"}},
		{[]string{"--pids-l=7", "x"}, map[string]string{"pids": "7"}, []string{"x"}},
		{[]string{"--pid", "7", "x"}, map[string]string{"pids": "7"}, []string{"x"}},
		{[]string{"-timeout", "3", "-originator=T", "x"}, map[string]string{"timeout": "3", "originator": "T"}, []string{"x"}},
		{[]string{"-t=3", "--verbose=false", "x"}, map[string]string{"timeout": "3", "verbose": "false"}, []string{"x"}},
		{[]string{"-", "-t", "1"}, map[string]string{"timeout": ""}, []string{"-", "-t", "1"}},
		{[]string{"x", "-t", "1"}, map[string]string{"timeout": ""}, []string{"x", "-t", "1"}},
		{[]string{"-t", "--", "x"}, map[string]string{"timeout": "--"}, []string{"x"}},
	} {
		p, err := parseOptions(c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		for name, v := range c.want {
			if p.String(name) != v {
				t.Errorf("%q: --%s is %q, want %q", c.args, name, p.String(name), v)
			}
		}
		if !slices.Equal(p.args, c.rest) {
			t.Errorf("%q: COMMAND %q, want %q", c.args, p.args, c.rest)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--p", "1"}, "option --p is ambiguous (could be --preserve-status, --pids)"},
		{[]string{"--o", "1"}, "option --o is ambiguous (could be --originator, --on-timeout)"},
		{[]string{"--bogus"}, "unknown option --bogus"},
		{[]string{"-bogus"}, "unknown option -bogus"},
		{[]string{"-vx"}, "unknown option -x in -vx"},
		{[]string{"-vk"}, "option -k needs a value"},
		{[]string{"--kill-after"}, "option --kill-after needs a value"},
		{[]string{"--detach=2"}, `option --detach takes no value (given "2")`},
	} {
		_, err := parseOptions(c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
