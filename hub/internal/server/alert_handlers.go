package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/alert"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

// writeAlertError maps the alert service's errors to HTTP answers.
func (s *Server) writeAlertError(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, alert.ErrInvalid):
		httpx.WriteError(w, http.StatusBadRequest, "%s", alertReason(err))
	case errors.Is(err, alert.ErrUnavailable):
		httpx.WriteError(w, http.StatusBadGateway, "%s", alertReason(err))
	case errors.Is(err, alert.ErrNotLeading), errors.Is(err, sqlstore.ErrFenced):
		w.Header().Set("Retry-After", "1")
		httpx.WriteError(w, http.StatusServiceUnavailable, "this hub no longer leads: retry shortly")
	default:
		s.writeStoreError(w, what, err)
	}
}

// alertReason is err's text without the alert package's sentinel prefixes.
func alertReason(err error) string {
	msg := err.Error()
	for _, p := range []error{alert.ErrInvalid, alert.ErrUnavailable} {
		if len(msg) > len(p.Error())+2 && msg[:len(p.Error())+2] == p.Error()+": " {
			return msg[len(p.Error())+2:]
		}
	}
	return msg
}

// handleCreateAlertRule serves POST /v1/alerts: the rule is checked whole
// (its crawler or user, kind, query, channel and target, the SMTP server
// for e-mail) before anything is stored.
func (s *Server) handleCreateAlertRule(w http.ResponseWriter, r *http.Request) {
	var in api.AlertRuleCreate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	switch {
	case in.CrawlerID > 0 && in.UserID == 0:
		if _, err := s.Store.GetCrawler(r.Context(), in.CrawlerID); err != nil {
			s.writeRuleOwnerError(w, fmt.Sprintf("crawler %d", in.CrawlerID), err)
			return
		}
	case in.UserID > 0 && in.CrawlerID == 0:
		if _, err := s.Store.GetUser(r.Context(), in.UserID); err != nil {
			s.writeRuleOwnerError(w, fmt.Sprintf("user %d", in.UserID), err)
			return
		}
	}
	row, err := s.Alerts.NewRule(r.Context(), in)
	if err != nil {
		s.writeAlertError(w, "alert rule", err)
		return
	}
	row, err = s.Store.CreateAlertRule(r.Context(), row)
	if err != nil {
		s.writeStoreError(w, "alert rule", err)
		return
	}
	s.Logger.Info("alert rule created", "rule_id", row.ID, "kind", row.Kind, "channel", row.Channel)
	httpx.WriteJSON(w, http.StatusCreated, alert.RuleView(row))
}

// writeRuleOwnerError answers a rule whose crawler or user is unknown with
// 400: the body names something that does not exist.
func (s *Server) writeRuleOwnerError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, sqlstore.ErrNotFound) {
		httpx.WriteError(w, http.StatusBadRequest, "%s does not exist", what)
		return
	}
	s.writeStoreError(w, what, err)
}

func (s *Server) handleListAlertRules(w http.ResponseWriter, r *http.Request) {
	rules, err := s.Store.ListAlertRules(r.Context())
	if err != nil {
		s.writeStoreError(w, "alert rules", err)
		return
	}
	out := make([]api.AlertRule, len(rules))
	for i, row := range rules {
		out[i] = alert.RuleView(row)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetAlertRule(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	row, err := s.Store.GetAlertRule(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("alert rule %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, alert.RuleView(row))
}

func (s *Server) handleDeleteAlertRule(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := s.Store.DeleteAlertRule(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("alert rule %d", id), err)
		return
	}
	s.Logger.Info("alert rule deleted", "rule_id", id)
	w.WriteHeader(http.StatusNoContent)
}

// handleTestAlertRule serves POST /v1/alerts/{id}/test: one test alert
// through the rule's channel, answered with its delivery's outcome.
func (s *Server) handleTestAlertRule(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	row, err := s.Store.GetAlertRule(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("alert rule %d", id), err)
		return
	}
	ev, err := s.Alerts.Test(r.Context(), row)
	if err != nil {
		s.writeAlertError(w, fmt.Sprintf("test of alert rule %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, ev)
}

func (s *Server) handleAlertEvents(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	n := 0
	if v := r.URL.Query().Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 500 {
			httpx.WriteError(w, http.StatusBadRequest, "n must be between 1 and 500, got %q", v)
			return
		}
	}
	if _, err := s.Store.GetAlertRule(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("alert rule %d", id), err)
		return
	}
	out, err := s.Alerts.Events(r.Context(), id, n)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("alerts of rule %d", id), err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// handlePreviewAlertRule serves POST /v1/alerts/preview: what a spike rule
// would have fired over the stored activity of the last day.
func (s *Server) handlePreviewAlertRule(w http.ResponseWriter, r *http.Request) {
	var in api.AlertPreview
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	out, err := s.Alerts.Preview(r.Context(), in)
	if err != nil {
		s.writeAlertError(w, "alert preview", err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
