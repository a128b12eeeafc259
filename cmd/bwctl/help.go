package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Layout of the help.
const (
	helpWidth      = 100 // lines are wrapped to this many characters
	helpFlagColumn = 20  // where a flag's usage starts
)

// printHelp writes the help asked for by words (what follows "bwctl help",
// or the words before --help): a command's own help with its flags, the
// commands of a group, or, for anything else, the whole help.
func printHelp(w io.Writer, words []string) {
	if len(words) > 0 {
		if cmd, _, err := lookup(words); err == nil {
			printCommandHelp(w, cmd)
			return
		}
	}
	var b strings.Builder
	b.WriteString("bwctl — admin CLI of the Black Widow hub\n\nCommands:\n")
	group := len(words) > 0 && slices.ContainsFunc(commands, func(cmd *command) bool { return cmd.words()[0] == words[0] })
	for _, cmd := range commands {
		if group && cmd.words()[0] != words[0] {
			continue
		}
		fmt.Fprintf(&b, "  bwctl %s\n%s\n", cmd.synopsis(), wrap(cmd.help, 8, helpWidth))
	}
	writeGlobals(&b)
	b.WriteString(`
Run 'bwctl help COMMAND' (or 'bwctl COMMAND --help') for a command's flags.

Exit status: 0 on success, 1 when the hub refuses or cannot be reached,
2 for a usage error; the reason is one line on stderr.
`)
	io.WriteString(w, b.String())
}

// printCommandHelp writes one command's help: its synopsis, what it does,
// its flags and the global flags.
func printCommandHelp(w io.Writer, cmd *command) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: bwctl %s\n\n%s\n", cmd.synopsis(), wrap(cmd.help, 0, helpWidth))
	if len(cmd.flags) > 0 {
		b.WriteString("\nFlags:\n")
		writeFlags(&b, cmd.flags, false)
	}
	writeGlobals(&b)
	io.WriteString(w, b.String())
}

// writeGlobals writes the global flags, with the environment variable each
// reads.
func writeGlobals(b *strings.Builder) {
	b.WriteString("\nGlobal flags (anywhere on the line):\n")
	writeFlags(b, globalFlags, true)
}

// writeFlags writes one flag a line, "  --name ARG  usage", the usages in
// one column; a flag too long for its column has its usage on the next
// line. Global flags name the environment variable they read.
func writeFlags(b *strings.Builder, flags []flagSpec, global bool) {
	for _, f := range flags {
		left := "  " + f.synopsis()
		if f.short != "" {
			left = "  -" + f.short + ", " + f.synopsis()
		}
		var notes []string
		if env := settingEnv(f.name); env != "" && global {
			notes = append(notes, "env "+env)
		}
		if f.def != "" {
			notes = append(notes, "default "+f.def)
		}
		text := f.usage
		if len(notes) > 0 {
			text += " (" + strings.Join(notes, ", ") + ")"
		}
		usage := wrap(text, helpFlagColumn, helpWidth)
		if len([]rune(left))+2 > helpFlagColumn {
			fmt.Fprintf(b, "%s\n%s\n", left, usage)
			continue
		}
		fmt.Fprintf(b, "%s%s\n", left, usage[len([]rune(left)):])
	}
}

// wrap breaks text into lines of at most width characters, each indented
// by indent spaces.
func wrap(text string, indent, width int) string {
	pad := strings.Repeat(" ", indent)
	var lines []string
	line := pad
	for _, word := range strings.Fields(text) {
		if len([]rune(line)) > indent && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = pad
		}
		if len([]rune(line)) > indent {
			line += " "
		}
		line += word
	}
	return strings.Join(append(lines, line), "\n")
}
