package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// Registration. A node registers with the hub when it starts, after it
// detached and when a new hub epoch polls it; it keeps trying, with
// back-off, until a hub takes it. Keeping the attachment (the hub's polls
// proving it alive, orphans and detachment) is in liveness.go.
const (
	// registerRetryMin is the first back-off after a failed registration;
	// each failure doubles it up to registerRetryMax, and every wait is a
	// random value between half of it and all of it.
	registerRetryMin = 200 * time.Millisecond
	registerRetryMax = 10 * time.Second
	// registerTimeout bounds one registration request.
	registerTimeout = 5 * time.Second
)

// attachState is the node's tie to the hub: whether it is attached, to
// which epoch, and when the hub last spoke (liveness.go); which hubs it
// follows and the hub terms it has seen. Several hubs may share one
// database; one leads, with a term that grows at every takeover
// (api.NewEpoch). The node registers with the leader and refuses any
// request whose term is lower than the highest it accepted: a deposed
// leader changes nothing here. Guarded by Node.mu (kick excepted).
type attachState struct {
	// state is api.NodeRegistering, api.NodeAttached or api.NodeDetached.
	state string
	// epoch is the epoch of the hub the node is attached to.
	epoch string
	// lastContact is when a fresh hub request last arrived, and lastSeq
	// its sequence number.
	lastContact time.Time
	lastSeq     uint64
	// detachReason is why the node last detached, told to the hub when it
	// registers again.
	detachReason string
	// orphanAfter and detachAfter are the hub's, once it told them.
	orphanAfter time.Duration
	detachAfter time.Duration
	// kick wakes the attach loop.
	kick chan struct{}

	next   int    // index in the hub list of the hub to try first
	leader string // where the node last registered or was sent
	// maxTerm is the highest term accepted, at maxTermAt; accepted are the
	// terms of accepted requests as they changed (the last acceptedKept).
	maxTerm   uint64
	maxTermAt time.Time
	accepted  []uint64
	// fencedAt is when the node last lost its right to write (fence.go).
	fencedAt time.Time
	// registering is closed when the registration in flight attaches the
	// node; nil when none is in flight (AwaitRegistration).
	registering chan struct{}
	// followed is the hub whose registration answer the node last took.
	followed string
	// complaint is the leader the node could not reach while registering,
	// told to every standby it registers with until it attaches again;
	// complaintAt is when it last failed to reach it.
	complaint   *api.UnreachableLeader
	complaintAt time.Time
}

// registrationWait bounds how long a hub request that arrives while the
// node's registration is in flight waits for it: the hub may send the new
// node its subscribers before the node has read the registration answer.
// The request's own context ends the wait sooner when the hub gives up;
// a busy machine can take more than half a second between the hub's
// answer and the node reading it, so the bound is generous.
const registrationWait = 2 * time.Second

// complaintKept is how long a node repeats that it could not reach the
// leader, to every standby it registers with, after the last failure.
const complaintKept = time.Minute

// AwaitRegistration waits, when a registration is in flight, until it
// attaches the node, ctx ends or registrationWait passes; it reports
// whether the node is attached. A hub request refused with ErrNotAttached
// is worth retrying when it reports true: the hub may send a new node its
// subscribers before the node has read the registration answer.
func (n *Node) AwaitRegistration(ctx context.Context) bool {
	n.mu.Lock()
	attached, ch := n.attach.state == api.NodeAttached, n.attach.registering
	n.mu.Unlock()
	if attached || ch == nil {
		return attached
	}
	t := time.NewTimer(registrationWait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// acceptedKept bounds AcceptedTerms.
const acceptedKept = 64

// maxRedirects is how many "the leader is elsewhere" answers one
// registration attempt follows.
const maxRedirects = 2

// ErrDeposed marks a hub answer or request from a term lower than one the
// node has accepted.
var ErrDeposed = errors.New("node: hub term is older than one already seen")

// hubURLs lists the hubs of --hub, which may name several, comma-separated.
func (n *Node) hubURLs() []string {
	var out []string
	for _, u := range strings.Split(n.cfg.HubURL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// AcceptedTerms lists the hub terms of the requests the node accepted, each
// time it changed, oldest first: they only ever grow.
func (n *Node) AcceptedTerms() []uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.attach.accepted)
}

// attachLoop registers whenever the node is not attached.
func (n *Node) attachLoop(ctx context.Context) {
	retry := backoff.Policy{Min: registerRetryMin, Max: registerRetryMax}
	for {
		n.mu.Lock()
		attached := n.attach.state == api.NodeAttached
		n.mu.Unlock()
		if !attached {
			n.metrics.registrations.Inc()
			if err := n.register(ctx); err != nil {
				n.metrics.registrationFailures.Inc()
				wait := retry.Next()
				n.logger.Warn("registration failed", "hub", n.cfg.HubURL, "err", err, "retry_in", wait)
				if !backoff.Sleep(ctx, wait) {
					return
				}
				continue
			}
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-n.attach.kick:
		}
	}
}

// register tries the hubs in turn, the one it was last sent to first, and
// follows a standby's redirect to the leader. It attaches to the first
// leader whose term is not older than one it accepted recently.
func (n *Node) register(ctx context.Context) error {
	hubs := n.hubURLs()
	n.mu.Lock()
	detached := n.attach.detachReason
	first, leader := n.attach.next, n.attach.leader
	followed, term := n.attach.followed, n.attach.maxTerm
	draining := n.drain.active
	var complaint *api.UnreachableLeader
	if n.attach.complaint != nil && time.Since(n.attach.complaintAt) < complaintKept {
		complaint = n.attach.complaint
	}
	n.mu.Unlock()
	req := api.RegisterRequest{NodeID: n.id, URL: n.cfg.AdvertiseURL, Sources: n.cfg.Sources.Offered(), FleetSources: n.fleetSources(), Declared: n.declared(), Detached: detached, Clock: n.clock(),
		LeaderUnreachable: complaint, Draining: draining}
	req.Store, req.RetractionsApplied = n.storeFacts(ctx)
	order := make([]string, 0, len(hubs)+1)
	if leader != "" {
		order = append(order, leader)
	}
	for i := range hubs {
		order = append(order, hubs[(first+i)%len(hubs)])
	}
	registering := make(chan struct{})
	n.mu.Lock()
	n.attach.registering = registering
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.attach.registering == registering {
			n.attach.registering = nil
		}
		n.mu.Unlock()
	}()
	tried := map[string]bool{}
	var errs []error
	for _, hub := range order {
		for hop := 0; hop <= maxRedirects && hub != "" && !tried[hub]; hop++ {
			tried[hub] = true
			resp, next, err := n.registerAt(ctx, hub, req)
			if err == nil {
				n.retracts.catchUpTo(resp.RetractionHead)
				return n.attachTo(hub, hubs, resp)
			}
			errs = append(errs, err)
			// The leader (the hub last followed, or where a standby sent
			// the node) cannot be reached: the standbys tried next hear it.
			var status *api.StatusError
			if term > 0 && (hop > 0 || hub == followed) && !errors.As(err, &status) && ctx.Err() == nil {
				req.LeaderUnreachable = &api.UnreachableLeader{URL: hub, Term: term}
				n.mu.Lock()
				n.attach.complaint, n.attach.complaintAt = req.LeaderUnreachable, time.Now()
				n.mu.Unlock()
			}
			hub = next
		}
		if ctx.Err() != nil {
			break
		}
	}
	n.mu.Lock()
	n.attach.leader = ""
	n.mu.Unlock()
	return errors.Join(errs...)
}

// registerAt registers with one hub. A standby answers with a redirect to
// the leader, returned as next; the node follows it itself, so its token
// goes only where a hub sent it.
func (n *Node) registerAt(ctx context.Context, hub string, req api.RegisterRequest) (api.RegisterResponse, string, error) {
	var resp api.RegisterResponse
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	client := *n.cfg.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	err := postJSON(rctx, &client, hub+api.PathRegister, n.cfg.NodeToken, req, &resp)
	var status *api.StatusError
	if errors.As(err, &status) && status.Code == http.StatusTemporaryRedirect {
		next := leaderFromMessage(status.Message)
		return resp, next, fmt.Errorf("node: hub %s stands by (leader %q)", hub, next)
	}
	if err != nil {
		return resp, "", fmt.Errorf("node: unable to register with %s: %w", hub, err)
	}
	if resp.Epoch == "" {
		return resp, "", fmt.Errorf("node: hub %s answered registration without an epoch", hub)
	}
	return resp, "", nil
}

// leaderFromMessage reads the leader's URL from a standby's refusal ("…
// the leader is URL"), the same URL its Location and X-BW-Leader headers
// carry; the JSON body is all a response error keeps.
func leaderFromMessage(msg string) string {
	_, after, ok := strings.Cut(msg, "the leader is ")
	if !ok {
		return ""
	}
	u := strings.TrimSpace(after)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return ""
	}
	return strings.TrimRight(u, "/")
}

// attachTo takes a registration answer from hub. An answer from a term
// older than one accepted within detach_after is refused: that hub was
// deposed. A term older than one accepted longer ago is taken (the
// database was replaced; nothing newer answers).
func (n *Node) attachTo(hub string, hubs []string, resp api.RegisterResponse) error {
	term := api.EpochTerm(resp.Epoch)
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	if term < n.attach.maxTerm {
		if now.Sub(n.attach.maxTermAt) < n.attach.detachAfter {
			n.attach.leader = ""
			return fmt.Errorf("%w: hub %s leads term %d, term %d answered %s ago", ErrDeposed, hub, term, n.attach.maxTerm, now.Sub(n.attach.maxTermAt).Round(time.Millisecond))
		}
		n.logger.Warn("following a hub of an older term: no newer one answers", "hub", hub, "term", term, "newest_seen", n.attach.maxTerm)
	}
	n.attach.maxTerm, n.attach.maxTermAt = term, now
	n.attach.leader = hub
	n.attach.followed = hub
	n.attach.complaint = nil
	if i := slices.Index(hubs, hub); i >= 0 {
		n.attach.next = i
	}
	n.attach.state = api.NodeAttached
	n.attach.epoch = resp.Epoch
	n.delta.Reset() // the hub's record of this node starts empty
	if n.attach.registering != nil {
		close(n.attach.registering)
		n.attach.registering = nil
	}
	n.attach.detachReason = ""
	n.attach.lastSeq = 0
	n.attach.lastContact = now
	if resp.OrphanAfter > 0 {
		n.attach.orphanAfter = time.Duration(resp.OrphanAfter)
	}
	if resp.DetachAfter > 0 {
		n.attach.detachAfter = time.Duration(resp.DetachAfter)
	}
	n.acceptTermLocked(term)
	n.logger.Info("registered", "node_id", n.id, "hub", hub, "epoch", resp.Epoch, "term", term, "url", n.cfg.AdvertiseURL)
	return nil
}

// acceptTermLocked records the term of an accepted registration or request.
func (n *Node) acceptTermLocked(term uint64) {
	if k := len(n.attach.accepted); k > 0 && n.attach.accepted[k-1] == term {
		return
	}
	n.attach.accepted = append(n.attach.accepted, term)
	if len(n.attach.accepted) > acceptedKept {
		n.attach.accepted = slices.Delete(n.attach.accepted, 0, len(n.attach.accepted)-acceptedKept)
	}
	n.logger.Info("hub term accepted", "term", term)
}

// maxResponseBytes caps what the spawn reads from the hub.
const maxResponseBytes = 1 << 20

// postJSON posts in to a hub and reads its answer into out.
func postJSON(ctx context.Context, c *http.Client, url, token string, in, out any) error {
	return httpx.CallJSON(ctx, c, http.MethodPost, url, token, in, out, maxResponseBytes)
}
