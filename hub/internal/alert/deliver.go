package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
)

// smtpTimeout bounds one SMTP conversation, and smtpCheckTimeout the check
// made when an e-mail rule is created.
const (
	smtpTimeout      = 30 * time.Second
	smtpCheckTimeout = 10 * time.Second
)

// userAgent names the hub to receivers.
const userAgent = "blackwidow-hub (alerts)"

// sendLoop attempts due deliveries until ctx ends: at once when an alert
// is recorded, and every deliveryPoll for retries and for deliveries a
// previous leader left. A receiver gets at most perDestination attempts
// at once, and one that stops answering is left alone for a while, so
// whatever one receiver does, the others are served in their normal time.
func (s *Service) sendLoop(ctx context.Context, term uint64) {
	sem := make(chan struct{}, deliverConcurrency)
	dests := newDestinations()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		full, busy, err := s.sendDue(ctx, term, sem, dests, &wg)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("alert delivery pass failed", "err", err)
		}
		if full && err == nil {
			continue
		}
		wait := deliveryPoll
		if busy {
			wait = busyDefer // deliveries a busy receiver made wait fall due
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// sendDue starts or defers the due deliveries of one pass; it reports
// whether the pass took a full batch, so more may be due at once, and
// whether a busy receiver made deliveries wait.
func (s *Service) sendDue(ctx context.Context, term uint64, sem chan struct{}, dests *destinations, wg *sync.WaitGroup) (full, waiting bool, err error) {
	now := s.cfg.Now()
	due, err := s.store.DueDeliveries(ctx, now, dueBatch)
	if err != nil {
		return false, false, err
	}
	busy := map[string]int{} // deliveries of a pass a busy receiver made wait
	for _, d := range due {
		key := s.destinationOf(d)
		ok, until := dests.acquire(key, now)
		if !ok {
			if !until.After(now.Add(busyDefer)) {
				waiting = true
				if len(due) < dueBatch {
					// The receiver is busy, not failing: the next pass,
					// when one of its attempts ends, takes the delivery.
					continue
				}
				// A batch full of them would hide the rest: they wait
				// in SQL, a burst to one receiver spread over the next
				// seconds so its deliveries are not rewritten every pass.
				until = now.Add(busyDefer * time.Duration(1+busy[key]/perDestination))
				busy[key]++
			}
			// Its receiver is busy or failing: the delivery waits in SQL,
			// holding no slot, and never past its last attempt.
			if until.After(d.GiveUpAt) {
				until = d.GiveUpAt
			}
			if _, err := s.store.DeferDelivery(ctx, term, d.ID, d.Attempts, now, until); err != nil {
				return false, waiting, err
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			// Every slot is taken: the rest waits for the next pass.
			dests.release(key, notAttempted, now)
			return false, waiting, nil
		}
		claimed, err := s.store.ClaimDelivery(ctx, term, d.ID, d.Attempts, now, now.Add(s.cfg.AttemptTimeout+claimMargin))
		if err != nil || !claimed {
			<-sem
			dests.release(key, notAttempted, now)
			if err != nil {
				return false, waiting, err
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// The receiver's slot is free once it has answered (or not),
			// before the outcome is written.
			s.attempt(ctx, d, d.Attempts+1, func(status int, err error) {
				result := answered
				if err != nil && status == 0 {
					result = noAnswer
				}
				if opened, until := dests.release(key, result, s.cfg.Now()); opened {
					s.logger.Warn("alert destination does not answer: its deliveries wait", "destination", displayTarget(d.Channel, key),
						"until", until.Round(time.Second))
				}
				s.notify()
			})
		}()
	}
	return len(due) == dueBatch, waiting, nil
}

// attempt makes attempt number n of a claimed delivery, tells sent what
// the receiver answered, and records it. The outcome is recorded even when
// the leadership ended meanwhile: what the receiver answered is true
// whoever leads.
func (s *Service) attempt(ctx context.Context, d sqlstore.DueDelivery, n int, sent func(status int, err error)) sqlstore.DeliveryOutcome {
	status, err := s.send(ctx, d)
	sent(status, err)
	now := s.cfg.Now()
	o := sqlstore.DeliveryOutcome{Status: status, At: now}
	switch {
	case err == nil:
		o.State = sqlstore.DeliveryDelivered
		s.metrics.deliveries.WithLabelValues(d.Channel, outcomeDelivered).Inc()
		s.metrics.latency.WithLabelValues(d.Channel).Observe(now.Sub(d.CreatedAt).Seconds())
		s.logger.Info("alert delivered", "delivery", d.ID, "rule_id", d.RuleID, "channel", d.Channel, "attempt", n, "status", status)
	default:
		o.Error = s.scrub(d, err.Error())
		wait := backoff.Jitter(min(s.cfg.RetryMin<<min(n-1, 30), s.cfg.RetryMax))
		if retry := now.Add(wait); retry.Before(d.GiveUpAt) {
			o.State, o.RetryAt = sqlstore.DeliveryPending, retry
			s.metrics.deliveries.WithLabelValues(d.Channel, outcomeRetried).Inc()
			s.logger.Warn("alert delivery failed, will retry", "delivery", d.ID, "rule_id", d.RuleID, "channel", d.Channel,
				"attempt", n, "status", status, "err", o.Error, "retry_in", wait.Round(time.Second))
		} else {
			o.State = sqlstore.DeliveryFailed
			s.metrics.deliveries.WithLabelValues(d.Channel, outcomeFailed).Inc()
			s.logger.Error("alert delivery failed for good", "delivery", d.ID, "rule_id", d.RuleID, "channel", d.Channel,
				"attempts", n, "status", status, "err", o.Error)
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.AttemptTimeout)
	defer cancel()
	if err := s.store.FinishDelivery(wctx, d.ID, n, o); err != nil {
		s.logger.Warn("unable to record an alert delivery attempt", "delivery", d.ID, "err", err)
	}
	return o
}

// scrub keeps a delivery's target (a Slack URL is a credential) out of an
// error message.
func (s *Service) scrub(d sqlstore.DueDelivery, msg string) string {
	msg = strings.ReplaceAll(msg, d.Target, displayTarget(d.Channel, d.Target))
	if d.Secret != "" {
		msg = strings.ReplaceAll(msg, d.Secret, "REDACTED")
	}
	if s.cfg.SMTP.Password != "" {
		msg = strings.ReplaceAll(msg, s.cfg.SMTP.Password, "REDACTED")
	}
	return msg
}

// send makes one attempt; it returns the HTTP status when there was one.
func (s *Service) send(ctx context.Context, d sqlstore.DueDelivery) (int, error) {
	switch d.Channel {
	case api.ChannelWebhook, api.ChannelSlack:
		return s.post(ctx, d)
	case api.ChannelEmail:
		return 0, s.sendMail(ctx, d.Target, []byte(d.Body))
	}
	return 0, fmt.Errorf("unknown channel %q", d.Channel)
}

// post sends a webhook or Slack delivery: any 2xx answer delivers it.
func (s *Service) post(ctx context.Context, d sqlstore.DueDelivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
	defer cancel()
	body := []byte(d.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Target, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("unable to build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if d.Channel == api.ChannelWebhook {
		req.Header.Set(api.HeaderDelivery, d.ID)
		if d.Secret != "" {
			req.Header.Set(api.HeaderSignature, api.Sign(d.Secret, body))
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %d %s", resp.StatusCode, cut(string(answer), 200))
	}
	return resp.StatusCode, nil
}

// smtpSession opens a conversation with the SMTP server: EHLO, STARTTLS
// (required: credentials and customer data never cross in clear) and AUTH
// when credentials are configured.
func (s *Service) smtpSession(ctx context.Context, timeout time.Duration) (*smtp.Client, error) {
	c := s.cfg.SMTP
	if c.Addr == "" {
		return nil, fmt.Errorf("%w: this hub has no SMTP server (--smtp-server)", ErrInvalid)
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn, err := (&net.Dialer{Deadline: deadline}).DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("unable to reach the SMTP server %s: %w", c.Addr, err)
	}
	_ = conn.SetDeadline(deadline)
	host, _, _ := splitHostPort(c.Addr)
	client, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("SMTP server %s: %w", c.Addr, err)
	}
	fail := func(what string, err error) (*smtp.Client, error) {
		client.Close()
		return nil, fmt.Errorf("SMTP server %s: %s: %w", c.Addr, what, err)
	}
	if err := client.Hello("blackwidow-hub"); err != nil {
		return fail("EHLO", err)
	}
	if ok, _ := client.Extension("STARTTLS"); !ok {
		return fail("STARTTLS", errors.New("not offered, and the hub does not send in clear"))
	}
	if err := client.StartTLS(s.smtpTLS.Clone()); err != nil {
		return fail("STARTTLS", err)
	}
	if c.User != "" {
		if err := client.Auth(smtp.PlainAuth("", c.User, c.Password, host)); err != nil {
			return fail("AUTH", err)
		}
	}
	return client, nil
}

// checkSMTP makes sure the SMTP server answers and takes the hub's
// credentials, so an e-mail rule is not stored to fail for a day.
func (s *Service) checkSMTP(ctx context.Context) error {
	if s.cfg.SMTP.Addr == "" {
		return fmt.Errorf("%w: e-mail alerts need the hub's SMTP server (--smtp-server)", ErrInvalid)
	}
	client, err := s.smtpSession(ctx, smtpCheckTimeout)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrUnavailable, s.scrubSMTP(err.Error()))
	}
	_ = client.Quit()
	return nil
}

func (s *Service) scrubSMTP(msg string) string {
	if s.cfg.SMTP.Password != "" {
		msg = strings.ReplaceAll(msg, s.cfg.SMTP.Password, "REDACTED")
	}
	return msg
}

// sendMail sends one message to one recipient.
func (s *Service) sendMail(ctx context.Context, to string, msg []byte) error {
	if s.from == nil {
		return fmt.Errorf("%w: this hub has no SMTP server (--smtp-server)", ErrInvalid)
	}
	client, err := s.smtpSession(ctx, smtpTimeout)
	if err != nil {
		return err
	}
	defer client.Close()
	// MAIL FROM takes the bare address; the From header keeps the name.
	if err := client.Mail(s.from.Address); err != nil {
		return fmt.Errorf("SMTP MAIL FROM: %w", err)
	}
	if err := client.Rcpt(to); err != nil {
		return fmt.Errorf("SMTP RCPT TO: %w", err)
	}
	w, err := client.Data()
	if err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	return client.Quit()
}
