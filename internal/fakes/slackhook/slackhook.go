// Package slackhook is a local Slack incoming webhook for tests: it answers
// as Slack's hooks.slack.com does, per Slack's incoming-webhook and Block
// Kit documentation and its SDKs (slack_sdk's WebhookClient asserts a 200
// with the body "ok"): a text/plain "ok" for a message it accepts, and the
// plain-text error codes Slack sends otherwise — 400 invalid_payload for a
// body that is not JSON, 400 no_text for a message with neither text nor
// blocks, 400 invalid_blocks for blocks Slack would refuse (more than 50,
// an unknown type, a section whose text is empty or longer than 3000
// characters, a text object that is neither mrkdwn nor plain_text), 404
// no_service for a URL that names no webhook, and 410
// channel_is_archived for a webhook whose channel was archived.
package slackhook

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"
)

// Block Kit limits (Slack's Block Kit reference).
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxBodyBytes   = 1 << 20
)

// Message is a message the hook accepted.
type Message struct {
	Text   string  `json:"text"`
	Blocks []Block `json:"blocks"`
}

// Block is a Block Kit block, as far as the hook checks it.
type Block struct {
	Type string      `json:"type"`
	Text *TextObject `json:"text,omitempty"`
}

// TextObject is a Block Kit text object.
type TextObject struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Hook is a running incoming webhook.
type Hook struct {
	// URL is the webhook's URL: its path is the secret Slack puts there.
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	archived bool
	messages []Message
	raw      [][]byte
}

// Path is the path of the one webhook a Hook serves.
const Path = "/services/T0000TEST/B0000TEST/XXXXXXXXXXXXXXXXXXXXXXXX"

// Start runs a hook on loopback until the test ends.
func Start(t testing.TB) *Hook {
	h := &Hook{}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	h.URL = h.srv.URL + Path
	return h
}

// Archive makes the webhook's channel archived: Slack then answers 410.
func (h *Hook) Archive() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.archived = true
}

// Messages returns the accepted messages, oldest first.
func (h *Hook) Messages() []Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.messages)
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (h *Hook) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		plain(w, http.StatusNotFound, "no_service")
		return
	}
	if r.Method != http.MethodPost {
		plain(w, http.StatusMethodNotAllowed, "invalid_method")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil || len(body) > maxBodyBytes {
		plain(w, http.StatusBadRequest, "invalid_payload")
		return
	}
	var m Message
	if json.Unmarshal(body, &m) != nil {
		plain(w, http.StatusBadRequest, "invalid_payload")
		return
	}
	if m.Text == "" && len(m.Blocks) == 0 {
		plain(w, http.StatusBadRequest, "no_text")
		return
	}
	if !validBlocks(m.Blocks) {
		plain(w, http.StatusBadRequest, "invalid_blocks")
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.archived {
		plain(w, http.StatusGone, "channel_is_archived")
		return
	}
	h.messages = append(h.messages, m)
	h.raw = append(h.raw, body)
	plain(w, http.StatusOK, "ok")
}

func validBlocks(blocks []Block) bool {
	if len(blocks) > maxBlocks {
		return false
	}
	for _, b := range blocks {
		switch b.Type {
		case "section":
			if b.Text == nil || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") {
				return false
			}
			if n := utf8.RuneCountInString(b.Text.Text); n == 0 || n > maxSectionText {
				return false
			}
		case "divider", "context", "header", "image", "actions", "rich_text":
		default:
			return false
		}
	}
	return true
}
