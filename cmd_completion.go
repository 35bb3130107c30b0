package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/contain-cli/contain/containment"
	"github.com/contain-cli/contain/internal/runcmd"
	"github.com/contain-cli/contain/internal/signals"
	"github.com/contain-cli/contain/session"
	"github.com/contain-cli/contain/tag"
)

var completionCommand = &cli.Command{
	Name:      "completion",
	Usage:     "print a completion script for bash, zsh or fish",
	ArgsUsage: "bash|zsh|fish",
	Description: `Prints a script that completes contain's commands, their options and
the values some options take. Install it with:

   bash:  contain completion bash > ~/.local/share/bash-completion/completions/contain
   zsh:   contain completion zsh > "${fpath[1]}/_contain"   (then: compinit)
   fish:  contain completion fish > ~/.config/fish/completions/contain.fish

The scripts are generated from contain's own command and option definitions.
After contain run's options (or --), and after contain timeout's DURATION,
they complete COMMAND's name, then hand over to COMMAND's own completion
(bash: bash-completion's, where it is loaded; else files). contain stop and
contain wait complete the live sessions of ps, as TOOL:PID.`,
	OnUsageError:    usageError,
	HideHelpCommand: true,
}

// The action reads the app's own definitions, this command's among them.
func init() { completionCommand.Action = doCompletion }

// sessionsArg is what the scripts run to list the sessions that contain
// stop or wait can take: contain completion __sessions stop|wait. It is
// no shell, and no help lists it.
const sessionsArg = "__sessions"

func doCompletion(c *cli.Context) error {
	if c.NArg() == 2 && c.Args().First() == sessionsArg {
		writeSessions(c.App.Writer, c.Args().Get(1))
		return nil
	}
	if c.NArg() != 1 {
		return badUsage("completion: want one shell: bash, zsh or fish")
	}
	cmds := completionModel()
	switch shell := c.Args().First(); shell {
	case "bash":
		writeBash(c.App.Writer, cmds)
	case "zsh":
		writeZsh(c.App.Writer, cmds)
	case "fish":
		writeFish(c.App.Writer, cmds)
	default:
		return badUsage("completion: %q is not bash, zsh or fish", shell)
	}
	return nil
}

// writeSessions prints, one a line, the sessions that contain cmd (stop
// or wait) would act on, as ps lists them: stop asks an originator that
// runs (an alive session), wait also waits for an orphaned session's
// processes. Only sessions of this PID namespace whose value is written as
// contain itself writes one (a TOOL of A-Z a-z 0-9 _ . -, a plain PID) are
// offered: a shell takes each as one word, and a value read from another
// process is printed only when nothing in it needs escaping. It only
// reads, as ps does; nothing is signalled, and a failure offers nothing.
func writeSessions(w io.Writer, cmd string) {
	all, err := containment.Sessions(session.Filter{})
	if err != nil {
		return
	}
	var seen []string
	for _, s := range all.Sessions {
		ok := s.State == session.Alive || (cmd == "wait" && s.State == session.Orphaned)
		plain := tag.ValidateTool(s.Tool) == nil && s.Value == tag.Format(s.Tool, s.PID)
		if !ok || !plain || s.NS != 0 || slices.Contains(seen, s.Value) {
			continue
		}
		seen = append(seen, s.Value)
		fmt.Fprintln(w, s.Value)
	}
}

// What a command's arguments are, for the scripts.
const (
	argsCommand  = "command"  // run: COMMAND [ARG...]
	argsDuration = "duration" // timeout: DURATION COMMAND [ARG...]
	argsShell    = "shell"    // completion: bash|zsh|fish
	argsSessions = "sessions" // stop, wait: TOOL:PID...
)

// compCommand and compFlag are what the scripts need of the app.
type compCommand struct {
	name, usage string
	flags       []compFlag
	args        string // argsCommand, argsDuration, argsShell, argsSessions or ""
}

type compFlag struct {
	long, short string
	usage       string
	meta        string // the value's name in usage (DURATION, SIG, FILE), if it takes one
	takesValue  bool
	repeatable  bool
	values      []string // fixed choices, if any
}

// files: the value is a file name.
func (f compFlag) files() bool { return f.meta == "FILE" }

// completionModel reads the commands and flags of the app itself.
func completionModel() []compCommand {
	var out []compCommand
	for _, cmd := range newApp(io.Discard, io.Discard).Commands {
		cc := compCommand{name: cmd.Name, usage: cmd.Usage}
		switch cmd.Name {
		case "run":
			cc.args = argsCommand
		case runcmd.TimeoutCommand:
			cc.args = argsDuration
		case "stop", "wait":
			cc.args = argsSessions
		case "completion":
			cc.args = argsShell
		}
		for _, f := range cmd.Flags {
			// contain timeout takes the duration as DURATION and
			// refuses -t (runcmd's timeoutDuration): not offered.
			if cmd.Name == runcmd.TimeoutCommand && slices.Contains(flagNames(f), "timeout") {
				continue
			}
			// urfave/cli's own help flag, added to the command it runs
			// (this one): -h and --help are added below, for every
			// command.
			if slices.Contains(flagNames(f), "help") {
				continue
			}
			cf := compFlag{}
			var longAliases []string
			for _, n := range flagNames(f) {
				switch {
				case len(n) == 1:
					cf.short = n
				case cf.long == "":
					cf.long = n
				default:
					longAliases = append(longAliases, n) // --pids-limit
				}
			}
			_, cf.repeatable = f.(*listFlag)
			if df, ok := f.(cli.DocGenerationFlag); ok {
				cf.usage, cf.takesValue = df.GetUsage(), df.TakesValue()
			}
			if cf.takesValue {
				// urfave/cli's convention: the value's name in backquotes.
				if _, rest, ok := strings.Cut(cf.usage, "`"); ok {
					cf.meta, _, _ = strings.Cut(rest, "`")
				}
				if cf.meta == "" {
					cf.meta = "value"
				}
			}
			cf.usage = strings.ReplaceAll(cf.usage, "`", "")
			switch cf.long {
			case "format":
				cf.values = []string{"table", "json"}
			case "signal":
				cf.values = signals.Names()
			}
			cc.flags = append(cc.flags, cf)
			for _, n := range longAliases {
				alias := cf
				alias.long, alias.short = n, ""
				cc.flags = append(cc.flags, alias)
			}
		}
		cc.flags = append(cc.flags, compFlag{long: "help", short: "h", usage: "show help"})
		out = append(out, cc)
	}
	return out
}

func (f compFlag) words() []string {
	var w []string
	if f.long != "" {
		w = append(w, "--"+f.long)
	}
	if f.short != "" {
		w = append(w, "-"+f.short)
	}
	return w
}

// getoptSets is what the scripts need to read a command's options as
// getopt_long does (run and timeout: runcmd's parser; the other commands
// take the same forms): the letters and long names of the options that
// take a value, and of those that do not. A short option that takes a value
// is written LETTER=LONG, for the value's completion.
type getoptSets struct {
	vshort, bshort, vlong, blong []string
}

func (c compCommand) getopt() getoptSets {
	var g getoptSets
	for _, f := range c.flags {
		if f.takesValue {
			if f.short != "" {
				g.vshort = append(g.vshort, f.short+"="+f.long)
			}
			g.vlong = append(g.vlong, f.long)
		} else {
			if f.short != "" {
				g.bshort = append(g.bshort, f.short)
			}
			g.blong = append(g.blong, f.long)
		}
	}
	return g
}

// valueFlags are the options, by long name, whose values the scripts
// complete: one choice of values per name, whichever command has it.
func valueFlags(cmds []compCommand) []compFlag {
	var out []compFlag
	for _, c := range cmds {
		for _, f := range c.flags {
			if (len(f.values) > 0 || f.files()) && !slices.ContainsFunc(out, func(o compFlag) bool { return o.long == f.long }) {
				out = append(out, f)
			}
		}
	}
	return out
}

func writeBash(w io.Writer, cmds []compCommand) {
	var b strings.Builder
	b.WriteString(`# bash completion for contain; generated by "contain completion bash".

# __contain_words sets words, cword and at: the words up to the cursor,
# with what bash splits off at "=" and ":" (COMP_WORDBREAKS) joined again
# (--signal=KILL, TOOL:PID), and, for each, the index in COMP_WORDS where
# it begins (for bash-completion's _command_offset).
__contain_words() {
	local line=${COMP_LINE:0:COMP_POINT} n w glued
	words=() at=() cword=-1
	for ((n = 0; n <= COMP_CWORD; n++)); do
		w=${COMP_WORDS[n]} glued=1
		if [[ $line == [[:space:]]* ]]; then
			glued=
			line=${line#"${line%%[![:space:]]*}"}
		fi
		if ((n == COMP_CWORD)); then
			w=$line
		elif [[ $line == "$w"* ]]; then
			line=${line:${#w}}
		else
			# COMP_LINE is not what COMP_WORDS were split from: the
			# words as they are.
			words=("${COMP_WORDS[@]:0:COMP_CWORD+1}") at=() cword=$COMP_CWORD
			for ((n = 0; n <= cword; n++)); do at[n]=$n; done
			return
		fi
		if ((n > 0)) && [[ -n $glued && ($w == [=:]* || ${words[cword]} == *[=:]) ]]; then
			words[cword]+=$w
		else
			words[++cword]=$w
			at[cword]=$n
		fi
	done
}

# __contain_reply offers those of its arguments that begin with cur, less
# the part of cur up to its last "=" or ":", which bash leaves in place.
__contain_reply() {
	local rest=$cur c
	[[ $COMP_WORDBREAKS == *=* ]] && rest=${rest##*=}
	[[ $COMP_WORDBREAKS == *:* ]] && rest=${rest##*:}
	local keep=$((${#cur} - ${#rest}))
	COMPREPLY=()
	for c; do
		[[ $c == "$cur"* ]] && COMPREPLY+=("${c:keep}")
	done
}

# __contain_values offers the values of the option named $1 (its long
# name), each after $2 (--signal=, -s).
__contain_values() {
	local v=()
	case $1 in
`)
	for _, f := range valueFlags(cmds) {
		if f.files() {
			fmt.Fprintf(&b, "\t%s)\n\t\tcompopt -o filenames 2>/dev/null\n\t\tlocal IFS=$'\\n'\n\t\tv=($(compgen -f -- \"${cur#\"$2\"}\"))\n\t\tv=(\"${v[@]/#/$2}\") ;;\n", f.long)
		} else {
			fmt.Fprintf(&b, "\t%s) v=(%s) ;;\n", f.long, strings.Join(f.values, " "))
		}
	}
	b.WriteString(`	*) return ;;
	esac
	__contain_reply "${v[@]/#/$2}"
}

# __contain_long sets REPLY to the long option that $1 names: itself, or
# the one it is the start of (getopt_long's abbreviations).
__contain_long() {
	local n m=()
	REPLY=
	for n in $vlong $blong; do
		[[ $n == "$1" ]] && REPLY=$n && return
		[[ $n == "$1"* ]] && m+=("$n")
	done
	((${#m[@]} == 1)) && REPLY=${m[0]}
	[[ -n $REPLY ]]
}

# __contain_short sets REPLY to the long name of the short option $1, if
# it takes a value.
__contain_short() {
	[[ " $vshort " == *" $1="* ]] || return
	REPLY=${vshort#*"$1="}
	REPLY=${REPLY%% *}
}

# __contain_option completes cur among the options: a value attached to
# one (--signal=K, -sK, -vsK), or an option.
__contain_option() {
	local name j c
	if [[ $cur == -*=* ]]; then
		name=${cur%%=*}
		name=${name#-}
		if __contain_long "${name#-}" && [[ " $vlong " == *" $REPLY "* ]]; then
			__contain_values "$REPLY" "${cur%%=*}="
		fi
		return
	fi
	if [[ $cur == -[!-]* ]]; then
		for ((j = 1; j < ${#cur} - 1; j++)); do
			c=${cur:j:1}
			if __contain_short "$c"; then
				__contain_values "$REPLY" "${cur:0:j+1}"
				return
			fi
			[[ " $bshort " == *" $c "* ]] || break
		done
	fi
	__contain_reply $opts
}

# __contain_command completes COMMAND and its arguments, COMMAND being
# words[$1]: by COMMAND's own completion where bash-completion is loaded,
# else the command's name and then files.
__contain_command() {
	if declare -F _command_offset >/dev/null; then
		_command_offset "${at[$1]}"
		return
	fi
	local IFS=$'\n'
	if (($1 == cword)); then
		COMPREPLY=($(compgen -c -- "$cur"))
	else
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

# __contain_sessions lists the sessions contain $1 (stop, wait) can take:
# contain itself reads them, as ps does.
__contain_sessions() {
	local prog=${COMP_WORDS[0]}
	[[ $prog == "~/"* ]] && prog=$HOME/${prog:2}
	command "$prog" completion __sessions -- "$1" 2>/dev/null
}

_contain() {
	local words at cword REPLY
	COMPREPLY=()
	__contain_words
	local cur=${words[cword]} cmd= ci i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*) cmd=${words[i]} ci=$i; break ;;
		esac
	done
	local opts= vshort= bshort= vlong= blong= args=
	case $cmd in
	'')
		__contain_reply `)
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	b.WriteString(strings.Join(append(names, "help", "--help", "-h", "--version"), " "))
	b.WriteString(`
		return ;;
`)
	for _, c := range cmds {
		var words []string
		for _, f := range c.flags {
			words = append(words, f.words()...)
		}
		g := c.getopt()
		fmt.Fprintf(&b, "\t%s)\n\t\topts='%s'\n", c.name, strings.Join(words, " "))
		fmt.Fprintf(&b, "\t\tvshort='%s' bshort='%s'\n", strings.Join(g.vshort, " "), strings.Join(g.bshort, " "))
		fmt.Fprintf(&b, "\t\tvlong='%s'\n\t\tblong='%s'\n", strings.Join(g.vlong, " "), strings.Join(g.blong, " "))
		if c.args != "" {
			fmt.Fprintf(&b, "\t\targs=%s\n", c.args)
		}
		b.WriteString("\t\t;;\n")
	}
	b.WriteString(`	*) return ;;
	esac
	# The options, read as getopt_long reads them, up to the first
	# argument that is no option, or past "--".
	local k a n j c vopt= first=
	for ((k = ci + 1; k < cword; k++)); do
		a=${words[k]}
		if [[ $a == -- ]]; then
			first=$((k + 1))
			break
		fi
		if [[ $a != -?* ]]; then
			first=$k
			break
		fi
		n=${a#-}
		n=${n%%=*}
		if [[ $a == --* ]] || { ((${#n} > 1)) && [[ " $vlong $blong " == *" $n "* ]]; }; then
			# --name=VALUE, --name VALUE, -name VALUE (Go's flag package)
			if [[ $a != *=* ]] && __contain_long "${n#-}" && [[ " $vlong " == *" $REPLY "* ]]; then
				((++k == cword)) && vopt=$REPLY
			fi
			continue
		fi
		# -vt 5, -vt5: letters until one that takes a value
		for ((j = 1; j < ${#a}; j++)); do
			c=${a:j:1}
			if __contain_short "$c"; then
				((j + 1 == ${#a})) && ((++k == cword)) && vopt=$REPLY
				break
			fi
		done
	done
	if [[ -n $vopt ]]; then
		__contain_values "$vopt"
		return
	fi
	if [[ -z $first ]]; then
		if [[ $cur == -* ]]; then
			__contain_option
			return
		fi
		first=$cword
	fi
	case $args in
	command) __contain_command "$first" ;;
	duration) ((cword > first)) && __contain_command $((first + 1)) ;;
	sessions) __contain_reply $(__contain_sessions "$cmd") ;;
	shell) ((cword == first)) && __contain_reply bash zsh fish ;;
	esac
}
complete -F _contain contain
`)
	io.WriteString(w, b.String())
}

// zshQuote quotes s for a single-quoted zsh word inside _arguments specs.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`)
	return r.Replace(s)
}

func writeZsh(w io.Writer, cmds []compCommand) {
	var b strings.Builder
	b.WriteString(`#compdef contain
# zsh completion for contain; generated by "contain completion zsh".

# _contain_sessions offers the sessions contain CMD (stop, wait) can take:
# contain itself reads them, as ps does. _arguments puts compadd's options
# (-J group ...) before the action's own word: CMD is the last argument.
_contain_sessions() {
	local -a sessions
	sessions=(${(f)"$(command $_contain_prog completion __sessions -- ${@[-1]} 2>/dev/null)"})
	_wanted sessions expl session compadd -a sessions
}

# _contain_command completes COMMAND and its arguments, COMMAND being the
# normal argument $1: its name, then COMMAND's own completion (_normal).
_contain_command() {
	# _arguments counts "--" among the normal arguments; getopt does not.
	if [[ $words[1] == -- ]]; then
		shift words
		((CURRENT--))
	fi
	((CURRENT >= $1)) || return 1 # DURATION
	shift $(($1 - 1)) words
	((CURRENT -= $1 - 1))
	if ((CURRENT == 1)); then
		_command_names -e
	else
		_normal
	fi
}

_contain() {
	local line state _contain_prog=${(Q)words[1]}
	[[ $_contain_prog == '~/'* ]] && _contain_prog=$HOME/${_contain_prog#'~/'}
	_arguments -C \
		'(- *)'{-h,--help}'[show help]' \
		'(- *)--version[print the version and exit]' \
		'1: :->cmds' \
		'*:: :->args'
	case $state in
	cmds)
		local -a cmds
		cmds=(
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t\t'%s:%s'\n", c.name, zshQuote(c.usage))
	}
	b.WriteString(`			'help:show a list of commands or help for one command'
		)
		_describe 'command' cmds
		;;
	args)
		case $line[1] in
`)
	for _, c := range cmds {
		// -A '-*': no option after the first argument, where getopt's
		// "+" (run, timeout) and Go's flag package (the others) stop.
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t_arguments -s -S -A '-*' \\\n", c.name)
		for _, f := range c.flags {
			// (-o --originator): given once; *: repeatable.
			prefix := "(" + strings.Join(f.words(), " ") + ")"
			if f.repeatable {
				prefix = "*"
			}
			spec := ""
			if f.takesValue {
				action := " "
				switch {
				case len(f.values) > 0:
					action = "(" + strings.Join(f.values, " ") + ")"
				case f.files():
					action = "_files"
				}
				spec = ":" + zshQuote(f.meta) + ":" + action
			}
			// -s+: the value attached (-sKILL) or next; --signal=: after
			// "=" or next, as getopt_long takes them.
			if f.short != "" {
				opt := "-" + f.short
				if f.takesValue {
					opt += "+"
				}
				fmt.Fprintf(&b, "\t\t\t\t'%s%s[%s]%s' \\\n", prefix, opt, zshQuote(f.usage), spec)
			}
			if f.long != "" {
				opt := "--" + f.long
				if f.takesValue {
					opt += "="
				}
				fmt.Fprintf(&b, "\t\t\t\t'%s%s[%s]%s' \\\n", prefix, opt, zshQuote(f.usage), spec)
			}
		}
		switch c.args {
		case argsCommand:
			b.WriteString("\t\t\t\t'*::command:{_contain_command 1}'\n")
		case argsDuration:
			b.WriteString("\t\t\t\t'1:DURATION: ' \\\n\t\t\t\t'*::command:{_contain_command 2}'\n")
		case argsSessions:
			fmt.Fprintf(&b, "\t\t\t\t'*:session:_contain_sessions %s'\n", c.name)
		case argsShell:
			b.WriteString("\t\t\t\t'1:shell:(bash zsh fish)'\n")
		default:
			b.WriteString("\t\t\t\t&& return\n") // no arguments: options only
		}
		b.WriteString("\t\t\t;;\n")
	}
	b.WriteString(`		esac
		;;
	esac
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_contain "$@"
else
	compdef _contain contain
fi
`)
	io.WriteString(w, b.String())
}

// fishQuote quotes s for a single-quoted fish string.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, cmds []compCommand) {
	var b strings.Builder
	b.WriteString(`# fish completion for contain; generated by "contain completion fish".

# __contain_takes NAME VLONG... -- BLONG...: the long option NAME, or the
# one it is the start of (getopt_long's abbreviations), takes a value.
function __contain_takes
	set -l name $argv[1]
	set -l v
	set -l b
	set -l into v
	for a in $argv[2..-1]
		if test "$a" = --
			set into b
		else
			set -a $into $a
		end
	end
	contains -- $name $v; and return 0
	contains -- $name $b; and return 1
	set -l m (string match -- "$name*" $v $b)
	test (count $m) -eq 1; and contains -- $m $v
end

# __contain_where prints where the cursor is on contain's command line,
# one word a line: the command (run, ps...), then "option" (among its
# options, or an option's value), or "arg", the argument's place among the
# arguments after the options (1, 2...) and the token where the first of
# them is. It fails before a command.
function __contain_where
	set -l t (commandline -opc)
	set -l i 2
	while set -q t[$i]; and string match -q -- '-*' $t[$i]
		set i (math $i + 1)
	end
	set -q t[$i]; or return 1
	set -l cmd $t[$i]
	set -l vshort
	set -l bshort
	set -l vlong
	set -l blong
	switch $cmd
`)
	for _, c := range cmds {
		g := c.getopt()
		var vshort []string
		for _, s := range g.vshort {
			letter, _, _ := strings.Cut(s, "=")
			vshort = append(vshort, letter)
		}
		fmt.Fprintf(&b, "\t\tcase %s\n", c.name)
		for _, set := range []struct {
			name string
			list []string
		}{{"vshort", vshort}, {"bshort", g.bshort}, {"vlong", g.vlong}, {"blong", g.blong}} {
			if len(set.list) > 0 {
				fmt.Fprintf(&b, "\t\t\tset %s %s\n", set.name, strings.Join(set.list, " "))
			}
		}
	}
	b.WriteString(`		case '*'
			printf '%s\n' $cmd option
			return
	end
	# The options, read as getopt_long reads them, up to the first
	# argument that is no option, or past "--".
	set -l k (math $i + 1)
	set -l first
	while set -q t[$k]
		set -l a $t[$k]
		if test "$a" = --
			set first (math $k + 1)
			break
		else if not string match -q -- '-?*' $a
			set first $k
			break
		end
		set -l n (string replace -r '^-' '' -- $a | string replace -r '=.*' '')
		if string match -q -- '--*' $a; or begin
				test (string length -- $n) -gt 1; and contains -- $n $vlong $blong
			end
			# --name=VALUE, --name VALUE, -name VALUE (Go's flag package)
			if not string match -q -- '*=*' $a; and __contain_takes (string replace -r '^-' '' -- $n) $vlong -- $blong
				set k (math $k + 1)
			end
		else
			# -vt 5, -vt5: letters until one that takes a value
			set -l len (string length -- $a)
			set -l j 2
			while test $j -le $len
				if contains -- (string sub -s $j -l 1 -- $a) $vshort
					test $j -eq $len; and set k (math $k + 1)
					break
				end
				set j (math $j + 1)
			end
		end
		set k (math $k + 1)
	end
	if test -z "$first"
		if test $k -gt (math (count $t) + 1); or string match -q -- '-*' (commandline -ct)
			printf '%s\n' $cmd option
			return
		end
		set first (math (count $t) + 1)
	end
	printf '%s\n' $cmd arg (math (count $t) + 2 - $first) $first
end

# __contain_at CMD STATE: the cursor is at STATE (option, arg) of CMD.
function __contain_at
	set -l w (__contain_where); or return 1
	test "$w[1]" = $argv[1]; and test "$w[2]" = $argv[2]
end

# __contain_command completes COMMAND and its arguments: its name, then
# COMMAND's own completion, for the command line from COMMAND on.
function __contain_command
	set -l w (__contain_where); or return
	set -l first $w[4]
	if test "$w[1]" = timeout
		# DURATION first
		test $w[3] -gt 1; or return
		set first (math $first + 1)
	end
	set -l t (commandline -opc)
	set -l args
	if test $first -le (count $t)
		set args (string escape -- $t[$first..-1])
	end
	complete -C (string join ' ' -- $args (commandline -ct))
end

# __contain_sessions lists the sessions contain $argv[1] (stop, wait) can
# take: contain itself reads them, as ps does.
function __contain_sessions
	set -l prog (commandline -opc)[1]
	set prog (string replace -r '^~/' "$HOME/" -- $prog)
	command $prog completion __sessions -- $argv[1] 2>/dev/null
end

complete -c contain -f
complete -c contain -n 'not __contain_where >/dev/null' -l version -d 'print the version and exit'
complete -c contain -n 'not __contain_where >/dev/null' -s h -l help -d 'show help'
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c contain -n 'not __contain_where >/dev/null' -a %s -d %s\n", c.name, fishQuote(c.usage))
	}
	b.WriteString("complete -c contain -n 'not __contain_where >/dev/null' -a help -d 'show help for a command'\n")
	for _, c := range cmds {
		cond := fmt.Sprintf("-n '__contain_at %s option'", c.name)
		for _, f := range c.flags {
			fmt.Fprintf(&b, "complete -c contain %s", cond)
			if f.short != "" {
				fmt.Fprintf(&b, " -s %s", f.short)
			}
			if f.long != "" {
				fmt.Fprintf(&b, " -l %s", f.long)
			}
			if f.takesValue {
				if f.files() {
					b.WriteString(" -r -F")
				} else {
					b.WriteString(" -x")
				}
				if len(f.values) > 0 {
					fmt.Fprintf(&b, " -a %s", fishQuote(strings.Join(f.values, " ")))
				}
			}
			fmt.Fprintf(&b, " -d %s\n", fishQuote(f.usage))
		}
		argCond := fmt.Sprintf("-n '__contain_at %s arg'", c.name)
		switch c.args {
		case argsCommand, argsDuration:
			fmt.Fprintf(&b, "complete -c contain %s -a '(__contain_command)'\n", argCond)
		case argsSessions:
			fmt.Fprintf(&b, "complete -c contain %s -a '(__contain_sessions %s)'\n", argCond, c.name)
		case argsShell:
			fmt.Fprintf(&b, "complete -c contain %s -a 'bash zsh fish'\n", argCond)
		}
	}
	io.WriteString(w, b.String())
}

// completionShells lists the shells completion knows, for tests and docs.
var completionShells = []string{"bash", "zsh", "fish"}
