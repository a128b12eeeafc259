package main

import (
	"fmt"
	"slices"
	"strings"
)

// completion prints a shell completion script made from the declarations,
// so it offers exactly the verbs and flags bwctl takes.
func completion(c *cli, in *input) error {
	if in.args[0] != "bash" {
		return usagef("completion supports bash, got %s", quote(in.args[0]))
	}
	_, err := fmt.Fprint(c.out, bashCompletion())
	return err
}

// bashCompletion completes verbs, subcommands, the flags each command takes
// (global flags included, anywhere on the line), the choices of a flag
// that has them and file names for a FILE. A flag's value is never taken
// for a verb.
func bashCompletion() string {
	var (
		top      []string
		subs     = map[string][]string{}
		valued   []string                // flags that take a value, as -name and --name
		choices  = map[string][]string{} // by flag name, every command's
		files    []string                // flags whose value is a file
		flagCase strings.Builder
	)
	addFlag := func(f *flagSpec) {
		if f.isSwitch() {
			return
		}
		if !slices.Contains(valued, "--"+f.name) {
			valued = append(valued, "-"+f.name, "--"+f.name)
		}
		for _, ch := range f.choices {
			if !slices.Contains(choices[f.name], ch) {
				choices[f.name] = append(choices[f.name], ch)
			}
		}
		if f.arg == "FILE" && !slices.Contains(files, f.name) {
			files = append(files, f.name)
		}
	}
	var globals []string
	for i := range globalFlags {
		addFlag(&globalFlags[i])
		globals = append(globals, "--"+globalFlags[i].name)
	}
	// Longer verbs first, so that "node drain" is not taken for "node".
	byLength := slices.Clone(commands)
	slices.SortStableFunc(byLength, func(a, b *command) int { return len(b.words()) - len(a.words()) })
	for _, cmd := range byLength {
		var flags []string
		for i := range cmd.flags {
			addFlag(&cmd.flags[i])
			flags = append(flags, "--"+cmd.flags[i].name)
		}
		if len(flags) > 0 {
			fmt.Fprintf(&flagCase, "      %q*) flags=%q ;;\n", " "+cmd.name+" ", strings.Join(flags, " ")+" $flags")
		}
	}
	for _, cmd := range commands {
		w := cmd.words()
		if !slices.Contains(top, w[0]) {
			top = append(top, w[0])
		}
		if len(w) > 1 {
			subs[w[0]] = append(subs[w[0]], w[1])
		}
	}
	var subCase, valueCase strings.Builder
	for _, w := range top {
		if s := subs[w]; len(s) > 0 {
			fmt.Fprintf(&subCase, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", w, strings.Join(s, " "))
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range choices {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&valueCase, "      %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", name, strings.Join(choices[name], " "))
	}
	if len(files) > 0 {
		fmt.Fprintf(&valueCase, "      %s) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n", strings.Join(files, "|"))
	}
	return `# bash completion for bwctl; load with: source <(bwctl completion bash)
_bwctl() {
  local cur="${COMP_WORDS[COMP_CWORD]}" words=() value= w i
  # The words so far, less the flags and their values. Bash splits
  # --flag=value into "--flag" "=" "value".
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    if [[ $w == = ]]; then
      value="${COMP_WORDS[i-1]}"
      continue
    fi
    if [[ -n $value ]]; then
      value=
      continue
    fi
    case $w in
      ` + strings.Join(valued, "|") + `) value="$w" ;;
      -*) ;;
      *) words+=("$w") ;;
    esac
  done
  if [[ -n $value ]]; then
    value="${value#-}"
    case "${value#-}" in
` + valueCase.String() + `    esac
    return
  fi
  if [[ $cur == -* ]]; then
    local flags=` + fmt.Sprintf("%q", strings.Join(globals, " ")) + `
    case " ${words[*]} " in
` + flagCase.String() + `    esac
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    return
  fi
  [[ ${words[0]} == help ]] && words=("${words[@]:1}")
  case ${#words[@]} in
    0) COMPREPLY=($(compgen -W ` + fmt.Sprintf("%q", strings.Join(top, " ")) + ` -- "$cur")) ;;
    1)
      case "${words[0]}" in
` + subCase.String() + `      esac ;;
  esac
}
complete -F _bwctl bwctl
`
}
