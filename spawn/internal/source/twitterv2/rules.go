package twitterv2

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Limits of the rules endpoint's requests.
const (
	// maxRulesPerRequest bounds the rules one add and the ids one delete
	// carries, so one request stays small whatever the rule count.
	maxRulesPerRequest = 100
	// listPageSize is max_results of GET rules (X's maximum).
	listPageSize = 1000
	// maxListPages bounds the pages one listing reads.
	maxListPages = 50
	// maxRulesBodyBytes caps a rules answer (1000 rules of 1024
	// characters fit).
	maxRulesBodyBytes = 8 << 20
	// maxValidationRounds bounds the dry runs of one reconcile: each
	// round drops the queries X refused and packs again.
	maxValidationRounds = 4
)

// rulesResponse is an answer of the rules endpoint.
type rulesResponse struct {
	Data []serverRule `json:"data"`
	Meta struct {
		NextToken string         `json:"next_token"`
		Summary   map[string]int `json:"summary"`
	} `json:"meta"`
	Errors []struct {
		Value   string   `json:"value"`
		ID      string   `json:"id"`
		Title   string   `json:"title"`
		Detail  string   `json:"detail"`
		Type    string   `json:"type"`
		Details []string `json:"details"`
	} `json:"errors"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// runRules reconciles the app's rules after every subscriber change,
// retrying a failed reconcile with back-off, until ctx ends.
func (s *Source) runRules(ctx context.Context) {
	retry := backoff.Policy{Min: s.opts.ReconcileRetryMin, Max: s.opts.ReconcileRetryMax}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
		if !backoff.Sleep(ctx, s.opts.ReconcileDelay) {
			return
		}
		select { // changes made while gathering are part of this reconcile
		case <-s.changed:
		default:
		}
		for {
			err := s.reconcile(ctx)
			if ctx.Err() != nil {
				return
			}
			s.setErr(rulesPart, err)
			if err == nil {
				retry.Reset()
				break
			}
			wait := retry.Next()
			s.logger.Warn("twitter rules reconcile failed", "err", err, "retry_in", wait)
			if !backoff.Sleep(ctx, wait) {
				return
			}
		}
	}
}

// reconcile makes the app's rules carry exactly the wanted queries.
func (s *Source) reconcile(ctx context.Context) error {
	s.mu.Lock()
	want := maps.Clone(s.want)
	s.mu.Unlock()
	members := map[string][]string{} // rule text → query uuids
	queryErr := map[string]error{}
	for uuid, w := range want {
		if w.err != nil {
			queryErr[uuid] = w.err
			continue
		}
		members[w.rule] = append(members[w.rule], uuid)
	}

	existing, err := s.listRules(ctx)
	if err != nil {
		return err
	}
	refused := map[string]error{}
	var p plan
	for round := 0; ; round++ {
		var texts []string
		for t := range members {
			if refused[t] == nil {
				texts = append(texts, t)
			}
		}
		slices.Sort(texts)
		p = pack(texts, existing, s.opts.MaxRules, s.opts.MaxRuleLength)
		bad, err := s.validate(ctx, p.Add)
		if err != nil {
			return err
		}
		if len(bad) == 0 {
			break
		}
		if round == maxValidationRounds-1 {
			return fmt.Errorf("twitter: X kept refusing rules after %d rounds of validation", maxValidationRounds)
		}
		maps.Copy(refused, bad)
	}

	existingValues := map[string]bool{}
	for _, r := range existing {
		existingValues[r.Value] = true
	}
	// Make before break when there is room: the new rules first, so no
	// post is missed while a query moves from one rule to another.
	addFirst := len(existing)+len(p.Add) <= s.opts.MaxRules &&
		!slices.ContainsFunc(p.Add, func(r packedRule) bool { return existingValues[r.Value] })
	var added []packedRule
	if addFirst {
		if added, err = s.addRules(ctx, p.Add, refused); err != nil {
			return err
		}
	}
	if err := s.deleteRules(ctx, p.Delete); err != nil {
		return err
	}
	if !addFirst {
		if added, err = s.addRules(ctx, p.Add, refused); err != nil {
			return err
		}
	}

	for text, e := range p.Failed {
		for _, uuid := range members[text] {
			queryErr[uuid] = e
		}
	}
	for text, e := range refused {
		for _, uuid := range members[text] {
			queryErr[uuid] = e
		}
	}
	for uuid := range want {
		s.setErr(queryPrefix+uuid, queryErr[uuid])
	}
	s.errs.Clear(func(part string) bool {
		uuid, ok := strings.CutPrefix(part, queryPrefix)
		_, wanted := want[uuid]
		return ok && !wanted
	})
	s.setRules(append(slices.Clone(p.Keep), added...), members)
	source.Signal(s.gapWake) // gaps wait for their rules
	s.stats.reconciles.Add(1)
	s.logger.Info("twitter rules reconciled", "queries", len(want), "rules", len(p.Keep)+len(added),
		"kept", len(p.Keep), "added", len(added), "deleted", len(p.Delete), "failed_queries", len(queryErr))
	return nil
}

// listRules reads every rule of the app.
func (s *Source) listRules(ctx context.Context) ([]serverRule, error) {
	var out []serverRule
	token := ""
	for range maxListPages {
		q := url.Values{"max_results": {strconv.Itoa(listPageSize)}}
		if token != "" {
			q.Set("pagination_token", token)
		}
		var resp rulesResponse
		status, err := s.rulesRequest(ctx, http.MethodGet, q, nil, &resp)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("%w: listing rules: X answered %d: %s", ErrStatus, status, clip(firstOf(resp.Detail, resp.Title)))
		}
		out = append(out, resp.Data...)
		if token = resp.Meta.NextToken; token == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("twitter: listing rules: more than %d pages", maxListPages)
}

// addBody is POST rules' body for additions.
type addBody struct {
	Add []addRule `json:"add"`
}

type addRule struct {
	Value string `json:"value"`
	Tag   string `json:"tag"`
}

// post sends rules in batches (dry or for real) and returns, by value,
// the id of each rule created and the refusal of each rule X found
// invalid. A request-level failure is returned as the error.
func (s *Source) post(ctx context.Context, rules []packedRule, dry bool) (map[string]string, map[string]error, error) {
	ids, invalid := map[string]string{}, map[string]error{}
	q := url.Values{}
	if dry {
		q.Set("dry_run", "true")
	}
	for batch := range slices.Chunk(rules, maxRulesPerRequest) {
		body := addBody{}
		for _, r := range batch {
			body.Add = append(body.Add, addRule{Value: r.Value, Tag: r.Tag})
		}
		var resp rulesResponse
		status, err := s.rulesRequest(ctx, http.MethodPost, q, body, &resp)
		if err != nil {
			return nil, nil, err
		}
		perRule := false
		for _, e := range resp.Errors {
			switch {
			case e.Value == "":
				continue
			case e.Title == "DuplicateRule":
				ids[e.Value] = e.ID // the app has it already
			default:
				detail := firstOf(strings.Join(e.Details, "; "), e.Detail, e.Title)
				invalid[e.Value] = fmt.Errorf("%w %q: %s", ErrRuleRefused, clip(e.Value), clip(detail))
			}
			perRule = true
		}
		for _, r := range resp.Data {
			ids[r.Value] = r.ID
		}
		if status/100 != 2 && !perRule {
			return nil, nil, s.rulesFailure("adding rules", status, resp)
		}
	}
	return ids, invalid, nil
}

func (s *Source) rulesFailure(what string, status int, resp rulesResponse) error {
	for _, e := range resp.Errors {
		if e.Title == "RulesCapExceeded" || strings.HasSuffix(e.Type, "/rule-cap") {
			return fmt.Errorf("%w: %s: %s; lower --twitter-max-rules to the app's tier", ErrRuleCap, what, clip(firstOf(e.Detail, e.Title)))
		}
	}
	detail := resp.Detail
	if len(resp.Errors) > 0 {
		detail = firstOf(resp.Errors[0].Detail, resp.Errors[0].Title)
	}
	return fmt.Errorf("%w: %s: X answered %d: %s", ErrStatus, what, status, clip(firstOf(detail, resp.Title)))
}

// validate dry-runs the rules to add and returns the member rule texts X
// refuses. A refused rule of several queries is taken apart to find which
// of them X refuses; when none alone is refused, all of them are.
func (s *Source) validate(ctx context.Context, adds []packedRule) (map[string]error, error) {
	bad := map[string]error{}
	if len(adds) == 0 {
		return bad, nil
	}
	_, invalid, err := s.post(ctx, adds, true)
	if err != nil {
		return nil, err
	}
	var split []packedRule
	var suspects []packedRule
	for _, r := range adds {
		e, refused := invalid[r.Value]
		switch {
		case !refused:
		case len(r.Members) == 1:
			bad[r.Members[0]] = e
		default:
			suspects = append(suspects, r)
			for _, m := range r.Members {
				split = append(split, packedRule{Value: m, Tag: tagOf(m), Members: []string{m}})
			}
		}
	}
	if len(split) == 0 {
		return bad, nil
	}
	_, alone, err := s.post(ctx, split, true)
	if err != nil {
		return nil, err
	}
	for _, r := range suspects {
		found := false
		for _, m := range r.Members {
			if e, ok := alone[m]; ok {
				bad[m], found = e, true
			}
		}
		if !found {
			for _, m := range r.Members {
				bad[m] = fmt.Errorf("%w: X refused the rule that packed this query with others: %w", ErrRuleRefused, invalid[r.Value])
			}
		}
	}
	return bad, nil
}

// addRules creates the rules and returns those X holds afterwards. The
// queries of a rule X refuses now (after a dry run passed) go to refused.
func (s *Source) addRules(ctx context.Context, adds []packedRule, refused map[string]error) ([]packedRule, error) {
	if len(adds) == 0 {
		return nil, nil
	}
	ids, invalid, err := s.post(ctx, adds, false)
	if err != nil {
		return nil, err
	}
	var out []packedRule
	for _, r := range adds {
		if e, ok := invalid[r.Value]; ok {
			for _, m := range r.Members {
				refused[m] = e
			}
			continue
		}
		if id, ok := ids[r.Value]; ok {
			r.ID = id
			out = append(out, r)
		}
	}
	return out, nil
}

// deleteBody is POST rules' body for deletions.
type deleteBody struct {
	Delete struct {
		IDs []string `json:"ids"`
	} `json:"delete"`
}

// deleteRules deletes rules by id, in batches. A rule already gone is not
// an error.
func (s *Source) deleteRules(ctx context.Context, ids []string) error {
	for batch := range slices.Chunk(ids, maxRulesPerRequest) {
		var body deleteBody
		body.Delete.IDs = batch
		var resp rulesResponse
		status, err := s.rulesRequest(ctx, http.MethodPost, nil, body, &resp)
		if err != nil {
			return err
		}
		if status/100 != 2 {
			return s.rulesFailure("deleting rules", status, resp)
		}
	}
	return nil
}

// rulesRequest sends one request to the rules endpoint, no sooner than
// RulesRequestInterval after the previous one, and decodes the answer
// into out. Refused credentials, 429 and server errors are errors; other
// statuses are returned with the decoded answer for the caller to read.
func (s *Source) rulesRequest(ctx context.Context, method string, q url.Values, body, out any) (int, error) {
	if wait := s.opts.RulesRequestInterval - time.Since(s.lastRule); wait > 0 {
		if !backoff.Sleep(ctx, wait) {
			return 0, ctx.Err()
		}
	}
	s.lastRule = time.Now()
	s.stats.rulesRequests.Add(1)
	u := s.rulesURL
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("twitter: unable to encode a rules request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("twitter: unable to build a rules request: %w", err)
	}
	s.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.rest.Do(req)
	if err != nil {
		return 0, fmt.Errorf("twitter: rules request failed: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return resp.StatusCode, fmt.Errorf("%w: the rules endpoint answered %d; check --twitter-bearer-token", ErrUnauthorized, resp.StatusCode)
	case resp.StatusCode == http.StatusTooManyRequests:
		return resp.StatusCode, fmt.Errorf("%w: the rules endpoint answered 429 (reset at %s)", ErrRateLimited, resp.Header.Get("x-rate-limit-reset"))
	case resp.StatusCode >= 500:
		p := readProblem(resp)
		return resp.StatusCode, fmt.Errorf("%w: the rules endpoint answered %d: %s", ErrStatus, resp.StatusCode, clip(firstOf(p.Detail, p.Title)))
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRulesBodyBytes+1))
	if err != nil {
		return 0, fmt.Errorf("twitter: reading a rules answer: %w", err)
	}
	if len(raw) > maxRulesBodyBytes {
		return 0, fmt.Errorf("twitter: a rules answer is over %d bytes", maxRulesBodyBytes)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return 0, fmt.Errorf("%w: a rules answer (%d) is not JSON: %v", ErrStatus, resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}
