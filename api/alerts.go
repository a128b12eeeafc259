package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Paths of the alert rules.
const (
	PathAlerts       = "/v1/alerts"
	PathAlert        = "/v1/alerts/{id}"
	PathAlertTest    = "/v1/alerts/{id}/test"
	PathAlertEvents  = "/v1/alerts/{id}/events"
	PathAlertPreview = "/v1/alerts/preview"
)

// Alert kinds.
const (
	// AlertSpike fires when comments per minute are far above what the
	// recent past and the same hour of earlier days lead one to expect.
	AlertSpike = "spike"
	// AlertTerm fires when a term rises into the crawler's top terms far
	// above its own baseline.
	AlertTerm = "term"
	// AlertMatch fires for new comments matching the rule's query, a batch
	// at a time.
	AlertMatch = "match"
	// AlertSentiment fires once when the share of negative comments rises
	// far above what the last hours lead one to expect (a crisis).
	AlertSentiment = "sentiment"
)

// AlertKinds lists the kinds.
var AlertKinds = []string{AlertSpike, AlertTerm, AlertMatch, AlertSentiment}

// Alert channels.
const (
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
	ChannelEmail   = "email"
)

// Alert delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Headers of a webhook delivery.
const (
	// HeaderSignature is "sha256=<hex HMAC-SHA256 of the body with the
	// rule's secret>" (only when the rule has a secret).
	HeaderSignature = "X-BW-Signature"
	// HeaderDelivery is the delivery's id, the same on every retry: a
	// receiver that has seen it already has the alert.
	HeaderDelivery = "X-BW-Delivery"
)

// Sign is the X-BW-Signature of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// AlertRuleCreate is the body of POST /v1/alerts: a rule on a crawler or a
// user, and exactly one of Webhook (with an optional Secret that signs
// each delivery), Slack (an incoming-webhook URL) and Email.
type AlertRuleCreate struct {
	CrawlerID   int64  `json:"crawler_id,omitempty"`
	UserID      int64  `json:"user_id,omitempty"`
	Kind        string `json:"kind"`
	Query       string `json:"query,omitempty"`
	Sensitivity string `json:"sensitivity,omitempty"`
	Webhook     string `json:"webhook,omitempty"`
	Secret      string `json:"secret,omitempty"`
	Slack       string `json:"slack,omitempty"`
	Email       string `json:"email,omitempty"`
}

// AlertRule is a stored rule. Target is where it delivers, with secrets
// cut out (a Slack URL's token path, a URL's query); the secret itself is
// never shown: Signed says whether there is one.
type AlertRule struct {
	ID          int64     `json:"id"`
	CrawlerID   *int64    `json:"crawler_id"`
	UserID      *int64    `json:"user_id"`
	Kind        string    `json:"kind"`
	Query       string    `json:"query,omitempty"`
	Sensitivity string    `json:"sensitivity"`
	Channel     string    `json:"channel"`
	Target      string    `json:"target"`
	Signed      bool      `json:"signed"`
	CreatedAt   time.Time `json:"created_at"`
}

// AlertSample is one comment an alert shows.
type AlertSample struct {
	ID          string    `json:"id"`
	CrawlerID   int64     `json:"crawler_id"`
	Author      string    `json:"author,omitempty"`
	Text        string    `json:"text"`
	URL         string    `json:"url,omitempty"`
	PublishedAt time.Time `json:"published_at"`
}

// AlertWebhook is the JSON body a webhook receives. For a spike, Observed
// is the comments of the minute that fired and Expected what the detector
// expected; for a term, the term's count in the last hours and its
// baseline; for a match, the comments matched in the batch and 0.
type AlertWebhook struct {
	AlertID   int64         `json:"alert_id"`
	RuleID    int64         `json:"rule_id"`
	Kind      string        `json:"kind"`
	CrawlerID *int64        `json:"crawler_id"`
	UserID    *int64        `json:"user_id"`
	At        time.Time     `json:"at"`
	Observed  float64       `json:"observed"`
	Expected  float64       `json:"expected"`
	TopTerms  []TermCount   `json:"top_terms"`
	Sample    []AlertSample `json:"sample"`
	// Test marks an alert sent by POST /v1/alerts/{id}/test.
	Test bool `json:"test,omitempty"`
}

// AlertDelivery is the state of one alert's delivery.
type AlertDelivery struct {
	ID            string     `json:"id"`
	Channel       string     `json:"channel"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// AlertEvent is an alert a rule fired, with its deliveries.
type AlertEvent struct {
	ID         int64           `json:"id"`
	RuleID     int64           `json:"rule_id"`
	Kind       string          `json:"kind"`
	CrawlerID  *int64          `json:"crawler_id"`
	UserID     *int64          `json:"user_id"`
	At         time.Time       `json:"at"`
	Observed   float64         `json:"observed"`
	Expected   float64         `json:"expected"`
	TopTerms   []TermCount     `json:"top_terms"`
	Sample     []AlertSample   `json:"sample"`
	Test       bool            `json:"test,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	Deliveries []AlertDelivery `json:"deliveries"`
}

// BacktestAlert is one step a detector fired at.
type BacktestAlert struct {
	At       time.Time `json:"at"`
	Observed float64   `json:"observed"`
	Expected float64   `json:"expected"`
}

// Backtest is what a detector would have fired: bwctl alert backtest's
// document, and the answer of POST /v1/alerts/preview.
type Backtest struct {
	Alerts []BacktestAlert `json:"alerts"`
}

// AlertPreview is the body of POST /v1/alerts/preview: a spike rule not yet
// stored, run over its crawler's or user's stored activity.
type AlertPreview struct {
	CrawlerID   int64  `json:"crawler_id,omitempty"`
	UserID      int64  `json:"user_id,omitempty"`
	Kind        string `json:"kind"`
	Sensitivity string `json:"sensitivity,omitempty"`
}

// AlertPreviewResult is the answer of POST /v1/alerts/preview: the alerts
// the rule would have fired over [Since, Until).
type AlertPreviewResult struct {
	Since  time.Time       `json:"since"`
	Until  time.Time       `json:"until"`
	Alerts []BacktestAlert `json:"alerts"`
}

// CreateAlertRule adds a rule (POST /v1/alerts).
func (c *Client) CreateAlertRule(ctx context.Context, in AlertRuleCreate) (AlertRule, error) {
	var out AlertRule
	err := c.do(ctx, http.MethodPost, PathAlerts, nil, in, &out)
	return out, err
}

// ListAlertRules lists the rules (GET /v1/alerts).
func (c *Client) ListAlertRules(ctx context.Context) ([]AlertRule, error) {
	var out []AlertRule
	if err := c.do(ctx, http.MethodGet, PathAlerts, nil, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// GetAlertRule reads a rule (GET /v1/alerts/{id}).
func (c *Client) GetAlertRule(ctx context.Context, id int64) (AlertRule, error) {
	var out AlertRule
	err := c.do(ctx, http.MethodGet, pathWithID(PathAlert, id), nil, nil, &out)
	return out, err
}

// DeleteAlertRule removes a rule with its alerts (DELETE /v1/alerts/{id}).
func (c *Client) DeleteAlertRule(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, pathWithID(PathAlert, id), nil, nil, nil)
}

// TestAlertRule sends a test alert through a rule's channel once and
// answers it with its delivery's state (POST /v1/alerts/{id}/test).
func (c *Client) TestAlertRule(ctx context.Context, id int64) (AlertEvent, error) {
	var out AlertEvent
	err := c.do(ctx, http.MethodPost, pathWithID(PathAlertTest, id), nil, struct{}{}, &out)
	return out, err
}

// AlertEvents lists a rule's latest alerts, newest first (GET
// /v1/alerts/{id}/events); n 0 leaves the count to the hub.
func (c *Client) AlertEvents(ctx context.Context, id int64, n int) ([]AlertEvent, error) {
	var q url.Values
	if n > 0 {
		q = url.Values{"n": {strconv.Itoa(n)}}
	}
	var out []AlertEvent
	if err := c.do(ctx, http.MethodGet, pathWithID(PathAlertEvents, id), q, nil, &out); err != nil {
		return nil, err
	}
	return orEmpty(out), nil
}

// PreviewAlertRule runs a spike rule over stored activity (POST
// /v1/alerts/preview).
func (c *Client) PreviewAlertRule(ctx context.Context, in AlertPreview) (AlertPreviewResult, error) {
	var out AlertPreviewResult
	err := c.do(ctx, http.MethodPost, PathAlertPreview, nil, in, &out)
	out.Alerts = orEmpty(out.Alerts)
	return out, err
}
