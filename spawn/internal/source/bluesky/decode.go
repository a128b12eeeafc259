package bluesky

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Bounds on what an event may carry into an item.
const (
	// maxTextBytes caps a post's text (Bluesky allows 300 graphemes, a
	// few KiB at most).
	maxTextBytes = 32 << 10
	// maxDIDBytes caps an account's DID (did:plc ones are 32 bytes, the
	// DID syntax allows 2 KiB).
	maxDIDBytes = 2048
	// maxRKeyBytes caps a record key (the atproto limit).
	maxRKeyBytes = 512
	// maxHandleBytes caps a handle (a domain name).
	maxHandleBytes = 253
	// maxLabelBytes caps one label of a handle (the DNS limit).
	maxLabelBytes = 63
	// maxLangBytes caps a language tag.
	maxLangBytes = 35
	// profileURL is the web address of a post: handle or DID, then rkey.
	profileURL = "https://bsky.app/profile/%s/post/%s"
)

// eventKind tells the events the source uses apart.
type eventKind int

const (
	kindOther    eventKind = iota // valid, but nothing for the source
	kindPost                      // a post was created
	kindIdentity                  // an account's handle changed
	kindUpdate                    // a post was edited (its new record)
	kindDelete                    // a post was deleted
	kindAccount                   // an account's hosting status changed
)

// event is one decoded Jetstream event.
type event struct {
	kind   eventKind
	did    string
	timeUS int64
	rkey   string // kindPost, kindUpdate, kindDelete
	post   postRecord
	handle string // kindIdentity; "" when the account has none
	// active and status are an account's (kindAccount): status says why
	// an inactive one is (deleted, takendown, suspended, deactivated …).
	active bool
	status string
}

// maxStatusBytes caps an account status (a lexicon token).
const maxStatusBytes = 64

// postRecord is the part of an app.bsky.feed.post record the source uses.
type postRecord struct {
	Text      string   `json:"text"`
	CreatedAt string   `json:"createdAt"`
	Langs     []string `json:"langs"`
	Reply     *struct {
		Parent struct {
			URI string `json:"uri"`
		} `json:"parent"`
		Root struct {
			URI string `json:"uri"`
		} `json:"root"`
	} `json:"reply"`
	Facets []facet `json:"facets"`
	Embed  *embed  `json:"embed"`
}

// wireEvent is an event as the service sends it.
type wireEvent struct {
	DID    string `json:"did"`
	TimeUS int64  `json:"time_us"`
	Kind   string `json:"kind"`
	Commit *struct {
		Operation  string          `json:"operation"`
		Collection string          `json:"collection"`
		RKey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
	} `json:"commit"`
	Identity *struct {
		Handle string `json:"handle"`
	} `json:"identity"`
	Account *struct {
		Active *bool  `json:"active"`
		Status string `json:"status"`
	} `json:"account"`
}

// decodeEvent decodes one WebSocket message. JSON that ends early is
// ErrTruncated; anything else that is not one event of the protocol's shape
// is ErrMalformed. A post's create, update and delete commits decode as
// kindPost, kindUpdate and kindDelete; other collections' as kindOther.
func decodeEvent(data []byte) (event, error) {
	var w wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return event{}, classify(data, err)
	}
	if w.TimeUS <= 0 {
		return event{}, fmt.Errorf("%w: no time_us", ErrMalformed)
	}
	if !validDID(w.DID) {
		return event{}, fmt.Errorf("%w: DID %q", ErrMalformed, clip(w.DID))
	}
	ev := event{did: w.DID, timeUS: w.TimeUS}
	switch w.Kind {
	case "commit":
		c := w.Commit
		if c == nil {
			return event{}, fmt.Errorf("%w: commit event without a commit", ErrMalformed)
		}
		if c.Collection != PostCollection {
			return ev, nil
		}
		switch c.Operation {
		case "create":
			ev.kind = kindPost
		case "update":
			ev.kind = kindUpdate
		case "delete":
			ev.kind = kindDelete
		default:
			return ev, nil
		}
		if !validRKey(c.RKey) {
			return event{}, fmt.Errorf("%w: record key %q", ErrMalformed, clip(c.RKey))
		}
		if len(postURI(w.DID, c.RKey)) > source.MaxIDBytes {
			return event{}, fmt.Errorf("%w: post URI longer than %d bytes", ErrMalformed, source.MaxIDBytes)
		}
		ev.rkey = c.RKey
		if ev.kind == kindDelete {
			return ev, nil // a delete carries no record
		}
		if len(bytes.TrimSpace(c.Record)) == 0 || c.Record[0] != '{' {
			return event{}, fmt.Errorf("%w: post %s/%s without a record", ErrMalformed, clip(w.DID), c.RKey)
		}
		if err := json.Unmarshal(c.Record, &ev.post); err != nil {
			return event{}, fmt.Errorf("%w: post record: %v", ErrMalformed, err)
		}
	case "identity":
		if w.Identity == nil {
			return event{}, fmt.Errorf("%w: identity event without an identity", ErrMalformed)
		}
		ev.kind, ev.handle = kindIdentity, normalHandle(w.Identity.Handle)
	case "account":
		a := w.Account
		if a == nil || a.Active == nil {
			return event{}, fmt.Errorf("%w: account event without its active flag", ErrMalformed)
		}
		if len(a.Status) > maxStatusBytes {
			return event{}, fmt.Errorf("%w: account status %q", ErrMalformed, clip(a.Status))
		}
		ev.kind, ev.active, ev.status = kindAccount, *a.Active, a.Status
	}
	return ev, nil
}

// classify tells a message whose JSON ends early (ErrTruncated) from other
// invalid JSON (ErrMalformed). Only the error path pays for the second,
// streaming decode that can tell them apart.
func classify(data []byte, err error) error {
	var v any
	if derr := json.NewDecoder(bytes.NewReader(data)).Decode(&v); errors.Is(derr, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the JSON ends after %d bytes", ErrTruncated, len(data))
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// postURI is a post's at:// URI.
func postURI(did, rkey string) string {
	return IDPrefix + did + "/" + PostCollection + "/" + rkey
}

// postItem turns a post event into an item. author is the handle known
// for its DID, "" when none is yet: the item's Author is then the DID, as
// its AuthorID always is. The web address names the DID, which outlives
// any handle.
func postItem(ev event, author string, now time.Time) source.Item {
	text, links := postContent(&ev.post)
	return itemOf(ev, author, text, links, now)
}

// plainItem is postItem for Options.TextOnly: the post's text as written.
func plainItem(ev event, author string, now time.Time) source.Item {
	return itemOf(ev, author, ev.post.Text, nil, now)
}

// itemOf builds a post's item.
func itemOf(ev event, author, text string, links []string, now time.Time) source.Item {
	if author == "" {
		author = ev.did
	}
	it := source.Item{
		ID:          source.ItemID(postURI(ev.did, ev.rkey)),
		Author:      author,
		AuthorID:    ev.did,
		Text:        capText(text),
		URL:         source.WebURL(fmt.Sprintf(profileURL, ev.did, ev.rkey)),
		Links:       links,
		FetchedAt:   now.UTC(),
		Position:    ev.timeUS,
		PublishedAt: now.UTC(),
	}
	if t, err := time.Parse(time.RFC3339Nano, ev.post.CreatedAt); err == nil {
		it.PublishedAt = source.PublishedAt(t, now)
	}
	if len(ev.post.Langs) > 0 {
		it.Lang = normalLang(ev.post.Langs[0])
	}
	if r := ev.post.Reply; r != nil {
		it.ReplyTo, it.ThreadID = atURI(r.Parent.URI), atURI(r.Root.URI)
	}
	return it
}

// validDID checks the DID syntax: "did:", a lower-case method, ":", then
// letters, digits and ._:%- not ending in ':' or '%'.
func validDID(s string) bool {
	rest, ok := strings.CutPrefix(s, "did:")
	if !ok || len(s) > maxDIDBytes {
		return false
	}
	method, id, ok := strings.Cut(rest, ":")
	if !ok || method == "" || id == "" || id[len(id)-1] == ':' || id[len(id)-1] == '%' {
		return false
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !alnum(c) && !strings.ContainsRune("._:%-", rune(c)) {
			return false
		}
	}
	return true
}

// validRKey checks the record key syntax: 1 to 512 of letters, digits and
// ._:~-, neither "." nor "..".
func validRKey(s string) bool {
	if s == "" || len(s) > maxRKeyBytes || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && !strings.ContainsRune("._:~-", rune(c)) {
			return false
		}
	}
	return true
}

// normalHandle returns a handle lower-cased when it is a domain name, else
// "".
func normalHandle(s string) string {
	if s == "" || len(s) > maxHandleBytes || s == "handle.invalid" {
		return ""
	}
	s = strings.ToLower(s)
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return ""
	}
	for _, l := range labels {
		if l == "" || len(l) > maxLabelBytes || l[0] == '-' || l[len(l)-1] == '-' {
			return ""
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !alnum(c) && c != '-' {
				return ""
			}
		}
	}
	return s
}

// normalLang returns a BCP 47-shaped language tag lower-cased, else "".
func normalLang(s string) string {
	if s == "" || len(s) > maxLangBytes {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' {
			return ""
		}
	}
	return strings.ToLower(s)
}

// atURI returns s when it is a short, printable at:// URI, else "".
func atURI(s string) string {
	if !strings.HasPrefix(s, IDPrefix) || len(s) == len(IDPrefix) || len(s) > source.MaxIDBytes || source.ItemID(s) != s {
		return ""
	}
	return s
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// capText makes s valid UTF-8 and cuts it to maxTextBytes.
func capText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return source.CapText(s, maxTextBytes)
}

// clip shortens a string from the service for an error message.
func clip(s string) string { return source.Clip(s, maxClipBytes) }
