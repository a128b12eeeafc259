package xv2

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Paging of GET rules.
const (
	maxListResults     = 1000
	defaultListResults = 1000
)

// Problem types X names in rule errors.
const (
	typeInvalidRules   = "https://api.twitter.com/2/problems/invalid-rules"
	typeDuplicateRules = "https://api.twitter.com/2/problems/duplicate-rules"
	typeRuleCap        = "https://api.twitter.com/2/problems/rule-cap"
	typeInvalidRequest = "https://api.twitter.com/2/problems/invalid-request"
)

// ruleError is one entry of a rules response's "errors".
type ruleError struct {
	Value   string   `json:"value,omitempty"`
	ID      string   `json:"id,omitempty"`
	Details []string `json:"details,omitempty"`
	Title   string   `json:"title"`
	Detail  string   `json:"detail,omitempty"`
	Type    string   `json:"type"`
}

type rulesMeta struct {
	Sent        string         `json:"sent"`
	ResultCount *int           `json:"result_count,omitempty"`
	NextToken   string         `json:"next_token,omitempty"`
	Summary     map[string]int `json:"summary,omitempty"`
}

type rulesResponse struct {
	Data   []Rule      `json:"data,omitempty"`
	Meta   rulesMeta   `json:"meta"`
	Errors []ruleError `json:"errors,omitempty"`
}

func sentNow() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// injected answers a rules request with a queued failure status, if any.
func (s *Server) injected(w http.ResponseWriter, req RulesRequest) bool {
	s.mu.Lock()
	if len(s.rulesFail) == 0 {
		s.mu.Unlock()
		return false
	}
	status := s.rulesFail[0]
	s.rulesFail = s.rulesFail[1:]
	req.Status = status
	s.rulesLog = append(s.rulesLog, req)
	s.mu.Unlock()
	if status == http.StatusTooManyRequests {
		w.Header().Set("x-rate-limit-remaining", "0")
		w.Header().Set("x-rate-limit-reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
	}
	writeProblem(w, status, statusProblem(status))
	return true
}

// handleListRules serves GET rules: all of them, or those named by ids,
// max_results at a time with pagination_token for the next page.
func (s *Server) handleListRules(w http.ResponseWriter, r *http.Request) {
	if s.injected(w, RulesRequest{Method: http.MethodGet}) {
		return
	}
	q := r.URL.Query()
	size := defaultListResults
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListResults {
			writeProblem(w, http.StatusBadRequest, problem{Title: "Invalid Request", Type: typeInvalidRequest,
				Detail: fmt.Sprintf("The `max_results` query parameter value [%s] is not between 1 and %d", v, maxListResults)})
			return
		}
		size = n
	}
	start := 0
	if v := q.Get("pagination_token"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeProblem(w, http.StatusBadRequest, problem{Title: "Invalid Request", Type: typeInvalidRequest, Detail: "bad pagination_token"})
			return
		}
		start = n
	}
	var ids []string
	if v := q.Get("ids"); v != "" {
		ids = strings.Split(v, ",")
	}
	s.mu.Lock()
	s.rulesLog = append(s.rulesLog, RulesRequest{Method: http.MethodGet, Status: http.StatusOK})
	var all []Rule
	for _, rule := range s.rules {
		if ids == nil || slices.Contains(ids, rule.ID) {
			all = append(all, rule)
		}
	}
	s.mu.Unlock()
	resp := rulesResponse{Meta: rulesMeta{Sent: sentNow()}}
	if start < len(all) {
		end := min(start+size, len(all))
		resp.Data = all[start:end]
		if end < len(all) {
			resp.Meta.NextToken = strconv.Itoa(end)
		}
	}
	n := len(resp.Data)
	resp.Meta.ResultCount = &n
	writeJSON(w, http.StatusOK, resp)
}

// changeBody is POST rules' body: add or delete (by ids or by values).
type changeBody struct {
	Add    []Rule `json:"add"`
	Delete *struct {
		IDs    []string `json:"ids"`
		Values []string `json:"values"`
	} `json:"delete"`
}

// handleChangeRules serves POST rules. Adding validates every rule (syntax,
// length, the app's rule cap); when one is invalid nothing is created and
// the answer is 400 with an error per invalid rule. A rule whose value the
// app already has is not created again and is reported as DuplicateRule,
// while the others are created. With dry_run=true the answer is the same
// but nothing changes.
func (s *Server) handleChangeRules(w http.ResponseWriter, r *http.Request) {
	dry := r.URL.Query().Get("dry_run") == "true"
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	var body changeBody
	if err == nil && len(raw) > maxBodyBytes {
		err = fmt.Errorf("body over %d bytes", maxBodyBytes)
	}
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	req := RulesRequest{Method: http.MethodPost, DryRun: dry, Adds: body.Add}
	if body.Delete != nil {
		req.Deletes = body.Delete.IDs
	}
	if s.injected(w, req) {
		return
	}
	if err == nil && (len(body.Add) > 0) == (body.Delete != nil) {
		err = fmt.Errorf("exactly one of add and delete is required")
	}
	if err != nil {
		s.logRules(req, http.StatusBadRequest)
		writeProblem(w, http.StatusBadRequest, problem{Title: "Invalid Request", Type: typeInvalidRequest, Detail: err.Error()})
		return
	}
	if body.Delete != nil {
		s.deleteRules(w, req, body.Delete.IDs, body.Delete.Values, dry)
		return
	}
	s.addRules(w, req, body.Add, dry)
}

func (s *Server) logRules(req RulesRequest, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Status = status
	s.rulesLog = append(s.rulesLog, req)
}

func (s *Server) addRules(w http.ResponseWriter, req RulesRequest, adds []Rule, dry bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := rulesResponse{Meta: rulesMeta{Sent: sentNow()}}
	existing := map[string]string{} // value → id
	for _, rule := range s.rules {
		existing[rule.Value] = rule.ID
	}
	type valid struct {
		rule Rule
		n    *node
	}
	var ok []valid
	invalid, dups := 0, 0
	for _, a := range adds {
		if n := utf8.RuneCountInString(a.Value); n > s.opts.MaxRuleLength {
			invalid++
			resp.Errors = append(resp.Errors, ruleError{Value: a.Value, Title: "UnprocessableEntity", Type: typeInvalidRules,
				Details: []string{fmt.Sprintf("Rule text exceeds the maximum length of %d characters (it has %d)", s.opts.MaxRuleLength, n)}})
			continue
		}
		n, err := parseRule(a.Value)
		if err != nil {
			invalid++
			resp.Errors = append(resp.Errors, ruleError{Value: a.Value, Title: "UnprocessableEntity", Type: typeInvalidRules,
				Details: []string{strings.TrimPrefix(err.Error(), errRule.Error()+": ")}})
			continue
		}
		if id, seen := existing[a.Value]; seen {
			dups++
			resp.Errors = append(resp.Errors, ruleError{Value: a.Value, ID: id, Title: "DuplicateRule", Type: typeDuplicateRules})
			continue
		}
		existing[a.Value] = "" // a duplicate within the request
		ok = append(ok, valid{rule: a, n: n})
	}
	status := http.StatusCreated
	created := 0
	switch {
	case invalid > 0:
		status = http.StatusBadRequest
	case !dry && len(s.rules)+len(ok) > s.opts.MaxRules:
		status = http.StatusBadRequest
		resp.Errors = append(resp.Errors, ruleError{Title: "RulesCapExceeded", Type: typeRuleCap,
			Detail: fmt.Sprintf("Adding %d rules to the %d the app has would exceed its limit of %d", len(ok), len(s.rules), s.opts.MaxRules)})
	case dry:
		created = len(ok)
		status = http.StatusOK
		for _, v := range ok {
			resp.Data = append(resp.Data, v.rule)
		}
	default:
		for _, v := range ok {
			resp.Data = append(resp.Data, s.storeRuleLocked(v.rule.Value, v.rule.Tag, v.n))
		}
		created = len(ok)
	}
	resp.Meta.Summary = map[string]int{
		"created": created, "not_created": len(adds) - created,
		"valid": len(adds) - invalid, "invalid": invalid,
	}
	req.Status = status
	s.rulesLog = append(s.rulesLog, req)
	writeJSON(w, status, resp)
}

func (s *Server) deleteRules(w http.ResponseWriter, req RulesRequest, ids, values []string, dry bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := rulesResponse{Meta: rulesMeta{Sent: sentNow()}}
	drop := map[string]bool{}
	for _, id := range ids {
		i := slices.IndexFunc(s.rules, func(r Rule) bool { return r.ID == id })
		if i < 0 {
			resp.Errors = append(resp.Errors, ruleError{ID: id, Title: "Not Found Error", Type: "https://api.twitter.com/2/problems/resource-not-found",
				Detail: "Rule " + id + " does not exist"})
			continue
		}
		drop[id] = true
	}
	for _, v := range values {
		i := slices.IndexFunc(s.rules, func(r Rule) bool { return r.Value == v })
		if i < 0 {
			resp.Errors = append(resp.Errors, ruleError{Value: v, Title: "Not Found Error", Type: "https://api.twitter.com/2/problems/resource-not-found"})
			continue
		}
		drop[s.rules[i].ID] = true
	}
	if !dry {
		s.rules = slices.DeleteFunc(s.rules, func(r Rule) bool { return drop[r.ID] })
		for id := range drop {
			delete(s.parsed, id)
		}
	}
	resp.Meta.Summary = map[string]int{"deleted": len(drop), "not_deleted": len(ids) + len(values) - len(drop)}
	req.Status = http.StatusOK
	s.rulesLog = append(s.rulesLog, req)
	writeJSON(w, http.StatusOK, resp)
}
