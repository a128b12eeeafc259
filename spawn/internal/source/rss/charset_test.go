package rss

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// utf16LE encodes s as UTF-16 little-endian, with a byte order mark when
// bom is set.
func utf16LE(s string, bom bool) []byte {
	var out []byte
	if bom {
		out = append(out, 0xff, 0xfe)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

// TestDecodeDocument_ReadsEachCharacterSetFromWhereItIsSaid reads recorded
// documents (and a few built from their bytes) under the headers
// publishers send. want is text the document holds, as read off its bytes
// by eye; every result must be valid UTF-8 with an XML declaration that
// no longer names another character set.
func TestDecodeDocument_ReadsEachCharacterSetFromWhereItIsSaid(t *testing.T) {
	psy := readCorpus(t, "miniflux-no_encoding_ISO-8859-1.xml")
	urdu := readCorpus(t, "miniflux-urdu_UTF8.xml")
	tests := []struct {
		name        string
		body        []byte
		contentType string
		want        string // a piece of the decoded text
		charset     string // as read
		from        string
		corrected   string
		replaced    bool
	}{
		{"prolog ISO-8859-1", readCorpus(t, "miniflux-iso-8859-1.xml"), "", "<title>Café</title>", "windows-1252", fromProlog, "", false},
		{"prolog windows-1252 with the euro sign", readCorpus(t, "miniflux-windows-1252.xml"), "", "Euro €", "windows-1252", fromProlog, "", false},
		{"prolog windows-1251", readCorpus(t, "miniflux-encoding_WINDOWS-1251.xml"), "text/xml; charset=utf-8", "<title>Цитата #17703</title>", "windows-1251", fromProlog, "", false},
		{"prolog KOI8-R", readCorpus(t, "miniflux-koi8r.xml"), "", "<title>Первая новость</title>", "koi8-r", fromProlog, "", false},
		{"prolog label without a dash", readCorpus(t, "miniflux-iso88591.xml"), "", "<to>Anaïs</to>", "windows-1252", fromProlog, "", false},
		{"prolog wins over a header that disagrees", readCorpus(t, "miniflux-encoding_ISO-8859-1.xml"), "application/rss+xml; charset=windows-1251", "wünschen", "windows-1252", fromProlog, "", false},
		{"charset in the header only", psy, "text/xml; charset=ISO-8859-1", "nombre d'études", "windows-1252", fromHeader, "", false},
		{"charset in a malformed header", psy, "text/xml;charset=latin1;", "nombre d'études", "windows-1252", fromHeader, "", false},
		{"no charset anywhere", psy, "application/rss+xml", "nombre d'études", "windows-1252", fromDetected, "", false},
		{"no content type at all", psy, "", "nombre d'études", "windows-1252", fromDetected, "", false},
		{"header utf-8 over legacy bytes", psy, "application/rss+xml; charset=utf-8", "nombre d'études", "windows-1252", fromDetected, "header utf-8", false},
		{"prolog utf-8 over legacy bytes", readCorpus(t, "miniflux-iso88591_utf8_mismatch.xml"), "", "<from>Jürgen</from>", "windows-1252", fromDetected, "prolog utf-8", false},
		{"prolog utf-8 over legacy bytes the header names", []byte("<?xml version=\"1.0\" encoding=\"utf-8\"?><rss><channel><title>\xcf\xf0\xe8\xe2\xe5\xf2</title></channel></rss>"), "text/xml; charset=windows-1251", "<title>Привет</title>", "windows-1251", fromDetected, "prolog utf-8", false},
		{"prolog ISO-8859-1 over UTF-8 bytes", readCorpus(t, "miniflux-utf8-incorrect-prolog.xml"), "", "<title>Café</title>", "utf-8", fromDetected, "prolog ISO-8859-1", false},
		{"prolog windows-1252 over UTF-8 bytes", readCorpus(t, "miniflux-windows-1252-incorrect-prolog.xml"), "", "Euro €", "utf-8", fromDetected, "prolog windows-1252", false},
		{"header ISO-8859-1 over UTF-8 bytes", urdu[len(`<?xml version="1.0" encoding="UTF-8"?>`):], "application/rss+xml; charset=ISO-8859-1", "BBC News  اردو", "utf-8", fromDetected, "header ISO-8859-1", false},
		{"unknown prolog label", readCorpus(t, "miniflux-invalid-prolog.xml"), "", "<title>Café</title>", "utf-8", fromDetected, "", false},
		{"unknown prolog label, header charset", []byte("<?xml version=\"1.0\" encoding=\"invalid\"?><feed><title>Caf\xe9</title></feed>"), "application/atom+xml; charset=iso-8859-1", "<title>Café</title>", "windows-1252", fromHeader, "", false},
		{"UTF-8 byte order mark", readCorpus(t, "gofeed-rss_feed_bom.xml"), "text/xml; charset=iso-8859-1", "<title>Feed Title</title>", "utf-8", fromBOM, "", false},
		{"UTF-16 with a byte order mark", utf16LE(`<?xml version="1.0" encoding="UTF-16"?><rss><channel><title>Café</title></channel></rss>`, true), "", "<title>Café</title>", "utf-16le", fromBOM, "", false},
		{"UTF-16 without a byte order mark", utf16LE(`<?xml version="1.0" encoding="UTF-16"?><rss><channel><title>Café</title></channel></rss>`, false), "", "<title>Café</title>", "utf-16le", fromBOM, "", false},
		{"prolog UTF-16 over 8-bit bytes", []byte(`<?xml version="1.0" encoding="UTF-16"?><rss><channel><title>Café</title></channel></rss>`), "", "<title>Café</title>", "utf-8", fromDetected, "prolog UTF-16", false},
		{"a few invalid bytes in UTF-8", bytes.Replace(urdu, []byte("<title><![CDATA[BBC News"), []byte("<title><![CDATA[BBC\xff\xfe News"), 1), "", "BBC\uFFFD News  اردو", "utf-8", fromProlog, "", true},
		{"non-characters XML forbids", []byte("<rss><channel><title>a\uFFFEb\uFFFFc</title></channel></rss>"), "", "a\uFFFDb\uFFFDc", "utf-8", fromDetected, "", true},
		{"undefined byte in the declared set", []byte("<?xml version=\"1.0\" encoding=\"windows-1251\"?><rss><channel><title>\xcf\xf0\x98</title></channel></rss>"), "", "<title>Пр\uFFFD</title>", "windows-1251", fromProlog, "", true},
		{"JSON Feed ignores a header charset", readCorpus(t, "gofeed-version_json_11.json"), "application/feed+json; charset=iso-8859-1", `"title": "title"`, "utf-8", fromJSON, "", false},
		{"JSON Feed with invalid bytes", []byte("{\"version\":\"https://jsonfeed.org/version/1.1\",\"items\":[{\"id\":\"1\",\"content_text\":\"Caf\xe9 ok\"}]}"), "", "Caf\uFFFD ok", "utf-8", fromJSON, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeDocument(tt.body, tt.contentType)
			if !utf8.Valid(got.body) {
				t.Fatal("decoded document is not valid UTF-8")
			}
			if !strings.Contains(string(got.body), tt.want) {
				t.Errorf("decoded document lacks %q:\n%.300s", tt.want, got.body)
			}
			if got.charset != tt.charset || got.from != tt.from || got.corrected != tt.corrected || got.replaced != tt.replaced {
				t.Errorf("read as %s from %s, corrected %q, replaced %v; want %s from %s, corrected %q, replaced %v",
					got.charset, got.from, got.corrected, got.replaced, tt.charset, tt.from, tt.corrected, tt.replaced)
			}
			if enc := prologEncoding(got.body); enc != "" && !strings.EqualFold(enc, "utf-8") {
				t.Errorf("declaration still names %s", enc)
			}
		})
	}
}

// TestDecodeDocument_UTF8AsItIs returns a UTF-8 document that says so (or
// says nothing) without copying it: most feeds, on every poll.
func TestDecodeDocument_UTF8AsItIs(t *testing.T) {
	for _, file := range []string{"miniflux-urdu_UTF8.xml", "miniflux-small_atom.xml", "gofeed-rdf_item_links.xml", "gofeed-json11_full.json"} {
		body := readCorpus(t, file)
		got := decodeDocument(body, "application/xml; charset=utf-8")
		if &got.body[0] != &body[0] || len(got.body) != len(body) {
			t.Errorf("%s: copied", file)
		}
		if got.corrected != "" || got.replaced {
			t.Errorf("%s: corrected %q, replaced %v", file, got.corrected, got.replaced)
		}
	}
}

func TestHeaderCharset(t *testing.T) {
	tests := map[string]string{
		"":                                  "",
		"text/xml":                          "",
		"text/xml; charset=ISO-8859-1":      "ISO-8859-1",
		`text/xml; charset="windows-1251"`:  "windows-1251",
		"text/xml;charset=latin1;":          "latin1",
		"text/xml; Charset = KOI8-R ; x=y;": "KOI8-R",
	}
	for in, want := range tests {
		if got := headerCharset(in); got != want {
			t.Errorf("headerCharset(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrologEncoding(t *testing.T) {
	tests := map[string]string{
		`<?xml version="1.0" encoding="ISO-8859-1"?><rss/>`:    "ISO-8859-1",
		"<?xml version='1.0' encoding='koi8-r' ?><rss/>":       "koi8-r",
		"\n  <?xml version=\"1.0\" encoding = \"utf-8\"?><a/>": "utf-8",
		`<?xml version="1.0"?><rss encoding="latin1"/>`:        "",
		`<rss><?xml version="1.0" encoding="latin1"?></rss>`:   "",
		`<?xml version="1.0" encoding="latin1"`:                "",
		`<?xml version="1.0" encoding=latin1?>`:                "",
	}
	for in, want := range tests {
		if got := prologEncoding([]byte(in)); got != want {
			t.Errorf("prologEncoding(%q) = %q, want %q", in, got, want)
		}
	}
}
