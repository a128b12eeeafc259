package node

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// statusErr is an HTTP answer other than 2xx, as sources report one.
type statusErr struct{ code int }

func (e statusErr) Error() string   { return fmt.Sprintf("answered %d", e.code) }
func (e statusErr) HTTPStatus() int { return e.code }

// TestNode_UnreachableSourceIsDegradedWithTheReason gives a subscriber's
// data source the errors of a service it cannot reach, wrapped as sources
// wrap them: each shows as degraded, the error naming the reason first;
// a source that marks the failure lasting stays degraded when the cause
// is reaching the service, and fails when the service refused the
// credentials; a passing error about a message leaves it running; and it
// runs again once the source recovers.
func TestNode_UnreachableSourceIsDegradedWithTheReason(t *testing.T) {
	n, _, _ := attachedNode(t)
	_, _ = n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, "f")}})
	ds := n.table.sources["f"].ds.(*chanSource)
	fetch := func(err error) error {
		return fmt.Errorf("rss: unable to fetch https://feeds.example/x: %w", &url.Error{Op: "Get", URL: "https://feeds.example/x", Err: err})
	}
	dnsErr := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "feeds.example", IsNotFound: true}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name, wantState, wantReason string
		err                         error
	}{
		{"a name that does not resolve", api.StateDegraded, "DNS", source.Degraded(fetch(dnsErr))},
		{"a refused connection", api.StateDegraded, "connection refused", source.Degraded(fetch(refused))},
		{"a certificate nobody vouches for", api.StateDegraded, "TLS", source.Degraded(fetch(x509.UnknownAuthorityError{}))},
		{"an error answer", api.StateDegraded, "HTTP 503", source.Degraded(fetch(statusErr{503}))},
		{"unreachable for long", api.StateDegraded, "DNS", fmt.Errorf("feed failing: %w", fetch(dnsErr))},
		{"credentials refused", api.StateFailed, "", fmt.Errorf("mastodon: access token refused: %w", statusErr{401})},
		{"a malformed message skipped", api.StateRunning, "", source.Degraded(errors.New("bluesky: malformed event"))},
		{"recovered", api.StateRunning, "", nil},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds.setErr(tc.err)
			resp, err := n.Poll(api.PollRequest{Epoch: "e1", Seq: uint64(10 + i), Subscribers: []api.SubscriberRef{{CrawlerID: 1, Version: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			st := resp.Subscribers[0]
			if st.State != tc.wantState || !strings.HasPrefix(st.Error, tc.wantReason) || (tc.err == nil) != (st.Error == "") {
				t.Fatalf("state %s, error %q; want %s, the error starting %q", st.State, st.Error, tc.wantState, tc.wantReason)
			}
		})
	}
}
