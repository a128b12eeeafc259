package mastodon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// selfAccountID is the local id of the token's account.
const selfAccountID = "990000000000000001"

// Visibilities of a status.
const (
	VisibilityPublic   = "public"
	VisibilityUnlisted = "unlisted"
	VisibilityPrivate  = "private"
	VisibilityDirect   = "direct"
)

// Status is what a test posts. Zero fields are filled in by Post: ID with
// the next local id, Acct with "alice", URI and URL from the domain, the
// account and the id, CreatedAt with the current time, Visibility with
// public.
type Status struct {
	ID          string
	URI         string
	URL         string
	Acct        string // "alice" for a local account, "bob@other.example" for a remote one
	Content     string // HTML
	SpoilerText string
	Language    string
	Visibility  string
	CreatedAt   time.Time
	EditedAt    time.Time
	InReplyToID string
	// InReplyToAcct is the author of the status replied to; empty means
	// the author of InReplyToID when the server knows it, else another
	// account than Acct.
	InReplyToAcct string
	Tags          []string
	Mentions      []string // accts
	CardURL       string
	// Reblog, when set, makes the status a reblog of it. Mastodon never
	// streams a reblog on the public or hashtag streams; it reaches the
	// home timelines of the booster's followers.
	Reblog *Status
	// Reblogs and Favourites are the status's reblogs_count and
	// favourites_count (a status streamed as it is written has none; a
	// reblog carries them in the reblogged status).
	Reblogs, Favourites int
}

// record is a status as the server keeps it: its entity as the API
// renders it, and what the fan-out reads off it.
type record struct {
	id, uri     string
	accountID   string
	acct        string // lowercased
	local       bool
	visibility  string
	reblog      bool
	inReplyToID string
	// replyToOther is set for a reply to another account than the
	// author's, which stays off the public streams.
	replyToOther bool
	tags         []string // lowercased, without repeats
	entity       []byte
	parent       *record // the reblogged status of a reblog
	home         bool    // delivered to the token account's home timeline
}

// Post fills in the status's defaults, keeps it, and delivers it as an
// update event to the streams it belongs to. It returns the status as
// delivered.
func (s *Server) Post(st Status) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.recordLocked(&st)
	s.fanOutLocked("update", rec)
	return st
}

// Edit delivers st, which Post returned, as a status.update event, its
// EditedAt set to now when zero. It returns the status as delivered.
func (s *Server) Edit(st Status) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.EditedAt.IsZero() {
		st.EditedAt = time.Now()
	}
	rec := s.recordLocked(&st)
	s.fanOutLocked("status.update", rec)
	return st
}

// Delete delivers a delete event for st, which Post returned, to the
// streams that carried it.
func (s *Server) Delete(st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.statuses[st.ID]
	if !ok {
		return
	}
	s.removeLocked(rec)
	delete(s.statuses, st.ID)
}

// PostJSON keeps a Status entity as recorded (a documentation example, a
// captured payload) and delivers it verbatim, as an update event, to the
// streams Mastodon would deliver it to, read off its fields. The entity's
// id must be new to the server.
func (s *Server) PostJSON(entity []byte) error {
	rec, err := s.rememberJSON(entity)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fanOutLocked("update", rec)
	return nil
}

// RememberJSON keeps a recorded Status entity without delivering it: its
// context can be read, and Deliver delivers it later.
func (s *Server) RememberJSON(entity []byte) error {
	_, err := s.rememberJSON(entity)
	return err
}

// Deliver delivers a kept status, by its local id, as an update event.
func (s *Server) Deliver(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.statuses[id]
	if !ok {
		return fmt.Errorf("mastodon fake: no status %s", id)
	}
	s.fanOutLocked("update", rec)
	return nil
}

func (s *Server) rememberJSON(entity []byte) (*record, error) {
	rec, err := parseRecord(entity)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.statuses[rec.id]; dup {
		return nil, fmt.Errorf("mastodon fake: status %s already kept", rec.id)
	}
	s.statuses[rec.id] = rec
	return rec, nil
}

// Remember keeps a status without delivering it, as one the instance
// knew before the test: replies can name it and its context can be read.
func (s *Server) Remember(st Status) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(&st)
	return st
}

// recordLocked fills in st's defaults and keeps it.
func (s *Server) recordLocked(st *Status) *record {
	var parent *record
	if st.Reblog != nil {
		inner := *st.Reblog
		parent = s.recordLocked(&inner)
		st.Reblog = &inner
	}
	if st.ID == "" {
		s.nextID++
		st.ID = strconv.FormatInt(s.nextID, 10)
	}
	if st.Acct == "" {
		st.Acct = "alice"
	}
	if st.Visibility == "" {
		st.Visibility = VisibilityPublic
	}
	user, domain, remote := strings.Cut(st.Acct, "@")
	if !remote {
		domain = s.opts.Domain
	}
	if st.URI == "" {
		st.URI = "https://" + domain + "/users/" + user + "/statuses/" + st.ID
	}
	if st.URL == "" {
		st.URL = "https://" + domain + "/@" + user + "/" + st.ID
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now()
	}
	accountID := s.accountIDLocked(st.Acct)
	replyAccountID := ""
	if st.InReplyToID != "" {
		switch p, known := s.statuses[st.InReplyToID]; {
		case st.InReplyToAcct != "":
			replyAccountID = s.accountIDLocked(st.InReplyToAcct)
		case known:
			replyAccountID = p.accountID
		default:
			replyAccountID = s.accountIDLocked("someone@elsewhere.example")
		}
	}
	entity := s.entityLocked(*st, accountID, replyAccountID)
	b, _ := json.Marshal(entity)
	rec := &record{
		id: st.ID, uri: st.URI, accountID: accountID, acct: strings.ToLower(st.Acct), local: !remote,
		visibility: st.Visibility, reblog: st.Reblog != nil, inReplyToID: st.InReplyToID,
		replyToOther: st.InReplyToID != "" && replyAccountID != accountID, entity: b, parent: parent,
	}
	for _, t := range st.Tags {
		if t = strings.ToLower(t); !contains(rec.tags, t) {
			rec.tags = append(rec.tags, t)
		}
	}
	if old, ok := s.statuses[st.ID]; ok {
		rec.home = old.home
	}
	s.statuses[st.ID] = rec
	return rec
}

// accountIDLocked returns the local id of an account, assigning one on
// first sight.
func (s *Server) accountIDLocked(acct string) string {
	key := strings.ToLower(acct)
	if user, domain, ok := strings.Cut(key, "@"); ok && domain == strings.ToLower(s.opts.Domain) {
		key = user
	}
	if id, ok := s.accounts[key]; ok {
		return id
	}
	s.nextAccount++
	id := strconv.Itoa(s.nextAccount)
	s.accounts[key] = id
	return id
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseRecord reads what the fan-out needs off a recorded Status entity.
func parseRecord(entity []byte) (*record, error) {
	var st struct {
		ID                 string          `json:"id"`
		URI                string          `json:"uri"`
		Visibility         string          `json:"visibility"`
		InReplyToID        *string         `json:"in_reply_to_id"`
		InReplyToAccountID *string         `json:"in_reply_to_account_id"`
		Reblog             json.RawMessage `json:"reblog"`
		Account            struct {
			ID       string `json:"id"`
			Username string `json:"username"`
			Acct     string `json:"acct"`
		} `json:"account"`
		Tags []struct {
			Name string `json:"name"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(entity, &st); err != nil {
		return nil, fmt.Errorf("mastodon fake: status entity: %w", err)
	}
	if st.ID == "" || st.URI == "" || st.Account.ID == "" {
		return nil, errors.New("mastodon fake: a status entity needs an id, a uri and an account")
	}
	rec := &record{
		id: st.ID, uri: st.URI, accountID: st.Account.ID, acct: strings.ToLower(st.Account.Acct),
		local: st.Account.Acct == st.Account.Username, visibility: st.Visibility,
		reblog: len(st.Reblog) > 0 && string(st.Reblog) != "null", entity: entity,
	}
	if st.InReplyToID != nil {
		rec.inReplyToID = *st.InReplyToID
		rec.replyToOther = st.InReplyToAccountID == nil || *st.InReplyToAccountID != st.Account.ID
	}
	for _, t := range st.Tags {
		if n := strings.ToLower(t.Name); n != "" && !contains(rec.tags, n) {
			rec.tags = append(rec.tags, n)
		}
	}
	return rec, nil
}

// Wire types of the entities the server renders.
type (
	accountJSON struct {
		ID          string `json:"id"`
		Username    string `json:"username"`
		Acct        string `json:"acct"`
		DisplayName string `json:"display_name"`
		URL         string `json:"url"`
		URI         string `json:"uri"`
	}
	tagJSON struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	mentionJSON struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		URL      string `json:"url"`
		Acct     string `json:"acct"`
	}
	cardJSON struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Type  string `json:"type"`
	}
	statusJSON struct {
		ID                 string        `json:"id"`
		CreatedAt          string        `json:"created_at"`
		InReplyToID        *string       `json:"in_reply_to_id"`
		InReplyToAccountID *string       `json:"in_reply_to_account_id"`
		Sensitive          bool          `json:"sensitive"`
		SpoilerText        string        `json:"spoiler_text"`
		Visibility         string        `json:"visibility"`
		Language           *string       `json:"language"`
		URI                string        `json:"uri"`
		URL                *string       `json:"url"`
		RepliesCount       int           `json:"replies_count"`
		ReblogsCount       int           `json:"reblogs_count"`
		FavouritesCount    int           `json:"favourites_count"`
		EditedAt           *string       `json:"edited_at"`
		Content            string        `json:"content"`
		Reblog             *statusJSON   `json:"reblog"`
		Account            accountJSON   `json:"account"`
		MediaAttachments   []any         `json:"media_attachments"`
		Mentions           []mentionJSON `json:"mentions"`
		Tags               []tagJSON     `json:"tags"`
		Emojis             []any         `json:"emojis"`
		Card               *cardJSON     `json:"card"`
		Poll               *struct{}     `json:"poll"`
	}
)

// entityLocked renders st as a Mastodon Status entity.
func (s *Server) entityLocked(st Status, accountID, replyAccountID string) *statusJSON {
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	out := &statusJSON{
		ID:                 st.ID,
		CreatedAt:          st.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		InReplyToID:        opt(st.InReplyToID),
		InReplyToAccountID: opt(replyAccountID),
		SpoilerText:        st.SpoilerText,
		Sensitive:          st.SpoilerText != "",
		Visibility:         st.Visibility,
		Language:           opt(st.Language),
		URI:                st.URI,
		URL:                opt(st.URL),
		Content:            st.Content,
		ReblogsCount:       st.Reblogs,
		FavouritesCount:    st.Favourites,
		Account:            s.accountLocked(st.Acct, accountID),
		MediaAttachments:   []any{},
		Mentions:           []mentionJSON{},
		Tags:               []tagJSON{},
		Emojis:             []any{},
	}
	if !st.EditedAt.IsZero() {
		out.EditedAt = opt(st.EditedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	for _, t := range st.Tags {
		out.Tags = append(out.Tags, tagJSON{Name: strings.ToLower(t), URL: "https://" + s.opts.Domain + "/tags/" + strings.ToLower(t)})
	}
	for _, m := range st.Mentions {
		a := s.accountLocked(m, s.accountIDLocked(m))
		out.Mentions = append(out.Mentions, mentionJSON{ID: a.ID, Username: a.Username, URL: a.URL, Acct: a.Acct})
	}
	if st.CardURL != "" {
		out.Card = &cardJSON{URL: st.CardURL, Title: st.CardURL, Type: "link"}
	}
	if st.Reblog != nil {
		inner := *st.Reblog
		innerReply := ""
		if p, ok := s.statuses[inner.ID]; ok {
			innerReply = p.accountID
			if inner.InReplyToID == "" {
				innerReply = ""
			}
		}
		out.Reblog = s.entityLocked(inner, s.accountIDLocked(inner.Acct), innerReply)
		out.Content = ""
		out.Tags, out.Mentions = []tagJSON{}, []mentionJSON{}
	}
	return out
}

// accountLocked renders an account: its profile page and its ActivityPub
// actor uri, as Mastodon 4.2 and later do.
func (s *Server) accountLocked(acct, id string) accountJSON {
	user, domain, remote := strings.Cut(acct, "@")
	if !remote {
		domain = s.opts.Domain
	}
	return accountJSON{ID: id, Username: user, Acct: acct, DisplayName: user,
		URL: "https://" + domain + "/@" + user, URI: "https://" + domain + "/users/" + user}
}
