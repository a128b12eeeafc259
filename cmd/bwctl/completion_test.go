package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion_BashCompletesVerbsAndFlags loads the generated script into
// a real bash and asks it what it completes.
func TestCompletion_BashCompletesVerbsAndFlags(t *testing.T) {
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
	cases := []struct {
		name  string
		words string // the command line up to the word being completed
		want  string
	}{
		{"verb", "bwctl re", "reload"},
		{"subcommand", "bwctl crawler a", "add"},
		{"command flag", "bwctl crawler add --q", "--query"},
		{"flag after a value", "bwctl crawler add --user 1 --li", "--limit"},
		{"single-word verb flags", "bwctl reload --", "--hard --soft --hub --token --timeout --json --help --config --ca"},
		{"no flag of another command", "bwctl user list --q", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			words := strings.Fields(tc.words)
			probe := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bwctl; echo "${COMPREPLY[*]}"`
			cmd := exec.Command(bash, append([]string{"-c", probe, "bash", script}, words...)...)
			got, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			if g := strings.TrimSpace(string(got)); g != tc.want {
				t.Fatalf("completing %q: got %q, want %q", tc.words, g, tc.want)
			}
		})
	}
	if code := run(context.Background(), []string{"completion", "fish"}, &out, &errOut, nil); code != exitUsage {
		t.Fatalf("completion fish: exit %d, want %d", code, exitUsage)
	}
}
