package configs

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// Monitoring files: the Grafana dashboard and the Prometheus rules.
const (
	grafanaDashboard = "grafana/blackwidow.json"
	prometheusRules  = "prometheus/alerts.yml"
)

// metricName finds the servers' metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:bw|go|process)_[a-zA-Z0-9_]+\b`)

// recordedName finds recording rule names (level:metric:operations).
var recordedName = regexp.MustCompile(`\b[a-z_]+:[a-zA-Z0-9_]+:[a-zA-Z0-9_:]+\b`)

// promqlIn collects every PromQL expression of a Grafana dashboard: the
// "expr" of targets and annotations and the queries of variables.
func promqlIn(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && (k == "expr" || k == "definition") {
				*out = append(*out, s)
			}
			if k == "query" {
				if q, ok := val.(map[string]any); ok {
					if s, ok := q["query"].(string); ok {
						*out = append(*out, s)
					}
					continue
				}
			}
			promqlIn(val, out)
		}
	case []any:
		for _, e := range x {
			promqlIn(e, out)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// scrape reads a /metrics page and returns the names of its samples
// (counters with _total, histograms as _bucket, _sum and _count).
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestMonitoring_NamesOnlyExportedMetrics starts a hub and a spawn (with a
// queue when NATS is available), scrapes both, and checks that every
// metric the Grafana dashboard and the Prometheus rules name is exported,
// and every recording rule they use is defined.
func TestMonitoring_NamesOnlyExportedMetrics(t *testing.T) {
	var exprs []string
	b, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	promqlIn(dash, &exprs)
	if len(exprs) < 20 {
		t.Fatalf("%s: found only %d queries", grafanaDashboard, len(exprs))
	}
	b, err = os.ReadFile(prometheusRules)
	if err != nil {
		t.Fatal(err)
	}
	var rules ruleFile
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("%s: %v", prometheusRules, err)
	}
	recorded := map[string]bool{}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			if r.Record != "" {
				recorded[r.Record] = true
			} else {
				alerts++
			}
		}
	}
	if alerts < 10 || len(recorded) == 0 {
		t.Fatalf("%s: %d alerts and %d recording rules", prometheusRules, alerts, len(recorded))
	}

	named := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			named[n] = true
		}
		for _, n := range recordedName.FindAllString(e, -1) {
			if !recorded[n] {
				t.Errorf("%q uses the recording rule %s, which %s does not define", e, n, prometheusRules)
			}
		}
	}

	queue := os.Getenv("BW_TEST_NATS")
	c := clustertest.New(t, clustertest.Options{})
	s := c.AddSpawn(func(cfg *spawnapp.Settings) { cfg.Queue = queue })
	c.WaitNodes(1)
	u, err := c.Client.CreateUser(c.Ctx, api.UserCreate{Name: "metrics"})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := c.Client.CreateCrawler(c.Ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{c.FeedURL("news")}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running", func() bool {
		got, err := c.Client.GetCrawler(c.Ctx, cr.ID)
		return err == nil && got.State == api.StateRunning
	})
	exported := scrape(t, c.Hub.URL()+"/metrics")
	for n := range scrape(t, s.URL()+"/metrics") {
		exported[n] = true
	}

	var missing []string
	for n := range named {
		if exported[n] {
			continue
		}
		if queue == "" && strings.HasPrefix(n, "bw_spawn_queue_") {
			t.Logf("%s not checked: BW_TEST_NATS is not set, so the spawn runs without a queue", n)
			continue
		}
		missing = append(missing, n)
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("the dashboard or the rules name metrics neither server exports: %s", strings.Join(missing, ", "))
	}
	t.Logf("%d metric names checked in %d expressions", len(named), len(exprs))
}
