package e2e

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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/slackhook"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// alertWait bounds the wait for an alert: the burst's minute ends, the
// leader evaluates it 10 s later, and the delivery is retried.
const alertWait = 4 * time.Minute

// hookReceiver is a webhook endpoint the tests control: it records every
// request and answers with what answer says for the n-th one (1-based).
type hookReceiver struct {
	srv    *httptest.Server
	answer func(n int, w http.ResponseWriter)

	mu   sync.Mutex
	reqs []hookRequest
	got  chan struct{}
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *hookReceiver {
	h := &hookReceiver{answer: answer, got: make(chan struct{}, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{header: r.Header.Clone(), body: b})
		n := len(h.reqs)
		h.mu.Unlock()
		h.got <- struct{}{}
		h.answer(n, w)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.reqs...)
}

// backdate makes a crawler look created a day ago, so the leader seeds and
// replays a day of its (quiet) hours and minutes into the spike detector
// instead of waiting out the detector's day of warm-up.
func backdate(t *testing.T, dsn string, crawlerID int64) {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: gormlogger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	if err := db.Exec("UPDATE crawlers SET created_at = created_at - interval '26 hours' WHERE id = ?", crawlerID).Error; err != nil {
		t.Fatal(err)
	}
}

// bwctl runs the built bwctl and decodes its --json output into out.
func bwctl(t *testing.T, bin string, env []string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "bwctl"), append(args, "--json")...)
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("bwctl %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("bwctl %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
}

// alertSetup starts hubs (sharing a fresh PostgreSQL database), a spawn, a
// feed server and a crawler on a quiet feed, and returns what the tests
// need.
type alertSetup struct {
	bin, dsn string
	env      []string
	urls     []string
	hubs     []*proc
	feeds    *feedserver.Server
	feedBase string
	client   *api.Client
	crawler  api.Crawler
}

func newAlertSetup(t *testing.T, hubs int, hubArgs ...string) *alertSetup {
	s := &alertSetup{bin: binDir(t), dsn: freshPostgres(t)}
	s.env = []string{"BW_NODE_TOKEN=alerts-node-token", "BW_ADMIN_TOKEN=alerts-admin-token"}
	var feedBase string
	s.feeds, feedBase = feedserver.Start(t, feedserver.Options{MaxItems: 500})
	s.feedBase = feedBase
	for i := range hubs {
		addr := testkit.FreeAddr(t)
		s.urls = append(s.urls, "http://"+addr)
		args := append([]string{"--listen", addr, "--db", s.dsn, "--allow-targets", "127.0.0.0/8"}, hubArgs...)
		s.hubs = append(s.hubs, startProc(t, s.env, filepath.Join(s.bin, "hub"), args...))
		role := api.RoleLeader
		if i > 0 {
			role = api.RoleStandby
		}
		waitRole(t, fmt.Sprintf("hub %d is %s", i, role), s.urls[i], role, "")
	}
	startProc(t, s.env, filepath.Join(s.bin, "spawn"), "--hub", strings.Join(s.urls, ","), "--store", "file://"+filepath.Join(t.TempDir(), "data"),
		"--allow-targets", "127.0.0.0/8", "--feed-interval", "500ms")
	s.client = api.NewClient(strings.Join(s.urls, ","), "alerts-admin-token", nil)
	ctx := context.Background()
	u, err := s.client.CreateUser(ctx, api.UserCreate{Name: "newsroom"})
	if err != nil {
		t.Fatal(err)
	}
	s.crawler, err = s.client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/alerts.xml"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, failoverWait, "the crawler running", func() bool {
		c, err := s.client.GetCrawler(ctx, s.crawler.ID)
		return err == nil && c.State == api.StateRunning
	})
	backdate(t, s.dsn, s.crawler.ID)
	return s
}

// bwctlEnv is the environment bwctl runs with.
func (s *alertSetup) bwctlEnv() []string {
	return []string{"BW_HUB_URL=" + strings.Join(s.urls, ","), "BW_ADMIN_TOKEN=alerts-admin-token", "PATH=/usr/bin:/bin"}
}

// addRule adds a rule with the built bwctl and returns its id.
func (s *alertSetup) addRule(t *testing.T, args ...string) int64 {
	var out struct {
		ID int64 `json:"id"`
	}
	bwctl(t, s.bin, s.bwctlEnv(), &out, append([]string{"alert", "add", "--crawler", strconv.FormatInt(s.crawler.ID, 10)}, args...)...)
	if out.ID <= 0 {
		t.Fatalf("alert add printed no id")
	}
	return out.ID
}

// burst publishes n items on the crawler's feed at once.
func (s *alertSetup) burst(n int) {
	for i := range n {
		s.feeds.Publish("alerts", feedserver.Item{Title: fmt.Sprintf("Breaking %d", i), Description: "the conversation moves"})
	}
}

// checkWebhook checks a delivery's headers and body against its rule.
func checkWebhook(t *testing.T, r hookRequest, secret string, ruleID, crawlerID int64) api.AlertWebhook {
	t.Helper()
	if got, want := r.header.Get(api.HeaderSignature), api.Sign(secret, r.body); got != want {
		t.Errorf("X-BW-Signature %q, want %q", got, want)
	}
	var w api.AlertWebhook
	if err := json.Unmarshal(r.body, &w); err != nil {
		t.Fatalf("webhook body: %v: %s", err, r.body)
	}
	if w.RuleID != ruleID || w.Kind != api.AlertSpike || w.CrawlerID == nil || *w.CrawlerID != crawlerID || w.UserID == nil ||
		w.Observed < 10 || w.Observed < 2*w.Expected || w.AlertID <= 0 || w.At.IsZero() {
		t.Errorf("webhook body = %s", r.body)
	}
	for _, field := range []string{"alert_id", "rule_id", "kind", "crawler_id", "user_id", "at", "observed", "expected", "top_terms", "sample"} {
		if !strings.Contains(string(r.body), `"`+field+`"`) {
			t.Errorf("webhook body lacks %q: %s", field, r.body)
		}
	}
	return w
}

// TestAlerts_SpikeWebhookFailsOnceAndIsRetriedUnderOneDeliveryID runs the
// built hub, spawn and bwctl: a burst of comments on a quiet crawler fires
// one spike alert; the webhook answers the first delivery 503 and the
// retry 200; both carry the same X-BW-Delivery and a valid signature.
func TestAlerts_SpikeWebhookFailsOnceAndIsRetriedUnderOneDeliveryID(t *testing.T) {
	s := newAlertSetup(t, 1, "--alert-retry-min", "1s")
	hook := newHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	const secret = "shared-secret"
	ruleID := s.addRule(t, "--kind", "spike", "--webhook", hook.srv.URL+"/bw", "--secret", secret)
	s.burst(60)
	start := time.Now()
	testkit.WaitFor(t, alertWait, "the first delivery and its retry", func() bool { return len(hook.requests()) >= 2 })
	t.Logf("burst to delivered retry: %s", time.Since(start).Round(time.Second))
	reqs := hook.requests()
	id := reqs[0].header.Get(api.HeaderDelivery)
	if id == "" || reqs[1].header.Get(api.HeaderDelivery) != id || string(reqs[0].body) != string(reqs[1].body) {
		t.Fatalf("deliveries %q and %q, want one id and one body", id, reqs[1].header.Get(api.HeaderDelivery))
	}
	checkWebhook(t, reqs[1], secret, ruleID, s.crawler.ID)
	var shown struct {
		api.AlertRule
		Events []api.AlertEvent `json:"events"`
	}
	testkit.WaitFor(t, 10*time.Second, "the delivery shown as delivered", func() bool {
		bwctl(t, s.bin, s.bwctlEnv(), &shown, "alert", "show", strconv.FormatInt(ruleID, 10))
		return len(shown.Events) == 1 && shown.Events[0].Deliveries[0].State == api.DeliveryDelivered
	})
	if d := shown.Events[0].Deliveries[0]; d.ID != id || d.Attempts != 2 {
		t.Fatalf("delivery as shown: %+v, want id %s after 2 attempts", d, id)
	}
	if strings.Contains(s.hubs[0].output(), secret) {
		t.Fatal("the webhook secret is in the hub's log")
	}
	// Nothing more arrives: one event, one alert.
	time.Sleep(2 * time.Second)
	if n := len(hook.requests()); n != 2 {
		t.Fatalf("%d webhook requests, want 2", n)
	}
}

// TestAlerts_LeaderKilledMidDeliveryStandbyDeliversOnceUnderTheSameID runs
// two hubs on one PostgreSQL database. The leader detects a spike and
// starts its delivery; the receiver holds that request while the leader
// is SIGKILLed. The standby takes over and delivers the alert once, under
// the same delivery id, and no other alert is sent.
func TestAlerts_LeaderKilledMidDeliveryStandbyDeliversOnceUnderTheSameID(t *testing.T) {
	s := newAlertSetup(t, 2)
	release := make(chan struct{})
	hook := newHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			<-release // the leader dies waiting for this answer
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	defer close(release)
	const secret = "failover-secret"
	ruleID := s.addRule(t, "--kind", "spike", "--webhook", hook.srv.URL+"/bw", "--secret", secret)
	s.burst(60)
	testkit.WaitFor(t, alertWait, "the leader's first delivery attempt", func() bool { return len(hook.requests()) >= 1 })
	if err := s.hubs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitRole(t, "the standby leads", s.urls[1], api.RoleLeader, "")
	testkit.WaitFor(t, time.Minute, "the standby's delivery", func() bool { return len(hook.requests()) >= 2 })
	t.Logf("leader killed mid-delivery: delivered by the new leader after %s", time.Since(killed).Round(100*time.Millisecond))
	reqs := hook.requests()
	id := reqs[0].header.Get(api.HeaderDelivery)
	if id == "" || reqs[1].header.Get(api.HeaderDelivery) != id {
		t.Fatalf("delivery ids %q then %q, want the same id", id, reqs[1].header.Get(api.HeaderDelivery))
	}
	checkWebhook(t, reqs[1], secret, ruleID, s.crawler.ID)
	var events []api.AlertEvent
	testkit.WaitFor(t, 10*time.Second, "the delivery recorded by the new leader", func() bool {
		bwctl(t, s.bin, s.bwctlEnv(), &events, "alert", "events", strconv.FormatInt(ruleID, 10))
		return len(events) == 1 && events[0].Deliveries[0].State == api.DeliveryDelivered
	})
	// The new leader evaluates the same minutes again: still one alert.
	time.Sleep(3 * time.Second)
	if n := len(hook.requests()); n != 2 {
		t.Fatalf("%d webhook requests, want 2 (the held one and the new leader's)", n)
	}
	bwctl(t, s.bin, s.bwctlEnv(), &events, "alert", "events", strconv.FormatInt(ruleID, 10))
	if len(events) != 1 || len(events[0].Deliveries) != 1 || events[0].Deliveries[0].ID != id {
		t.Fatalf("events after the failover: %+v", events)
	}
}

// mailpit is a Mailpit SMTP server of one test (scripts/mailpit.sh builds
// it): STARTTLS required, with a certificate the test signs, and AUTH with
// one user; its HTTP API reads back what it received.
type mailpit struct {
	smtp, api, caFile string
	proc              *proc
}

func startMailpit(t *testing.T, user, password string) *mailpit {
	t.Helper()
	bin := os.Getenv("BW_MAILPIT")
	if bin == "" {
		if os.Getenv("BW_REQUIRE_SERVICES") == "1" {
			t.Fatal("BW_MAILPIT is unset (eval \"$(scripts/mailpit.sh env)\") but BW_REQUIRE_SERVICES=1")
		}
		t.Skip("BW_MAILPIT is unset: eval \"$(scripts/mailpit.sh env)\"")
	}
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
	writeLoopbackCert(t, certFile, keyFile, caFile)
	auth := filepath.Join(dir, "auth")
	if err := os.WriteFile(auth, []byte(user+":"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &mailpit{smtp: testkit.FreeAddr(t), api: testkit.FreeAddr(t), caFile: caFile}
	m.proc = startProc(t, nil, bin, "--smtp", m.smtp, "--listen", m.api, "--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile,
		"--smtp-require-starttls", "--smtp-auth-file", auth, "--smtp-disable-rdns", "--disable-version-check",
		"--database", filepath.Join(dir, "mailpit.db"))
	testkit.WaitFor(t, 20*time.Second, "mailpit answering", func() bool {
		resp, err := http.Get("http://" + m.api + "/api/v1/messages")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return m
}

// mail is a message as Mailpit's API lists it, with its raw source.
type mail struct {
	ID      string
	Subject string
	To      []struct{ Address string }
	Raw     string
}

func (m *mailpit) messages(t *testing.T) []mail {
	t.Helper()
	resp, err := http.Get("http://" + m.api + "/api/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Messages []mail }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Messages {
		r, err := http.Get("http://" + m.api + "/api/v1/message/" + list.Messages[i].ID + "/raw")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		list.Messages[i].Raw = string(b)
	}
	return list.Messages
}

// writeLoopbackCert writes a CA and a server certificate for 127.0.0.1
// signed by it.
func writeLoopbackCert(t *testing.T, certFile, keyFile, caFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alerts test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", keyDER}, {caFile, "CERTIFICATE", caDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAlerts_SpikeReachesSlackAndEmail runs the built hub with an SMTP
// server (Mailpit, STARTTLS and AUTH, its password from a _FILE secret) and
// a local Slack incoming webhook: one burst fires one spike alert on each
// of two rules, a readable Slack message with the numbers and sample links
// and an e-mail through the real SMTP conversation. Bad rules are refused
// with one clear line and store nothing; with the SMTP server gone, an
// e-mail rule is refused.
func TestAlerts_SpikeReachesSlackAndEmail(t *testing.T) {
	const smtpPassword = "mail-s3cret-pass"
	mp := startMailpit(t, "alerts", smtpPassword)
	pwFile := filepath.Join(t.TempDir(), "smtp_password")
	if err := os.WriteFile(pwFile, []byte(smtpPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BW_SMTP_PASSWORD_FILE", pwFile) // inherited by the hub
	s := newAlertSetup(t, 1, "--smtp-server", mp.smtp, "--smtp-user", "alerts", "--smtp-from", "Black Widow <alerts@blackwidow.test>",
		"--smtp-ca", mp.caFile)
	slack := slackhook.Start(t)
	slackRule := s.addRule(t, "--kind", "spike", "--slack", slack.URL)
	mailRule := s.addRule(t, "--kind", "spike", "--sensitivity", "low", "--email", "newsroom@example.com")

	// Bad rules: one line on stderr, exit 1, nothing stored.
	env := s.bwctlEnv()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"alert", "add", "--crawler", "999999", "--kind", "spike", "--slack", slack.URL}, "crawler 999999 does not exist"},
		{[]string{"alert", "add", "--crawler", strconv.FormatInt(s.crawler.ID, 10), "--kind", "match", "--query", "(golang", "--slack", slack.URL}, `unclosed "("`},
		{[]string{"alert", "add", "--crawler", strconv.FormatInt(s.crawler.ID, 10), "--kind", "spike", "--webhook", "http://192.168.1.10/hook"}, "192.168.1.10 is private"},
		{[]string{"alert", "add", "--crawler", strconv.FormatInt(s.crawler.ID, 10), "--kind", "spike", "--webhook", "http://169.254.169.254/latest/meta-data"}, "link-local"},
	} {
		cmd := exec.Command(filepath.Join(s.bin, "bwctl"), tt.args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Errorf("bwctl %s: %v %q, want one line saying %q", strings.Join(tt.args, " "), err, out, tt.want)
		}
	}
	var rules []api.AlertRule
	bwctl(t, s.bin, env, &rules, "alert", "list")
	if len(rules) != 2 {
		t.Fatalf("%d rules stored, want the 2 good ones", len(rules))
	}
	for _, r := range rules {
		if strings.Contains(r.Target, "XXXXXXXX") {
			t.Errorf("alert list shows the Slack URL's token: %s", r.Target)
		}
	}

	s.burst(80)
	testkit.WaitFor(t, alertWait, "the Slack message and the e-mail", func() bool {
		return len(slack.Messages()) >= 1 && len(mp.messages(t)) >= 1
	})
	msg := slack.Messages()[0]
	if !strings.HasPrefix(msg.Text, "Spike on crawler "+strconv.FormatInt(s.crawler.ID, 10)+": ") || !strings.Contains(msg.Text, "comments in the minute from") ||
		len(msg.Blocks) < 2 || !strings.Contains(msg.Blocks[len(msg.Blocks)-1].Text.Text, "|open>") {
		t.Errorf("Slack message = %+v", msg)
	}
	mails := mp.messages(t)
	m := mails[0]
	if len(m.To) != 1 || m.To[0].Address != "newsroom@example.com" || !strings.HasPrefix(m.Subject, "[Black Widow] Spike on crawler") {
		t.Errorf("e-mail = %+v", m)
	}
	var events []api.AlertEvent
	bwctl(t, s.bin, env, &events, "alert", "events", strconv.FormatInt(mailRule, 10))
	if len(events) != 1 || !strings.Contains(m.Raw, "X-BW-Delivery: "+events[0].Deliveries[0].ID) || !strings.Contains(m.Raw, "Observed: ") {
		t.Errorf("e-mail source does not carry its delivery %+v:\n%s", events, m.Raw)
	}
	bwctl(t, s.bin, env, &events, "alert", "events", strconv.FormatInt(slackRule, 10))
	if len(events) != 1 || events[0].Deliveries[0].State != api.DeliveryDelivered {
		t.Errorf("Slack rule events = %+v", events)
	}

	// A test alert through the real SMTP server, then none once it is gone.
	var ev api.AlertEvent
	bwctl(t, s.bin, env, &ev, "alert", "test", strconv.FormatInt(mailRule, 10))
	if !ev.Test || ev.Deliveries[0].State != api.DeliveryDelivered {
		t.Fatalf("test alert = %+v", ev)
	}
	testkit.WaitFor(t, 10*time.Second, "the test e-mail", func() bool { return len(mp.messages(t)) == 2 })
	if err := mp.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = mp.proc.cmd.Wait()
	cmd := exec.Command(filepath.Join(s.bin, "bwctl"), "alert", "add", "--crawler", strconv.FormatInt(s.crawler.ID, 10), "--kind", "spike", "--email", "ops@example.com")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unable to reach the SMTP server "+mp.smtp) {
		t.Errorf("e-mail rule with the SMTP server gone: %v %q", err, out)
	}
	bwctl(t, s.bin, env, &rules, "alert", "list")
	if len(rules) != 2 {
		t.Fatalf("%d rules after the refusal, want 2", len(rules))
	}
	if strings.Contains(s.hubs[0].output(), smtpPassword) {
		t.Fatal("the SMTP password is in the hub's log")
	}
}
