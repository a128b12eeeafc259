package main

import (
	"fmt"
	"slices"
	"strings"
)

// The completion verb reads the command table, so it joins the table here
// rather than in its literal (which would refer to itself).
func init() {
	commands = append(commands, &command{words: []string{"completion"}, args: []string{"SHELL"},
		help: "print a shell completion script (bash): source <(bwctl completion bash)", run: completion})
}

// completion prints a shell completion script built from the command
// table, so it never falls behind the verbs bwctl knows.
func completion(c *cli, args []string, _ line) error {
	if args[0] != "bash" {
		return usagef("completion supports bash, got %s", quote(args[0]))
	}
	_, err := fmt.Fprint(c.out, bashCompletion())
	return err
}

// bashCompletion completes verbs, subcommands and the flags each command
// takes (global flags included).
func bashCompletion() string {
	var top []string
	subs := map[string][]string{}
	var cases strings.Builder
	for _, cmd := range commands {
		if !slices.Contains(top, cmd.words[0]) {
			top = append(top, cmd.words[0])
		}
		if len(cmd.words) > 1 {
			subs[cmd.words[0]] = append(subs[cmd.words[0]], cmd.words[1])
		}
		var flags []string
		for _, f := range slices.Concat(cmd.flags, globalFlags) {
			if f != "h" {
				flags = append(flags, "--"+f)
			}
		}
		fmt.Fprintf(&cases, "      %q|%q*) flags=%q ;;\n", cmd.name(), cmd.name()+" ", strings.Join(flags, " "))
	}
	var subCases strings.Builder
	for _, w := range top {
		if s := subs[w]; len(s) > 0 {
			fmt.Fprintf(&subCases, "      %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", w, strings.Join(s, " "))
		}
	}
	return `# bash completion for bwctl; load with: source <(bwctl completion bash)
_bwctl() {
  local cur="${COMP_WORDS[COMP_CWORD]}" words=() w
  for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    [[ $w == -* ]] || words+=("$w")
  done
  if [[ $cur == -* ]]; then
    local flags="--hub --token --timeout --json --config --help"
    case "${words[*]}" in
` + cases.String() + `    esac
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    return
  fi
  case ${#words[@]} in
    0) COMPREPLY=($(compgen -W "` + strings.Join(append(top, "help", "completion"), " ") + `" -- "$cur")) ;;
    1)
      case "${words[0]}" in
` + subCases.String() + `      esac ;;
  esac
}
complete -F _bwctl bwctl
`
}
