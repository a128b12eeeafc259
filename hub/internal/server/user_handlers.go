package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/pkg/httpx"
)

func (s *Server) userView(u sqlstore.User) api.User {
	usage := s.Hub.UserUsage(u.ID, u.Usage)
	state := "active"
	if u.CommentLimit > 0 && usage >= u.CommentLimit {
		state = api.StateLimitReached
	}
	return api.User{ID: u.ID, Name: u.Name, CommentLimit: u.CommentLimit, Usage: usage, State: state, CreatedAt: u.CreatedAt.UTC(),
		Retention: api.FormatRetention(time.Duration(u.RetentionSeconds) * time.Second)}
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	var in api.UserCreate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := httpx.CheckText("name", in.Name); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	retention, err := api.ParseRetention(in.Retention)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	u, err := s.Store.CreateUser(r.Context(), in.Name, in.CommentLimit)
	if err != nil {
		s.writeStoreError(w, "user", err)
		return
	}
	if retention > 0 {
		if u, err = s.Store.SetUserRetention(r.Context(), u.ID, int64(retention.Seconds())); err != nil {
			s.writeStoreError(w, "user", err)
			return
		}
	}
	s.Hub.RequestReload(false)
	httpx.WriteJSON(w, http.StatusCreated, s.userView(u))
}

func (s *Server) handleListUsers(w http.ResponseWriter, r *http.Request) {
	users, err := s.Store.ListUsers(r.Context())
	if err != nil {
		s.writeStoreError(w, "users", err)
		return
	}
	counts, err := s.Store.CrawlerCountsByUser(r.Context())
	if err != nil {
		s.writeStoreError(w, "users", err)
		return
	}
	out := make([]api.User, 0, len(users))
	for _, u := range users {
		v := s.userView(u)
		v.Crawlers = counts[u.ID]
		out = append(out, v)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetUser(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	u, err := s.Store.GetUser(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
		return
	}
	s.writeUser(w, r, http.StatusOK, u)
}

// writeUser answers a user with the number of its crawlers.
func (s *Server) writeUser(w http.ResponseWriter, r *http.Request, status int, u sqlstore.User) {
	v := s.userView(u)
	n, err := s.Store.CountUserCrawlers(r.Context(), u.ID)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("user %d", u.ID), err)
		return
	}
	v.Crawlers = n
	httpx.WriteJSON(w, status, v)
}

func (s *Server) handleUpdateUser(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var in api.UserUpdate
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if in.CommentLimit == nil && in.Retention == nil {
		httpx.WriteError(w, http.StatusBadRequest, "nothing to update: give comment_limit or retention")
		return
	}
	var retention time.Duration
	if in.Retention != nil {
		var err error
		if retention, err = api.ParseRetention(*in.Retention); err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	u, err := s.Store.GetUser(r.Context(), id)
	if err != nil {
		s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
		return
	}
	if in.CommentLimit != nil {
		if u, err = s.Store.SetUserLimit(r.Context(), id, *in.CommentLimit); err != nil {
			s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
			return
		}
	}
	if in.Retention != nil && int64(retention.Seconds()) != u.RetentionSeconds {
		if u, err = s.Store.SetUserRetention(r.Context(), id, int64(retention.Seconds())); err != nil {
			s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
			return
		}
		// The user's crawlers without their own retention take the new
		// default: a new version of each reaches its spawn.
		if err := s.respecUserCrawlers(r, id); err != nil {
			s.writeStoreError(w, fmt.Sprintf("crawlers of user %d", id), err)
			return
		}
	}
	s.Hub.RequestReload(false)
	s.writeUser(w, r, http.StatusOK, u)
}

func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := s.Store.DeleteUser(r.Context(), id); err != nil {
		s.writeStoreError(w, fmt.Sprintf("user %d", id), err)
		return
	}
	s.Hub.RequestReload(false)
	w.WriteHeader(http.StatusNoContent)
}

// respecUserCrawlers gives each crawler of a user that has no retention of
// its own a new version, so its spawn learns the user's new default.
func (s *Server) respecUserCrawlers(r *http.Request, userID int64) error {
	crawlers, err := s.Store.ListCrawlers(r.Context())
	if err != nil {
		return err
	}
	for _, c := range crawlers {
		if c.UserID != userID || c.RetentionSeconds != 0 {
			continue
		}
		if _, err := s.Store.UpdateCrawler(r.Context(), c.ID, func(*sqlstore.Crawler) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}
