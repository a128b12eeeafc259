package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A verb and its flags are declared once, in the commands table: the
// parser, each synopsis, the help and the bash completion all read the
// declarations, so none of them can offer what another refuses. See
// docs/contributing/adding-a-bwctl-verb.md.

// flagSpec declares one flag of a command, or a global flag.
type flagSpec struct {
	name string // without dashes: "limit"
	// arg is the placeholder of the flag's value in the synopsis ("N",
	// "ID", "FILE": the completion offers file names); empty for a switch.
	// A flag with choices needs none: its placeholder is its choices.
	arg string
	// choices are the only values the flag takes, compared without case;
	// the parser refuses others and the completion offers them.
	choices []string
	usage   string
	def     string // the default, as help shows it; the code that reads the flag applies it
	// required flags must be given. Flags that share a group exclude each
	// other and are declared next to each other; if they are required,
	// exactly one of them must be given.
	required bool
	group    string
	short    string // a one-letter alias, "h" for --help
}

// isSwitch says whether the flag takes no value.
func (f *flagSpec) isSwitch() bool { return f.arg == "" && len(f.choices) == 0 }

// placeholder is what the synopsis shows for the flag's value.
func (f *flagSpec) placeholder() string {
	if len(f.choices) > 0 {
		return strings.Join(f.choices, "|")
	}
	return f.arg
}

// synopsis is the flag as a synopsis shows it: "--limit N", "--disabled".
func (f *flagSpec) synopsis() string {
	if f.isSwitch() {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.placeholder()
}

// command declares one bwctl verb.
type command struct {
	name string // "crawler add"
	// args are the positional arguments: "ID"; "[CRAWLER]" may be left
	// out; "TERM…" is one or more, "[COMMAND…]" any number.
	args  []string
	flags []flagSpec
	help  string
	// stream commands run until done: the timeout bounds each request,
	// not the whole command.
	stream bool
	// standalone commands need neither the settings nor a hub; local
	// ones read the settings (--json) but run here, without a hub.
	standalone bool
	local      bool
	run        func(c *cli, in *input) error
}

// words are the words that name the command.
func (cmd *command) words() []string { return strings.Fields(cmd.name) }

// argCount is how many positional arguments the command takes; max is -1
// for no limit.
func (cmd *command) argCount() (minArgs, maxArgs int) {
	for _, a := range cmd.args {
		if !strings.HasPrefix(a, "[") {
			minArgs++
		}
		switch {
		case strings.HasSuffix(strings.TrimSuffix(a, "]"), "…"):
			maxArgs = -1
		case maxArgs >= 0:
			maxArgs++
		}
	}
	return minArgs, maxArgs
}

// flag finds one of the command's own flags.
func (cmd *command) flag(name string) *flagSpec {
	for i := range cmd.flags {
		if cmd.flags[i].name == name {
			return &cmd.flags[i]
		}
	}
	return nil
}

// group lists the flags of a group, in their order.
func (cmd *command) group(name string) []*flagSpec {
	var out []*flagSpec
	for i := range cmd.flags {
		if cmd.flags[i].group == name {
			out = append(out, &cmd.flags[i])
		}
	}
	return out
}

// synopsis is the command line of the command as help shows it, flags in
// their declared order: "crawler update ID [--query Q] [--limit N]",
// "reload --hard|--soft".
func (cmd *command) synopsis() string {
	parts := slices.Concat(cmd.words(), cmd.args)
	shown := map[string]bool{}
	for i := range cmd.flags {
		f := &cmd.flags[i]
		if f.group == "" {
			if f.required {
				parts = append(parts, f.synopsis())
			} else {
				parts = append(parts, "["+f.synopsis()+"]")
			}
			continue
		}
		if shown[f.group] {
			continue
		}
		shown[f.group] = true
		var alts []string
		switches := true
		for _, m := range cmd.group(f.group) {
			alts = append(alts, m.synopsis())
			switches = switches && m.isSwitch()
		}
		switch {
		case f.required && switches:
			parts = append(parts, strings.Join(alts, "|"))
		case f.required:
			parts = append(parts, "("+strings.Join(alts, " | ")+")")
		case switches:
			parts = append(parts, "["+strings.Join(alts, "|")+"]")
		default:
			parts = append(parts, "["+strings.Join(alts, " | ")+"]")
		}
	}
	return strings.Join(parts, " ")
}

// lookup finds the command named by the first words and returns the words
// left for its arguments.
func lookup(words []string) (*command, []string, error) {
	var group []string
	for _, cmd := range commands {
		w := cmd.words()
		if len(words) >= len(w) && slices.Equal(words[:len(w)], w) {
			return cmd, words[len(w):], nil
		}
		if len(w) > 1 && w[0] == words[0] {
			group = append(group, w[1])
		}
	}
	switch {
	case len(group) > 0 && len(words) == 1:
		return nil, nil, usagef("%s needs a subcommand: %s", words[0], strings.Join(group, ", "))
	case len(group) > 0:
		return nil, nil, usagef("unknown %s command %s (want one of %s)", words[0], quote(words[1]), strings.Join(group, ", "))
	default:
		return nil, nil, usagef("unknown command %s (run 'bwctl help')", quote(words[0]))
	}
}

// knownFlags maps every flag name, and every short alias, to its
// declaration: the global flags and every command's. A name takes a value
// in every command or in none (TestCommands_DeclarationsAreConsistent), so
// a line can be split into words and flags before its command is known:
// in `bwctl crawler --source S add`, "S" is --source's.
var knownFlags = sync.OnceValue(func() map[string]*flagSpec {
	known := map[string]*flagSpec{}
	add := func(f *flagSpec) {
		if _, ok := known[f.name]; !ok {
			known[f.name] = f
		}
		if f.short != "" {
			known[f.short] = f
		}
	}
	for i := range globalFlags {
		add(&globalFlags[i])
	}
	for _, cmd := range commands {
		for i := range cmd.flags {
			add(&cmd.flags[i])
		}
	}
	return known
})

// givenFlag is a flag as the command line gave it.
type givenFlag struct {
	name  string // the declared name, never the short alias
	value string // "true" or "false" for a switch
}

var negativeNumber = regexp.MustCompile(`^-[0-9]+$`)

// scan splits args into words and flags. Flags may come anywhere, as
// -name or --name, with their value as the next argument or after "=". "--"
// ends the flags. A negative number is a word, not a flag.
func scan(args []string) (words []string, given []givenFlag, err error) {
	known := knownFlags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			words = append(words, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || negativeNumber.MatchString(a) {
			words = append(words, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		spec, ok := known[name]
		if !ok {
			return nil, nil, usagef("unknown flag %s (run 'bwctl help')", quote(a))
		}
		switch {
		case !spec.isSwitch() && !hasVal:
			if i+1 >= len(args) {
				return nil, nil, usagef("flag --%s needs a value", spec.name)
			}
			i++
			val = args[i]
		case spec.isSwitch() && hasVal:
			b, err := strconv.ParseBool(val)
			if err != nil {
				return nil, nil, usagef("flag --%s is a switch: give it alone or as --%s=true|false", spec.name, spec.name)
			}
			val = strconv.FormatBool(b)
		case spec.isSwitch():
			val = "true"
		}
		given = append(given, givenFlag{name: spec.name, value: val})
	}
	return words, given, nil
}

// input is what one run of a command was given: its positional arguments
// and its own flags, held in a flag.FlagSet made from its declarations.
type input struct {
	cmd  *command
	args []string
	fs   *flag.FlagSet
	set  map[string]bool
}

// bind checks the flags and arguments given to cmd against its
// declarations and returns them; globals are the global flags given, as
// --name=value arguments.
func bind(cmd *command, args []string, given []givenFlag) (*input, []string, error) {
	in := &input{cmd: cmd, args: args, fs: flag.NewFlagSet("bwctl "+cmd.name, flag.ContinueOnError), set: map[string]bool{}}
	in.fs.SetOutput(io.Discard)
	for i := range cmd.flags {
		if f := &cmd.flags[i]; f.isSwitch() {
			in.fs.Bool(f.name, false, f.usage)
		} else {
			in.fs.String(f.name, "", f.usage)
		}
	}
	var globals []string
	for _, g := range given {
		if slices.ContainsFunc(globalFlags, func(f flagSpec) bool { return f.name == g.name }) {
			globals = append(globals, "--"+g.name+"="+g.value)
			continue
		}
		spec := cmd.flag(g.name)
		if spec == nil {
			return nil, nil, usagef("%s does not take --%s (usage: bwctl %s)", cmd.name, g.name, cmd.synopsis())
		}
		v := g.value
		if len(spec.choices) > 0 {
			v = strings.ToLower(strings.TrimSpace(v))
			if !slices.Contains(spec.choices, v) {
				return nil, nil, usagef("--%s must be one of %s, got %s", spec.name, strings.Join(spec.choices, ", "), quote(g.value))
			}
		}
		if err := in.fs.Set(g.name, v); err != nil {
			return nil, nil, usagef("--%s: %v", g.name, err)
		}
		in.set[g.name] = true
	}
	if minArgs, maxArgs := cmd.argCount(); len(args) < minArgs || (maxArgs >= 0 && len(args) > maxArgs) {
		return nil, nil, in.usage()
	}
	checked := map[string]bool{}
	for i := range cmd.flags {
		f := &cmd.flags[i]
		switch {
		case f.group == "" && f.required && !in.set[f.name]:
			return nil, nil, usagef("%s needs --%s", cmd.name, f.name)
		case f.group != "" && !checked[f.group]:
			checked[f.group] = true
			var names, set []string
			for _, m := range cmd.group(f.group) {
				names = append(names, "--"+m.name)
				if in.set[m.name] && in.fs.Lookup(m.name).Value.String() != "false" {
					set = append(set, m.name)
				}
			}
			if len(set) > 1 || (f.required && len(set) == 0) {
				return nil, nil, usagef("%s needs exactly one of %s", cmd.name, orList(names))
			}
		}
	}
	return in, globals, nil
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// spec returns the declaration of one of the command's flags. Reading a
// flag the command does not declare is a bug in bwctl, caught by the tests
// that run every flag (run turns the panic into one line on stderr).
func (in *input) spec(name string) *flagSpec {
	f := in.cmd.flag(name)
	if f == nil {
		panic(fmt.Sprintf("%s reads --%s, which it does not declare", in.cmd.name, name))
	}
	return f
}

// has says whether the flag was given.
func (in *input) has(name string) bool {
	in.spec(name)
	return in.set[name]
}

// value is a flag's value ("" when not given; a flag with choices has it
// in lower case).
func (in *input) value(name string) string {
	in.spec(name)
	return in.fs.Lookup(name).Value.String()
}

// on says whether a switch was given (and not as --name=false).
func (in *input) on(name string) bool { return in.value(name) == "true" }

// usage is the usage error of the command: its synopsis.
func (in *input) usage() error { return usagef("usage: bwctl %s", in.cmd.synopsis()) }
