package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// alertCommands are the alert verbs, in the order bwctl help shows them.
var alertCommands = []*command{
	{words: []string{"alert", "add"}, opts: "(--crawler ID | --user ID) --kind spike|term|match [--query Q] [--sensitivity low|medium|high] (--webhook URL [--secret S] | --slack URL | --email ADDR)",
		flags: []string{"crawler", "user", "kind", "query", "sensitivity", "webhook", "secret", "slack", "email"},
		help:  "add an alert rule: spikes in comments per minute, rising terms, or comments matching Q", run: alertAdd},
	{words: []string{"alert", "list"}, help: "list alert rules", run: alertList},
	{words: []string{"alert", "show"}, args: []string{"ID"}, help: "show an alert rule and its latest alerts", run: alertShow},
	{words: []string{"alert", "delete"}, args: []string{"ID"}, help: "delete an alert rule and its alerts",
		run: deleteByID("alert rule", func(c *cli, id int64) error { return c.client.DeleteAlertRule(c.ctx, id) })},
	{words: []string{"alert", "test"}, args: []string{"ID"}, help: "send a test alert through a rule's channel once", run: alertTest},
	{words: []string{"alert", "events"}, args: []string{"ID"}, opts: "[--n N]", flags: []string{"n"}, help: "a rule's latest alerts and their deliveries", run: alertEvents},
	{words: []string{"alert", "backtest"}, opts: "--csv FILE [--kind spike] [--sensitivity S]", flags: []string{"csv", "kind", "sensitivity"},
		help: "run the spike detector over a timestamp,value CSV here (no hub needed)", run: alertBacktest},
}

func alertAdd(c *cli, _ []string, l line) error {
	var in api.AlertRuleCreate
	switch {
	case l.has("crawler") && l.has("user"):
		return usagef("alert add takes --crawler or --user, not both")
	case l.has("crawler"):
		id, err := parseID("--crawler", l.flags["crawler"])
		if err != nil {
			return err
		}
		in.CrawlerID = id
	case l.has("user"):
		id, err := parseID("--user", l.flags["user"])
		if err != nil {
			return err
		}
		in.UserID = id
	default:
		return usagef("alert add needs --crawler ID or --user ID")
	}
	in.Kind = strings.ToLower(strings.TrimSpace(l.flags["kind"]))
	if !slices.Contains(api.AlertKinds, in.Kind) {
		return usagef("--kind must be spike, term or match, got %s", quote(l.flags["kind"]))
	}
	in.Query = l.flags["query"]
	if in.Kind == api.AlertMatch && strings.TrimSpace(in.Query) == "" {
		return usagef("a match rule needs --query")
	}
	if l.has("sensitivity") {
		in.Sensitivity = strings.ToLower(strings.TrimSpace(l.flags["sensitivity"]))
		if !slices.Contains(spike.Sensitivities, in.Sensitivity) {
			return usagef("--sensitivity must be low, medium or high, got %s", quote(l.flags["sensitivity"]))
		}
	}
	n := 0
	for _, f := range []string{"webhook", "slack", "email"} {
		if l.has(f) {
			n++
		}
	}
	if n != 1 {
		return usagef("alert add needs exactly one of --webhook URL, --slack URL and --email ADDR")
	}
	if l.has("secret") && !l.has("webhook") {
		return usagef("--secret signs --webhook deliveries only")
	}
	in.Webhook, in.Secret, in.Slack, in.Email = l.flags["webhook"], l.flags["secret"], l.flags["slack"], l.flags["email"]
	r, err := c.client.CreateAlertRule(c.ctx, in)
	if err != nil {
		return err
	}
	return c.showAlertRule(r, nil)
}

func alertList(c *cli, _ []string, _ line) error {
	rules, err := c.client.ListAlertRules(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, rules)
	}
	rows := make([][]string, 0, len(rules))
	for _, r := range rules {
		rows = append(rows, []string{itoa(r.ID), ruleOn(r), r.Kind, r.Sensitivity, orDash(truncate(r.Query, maxQueryColumn)), r.Channel, r.Target})
	}
	return printTable(c.out, []string{"ID", "ON", "KIND", "SENSITIVITY", "QUERY", "CHANNEL", "TARGET"}, rows)
}

// ruleOn says what a rule watches: "crawler 7" or "user 2".
func ruleOn(r api.AlertRule) string {
	if r.CrawlerID != nil {
		return "crawler " + itoa(*r.CrawlerID)
	}
	if r.UserID != nil {
		return "user " + itoa(*r.UserID)
	}
	return "-"
}

func alertShow(c *cli, args []string, _ line) error {
	id, err := parseID("alert rule ID", args[0])
	if err != nil {
		return err
	}
	r, err := c.client.GetAlertRule(c.ctx, id)
	if err != nil {
		return err
	}
	events, err := c.client.AlertEvents(c.ctx, id, 10)
	if err != nil {
		return err
	}
	return c.showAlertRule(r, events)
}

func (c *cli) showAlertRule(r api.AlertRule, events []api.AlertEvent) error {
	if c.json {
		if events == nil {
			return printJSON(c.out, r)
		}
		return printJSON(c.out, struct {
			api.AlertRule
			Events []api.AlertEvent `json:"events"`
		}{r, events})
	}
	kv := [][2]string{
		{"id", itoa(r.ID)},
		{"on", ruleOn(r)},
		{"kind", r.Kind},
		{"sensitivity", r.Sensitivity},
	}
	if r.Query != "" {
		kv = append(kv, [2]string{"query", r.Query})
	}
	kv = append(kv, [][2]string{
		{"channel", r.Channel},
		{"target", r.Target},
		{"signed", strconv.FormatBool(r.Signed)},
		{"created_at", timeText(r.CreatedAt)},
	}...)
	if err := printKV(c.out, kv); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	fmt.Fprintln(c.out)
	return printEvents(c, events)
}

func printEvents(c *cli, events []api.AlertEvent) error {
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		state, attempts := "-", "0"
		if len(e.Deliveries) > 0 {
			d := e.Deliveries[0]
			state, attempts = d.State, strconv.Itoa(d.Attempts)
			if d.LastError != "" && d.State != api.DeliveryDelivered {
				state += ": " + d.LastError
			}
		}
		kind := e.Kind
		if e.Test {
			kind += " (test)"
		}
		rows = append(rows, []string{itoa(e.ID), timeText(e.At), kind, num(e.Observed), num(e.Expected), attempts, state})
	}
	return printTable(c.out, []string{"ALERT", "AT", "KIND", "OBSERVED", "EXPECTED", "ATTEMPTS", "DELIVERY"}, rows)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func alertTest(c *cli, args []string, _ line) error {
	id, err := parseID("alert rule ID", args[0])
	if err != nil {
		return err
	}
	ev, err := c.client.TestAlertRule(c.ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		if err := printJSON(c.out, ev); err != nil {
			return err
		}
	} else if err := printEvents(c, []api.AlertEvent{ev}); err != nil {
		return err
	}
	for _, d := range ev.Deliveries {
		if d.State != api.DeliveryDelivered {
			return fmt.Errorf("the test alert was not delivered: %s", orDash(d.LastError))
		}
	}
	return nil
}

func alertEvents(c *cli, args []string, l line) error {
	id, err := parseID("alert rule ID", args[0])
	if err != nil {
		return err
	}
	n := 0
	if l.has("n") {
		if n, err = strconv.Atoi(l.flags["n"]); err != nil || n <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(l.flags["n"]))
		}
	}
	events, err := c.client.AlertEvents(c.ctx, id, n)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, events)
	}
	return printEvents(c, events)
}

// alertBacktest runs the hub's spike detector over a CSV file in this
// process: what a rule would have fired on that series.
func alertBacktest(c *cli, _ []string, l line) error {
	if !l.has("csv") {
		return usagef("alert backtest needs --csv FILE")
	}
	if k := l.flags["kind"]; l.has("kind") && k != api.AlertSpike {
		return usagef("alert backtest runs spike rules only (--kind spike), got %s", quote(k))
	}
	sens := spike.DefaultSensitivity
	if l.has("sensitivity") {
		sens = strings.ToLower(strings.TrimSpace(l.flags["sensitivity"]))
		if !slices.Contains(spike.Sensitivities, sens) {
			return usagef("--sensitivity must be low, medium or high, got %s", quote(l.flags["sensitivity"]))
		}
	}
	f, err := os.Open(l.flags["csv"])
	if err != nil {
		return fmt.Errorf("unable to read the CSV: %w", err)
	}
	defer f.Close()
	points, err := spike.ReadCSV(f)
	if err != nil {
		return fmt.Errorf("%s: %s", l.flags["csv"], strings.TrimPrefix(err.Error(), spike.ErrInvalid.Error()+": "))
	}
	alerts, err := spike.Run(spike.Config{Sensitivity: sens}, points)
	if err != nil {
		return err
	}
	out := api.Backtest{Alerts: make([]api.BacktestAlert, len(alerts))}
	for i, a := range alerts {
		out.Alerts[i] = api.BacktestAlert{At: a.At.UTC(), Observed: a.Observed, Expected: float64(int64(a.Expected*100+0.5)) / 100}
	}
	if c.json {
		return printJSON(c.out, out)
	}
	rows := make([][]string, 0, len(out.Alerts))
	for _, a := range out.Alerts {
		rows = append(rows, []string{a.At.Format(time.RFC3339), num(a.Observed), num(a.Expected)})
	}
	fmt.Fprintf(c.out, "%d rows, %d alerts at sensitivity %s\n", len(points), len(out.Alerts), sens)
	if len(rows) == 0 {
		return nil
	}
	return printTable(c.out, []string{"AT", "OBSERVED", "EXPECTED"}, rows)
}
