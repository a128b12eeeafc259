package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// backtestCSV writes a series: a day and 90 minutes at 2 comments (a day
// is the detector's warm-up), 60 at 2025-03-03 10:10, in NAB's timestamp
// form.
func backtestCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	start := time.Date(2025, 3, 2, 9, 0, 0, 0, time.UTC)
	for i := range 24*60 + 90 {
		v := 2
		if i == 24*60+70 {
			v = 60
		}
		fmt.Fprintf(&b, "%s,%d\n", start.Add(time.Duration(i)*time.Minute).Format("2006-01-02 15:04:05"), v)
	}
	p := filepath.Join(t.TempDir(), "series.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAlertBacktest_PrintsTheAlertsOfTheHubsDetector(t *testing.T) {
	var out, errb bytes.Buffer
	// No hub runs: the detector runs in bwctl.
	code := run(context.Background(), []string{"alert", "backtest", "--csv", backtestCSV(t), "--json", "--hub", "http://127.0.0.1:1"}, &out, &errb, nil)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	alerts := doc["alerts"]
	// Read off the series: the only spike is 60 at 10:10, where the last
	// hour was a flat 2 a minute.
	if len(alerts) != 1 || alerts[0]["at"] != "2025-03-03T10:10:00Z" || alerts[0]["observed"] != 60.0 || alerts[0]["expected"] != 2.0 {
		t.Fatalf("backtest = %s, want one alert at 10:10: observed 60, expected 2", out.String())
	}
	// Low sensitivity's minimum volume is 20: still one; a table without --json.
	out.Reset()
	if code := run(context.Background(), []string{"alert", "backtest", "--csv", backtestCSV(t), "--sensitivity", "low"}, &out, &errb, nil); code != exitOK ||
		!strings.Contains(out.String(), "1530 rows, 1 alerts at sensitivity low") {
		t.Fatalf("exit %d: %q %q", code, out.String(), errb.String())
	}
}

func TestAlertBacktest_BadInputIsOneLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("timestamp,value\n2025-03-03 09:00:00,1\nnot a time,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"alert", "backtest"}, exitUsage, "needs --csv"},
		{[]string{"alert", "backtest", "--csv", bad, "--kind", "term"}, exitUsage, "--kind must be one of spike"},
		{[]string{"alert", "backtest", "--csv", bad, "--sensitivity", "extreme"}, exitUsage, "--sensitivity must be"},
		{[]string{"alert", "backtest", "--csv", bad}, exitFail, `line 3: timestamp "not a time"`},
		{[]string{"alert", "backtest", "--csv", filepath.Join(t.TempDir(), "none.csv")}, exitFail, "unable to read the CSV"},
		{[]string{"alert", "add", "--crawler", "1", "--kind", "spike"}, exitUsage, "exactly one of --webhook, --slack or --email"},
		{[]string{"alert", "add", "--crawler", "1", "--user", "2", "--kind", "spike", "--slack", "https://x"}, exitUsage, "exactly one of --crawler or --user"},
		{[]string{"alert", "add", "--crawler", "1", "--kind", "match", "--webhook", "https://x"}, exitUsage, "needs --query"},
		{[]string{"alert", "add", "--crawler", "1", "--kind", "sentiment", "--query", "golang", "--webhook", "https://x"}, exitUsage, "a sentiment rule takes no --query"},
		{[]string{"alert", "add", "--crawler", "1", "--kind", "spike", "--slack", "https://x", "--secret", "s"}, exitUsage, "signs --webhook"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, &out, &errb, nil)
		if code != tt.code || !strings.Contains(errb.String(), tt.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("bwctl %s: exit %d, %q; want exit %d and one line saying %q", strings.Join(tt.args, " "), code, errb.String(), tt.code, tt.want)
		}
	}
}
