// Package docs_test keeps the documentation true to the programs: the flag
// tables of operations.md are what hub --help and spawn --help print, and
// every relative link and anchor in the Markdown pages leads somewhere.
package docs_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// updateEnv rewrites the flag tables from the programs' help instead of
// checking them: BW_UPDATE_DOCS=1 go test ./docs/.
const updateEnv = "BW_UPDATE_DOCS"

// TestOperations_FlagTablesAreTheProgramsHelp compares the hub and spawn flag
// tables of operations.md with the flags, defaults and usage their --help
// prints.
func TestOperations_FlagTablesAreTheProgramsHelp(t *testing.T) {
	const page = "operations.md"
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	hub, spawn := hubapp.DefaultSettings(), spawnapp.DefaultSettings()
	for _, p := range []struct {
		name     string
		settings any
	}{{"hub", &hub}, {"spawn", &spawn}} {
		want := flagTable(t, p.name, p.settings)
		start, end, err := tableSpan(doc, "### "+p.name)
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		if got := doc[start:end]; got != want {
			if os.Getenv(updateEnv) == "1" {
				doc = doc[:start] + want + doc[end:]
				continue
			}
			t.Errorf("%s: the table under \"### %s\" is not what %s --help prints (%s=1 rewrites it); it should read:\n%s",
				page, p.name, p.name, updateEnv, want)
		}
	}
	if os.Getenv(updateEnv) == "1" {
		if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// flagTable is the Markdown table of a program's flags as its --help prints
// them: name, default and usage, in help's order.
func flagTable(t *testing.T, name string, settings any) string {
	t.Helper()
	var help bytes.Buffer
	err := config.Load(name, settings, []string{"--help"}, func(string) (string, bool) { return "", false }, &help)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%s --help: %v", name, err)
	}
	var b strings.Builder
	b.WriteString("| flag | default | |\n|---|---|---|\n")
	lines := strings.Split(help.String(), "\n")
	flagLine := regexp.MustCompile(`^  -(\S+)( \S+)?$`)
	defaultOf := regexp.MustCompile(`^(.*) \(default (.*)\)$`)
	for i := 0; i < len(lines); i++ {
		m := flagLine.FindStringSubmatch(lines[i])
		if m == nil || i+1 >= len(lines) {
			continue
		}
		usage, def := strings.TrimSpace(lines[i+1]), ""
		if d := defaultOf.FindStringSubmatch(usage); d != nil {
			usage, def = d[1], d[2]
		}
		if def == "false" || def == "0s" && strings.Contains(usage, "(0:") {
			def = "" // a switch off, or a zero that the usage explains
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", m[1], code(def), strings.ReplaceAll(usage, "|", `\|`))
	}
	return b.String()
}

func code(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + s + "`"
}

// tableSpan finds the first table after heading: its start and the end of
// its last row.
func tableSpan(doc, heading string) (int, int, error) {
	h := strings.Index(doc, "\n"+heading+"\n")
	if h < 0 {
		return 0, 0, fmt.Errorf("no heading %q", heading)
	}
	start := strings.Index(doc[h:], "\n|")
	if start < 0 {
		return 0, 0, fmt.Errorf("no table under %q", heading)
	}
	start += h + 1
	end := start
	for end < len(doc) && doc[end] == '|' {
		nl := strings.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	return start, end, nil
}

// TestDocs_LinksAndAnchorsLead checks every relative link of the README and
// the docs pages: the file exists, and an #anchor names a heading of it.
func TestDocs_LinksAndAnchorsLead(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	more, _ := filepath.Glob("*/*.md")
	pages = append(append(pages, more...), "../README.md", "../spawn/internal/source/bluesky/testdata/SOURCES.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if info, serr := os.Stat(path); serr == nil && info.IsDir() && anchor == "" {
					continue
				}
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !anchors(string(body))[anchor] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", page, target, path, anchor)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d links checked", checked)
	}
}

// anchors are the ids GitHub gives a page's headings: lowercased, spaces to
// hyphens, punctuation other than hyphens and underscores dropped, a repeat
// numbered.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(stripCode(doc), "\n") {
		trimmed := strings.TrimLeft(line, "#")
		if len(trimmed) == len(line) || !strings.HasPrefix(trimmed, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(trimmed)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// stripCode blanks fenced code blocks and inline code, where brackets and
// hashes are not links or headings.
func stripCode(doc string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			b.WriteString("\n")
			continue
		}
		if fenced {
			b.WriteString("\n")
			continue
		}
		b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""))
	}
	return b.String()
}

// TestDocs_EverySourceHasItsPage checks that each builtin source kind has
// its page under sources/, listed in sources/README.md.
func TestDocs_EverySourceHasItsPage(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("sources", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range api.BuiltinSources() {
		page := s.Name + ".md"
		if _, err := os.Stat(filepath.Join("sources", page)); err != nil {
			t.Errorf("source %s has no page: %v", s.Name, err)
		}
		if !strings.Contains(string(index), "]("+page+")") {
			t.Errorf("sources/README.md does not list %s", page)
		}
	}
}
