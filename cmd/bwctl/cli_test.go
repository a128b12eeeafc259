package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCommands_DeclarationsAreConsistent checks the command table for the
// mistakes the parser cannot report to an operator: a flag name that takes
// a value in one command and not in another (the line is split into words
// and flags before its command is known), a command flag shadowing a
// global one, a group split apart, arguments the arity rule cannot read.
func TestCommands_DeclarationsAreConsistent(t *testing.T) {
	switches := map[string]bool{}
	global := map[string]bool{}
	for _, f := range globalFlags {
		global[f.name] = true
		switches[f.name] = f.isSwitch()
	}
	var settable []string
	for _, f := range globalFlags {
		if f.name != "help" && f.name != "config" {
			settable = append(settable, f.name)
		}
	}
	if want := settingNames(); !slices.Equal(settable, want) {
		t.Errorf("the global flags other than help and config are %q, the settings %q", settable, want)
	}
	names := map[string]bool{}
	for _, cmd := range commands {
		if names[cmd.name] {
			t.Errorf("%q is declared twice", cmd.name)
		}
		names[cmd.name] = true
		if cmd.help == "" || (cmd.run == nil && cmd.name != "help") {
			t.Errorf("%q has no help or no run function", cmd.name)
		}
		for i, a := range cmd.args {
			optional, many := strings.HasPrefix(a, "["), strings.HasSuffix(strings.TrimSuffix(a, "]"), "…")
			if (many || optional) && i != len(cmd.args)-1 {
				t.Errorf("%q: only the last argument may be optional or repeated, not %s", cmd.name, a)
			}
		}
		seen := map[string]bool{}
		groups := map[string]int{} // a group's last index
		for i, f := range cmd.flags {
			switch {
			case seen[f.name]:
				t.Errorf("%q declares --%s twice", cmd.name, f.name)
			case global[f.name]:
				t.Errorf("%q declares --%s, a global flag", cmd.name, f.name)
			case f.usage == "":
				t.Errorf("%q --%s has no usage", cmd.name, f.name)
			}
			seen[f.name] = true
			if sw, ok := switches[f.name]; ok && sw != f.isSwitch() {
				t.Errorf("--%s is a switch in one command and takes a value in another (%q)", f.name, cmd.name)
			}
			switches[f.name] = f.isSwitch()
			if f.group == "" {
				continue
			}
			if last, ok := groups[f.group]; ok && last != i-1 {
				t.Errorf("%q: the flags of group %q are not declared next to each other", cmd.name, f.group)
			}
			groups[f.group] = i
			if first := cmd.group(f.group)[0]; first.required != f.required {
				t.Errorf("%q: the flags of group %q disagree on required", cmd.name, f.group)
			}
		}
	}
}

// TestHelp_ShowsTheDeclarations reads the help as the operator's test does
// and finds in it exactly the declared verbs and flags, in their order.
func TestHelp_ShowsTheDeclarations(t *testing.T) {
	verbs, globals := parseHelp(t, bwctlEnv(t, nil, "help").ok(t).stdout)
	if len(verbs) != len(commands) {
		t.Fatalf("help shows %d verbs, %d are declared", len(verbs), len(commands))
	}
	for i, v := range verbs {
		cmd := commands[i]
		if v.name != cmd.name {
			t.Errorf("help shows verb %d as %q, declared %q", i, v.name, cmd.name)
			continue
		}
		var want []helpFlag
		for _, f := range cmd.flags {
			arg := f.placeholder()
			want = append(want, helpFlag{name: f.name, arg: arg})
		}
		if !slices.Equal(v.flags, want) {
			t.Errorf("help shows %q with the flags %+v, declared %+v", cmd.name, v.flags, want)
		}
		// The command's own help lists each flag with its usage.
		out := bwctlEnv(t, nil, append([]string{"help"}, cmd.words()...)...).ok(t).stdout
		for _, f := range cmd.flags {
			if !strings.Contains(out, "  "+f.synopsis()) || !strings.Contains(out, strings.Fields(f.usage)[0]) {
				t.Errorf("bwctl help %s does not list --%s:\n%s", cmd.name, f.name, out)
			}
		}
	}
	var want []helpFlag
	for _, f := range globalFlags {
		want = append(want, helpFlag{name: f.name, arg: f.placeholder()})
	}
	if !slices.Equal(globals, want) {
		t.Errorf("help shows the global flags %+v, declared %+v", globals, want)
	}
}

// TestDocs_ListEveryVerbAsHelpShowsIt keeps the bwctl block of docs/operations.md the
// synopses help prints.
func TestDocs_ListEveryVerbAsHelpShowsIt(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### bwctl\n")
	if !ok {
		t.Fatal("docs/operations.md has no ### bwctl section")
	}
	_, block, ok := strings.Cut(section, "```\n")
	if block, _, ok = strings.Cut(block, "```\n"); !ok {
		t.Fatal("the ### bwctl section of docs/operations.md has no code block")
	}
	var want strings.Builder
	want.WriteString("bwctl")
	for _, f := range globalFlags {
		if f.name != "help" {
			want.WriteString(" [" + f.synopsis() + "]")
		}
	}
	want.WriteString(" COMMAND\n")
	for _, cmd := range commands {
		want.WriteString("  " + cmd.synopsis() + "\n")
	}
	if block != want.String() {
		t.Errorf("the ### bwctl block of docs/operations.md is not what help shows; it should read:\n```\n%s```", want.String())
	}
}
