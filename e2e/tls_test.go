package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/e2e/clustertest"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/feedserver"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// testPKI is a CA and certificates it signed, written as PEM files.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "blackwidow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{dir: t.TempDir(), ca: ca, caKey: key}
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for 127.0.0.1 good for serving and for client
// authentication (hubs and spawns are both), and returns its files.
func (p *testPKI) issue(t *testing.T, name string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", keyDER)
}

// TestTLS_HubSpawnAndBwctlOverTLS runs a hub and a spawn with certificates
// a test CA signed, the hub asking spawns for client certificates and the
// spawn asking the hub for one; bwctl reaches the hub with --ca. Plain
// HTTP reaches neither server, a registration without a client
// certificate is refused, and bwctl without the CA does not trust the hub.
func TestTLS_HubSpawnAndBwctlOverTLS(t *testing.T) {
	bin := binDir(t)
	pki := newTestPKI(t)
	hubCert, hubKey := pki.issue(t, "hub", 2)
	spawnCert, spawnKey := pki.issue(t, "spawn", 3)
	dir := t.TempDir()
	_, feedBase := feedserver.Start(t, feedserver.Options{})

	hubAddr := testkit.FreeAddr(t)
	hubURL := "https://" + hubAddr
	env := []string{"BW_NODE_TOKEN=tls-test-node-token", "BW_ADMIN_TOKEN=tls-test-admin-token"}
	startProc(t, env, filepath.Join(bin, "hub"), "--listen", hubAddr, "--db", "sqlite://"+filepath.Join(dir, "hub.db"),
		"--tls-cert", hubCert, "--tls-key", hubKey, "--client-ca", pki.caFile, "--poll-interval", "200ms")
	spawnAddr := testkit.FreeAddr(t)
	startProc(t, env, filepath.Join(bin, "spawn"), "--hub", hubURL, "--hub-ca", pki.caFile, "--listen", spawnAddr,
		"--tls-cert", spawnCert, "--tls-key", spawnKey, "--client-ca", pki.caFile,
		"--store", "file://"+filepath.Join(dir, "data"), "--allow-targets", "127.0.0.0/8", "--feed-interval", "100ms")

	bwctl := func(extra []string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "bwctl"), append(args, extra...)...)
		cmd.Env = append(os.Environ(), append(env, "BW_HUB_URL="+hubURL)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String(), fmt.Errorf("bwctl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String(), nil
	}
	withCA := []string{"--ca", pki.caFile}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn registered over TLS", func() bool {
		out, err := bwctl(withCA, "node", "list", "--json")
		var nodes []api.Node
		return err == nil && json.Unmarshal([]byte(out), &nodes) == nil && len(nodes) == 1 && strings.HasPrefix(nodes[0].URL, "https://")
	})
	out, err := bwctl(withCA, "user", "add", "tls", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var u api.User
	_ = json.Unmarshal([]byte(out), &u)
	out, err = bwctl(withCA, "crawler", "add", "--user", fmt.Sprint(u.ID), "--source", "rss", "--query", feedBase+"/feeds/tls.xml", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cr api.Crawler
	_ = json.Unmarshal([]byte(out), &cr)
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler running: the hub polls the spawn over mutual TLS", func() bool {
		out, err := bwctl(withCA, "crawler", "show", fmt.Sprint(cr.ID), "--json")
		var got api.Crawler
		return err == nil && json.Unmarshal([]byte(out), &got) == nil && got.State == api.StateRunning
	})

	// Plain HTTP is refused by both servers.
	for _, addr := range []string{hubAddr, spawnAddr} {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("plain HTTP to %s answered 200", addr)
			}
		}
	}
	if _, err := bwctl(nil, "node", "list", "--hub", "http://"+hubAddr); err == nil {
		t.Error("bwctl over plain HTTP to a TLS hub succeeded")
	}
	// Without the CA, bwctl does not trust the hub.
	if _, err := bwctl(nil, "node", "list"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("bwctl without --ca: %v, want a certificate error", err)
	}
	// A registration without a client certificate is refused.
	pool := x509.NewCertPool()
	pool.AddCert(pki.ca)
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodPost, hubURL+api.PathRegister, strings.NewReader(`{"node_id":"intruder","url":"https://127.0.0.1:1"}`))
	req.Header.Set("Authorization", "Bearer tls-test-node-token")
	resp, err := noCert.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("registration without a client certificate: %d, want 401", resp.StatusCode)
	}
	// Nor does the spawn take hub calls without one.
	resp, err = noCert.Post("https://"+spawnAddr+api.PathPoll, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a poll without a client certificate: %d, want 401", resp.StatusCode)
	}
}

// TestTLS_RefusesOpenStartWithoutTokens: a hub or spawn asked to listen on
// every interface without its tokens exits at once, unless --insecure.
func TestTLS_RefusesOpenStartWithoutTokens(t *testing.T) {
	bin := binDir(t)
	dir := t.TempDir()
	port := func() string {
		_, p, _ := net.SplitHostPort(testkit.FreeAddr(t))
		return p
	}
	cases := []struct {
		name string
		args []string
	}{
		{"hub", []string{"--listen", "0.0.0.0:" + port(), "--db", "sqlite://" + filepath.Join(dir, "open.db")}},
		{"spawn", []string{"--listen", "0.0.0.0:" + port(), "--hub", "http://127.0.0.1:1", "--store", "file://" + filepath.Join(dir, "data")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, tc.name), tc.args...)
			cmd.Env = append(os.Environ(), "BW_NODE_TOKEN=", "BW_ADMIN_TOKEN=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "refusing to serve without tokens") {
				t.Fatalf("%s on 0.0.0.0 without tokens: %v\n%s", tc.name, err, out)
			}
			p := startProc(t, []string{"BW_NODE_TOKEN=", "BW_ADMIN_TOKEN="}, filepath.Join(bin, tc.name), append(tc.args, "--insecure")...)
			testkit.WaitFor(t, clustertest.WaitTimeout, tc.name+" listening with --insecure", func() bool {
				return strings.Contains(p.output(), "listening")
			})
		})
	}
}

// spkiPin is Chromium's pin of a certificate: the base64 SHA-256 of its
// public key info, as --ignore-certificate-errors-spki-list takes it.
func spkiPin(t *testing.T, certFile string) string {
	t.Helper()
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("%s holds no PEM block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestTLS_DashboardInChromium serves the dashboard over HTTPS from a hub
// whose certificate a test CA signed, with a spawn on mutual TLS, and
// drives it in headless Chromium: the browser trusts exactly the hub's
// certificate (pinned by its public key, not by ignoring certificate
// errors), signs in, and shows the node, a running crawler and its
// comments, all read from the admin API over TLS. A browser without the
// pin refuses the page, and plain HTTP to the hub's port is not served.
func TestTLS_DashboardInChromium(t *testing.T) {
	pki := newTestPKI(t)
	hubCert, hubKey := pki.issue(t, "hub", 2)
	b := newChromeTab(t, chromedp.Flag("ignore-certificate-errors-spki-list", spkiPin(t, hubCert)))
	bin := binDir(t)
	spawnCert, spawnKey := pki.issue(t, "spawn", 3)
	dir := t.TempDir()
	feeds, feedBase := feedserver.Start(t, feedserver.Options{})
	feeds.Publish("tls", feedserver.Item{GUID: "tls-1", Title: "served over https", Published: time.Now()})

	hubAddr := testkit.FreeAddr(t)
	hubURL := "https://" + hubAddr
	env := []string{"BW_NODE_TOKEN=" + clustertest.NodeToken, "BW_ADMIN_TOKEN=" + clustertest.AdminToken}
	startProc(t, env, filepath.Join(bin, "hub"), "--listen", hubAddr, "--db", "sqlite://"+filepath.Join(dir, "hub.db"),
		"--tls-cert", hubCert, "--tls-key", hubKey, "--client-ca", pki.caFile, "--poll-interval", "200ms")
	startProc(t, env, filepath.Join(bin, "spawn"), "--hub", hubURL, "--hub-ca", pki.caFile, "--listen", testkit.FreeAddr(t),
		"--tls-cert", spawnCert, "--tls-key", spawnKey, "--client-ca", pki.caFile,
		"--store", "file://"+filepath.Join(dir, "data"), "--allow-targets", "127.0.0.0/8", "--feed-interval", "100ms")

	pool := x509.NewCertPool()
	pool.AddCert(pki.ca)
	client := api.NewClient(hubURL, clustertest.AdminToken, &http.Client{
		Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}})
	ctx := t.Context()
	testkit.WaitFor(t, clustertest.WaitTimeout, "the spawn registered over TLS", func() bool {
		nodes, err := client.ListNodes(ctx)
		return err == nil && len(nodes) == 1
	})
	u, err := client.CreateUser(ctx, api.UserCreate{Name: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := client.CreateCrawler(ctx, api.CrawlerCreate{UserID: u.ID, Source: api.SourceRSS, Query: []string{feedBase + "/feeds/tls.xml"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, clustertest.WaitTimeout, "the crawler's comment counted", func() bool {
		got, err := client.GetCrawler(ctx, cr.ID)
		return err == nil && got.Usage == 1
	})

	b.signIn(hubURL)
	if got := evalJS[string](b, `location.protocol`); got != "https:" {
		t.Fatalf("the dashboard was loaded over %q", got)
	}
	b.operate()
	b.waitDOM("the node listed", `document.querySelectorAll('#nodes tbody tr').length === 1 && document.querySelector('#nodes tbody').textContent.includes('https://')`)
	b.waitDOM("the crawler running", fmt.Sprintf(`(() => {
		const row = document.querySelector('#crawlers tr[data-crawler-id="%d"]');
		return !!row && row.textContent.includes('running');
	})()`, cr.ID))
	b.click(fmt.Sprintf(`#crawlers button[data-select-crawler="%d"]`, cr.ID))
	b.waitDOM("its comment", `Array.from(document.querySelectorAll('#comments .comment-text'), (p) => p.textContent).includes('served over https')`)

	// Without the pin the certificate is not trusted: the page does not load.
	plain := newChromeTab(t)
	if _, err := chromedp.Run(plain.ctx, chromedp.Navigate(hubURL+"/")); err == nil || !strings.Contains(err.Error(), "CERT") {
		t.Errorf("a browser without the test certificate opened the dashboard: %v", err)
	}
	// Plain HTTP to the hub's port gets no dashboard.
	resp, err := http.Get("http://" + hubAddr + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP to the TLS hub served the dashboard")
		}
	}
}
