package xv2

import (
	"crypto/sha256"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
)

// This file turns a published post into what X sends for it, as X's data
// dictionary shows a post: text HTML-escaped ("&", "<" and ">" only), every
// link in it t.co-shortened with an entities.urls entry carrying the
// address the author wrote, a repost's text cut to "RT @user: …" with the
// whole original in includes.tweets, a quote post ending with the quoted
// post's t.co link, a long post's whole text in note_tweet, and only the
// fields and expansions the request asked for. The stream uses it; other
// endpoints (search, lookups) can render the same posts the same way.

// fields is what a request asked for with tweet.fields, expansions and
// user.fields.
type fields struct {
	tweet      map[string]bool
	expansions map[string]bool
}

// parseFields reads the field and expansion parameters of a request.
func parseFields(q url.Values) fields {
	set := func(name string) map[string]bool {
		m := map[string]bool{}
		for _, v := range strings.Split(q.Get(name), ",") {
			if v = strings.TrimSpace(v); v != "" {
				m[v] = true
			}
		}
		return m
	}
	return fields{tweet: set("tweet.fields"), expansions: set("expansions")}
}

// Expansions and tweet fields the server knows.
const (
	expAuthor        = "author_id"
	expReferenced    = "referenced_tweets.id"
	expReferencedBy  = "referenced_tweets.id.author_id"
	fieldAuthorID    = "author_id"
	fieldConv        = "conversation_id"
	fieldCreatedAt   = "created_at"
	fieldEntities    = "entities"
	fieldLang        = "lang"
	fieldNoteTweet   = "note_tweet"
	fieldMetrics     = "public_metrics"
	fieldReferenced  = "referenced_tweets"
	refTypeRetweeted = "retweeted"
	refTypeQuoted    = "quoted"
	refTypeRepliedTo = "replied_to"
)

// Lengths X cuts texts at.
const (
	// shortTextRunes is the length past which X moves a post's whole text
	// to note_tweet.text and cuts text.
	shortTextRunes = 280
	// repostTextUnits is the length, in UTF-16 code units, of a repost's
	// "RT @user: …" text: X's examples cut it to 139 units and "…".
	repostTextUnits = 140
)

// Wire shapes of a post.
type (
	tweetJSON struct {
		ID               string        `json:"id"`
		Text             string        `json:"text"`
		AuthorID         string        `json:"author_id,omitempty"`
		CreatedAt        string        `json:"created_at,omitempty"`
		Lang             string        `json:"lang,omitempty"`
		ConversationID   string        `json:"conversation_id,omitempty"`
		ReferencedTweets []refJSON     `json:"referenced_tweets,omitempty"`
		Entities         *entitiesJSON `json:"entities,omitempty"`
		EditHistory      []string      `json:"edit_history_tweet_ids"`
		NoteTweet        *noteJSON     `json:"note_tweet,omitempty"`
		// PublicMetrics are sent only when tweet.fields asks for them, as
		// X does.
		PublicMetrics *Metrics `json:"public_metrics,omitempty"`
	}
	refJSON struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	noteJSON struct {
		Text     string        `json:"text"`
		Entities *entitiesJSON `json:"entities,omitempty"`
	}
	entitiesJSON struct {
		URLs     []urlJSON     `json:"urls,omitempty"`
		Mentions []mentionJSON `json:"mentions,omitempty"`
	}
	// urlJSON is a link of a text; start and end count code points of the
	// unescaped text, end exclusive.
	urlJSON struct {
		Start       int    `json:"start"`
		End         int    `json:"end"`
		URL         string `json:"url"`
		ExpandedURL string `json:"expanded_url"`
		DisplayURL  string `json:"display_url"`
	}
	mentionJSON struct {
		Start    int    `json:"start"`
		End      int    `json:"end"`
		Username string `json:"username"`
		ID       string `json:"id,omitempty"`
	}
	userJSON struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Username string `json:"username"`
	}
	includesJSON struct {
		Users  []userJSON  `json:"users,omitempty"`
		Tweets []tweetJSON `json:"tweets,omitempty"`
	}
	matchJSON struct {
		ID  string `json:"id"`
		Tag string `json:"tag,omitempty"`
	}
	messageJSON struct {
		Data          tweetJSON     `json:"data"`
		Includes      *includesJSON `json:"includes,omitempty"`
		MatchingRules []matchJSON   `json:"matching_rules"`
	}
)

// stored is a published post as the server keeps it: its text as the
// author wrote it with every link replaced by its t.co address, and those
// links.
type stored struct {
	Post
	short string // unescaped text with t.co links
	urls  []link
}

// link is one t.co-shortened address of a text.
type link struct {
	short, full string
}

// linkPattern finds the addresses an author writes in a post.
var linkPattern = regexp.MustCompile(`https?://[^\s]+`)

// trailingPunct is cut from the end of a found address, as X's link
// detection leaves a sentence's full stop out of the link.
const trailingPunct = ".,;:!?)\"'"

// shorten replaces each address in text with a t.co address derived from
// the post id and the address, and returns the links.
func shorten(postID, text string) (string, []link) {
	var links []link
	out := linkPattern.ReplaceAllStringFunc(text, func(m string) string {
		full := strings.TrimRight(m, trailingPunct)
		l := link{short: tco(postID, full, len(links)), full: full}
		links = append(links, l)
		return l.short + m[len(full):]
	})
	return out, links
}

// tcoAlphabet spells t.co paths.
const tcoAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// tco is a t.co address: https://t.co/ and ten letters, 23 characters as
// X's are.
func tco(postID, full string, n int) string {
	sum := sha256.Sum256([]byte(postID + "\x00" + full + "\x00" + string(rune('0'+n))))
	b := make([]byte, 10)
	for i := range b {
		b[i] = tcoAlphabet[int(sum[i])%len(tcoAlphabet)]
	}
	return "https://t.co/" + string(b)
}

// htmlEscaper escapes a text as X does: "&", "<" and ">" only.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return htmlEscaper.Replace(s) }

// urlEntities locates each link that occurs whole in text.
func urlEntities(text string, links []link) []urlJSON {
	var out []urlJSON
	for _, l := range links {
		i := strings.Index(text, l.short)
		if i < 0 {
			continue
		}
		start := len([]rune(text[:i]))
		out = append(out, urlJSON{Start: start, End: start + len([]rune(l.short)), URL: l.short,
			ExpandedURL: l.full, DisplayURL: displayURL(l.full)})
	}
	return out
}

// maxDisplayRunes is how much of an address X shows before "…".
const maxDisplayRunes = 25

func displayURL(full string) string {
	d := strings.TrimPrefix(strings.TrimPrefix(full, "https://"), "http://")
	d = strings.TrimPrefix(d, "www.")
	if rs := []rune(d); len(rs) > maxDisplayRunes {
		d = string(rs[:maxDisplayRunes-1]) + "…"
	}
	return d
}

// cutUnits cuts s to at most n UTF-16 code units, "…" included, never
// inside a surrogate pair.
func cutUnits(s string, n int) string {
	if len(utf16.Encode([]rune(s))) <= n {
		return s
	}
	units := 0
	var b strings.Builder
	for _, r := range s {
		w := utf16.RuneLen(r)
		if units+w > n-1 {
			break
		}
		units += w
		b.WriteRune(r)
	}
	return b.String() + "…"
}

// storeLocked records a published post: its links shortened and, for a
// quote post, the quoted post's t.co link appended as X's examples show.
func (s *Server) storeLocked(p Post) *stored {
	st := &stored{Post: p}
	st.short, st.urls = shorten(p.ID, p.Text)
	if q := s.posts[p.QuoteOf]; q != nil {
		full := "https://x.com/" + q.Username + "/status/" + q.ID
		l := link{short: tco(p.ID, full, len(st.urls)), full: full}
		st.urls = append(st.urls, l)
		if st.short != "" {
			st.short += " "
		}
		st.short += l.short
	}
	s.posts[p.ID] = st
	return st
}

// repostText is a repost's own text: "RT @user: " and the original's text,
// cut.
func repostText(orig *stored) string {
	return cutUnits("RT @"+orig.Username+": "+orig.short, repostTextUnits)
}

// renderLocked is the post as a request with f sees it, with what its
// expansions include.
func (s *Server) renderLocked(st *stored, f fields) (tweetJSON, *includesJSON) {
	t := s.tweetLocked(st, f)
	var inc includesJSON
	addUser := func(p *stored) {
		if !slices.ContainsFunc(inc.Users, func(u userJSON) bool { return u.ID == p.AuthorID }) {
			inc.Users = append(inc.Users, userJSON{ID: p.AuthorID, Name: p.Username, Username: p.Username})
		}
	}
	if f.expansions[expAuthor] {
		addUser(st)
	}
	for _, r := range s.refsLocked(st) {
		ref := s.posts[r.ID]
		if ref == nil {
			continue
		}
		if f.expansions[expReferenced] {
			inc.Tweets = append(inc.Tweets, s.tweetLocked(ref, f))
		}
		if f.expansions[expReferencedBy] {
			addUser(ref)
		}
	}
	if len(inc.Users) == 0 && len(inc.Tweets) == 0 {
		return t, nil
	}
	return t, &inc
}

// refsLocked lists what a post references.
func (s *Server) refsLocked(st *stored) []refJSON {
	var refs []refJSON
	if st.RepostOf != "" {
		refs = append(refs, refJSON{Type: refTypeRetweeted, ID: st.RepostOf})
	}
	if st.QuoteOf != "" {
		refs = append(refs, refJSON{Type: refTypeQuoted, ID: st.QuoteOf})
	}
	if st.ReplyTo != "" {
		refs = append(refs, refJSON{Type: refTypeRepliedTo, ID: st.ReplyTo})
	}
	return refs
}

// tweetLocked is one post object with the fields f asks for.
func (s *Server) tweetLocked(st *stored, f fields) tweetJSON {
	text, links := st.short, st.urls
	var mentions []mentionJSON
	lang := st.Lang
	if orig := s.posts[st.RepostOf]; orig != nil {
		text, links = repostText(orig), orig.urls
		mentions = []mentionJSON{{Start: 3, End: 4 + len([]rune(orig.Username)), Username: orig.Username, ID: orig.AuthorID}}
		lang = orig.Lang
	}
	t := tweetJSON{ID: st.ID, EditHistory: []string{st.ID}}
	whole := text
	if rs := []rune(text); len(rs) > shortTextRunes {
		text = string(rs[:shortTextRunes-1]) + "…"
		if f.tweet[fieldNoteTweet] {
			t.NoteTweet = &noteJSON{Text: escape(whole)}
			if f.tweet[fieldEntities] {
				t.NoteTweet.Entities = entities(whole, links, nil)
			}
		}
	}
	t.Text = escape(text)
	if f.tweet[fieldEntities] {
		t.Entities = entities(text, links, mentions)
	}
	if f.tweet[fieldAuthorID] {
		t.AuthorID = st.AuthorID
	}
	if f.tweet[fieldCreatedAt] {
		t.CreatedAt = st.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if f.tweet[fieldLang] {
		t.Lang = lang
	}
	if f.tweet[fieldConv] {
		t.ConversationID = st.ConversationID
	}
	if f.tweet[fieldReferenced] {
		t.ReferencedTweets = s.refsLocked(st)
	}
	if f.tweet[fieldMetrics] {
		m := st.Metrics
		t.PublicMetrics = &m
	}
	return t
}

func entities(text string, links []link, mentions []mentionJSON) *entitiesJSON {
	e := &entitiesJSON{URLs: urlEntities(text, links), Mentions: mentions}
	if len(e.URLs) == 0 && len(e.Mentions) == 0 {
		return nil
	}
	return e
}

// matchTextLocked is what X's rules match a post on: its text as the
// author wrote it, links in full; a repost's "RT @user: " and the whole
// original; a quote post's text and the quoted post's.
func (s *Server) matchTextLocked(st *stored) string {
	if orig := s.posts[st.RepostOf]; orig != nil {
		return "RT @" + orig.Username + ": " + s.matchTextLocked(orig)
	}
	text := expand(st.short, st.urls)
	if q := s.posts[st.QuoteOf]; q != nil {
		text += "\n" + s.matchTextLocked(q)
	}
	return text
}

// expand puts each link's address back in place of its t.co address.
func expand(text string, links []link) string {
	for _, l := range links {
		text = strings.ReplaceAll(text, l.short, l.full)
	}
	return text
}
