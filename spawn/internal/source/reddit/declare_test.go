package reddit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/config"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

const goodUA = "linux:dev.blackwidow.spawn:v1.0.0 (by /u/blackwidow_dev)"

func TestKeys_QueryMustNameSubreddits(t *testing.T) {
	k, err := New(Options{ClientID: "id", ClientSecret: "secret", UserAgent: goodUA})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		query string
		subs  []string
		err   error
	}{
		{query: "subreddit:golang (generics OR iterators)", subs: []string{"golang"}},
		{query: "subreddit:GoLang", subs: []string{"golang"}},
		{query: "subreddit:golang OR subreddit:rust", subs: []string{"golang", "rust"}},
		{query: "(subreddit:golang generics) OR (subreddit:rust traits)", subs: []string{"golang", "rust"}},
		{query: "subreddit:golang subreddit:rust", subs: []string{"golang", "rust"}},
		{query: "generics", err: ErrNoSubreddit},
		{query: "subreddit:golang OR generics", err: ErrNoSubreddit},
		{query: "-subreddit:golang iterators", err: ErrNoSubreddit},
		{query: "subreddit:a", err: ErrSubreddit},
		{query: "subreddit:this_name_is_far_too_long_for_reddit", err: ErrSubreddit},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			keys, err := k.Keys(spawntest.Sub(t, spawntest.Spec(Name, 3, nil, c.query)))
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				if !strings.Contains(err.Error(), "crawler 3") {
					t.Errorf("error %q does not name the crawler", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range c.subs {
				want = append(want, key(s, listingComments), key(s, listingNew))
			}
			if !slices.Equal(keys, want) {
				t.Errorf("keys %v, want %v", keys, want)
			}
		})
	}
}

func TestNew_RefusesWhatRedditWouldRefuse(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want error
	}{
		{name: "no secret", opts: Options{ClientID: "id", UserAgent: goodUA}},
		{name: "default user agent", opts: Options{ClientID: "id", ClientSecret: "s", UserAgent: "Go-http-client/1.1"}, want: ErrUserAgent},
		{name: "no username", opts: Options{ClientID: "id", ClientSecret: "s", UserAgent: "linux:app:v1"}, want: ErrUserAgent},
		{name: "missing version", opts: Options{ClientID: "id", ClientSecret: "s", UserAgent: "linux:app (by /u/someone)"}, want: ErrUserAgent},
		{name: "api url with a query", opts: Options{ClientID: "id", ClientSecret: "s", UserAgent: goodUA, APIURL: "https://oauth.reddit.com/?x=1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("err %v, want %v", err, c.want)
			}
		})
	}
	if _, err := New(Options{ClientID: "id", ClientSecret: "s", UserAgent: "android:com.example.myredditapp:v1.2.3 (by /u/kemitche)"}); err != nil {
		t.Errorf("Reddit's own example refused: %v", err)
	}
}

func TestKeys_ParseBack(t *testing.T) {
	for _, bad := range []string{"reddit", "reddit:golang", "reddit:golang:hot", "reddit:a/b:new", "twitter:golang:new"} {
		if _, _, err := parseKey(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	sub, listing, err := parseKey(key("golang", listingNew))
	if err != nil || sub != "golang" || listing != listingNew {
		t.Errorf("%q %q %v", sub, listing, err)
	}
}

func TestThing_TextURLAndLinks(t *testing.T) {
	post := thingData{ID: "abc", Name: "t3_abc", Subreddit: "golang", Title: "Go 1.23 & iterators", Selftext: "",
		IsSelf: false, URL: "https://go.dev/blog/range-functions", CreatedUTC: 1700000000}
	it := toItem(kindPost, &post, 13368, time.Now())
	if it.Fields[SubredditField] != "golang" {
		t.Errorf("fields %v", it.Fields)
	}
	if it.Text != "Go 1.23 & iterators" || it.URL != "https://www.reddit.com/r/golang/comments/abc/" ||
		!slices.Equal(it.Links, []string{"https://go.dev/blog/range-functions"}) || it.ReplyTo != "" || it.ThreadID != "" {
		t.Errorf("post %+v", it)
	}
	c := thingData{ID: "xyz", Name: "t1_xyz", Author: "gopher", Body: "see https://go.dev/doc/, and [spec](https://go.dev/ref/spec).",
		ParentID: "t3_abc", LinkID: "t3_abc", Subreddit: "GoLang", CreatedUTC: 1700000001.5, Permalink: "/r/golang/comments/abc/x/xyz/"}
	it = toItem(kindComment, &c, 44027, time.Now())
	if !slices.Equal(it.Links, []string{"https://go.dev/doc/", "https://go.dev/ref/spec"}) || it.ReplyTo != "reddit:t3_abc" ||
		it.ThreadID != "reddit:t3_abc" || it.URL != "https://www.reddit.com/r/golang/comments/abc/x/xyz/" ||
		it.PublishedAt.UnixMilli() != 1700000001500 || it.SourceID != "44027" || it.Fields[SubredditField] != "golang" {
		t.Errorf("comment %+v", it)
	}
}

func TestThing_Gone(t *testing.T) {
	removed := "moderator"
	cases := []struct {
		name string
		d    thingData
		gone bool
	}{
		{"comment", thingData{Name: "t1_a", Author: "a", Body: "hi"}, false},
		{"deleted comment", thingData{Name: "t1_a", Author: "[deleted]", Body: "[deleted]"}, true},
		{"removed comment", thingData{Name: "t1_a", Author: "a", Body: "[removed]"}, true},
		{"author gone, body kept", thingData{Name: "t1_a", Author: "[deleted]", Body: "still here"}, true},
		{"post quoting [removed]", thingData{Name: "t3_a", Author: "a", Title: "t", Selftext: "it said [removed]"}, false},
		{"removed post", thingData{Name: "t3_a", Author: "a", Title: "t", RemovedByCategory: &removed}, true},
	}
	for _, c := range cases {
		if got := c.d.gone(); got != c.gone {
			t.Errorf("%s: gone %v, want %v", c.name, got, c.gone)
		}
	}
}

func cursorSpec(crawler int64, k string, after int64, q string) api.SubscriberSpec {
	spec := spawntest.Spec(Name, crawler, nil, q)
	spec.Cursor = &api.Cursor{PublishedAt: time.Now(), Sources: map[string]string{k: formatDecimal(after)}}
	return spec
}

// TestSettings_CredentialsFromTheEnvironment: the client id and secret are
// read as DESIGN names them, BW_REDDIT_CLIENT_ID and
// BW_REDDIT_CLIENT_SECRET, each also from a file (…_FILE), and the kind is
// built with them.
func TestSettings_CredentialsFromTheEnvironment(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"BW_REDDIT_CLIENT_ID":          clientID,
		"BW_REDDIT_CLIENT_SECRET_FILE": secretFile,
		"BW_REDDIT_USER_AGENT":         goodUA,
	}
	var s Settings
	s.SetDefaults()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := config.Load("spawn", &s, nil, lookup, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s.ClientID != clientID || s.ClientSecret != secret || s.UserAgent != goodUA || s.APIURL != DefaultAPIURL || s.Recheck != DefaultRecheck {
		t.Fatalf("settings %+v", s)
	}
	k, err := s.Build(source.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if kind, ok := k.(*Kind); !ok || kind.opts.ClientID != clientID || kind.opts.ClientSecret != secret {
		t.Fatalf("built %T", k)
	}
	var secrets []string
	for _, st := range s.Info().Settings {
		if st.Secret {
			secrets = append(secrets, st.Env)
		}
	}
	if !slices.Equal(secrets, []string{"BW_REDDIT_CLIENT_ID", "BW_REDDIT_CLIENT_SECRET"}) {
		t.Errorf("secret settings %v", secrets)
	}
}

func TestSettings_Build(t *testing.T) {
	cases := []struct {
		name     string
		s        Settings
		offered  bool
		fails    bool
		failWith error
	}{
		{name: "nothing configured", s: Settings{}},
		{name: "a user agent alone", s: Settings{UserAgent: goodUA}},
		{name: "an id without a secret", s: Settings{ClientID: "id", UserAgent: goodUA}, fails: true},
		{name: "a secret without an id", s: Settings{ClientSecret: "s", UserAgent: goodUA}, fails: true},
		{name: "credentials without a user agent", s: Settings{ClientID: "id", ClientSecret: "s"}, fails: true, failWith: ErrUserAgent},
		{name: "a user agent not of Reddit's form", s: Settings{ClientID: "id", ClientSecret: "s", UserAgent: "curl/8.0"}, fails: true, failWith: ErrUserAgent},
		{name: "configured", s: Settings{ClientID: "id", ClientSecret: "s", UserAgent: goodUA}, offered: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := c.s.Build(source.Deps{})
			if c.fails {
				if err == nil || (c.failWith != nil && !errors.Is(err, c.failWith)) {
					t.Fatalf("err %v, want a failure (%v)", err, c.failWith)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, standIn := k.(source.NotConfigured)
			if standIn == c.offered {
				t.Errorf("offered %v, want %v", !standIn, c.offered)
			}
			if !c.offered {
				_, err := k.Keys(spawntest.Sub(t, spawntest.Spec(Name, 1, nil, "subreddit:golang")))
				if !errors.Is(err, ErrNotConfigured) || !strings.Contains(err.Error(), "BW_REDDIT_CLIENT_ID") {
					t.Errorf("a subscriber of an unconfigured spawn fails with %v", err)
				}
			}
		})
	}
}

func TestInfo_Declaration(t *testing.T) {
	var s Settings
	s.SetDefaults()
	info := s.Info()
	if err := info.Validate(); err != nil {
		t.Fatal(err)
	}
	if info.Name != Name || info.IDPrefix != IDPrefix || info.Scope != api.ScopeFleet || info.Cursor != api.CursorHistory ||
		!slices.Equal(info.QueryFields, []string{SubredditField}) || info.RequiredField != SubredditField ||
		time.Duration(info.Recheck) != StoredRecheck || info.Unoffered == "" {
		t.Errorf("declaration %+v", info)
	}
	// The hint the page shows is a query the kind takes.
	if _, err := subreddits(spawntest.Sub(t, spawntest.Spec(Name, 1, nil, info.QueryHint)).Query); err != nil {
		t.Errorf("hint %q: %v", info.QueryHint, err)
	}
}
