package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// alertCommands are the alert verbs, in the order bwctl help shows them.
func alertCommands() []*command {
	sensitivity := flagSpec{name: "sensitivity", choices: spike.Sensitivities, usage: "how far above the expected a minute (spike) or the negative share (sentiment) must be", def: spike.DefaultSensitivity}
	return []*command{
		{name: "alert add", help: "add an alert rule: spikes in comments per minute, rising terms, comments matching Q, or a crisis (the negative share far above the usual)", run: alertAdd,
			flags: []flagSpec{
				{name: "crawler", arg: "ID", group: "on", required: true, usage: "the crawler the rule watches"},
				{name: "user", arg: "ID", group: "on", required: true, usage: "the user whose crawlers the rule watches, together"},
				{name: "kind", choices: api.AlertKinds, required: true, usage: "spike: comments per minute far above the expected; term: a term rising into the top terms; match: comments matching --query; sentiment: the share of negative comments far above the usual (a crisis)"},
				{name: "query", arg: "Q", usage: "the query a match rule's comments match, in the query language"},
				sensitivity,
				{name: "webhook", arg: "URL", group: "channel", required: true, usage: "POST each alert as JSON to URL"},
				{name: "slack", arg: "URL", group: "channel", required: true, usage: "a Slack incoming webhook URL"},
				{name: "email", arg: "ADDR", group: "channel", required: true, usage: "send each alert by e-mail to ADDR (the hub's SMTP settings)"},
				{name: "secret", arg: "S", usage: "sign webhook deliveries: X-BW-Signature: sha256=<HMAC-SHA256 of the body>"},
			}},
		{name: "alert list", help: "list alert rules", run: alertList},
		{name: "alert show", args: []string{"ID"}, help: "show an alert rule and its latest alerts", run: alertShow},
		{name: "alert delete", args: []string{"ID"}, help: "delete an alert rule and its alerts",
			run: deleteByID("alert rule", func(c *cli, id int64) error { return c.client.DeleteAlertRule(c.ctx, id) })},
		{name: "alert test", args: []string{"ID"}, help: "send a test alert through a rule's channel once", run: alertTest},
		{name: "alert events", args: []string{"ID"}, help: "a rule's latest alerts and their deliveries", run: alertEvents,
			flags: []flagSpec{{name: "n", arg: "N", usage: "how many alerts, newest first", def: "10"}}},
		{name: "alert backtest", local: true, help: "run the spike detector over a timestamp,value CSV here (no hub needed)", run: alertBacktest,
			flags: []flagSpec{
				{name: "csv", arg: "FILE", required: true, usage: "a CSV with a header row: timestamp (RFC 3339 or YYYY-MM-DD HH:MM:SS, UTC),value"},
				{name: "kind", choices: []string{api.AlertSpike}, usage: "the rule kind to run (spike)", def: api.AlertSpike},
				sensitivity,
			}},
	}
}

func alertAdd(c *cli, in *input) error {
	// One of --crawler and --user, one channel and a --kind among its
	// choices: the parser checked.
	var req api.AlertRuleCreate
	var err error
	if in.has("crawler") {
		req.CrawlerID, err = parseID("--crawler", in.value("crawler"))
	} else {
		req.UserID, err = parseID("--user", in.value("user"))
	}
	if err != nil {
		return err
	}
	req.Kind = strings.ToLower(in.value("kind"))
	req.Query = in.value("query")
	if req.Kind == api.AlertMatch && strings.TrimSpace(req.Query) == "" {
		return usagef("a match rule needs --query")
	}
	if req.Kind != api.AlertMatch && in.has("query") {
		return usagef("a %s rule takes no --query: only a match rule does (a %s rule watches every comment)", req.Kind, req.Kind)
	}
	if in.has("sensitivity") {
		req.Sensitivity = strings.ToLower(in.value("sensitivity"))
	}
	if in.has("secret") && !in.has("webhook") {
		return usagef("--secret signs --webhook deliveries only")
	}
	req.Webhook, req.Secret, req.Slack, req.Email = in.value("webhook"), in.value("secret"), in.value("slack"), in.value("email")
	r, err := c.client.CreateAlertRule(c.ctx, req)
	if err != nil {
		return err
	}
	return c.showAlertRule(r, nil)
}

func alertList(c *cli, _ *input) error {
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

func alertShow(c *cli, in *input) error {
	id, err := parseID("alert rule ID", in.args[0])
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
		observed, expected := num(e.Observed), num(e.Expected)
		if e.Kind == api.AlertSentiment {
			// Shares of negative comments.
			observed, expected = percent(e.Observed), percent(e.Expected)
		}
		rows = append(rows, []string{itoa(e.ID), timeText(e.At), kind, observed, expected, attempts, state})
	}
	return printTable(c.out, []string{"ALERT", "AT", "KIND", "OBSERVED", "EXPECTED", "ATTEMPTS", "DELIVERY"}, rows)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// percent prints a share (0 to 1) as a whole percent.
func percent(v float64) string { return strconv.FormatFloat(math.Round(v*100), 'f', 0, 64) + "%" }

func alertTest(c *cli, in *input) error {
	id, err := parseID("alert rule ID", in.args[0])
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

func alertEvents(c *cli, in *input) error {
	id, err := parseID("alert rule ID", in.args[0])
	if err != nil {
		return err
	}
	n := 0
	if in.has("n") {
		if n, err = strconv.Atoi(in.value("n")); err != nil || n <= 0 {
			return usagef("--n must be a positive integer, got %s", quote(in.value("n")))
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
func alertBacktest(c *cli, in *input) error {
	// --csv is required and --kind can only be spike: the parser checked.
	sens := spike.DefaultSensitivity
	if in.has("sensitivity") {
		sens = strings.ToLower(in.value("sensitivity"))
	}
	f, err := os.Open(in.value("csv"))
	if err != nil {
		return fmt.Errorf("unable to read the CSV: %w", err)
	}
	defer f.Close()
	points, err := spike.ReadCSV(f)
	if err != nil {
		return fmt.Errorf("%s: %s", in.value("csv"), strings.TrimPrefix(err.Error(), spike.ErrInvalid.Error()+": "))
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
