package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// maxIDBytes is the longest interaction id accepted.
const maxIDBytes = 256

// messageKind tells the service's messages apart.
type messageKind int

const (
	kindOther  messageKind = iota // valid JSON the source does not use
	kindTick                      // keep-alive
	kindData                      // an item for a hash
	kindStatus                    // the answer to a subscribe or unsubscribe
)

// interaction is an item as the service sends it.
type interaction struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Content string `json:"content"`
	Author  struct {
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"author"`
	Link      string `json:"link"`
	CreatedAt string `json:"created_at"`
}

// message is one decoded message.
type message struct {
	kind        messageKind
	hash        string
	deleted     bool
	interaction *interaction
	status      string
	text        string
}

// decodeMessage decodes one WebSocket message. JSON that ends early is
// ErrTruncated; anything else that is not one JSON value of the protocol's
// shape is ErrMalformed.
func decodeMessage(data []byte) (message, error) {
	var raw struct {
		Tick *json.Number `json:"tick"`
		Hash string       `json:"hash"`
		Data *struct {
			Interaction *interaction `json:"interaction"`
		} `json:"data"`
		Deleted bool   `json:"deleted"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return message{}, fmt.Errorf("%w: the JSON ends after %d bytes", ErrTruncated, len(data))
		}
		if errors.Is(err, io.EOF) {
			return message{}, fmt.Errorf("%w: empty message", ErrMalformed)
		}
		return message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return message{}, fmt.Errorf("%w: data after the JSON value", ErrMalformed)
	}
	switch {
	case raw.Data != nil:
		if raw.Hash == "" || raw.Data.Interaction == nil {
			return message{}, fmt.Errorf("%w: data without a hash or an interaction", ErrMalformed)
		}
		return message{kind: kindData, hash: raw.Hash, deleted: raw.Deleted, interaction: raw.Data.Interaction}, nil
	case raw.Tick != nil:
		return message{kind: kindTick}, nil
	case raw.Status != "":
		return message{kind: kindStatus, hash: raw.Hash, status: raw.Status, text: raw.Message}, nil
	}
	return message{kind: kindOther}, nil
}

// createdAtLayouts are the date formats interactions come with.
var createdAtLayouts = []string{time.RFC1123Z, time.RFC1123, time.RFC3339Nano, "2006-01-02 15:04:05"}

// interactionItem turns an interaction into an item. It fails for one
// without a usable id.
func interactionItem(in *interaction, now time.Time) (source.Item, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" || len(id) > maxIDBytes || !utf8.ValidString(id) {
		return source.Item{}, fmt.Errorf("%w: interaction id %q", ErrMalformed, clip(id))
	}
	author := in.Author.Username
	if author == "" {
		author = in.Author.Name
	}
	link := ""
	if u, err := url.Parse(in.Link); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		link = u.String()
	}
	published := now
	for _, layout := range createdAtLayouts {
		if t, err := time.Parse(layout, in.CreatedAt); err == nil {
			if !t.After(now) {
				published = t
			}
			break
		}
	}
	return source.Item{
		ID:          IDPrefix + id,
		Author:      author,
		Text:        source.CapText(in.Content, maxTextBytes),
		URL:         link,
		PublishedAt: published.UTC(),
		FetchedAt:   now.UTC(),
	}, nil
}

// clip shortens a string from the service for an error message.
func clip(s string) string { return source.Clip(s, maxClipBytes) }

// csdl is the filter definition of a subscriber's query: the widest one
// the service understands that still covers the query (compileCSDL); the
// node evaluates the whole query on what it brings.
func csdl(q *query.Query) (string, error) {
	if q == nil {
		return "", errors.New("the query is empty")
	}
	return compileCSDL(q)
}
