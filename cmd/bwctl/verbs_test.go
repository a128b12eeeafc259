package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	hubapp "github.com/blackwidow-crawl/blackwidow/hub/app"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// verbRun is one way to run a verb: its positional arguments, then its
// flags in the order help shows them. {name} stands for state the test
// creates (see verbFixture.expand).
type verbRun struct {
	args string
	// raw verbs print no JSON document (a script, a stream, the help):
	// --json is not checked on them, and they may report progress on
	// stderr.
	raw bool
	// code and reason are a documented failure the run must end with (a
	// regexp of the text after "bwctl: "); the zero value is success.
	code   int
	reason string
}

// verbRuns lists, for every verb help shows, runs that together give it
// every flag of its synopsis and every value of a flag whose values are
// listed (--window 1h|24h|7d): a verb or flag added to bwctl without a run
// here fails TestRun_EveryVerbWithEveryFlagHelpShows.
var verbRuns = map[string][]verbRun{
	"user add":           {{args: "{name} --limit 100 --retention 90d"}},
	"user list":          {{}},
	"user show":          {{args: "{user}"}},
	"user set-limit":     {{args: "{user} 1000"}},
	"user set-retention": {{args: "{user} 30d"}, {args: "{user} 0"}},
	"user delete":        {{args: "{new-user}"}},
	"crawler add": {
		{args: "--user {user} --source rss --query {feed} --keywords go,news --limit 50 --disabled"},
		{args: "--user {user} --source twitter --query golang --name Gophers --limit 10"},
		{args: "--user {user} --source stream --query golang,rust --retention 36h"},
		{args: "--user {user} --source bluesky --query #golang --disabled"}, // disabled: the spawn would dial the public Jetstream
		{args: "--user {user} --source mastodon --query #golang --disabled"},
		{args: "--user {user} --source hackernews --query golang --disabled"}, // disabled: the spawn would walk the public Hacker News
		{args: "--user {user} --source reddit --query subreddit:golang"},
	},
	"crawler show":    {{args: "{rss}"}},
	"crawler list":    {{}},
	"crawler update":  {{args: "{new-crawler} --name Feeds --query {feed} --keywords go --limit 100 --retention 30d"}},
	"crawler enable":  {{args: "{new-crawler}"}},
	"crawler disable": {{args: "{new-crawler}"}},
	"crawler delete":  {{args: "{new-crawler}"}},
	"node list":       {{}},
	// The fixture's one spawn: its crawlers have nowhere to go and stay.
	"node drain":      {{args: "{node}"}},
	"reload":          {{args: "--hard"}, {args: "--soft"}},
	"comments recent": {{args: "{rss} --n 5"}},
	"comments export": {
		{args: "{rss} --since 2000-01-01 --until 2100-01-01T00:00:00Z --format jsonl", raw: true},
		{args: "{rss} --since 2000-01-01T00:00:00Z --until 2100-01-01 --format csv", raw: true},
	},
	"comments search": {
		{args: "{rss} golang --since 2000-01-01 --until 2100-01-01T00:00:00Z --n 5"},
		{args: "{rss} story --cursor {search-cursor}"},
	},
	"comments thread": {{args: "{rss} {comment}"}},
	"comments forget": {
		{args: "--source rss --author nobody@example.test"},
		{args: "--source twitter --author 2244994945"},
		{args: "--source stream --author someone"},
		{args: "--source bluesky --author did:plc:nobody"},
		{args: "--source mastodon --author https://mastodon.example/users/nobody"},
		{args: "--source hackernews --author pg"},
		{args: "--source reddit --author t2_nobody"},
	},
	"terms": {
		{args: "{rss} --window 1h --n 5"},
		{args: "--user {user} --window 24h --n 3"},
		{args: "{rss} --window 7d"},
	},
	"authors": {
		{args: "{rss} --window 1h --n 5"},
		{args: "--user {user} --window 24h --n 3"},
		{args: "{rss} --window 7d"},
	},
	"crawler suggest": {{args: "{twitter}"}},
	"crawler expand":  {{args: "{twitter} rust #go"}},
	"alert add": {
		{args: "--crawler {rss} --kind spike --sensitivity high --webhook {webhook} --secret a-webhook-secret"},
		{args: "--user {user} --kind match --query golang --sensitivity low --slack {slack}"},
		{args: "--crawler {rss} --kind sentiment --sensitivity high --webhook {webhook}"},
		// A hub without an SMTP server refuses e-mail rules, saying so.
		{args: "--crawler {rss} --kind term --sensitivity medium --email ops@example.com", code: 1, reason: "SMTP"},
	},
	"alert list":   {{}},
	"alert show":   {{args: "{alert}"}},
	"alert delete": {{args: "{new-alert}"}},
	"alert test":   {{args: "{alert}"}},
	"alert events": {{args: "{alert} --n 5"}},
	"alert backtest": {
		{args: "--csv {csv} --kind spike --sensitivity low"},
		{args: "--csv {csv} --sensitivity medium"},
		{args: "--csv {csv} --sensitivity high"},
	},
	"status":     {{}},
	"scaling":    {{}},
	"completion": {{args: "bash", raw: true}},
	"help":       {{raw: true}, {args: "crawler add", raw: true}},
}

// globalValues are the values the test gives each global flag help shows;
// {config} and {ca} are files the fixture writes.
var globalValues = map[string]string{
	"hub": "{hub}", "ca": "{ca}", "token": "{token}", "timeout": "30s", "json": "", "config": "{config}",
}

// passGlobals are the global flags each pass gives: the settings as flags
// (--json where the verb prints a document) with the verb's flags after its
// arguments, then the settings from --config with its flags before them.
var passGlobals = map[bool][]string{
	false: {"hub", "ca", "token", "timeout", "json"},
	true:  {"config", "timeout"},
}

// TestRun_EveryVerbWithEveryFlagHelpShows reads `bwctl help` as an
// operator would and runs every verb it shows with every flag its synopsis
// shows, in that order, against a real hub over TLS: once with the flags
// after the positional arguments and the global flags (--hub, --ca,
// --token, --timeout, --json) spread over the line, once with the flags
// before the positional arguments and the settings from --config. Each run
// must succeed, and print a JSON document where --json was given.
func TestRun_EveryVerbWithEveryFlagHelpShows(t *testing.T) {
	help := bwctlEnv(t, nil, "help").ok(t).stdout
	verbs, globals := parseHelp(t, help)
	fx := newVerbFixture(t)

	usedGlobals := map[string]bool{}
	seed := 0
	for _, v := range verbs {
		runs, ok := verbRuns[v.name]
		if !ok {
			t.Errorf("help shows `bwctl %s`, but verbRuns has no run of it: add one", v.synopsis)
			continue
		}
		checkCoverage(t, v, runs)
		t.Run(strings.ReplaceAll(v.name, " ", "_"), func(t *testing.T) {
			// Help for the verb itself, both ways of asking.
			for _, args := range [][]string{append(strings.Fields(v.name), "--help"), append([]string{"help"}, strings.Fields(v.name)...)} {
				if out := bwctlEnv(t, nil, args...).ok(t).stdout; !strings.Contains(out, "bwctl "+v.synopsis) {
					t.Errorf("bwctl %s does not show `bwctl %s`:\n%s", strings.Join(args, " "), v.synopsis, out)
				}
			}
			for _, run := range runs {
				for _, flagsFirst := range []bool{false, true} {
					seed++
					positional, flagUnits := splitRun(t, v, fx.expand(t, run.args))
					units := [][]string{}
					for _, w := range strings.Fields(v.name) {
						units = append(units, []string{w})
					}
					if flagsFirst {
						units = append(units, flagUnits...)
						units = append(units, positional...)
					} else {
						units = append(units, positional...)
						units = append(units, flagUnits...)
					}
					// The global flags, each at a place of its own.
					var globalUnits [][]string
					for _, g := range globals {
						if !slices.Contains(passGlobals[flagsFirst], g.name) || (g.name == "json" && run.raw) {
							continue
						}
						usedGlobals[g.name] = true
						unit := []string{"--" + g.name}
						if g.arg != "" {
							unit = append(unit, fx.expand(t, globalValues[g.name])...)
						}
						globalUnits = append(globalUnits, unit)
					}
					for k, g := range globalUnits {
						at := (seed + 3*k) % (len(units) + 1)
						units = slices.Insert(units, at, g)
					}
					args := slices.Concat(units...)
					r := bwctlEnv(t, nil, args...)
					line := strings.Join(args, " ")
					if run.code != 0 {
						if r.code != run.code || !regexp.MustCompile(run.reason).MatchString(r.stderr) {
							t.Errorf("bwctl %s: exit %d, stderr %q; want exit %d and %s", line, r.code, r.stderr, run.code, run.reason)
						}
						continue
					}
					if r.code != 0 || (!run.raw && r.stderr != "") || strings.HasPrefix(r.stderr, "bwctl:") {
						t.Errorf("bwctl %s: exit %d, stderr %q", line, r.code, r.stderr)
						continue
					}
					if r.stdout == "" {
						t.Errorf("bwctl %s printed nothing", line)
					}
					if !run.raw && !flagsFirst && !json.Valid([]byte(r.stdout)) {
						t.Errorf("bwctl %s printed no JSON document:\n%s", line, r.stdout)
					}
				}
			}
		})
	}
	for name := range verbRuns {
		if !slices.ContainsFunc(verbs, func(v helpVerb) bool { return v.name == name }) {
			t.Errorf("verbRuns has runs of %q, which help does not show", name)
		}
	}
	for _, g := range globals {
		if _, ok := globalValues[g.name]; !ok && g.name != "help" {
			t.Errorf("help shows the global flag --%s, which globalValues has no value for", g.name)
		}
		if !usedGlobals[g.name] && g.name != "help" {
			t.Errorf("the global flag --%s was never given", g.name)
		}
	}
}

// helpVerb is a verb as help shows it.
type helpVerb struct {
	name     string     // "crawler add"
	synopsis string     // "crawler add --user ID …"
	flags    []helpFlag // in the order shown
}

// helpFlag is a flag as help shows it; arg is the placeholder of its value
// ("N", "1h|24h|7d"), empty for a switch.
type helpFlag struct{ name, arg string }

// choices are the values help lists for a flag ("1h|24h|7d"), or nil.
func (f helpFlag) choices() []string {
	if !strings.Contains(f.arg, "|") {
		return nil
	}
	return strings.Split(f.arg, "|")
}

var (
	helpVerbLine   = regexp.MustCompile(`^  bwctl (.+)$`)
	helpGlobalLine = regexp.MustCompile(`^  (?:-h, )?--([a-z][a-z-]*)(?: ([^ ]+))?(?:  |$)`)
	verbWord       = regexp.MustCompile(`^[a-z][a-z-]*$`)
)

// parseHelp reads the verbs and the global flags from the help text.
func parseHelp(t *testing.T, help string) ([]helpVerb, []helpFlag) {
	t.Helper()
	var (
		verbs   []helpVerb
		globals []helpFlag
		inGlob  bool
	)
	for _, line := range strings.Split(help, "\n") {
		if strings.HasPrefix(line, "Global flags") {
			inGlob = true
			continue
		}
		if inGlob {
			if m := helpGlobalLine.FindStringSubmatch(line); m != nil {
				globals = append(globals, helpFlag{name: m[1], arg: m[2]})
			}
			continue
		}
		m := helpVerbLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := helpVerb{synopsis: m[1]}
		tokens := strings.Fields(m[1])
		var words []string
		for len(tokens) > 0 && verbWord.MatchString(tokens[0]) {
			words, tokens = append(words, tokens[0]), tokens[1:]
		}
		v.name = strings.Join(words, " ")
		v.flags = parseSynopsisFlags(tokens)
		verbs = append(verbs, v)
	}
	if len(verbs) == 0 || len(globals) == 0 {
		t.Fatalf("no verbs or no global flags found in the help:\n%s", help)
	}
	return verbs, globals
}

// parseSynopsisFlags reads the flags of a synopsis after its verb:
// "[--limit N]" takes a value, "[--disabled]" and "--hard|--soft" are
// switches, "(--crawler ID | --user ID)" two flags with values.
func parseSynopsisFlags(tokens []string) []helpFlag {
	var flags []helpFlag
	for i := 0; i < len(tokens); i++ {
		tok := strings.TrimLeft(tokens[i], "[(")
		if !strings.HasPrefix(tok, "--") {
			continue
		}
		closed := strings.HasSuffix(tok, "]") || strings.HasSuffix(tok, ")")
		tok = strings.TrimRight(tok, "])")
		if strings.Contains(tok, "|") {
			for _, p := range strings.Split(tok, "|") {
				flags = append(flags, helpFlag{name: strings.TrimPrefix(p, "--")})
			}
			continue
		}
		f := helpFlag{name: strings.TrimPrefix(tok, "--")}
		if !closed && i+1 < len(tokens) && !strings.HasPrefix(strings.TrimLeft(tokens[i+1], "[("), "-") && tokens[i+1] != "|" {
			i++
			f.arg = strings.TrimRight(tokens[i], "])")
		}
		flags = append(flags, f)
	}
	return flags
}

// checkCoverage fails unless the runs give every flag of the verb, each in
// the order help shows them, and every value of a flag whose values help
// lists.
func checkCoverage(t *testing.T, v helpVerb, runs []verbRun) {
	t.Helper()
	given := map[string]map[string]bool{}
	for _, run := range runs {
		last := -1
		tokens := strings.Fields(run.args)
		for i, tok := range tokens {
			if !strings.HasPrefix(tok, "--") {
				continue
			}
			name := strings.TrimPrefix(tok, "--")
			at := slices.IndexFunc(v.flags, func(f helpFlag) bool { return f.name == name })
			if at < 0 {
				t.Errorf("verbRuns gives `%s %s` --%s, which its help does not show: `bwctl %s`", v.name, run.args, name, v.synopsis)
				continue
			}
			if at < last {
				t.Errorf("verbRuns gives `%s %s` --%s out of the order help shows: `bwctl %s`", v.name, run.args, name, v.synopsis)
			}
			last = at
			if given[name] == nil {
				given[name] = map[string]bool{}
			}
			if v.flags[at].arg != "" && i+1 < len(tokens) {
				given[name][tokens[i+1]] = true
			}
		}
	}
	for _, f := range v.flags {
		if given[f.name] == nil {
			t.Errorf("help shows `bwctl %s`, but no run in verbRuns gives --%s", v.synopsis, f.name)
		}
		for _, c := range f.choices() {
			if !given[f.name][c] {
				t.Errorf("help shows `bwctl %s`, but no run in verbRuns gives --%s %s", v.synopsis, f.name, c)
			}
		}
	}
}

// splitRun splits a run's expanded arguments into positional arguments and
// flags with their values (one unit each), as the verb's help shows them.
func splitRun(t *testing.T, v helpVerb, args []string) (positional, flags [][]string) {
	t.Helper()
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			positional = append(positional, []string{args[i]})
			continue
		}
		at := slices.IndexFunc(v.flags, func(f helpFlag) bool { return f.name == name })
		if at >= 0 && v.flags[at].arg != "" && i+1 < len(args) {
			flags = append(flags, []string{args[i], args[i+1]})
			i++
			continue
		}
		flags = append(flags, []string{args[i]})
	}
	return positional, flags
}

// verbFixture is the state the runs need: a hub over TLS with one spawn,
// a user, an rss crawler with stored comments, a twitter crawler, and the
// files the global flags name.
type verbFixture struct {
	cl      *clustertest.Cluster
	userID  int64
	rss     int64
	webhook string
	vars    map[string]string
	created int
}

func newVerbFixture(t *testing.T) *verbFixture {
	t.Helper()
	dir := t.TempDir()
	cert, key := selfSignedCert(t, dir)
	cl := clustertest.New(t, clustertest.Options{Spawns: 1, Timings: timings, CA: cert,
		Hub: func(s *hubapp.Settings) {
			s.TLSCert, s.TLSKey = cert, key
			s.AllowTargets = []string{"127.0.0.0/8"} // the alert receiver below
		}})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	series := "timestamp,value\n"
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 * 24 * 60 {
		v := 20
		if i > 2*24*60+600 && i < 2*24*60+606 {
			v = 400 // a five-minute burst on the third day
		}
		series += fmt.Sprintf("%s,%d\n", start.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), v)
	}
	csvFile := filepath.Join(dir, "series.csv")
	if err := os.WriteFile(csvFile, []byte(series), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cl.Hub.URL(), "https://") {
		t.Fatalf("the hub is not served over TLS: %s", cl.Hub.URL())
	}
	ctx := context.Background()
	published := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	for i := range 3 {
		cl.Feeds.Publish("news", feedserver.Item{GUID: fmt.Sprintf("story-%d", i), Title: fmt.Sprintf("golang story number %d", i),
			Author: "alice", Published: published.Add(time.Duration(i) * time.Minute)})
	}
	u, err := cl.Client.CreateUser(ctx, api.UserCreate{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	rss, err := cl.Client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{cl.FeedURL("news")}})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := cl.Client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceTwitter, Query: []string{"golang"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the rss crawler running with its 3 comments stored", func() bool {
		c, err := cl.Client.GetCrawler(ctx, rss.ID)
		if err != nil || c.State != api.StateRunning {
			return false
		}
		cs, err := cl.Client.RecentComments(ctx, rss.ID, 20)
		return err == nil && len(cs) == 3
	})
	config := filepath.Join(dir, "bwctl.yaml")
	yaml := fmt.Sprintf("hub: %s\ntoken: %s\nca: %s\n", cl.Hub.URL(), clustertest.AdminToken, cert)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	rule, err := cl.Client.CreateAlertRule(ctx, api.AlertRuleCreate{CrawlerID: rss.ID, Kind: api.AlertSpike, Webhook: receiver.URL})
	if err != nil {
		t.Fatal(err)
	}
	first, err := cl.Client.SearchComments(ctx, rss.ID, api.SearchQuery{ExportQuery: api.ExportQuery{Limit: 1}})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("a first search page: %+v, %v", first, err)
	}
	return &verbFixture{cl: cl, userID: u.ID, webhook: receiver.URL, rss: rss.ID, vars: map[string]string{
		"webhook": receiver.URL + "/hook", "slack": receiver.URL + "/slack", "alert": itoa(rule.ID), "csv": csvFile,
		"hub": cl.Hub.URL(), "ca": cert, "token": clustertest.AdminToken, "config": config,
		"user": itoa(u.ID), "rss": itoa(rss.ID), "twitter": itoa(tw.ID), "feed": cl.FeedURL("news"), "comment": "story-1",
		"search-cursor": first.NextCursor,
		"node":          cl.Spawns[0].ID(),
	}}
}

var fixtureVar = regexp.MustCompile(`\{([a-z-]+)\}`)

// expand splits s into arguments and replaces each {name}: a fixed value,
// or state created for this one run ({name}, {new-user}, {new-crawler}).
func (fx *verbFixture) expand(t *testing.T, s string) []string {
	t.Helper()
	ctx := context.Background()
	args := strings.Fields(s)
	for i, a := range args {
		args[i] = fixtureVar.ReplaceAllStringFunc(a, func(m string) string {
			name := m[1 : len(m)-1]
			if v, ok := fx.vars[name]; ok {
				return v
			}
			fx.created++
			switch name {
			case "name":
				return fmt.Sprintf("user-%d", fx.created)
			case "new-user":
				u, err := fx.cl.Client.CreateUser(ctx, api.UserCreate{Name: fmt.Sprintf("fresh-%d", fx.created)})
				if err != nil {
					t.Fatal(err)
				}
				return itoa(u.ID)
			case "new-alert":
				r, err := fx.cl.Client.CreateAlertRule(ctx, api.AlertRuleCreate{CrawlerID: fx.rss, Kind: api.AlertSpike, Webhook: fx.webhook})
				if err != nil {
					t.Fatal(err)
				}
				return itoa(r.ID)
			case "new-crawler":
				off := false
				c, err := fx.cl.Client.CreateCrawler(ctx, api.CrawlerCreate{UserID: fx.userID, Source: api.SourceRSS,
					Query: []string{fx.cl.FeedURL(fmt.Sprintf("quiet-%d", fx.created))}, Enabled: &off})
				if err != nil {
					t.Fatal(err)
				}
				return itoa(c.ID)
			}
			t.Fatalf("no fixture %s", m)
			return ""
		})
	}
	return args
}

// selfSignedCert writes a certificate for 127.0.0.1 that is its own CA,
// and its key, and returns their files.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bwctl test hub"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "hub.pem"), filepath.Join(dir, "hub-key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}
