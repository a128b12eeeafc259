package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completer loads `bwctl completion bash` into a real bash and returns what
// it offers for a command line; a line ending in a space completes a new
// word.
func completer(t *testing.T) func(line string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"completion", "bash"}, &out, &errOut, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	script := filepath.Join(t.TempDir(), "bwctl.bash")
	if err := os.WriteFile(script, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		probe := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bwctl; printf '%s\n' "${COMPREPLY[@]}"`
		got, err := exec.Command(bash, append([]string{"-c", probe, "bash", script}, words...)...).Output()
		if err != nil {
			t.Fatalf("bash: %v", err)
		}
		return strings.Fields(string(got))
	}
}

// TestCompletion_OffersExactlyTheDeclaredVerbsAndFlags asks the completion
// for every verb, every group's subcommands and every command's flags, and
// wants exactly what the command table declares: nothing missing, nothing
// extra, nothing twice.
func TestCompletion_OffersExactlyTheDeclaredVerbsAndFlags(t *testing.T) {
	complete := completer(t)
	same := func(line string, want []string) {
		t.Helper()
		got := complete(line)
		g, w := slices.Clone(got), slices.Clone(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("completing %q offers %q, want %q", line, got, want)
		}
	}
	dashed := func(flags []flagSpec) []string {
		var out []string
		for _, f := range flags {
			out = append(out, "--"+f.name)
		}
		return out
	}
	var top []string
	subs := map[string][]string{}
	for _, cmd := range commands {
		w := cmd.words()
		if !slices.Contains(top, w[0]) {
			top = append(top, w[0])
		}
		if len(w) > 1 {
			subs[w[0]] = append(subs[w[0]], w[1])
		}
		want := dashed(slices.Concat(cmd.flags, globalFlags))
		same("bwctl "+cmd.name+" --", want)
		// Flags come anywhere: before the verb, after its arguments, after
		// a global flag's value.
		same("bwctl --json "+cmd.name+" --", want)
		same("bwctl --hub http://127.0.0.1:1 "+cmd.name+" x --", want)
		same("bwctl --timeout = 5s "+cmd.name+" --", want) // bash splits --timeout=5s
	}
	if len(top) < 10 {
		t.Fatalf("only %d verbs declared: %q", len(top), top)
	}
	same("bwctl ", top)
	same("bwctl help ", top)
	same("bwctl --", dashed(globalFlags))
	same("bwctl --token secret ", top)
	for g, s := range subs {
		same("bwctl "+g+" ", s)
		same("bwctl help "+g+" ", s)
		same("bwctl --hub http://127.0.0.1:1 "+g+" ", s)
		same("bwctl "+g+" --timeout 5s ", s)
	}
}

// TestCompletion_CompletesFlagValues offers a flag's declared choices and,
// for a FILE, file names; a value is never completed as a verb.
func TestCompletion_CompletesFlagValues(t *testing.T) {
	complete := completer(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		line string
		want []string
	}{
		{"choices", "bwctl terms 1 --window ", windowNames()},
		{"choices by prefix", "bwctl crawler add --source b", []string{"bluesky"}},
		{"choices after =", "bwctl comments export 1 --format = ", exportFormats},
		{"a file", "bwctl --ca " + dir + "/c", []string{dir + "/ca.pem"}},
		{"free value", "bwctl crawler add --user ", nil},
		{"verb after a value", "bwctl --ca " + dir + "/ca.pem co", []string{"comments", "completion"}},
		{"command flag by prefix", "bwctl crawler add --user 1 --li", []string{"--limit"}},
		{"no flag of another command", "bwctl user list --q", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := complete(tc.line); !slices.Equal(got, tc.want) {
				t.Fatalf("completing %q offers %q, want %q", tc.line, got, tc.want)
			}
		})
	}
	if code := run(context.Background(), []string{"completion", "fish"}, &bytes.Buffer{}, &bytes.Buffer{}, nil); code != exitUsage {
		t.Fatalf("completion fish: exit %d, want %d", code, exitUsage)
	}
}
