package bluesky

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPostContent(t *testing.T) {
	// Records in the lexicon's shapes; the recorded ones are in the
	// conformance test.
	cases := []struct {
		name   string
		record string
		text   string
		links  []string
	}{
		{"facet past the end is ignored",
			`{"text":"see example.com/a...","facets":[{"index":{"byteStart":4,"byteEnd":99},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://example.com/abc"}]}]}`,
			"see example.com/a...", nil},
		{"facet inside a character is ignored",
			`{"text":"é link","facets":[{"index":{"byteStart":1,"byteEnd":7},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://example.com/"}]}]}`,
			"é link", nil},
		{"reversed offsets are ignored",
			`{"text":"abc","facets":[{"index":{"byteStart":2,"byteEnd":1},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://example.com/"}]}]}`,
			"abc", nil},
		{"links replaced in text order, overlaps and repeats dropped",
			`{"text":"b.com/x and a.com/y and b.com/x","facets":[
				{"index":{"byteStart":12,"byteEnd":19},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://a.com/yy"}]},
				{"index":{"byteStart":0,"byteEnd":7},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://b.com/xx"}]},
				{"index":{"byteStart":2,"byteEnd":9},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://c.com/"}]},
				{"index":{"byteStart":24,"byteEnd":31},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"https://b.com/xx"}]}]}`,
			"https://b.com/xx and https://a.com/yy and https://b.com/xx", []string{"https://b.com/xx", "https://a.com/yy"}},
		{"a mention or tag facet changes nothing",
			`{"text":"@a.test #go","facets":[{"index":{"byteStart":0,"byteEnd":7},"features":[{"$type":"app.bsky.richtext.facet#mention","did":"did:plc:a"}]}]}`,
			"@a.test #go", nil},
		{"a javascript link is kept in the text only",
			`{"text":"click","facets":[{"index":{"byteStart":0,"byteEnd":5},"features":[{"$type":"app.bsky.richtext.facet#link","uri":"javascript:alert(1)"}]}]}`,
			"javascript:alert(1)", nil},
		{"image-only post is its alt texts",
			`{"text":"","embed":{"$type":"app.bsky.embed.images","images":[{"alt":"a red kite"},{"alt":""},{"alt":" over the hill "}]}}`,
			"a red kite\nover the hill", nil},
		{"quote with media: media then the quoted post",
			`{"text":"look","embed":{"$type":"app.bsky.embed.recordWithMedia","media":{"$type":"app.bsky.embed.images","images":[{"alt":"a chart"}]},"record":{"$type":"app.bsky.embed.record","record":{"uri":"at://did:plc:q/app.bsky.feed.post/3k2","cid":"bafy"}}}}`,
			"look\n\na chart\nhttps://bsky.app/profile/did:plc:q/post/3k2", []string{"https://bsky.app/profile/did:plc:q/post/3k2"}},
		{"quote with a link card",
			`{"text":"","embed":{"$type":"app.bsky.embed.recordWithMedia","media":{"$type":"app.bsky.embed.external","external":{"uri":"https://x.test/a","title":"X"}},"record":{"$type":"app.bsky.embed.record","record":{"uri":"at://did:plc:q/app.bsky.feed.post/3k2"}}}}`,
			"X\nhttps://x.test/a\nhttps://bsky.app/profile/did:plc:q/post/3k2", []string{"https://x.test/a", "https://bsky.app/profile/did:plc:q/post/3k2"}},
		{"a quoted list stays an at:// URI, not a link",
			`{"text":"my list","embed":{"$type":"app.bsky.embed.record","record":{"uri":"at://did:plc:q/app.bsky.graph.list/3k2"}}}`,
			"my list\n\nat://did:plc:q/app.bsky.graph.list/3k2", nil},
		{"video alt text",
			`{"text":"clip","embed":{"$type":"app.bsky.embed.video","alt":"a cat jumps"}}`,
			"clip\n\na cat jumps", nil},
		{"unknown embed ignored",
			`{"text":"hi","embed":{"$type":"app.example.embed","alt":"no"}}`,
			"hi", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p postRecord
			if err := json.Unmarshal([]byte(tc.record), &p); err != nil {
				t.Fatal(err)
			}
			text, links := postContent(&p)
			if text != tc.text || !slices.Equal(links, tc.links) {
				t.Errorf("text %q links %q, want %q %q", text, links, tc.text, tc.links)
			}
		})
	}
}
