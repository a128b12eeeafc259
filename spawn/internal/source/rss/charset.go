package rss

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// Where a document's character set was read from.
const (
	fromBOM      = "bom"      // a byte order mark
	fromProlog   = "prolog"   // the XML declaration's encoding
	fromHeader   = "header"   // the Content-Type charset parameter
	fromDetected = "detected" // the bytes themselves
	fromJSON     = "json"     // JSON Feed, UTF-8 by definition
)

// The names charset.Lookup gives the encodings decoding treats apart.
const (
	nameUTF8    = "utf-8"
	nameUTF16LE = "utf-16le"
	nameUTF16BE = "utf-16be"
	// nameReplacement is WHATWG's encoding for labels that must not be
	// decoded (ISO-2022-KR and the like): every byte would become one
	// U+FFFD. It is treated as an unknown label.
	nameReplacement = "replacement"
	// nameFallback reads a legacy document nothing labels, as browsers do
	// (WHATWG's default for an unlabelled document outside a locale): a
	// superset of ISO-8859-1.
	nameFallback = "windows-1252"
)

// decoded is a feed document as UTF-8, and how it was read.
type decoded struct {
	body []byte
	// charset is the canonical (WHATWG) name of the character set the
	// bytes were read in, and from where it was taken: fromBOM,
	// fromProlog, fromHeader, fromDetected or fromJSON.
	charset, from string
	// corrected names the declaration the bytes contradicted, as it was
	// written ("prolog ISO-8859-1", "header utf-8"), empty when none was
	// overruled.
	corrected string
	// replaced says bytes invalid in the character set became U+FFFD.
	replaced bool
}

// decodeDocument returns a fetched feed document as UTF-8 for the parser,
// with its XML declaration (if any) saying so. The character set is the
// byte order mark's, else the XML prolog's, else the Content-Type
// charset's, else what the bytes show; JSON Feed is UTF-8 by definition.
// A declaration the bytes contradict is overruled: bytes that are valid
// UTF-8 with non-ASCII text in them are UTF-8 whatever a legacy label
// says (no real legacy text reads as valid UTF-8), and bytes that are
// mostly invalid UTF-8 under a UTF-8 label are a legacy document (the
// header's charset if it names one, else windows-1252). Bytes invalid in
// the character set chosen become U+FFFD; nothing is dropped. A valid
// UTF-8 document that says so (or says nothing) is returned as it is,
// without a copy.
func decodeDocument(body []byte, contentType string) decoded {
	if enc, n := bomOf(body); enc != "" {
		out, replaced := convert(body[n:], enc)
		return finish(out, enc, fromBOM, "", replaced)
	}
	if enc := utf16Unmarked(body); enc != "" {
		out, replaced := convert(body, enc)
		return finish(out, enc, fromBOM, "", replaced)
	}
	if isJSON(body) {
		return jsonDocument(body)
	}
	said := prologEncoding(body)
	label, from := lookupLabel(said), fromProlog
	// The header is read only when the prolog does not settle it.
	header := func() (string, string) {
		h := headerCharset(contentType)
		return lookupLabel(h), h
	}
	if label == "" {
		label, said = header()
		from = fromHeader
	}
	if label == "" {
		label, from = nameUTF8, fromDetected
	}
	corrected := ""
	if label == nameUTF16LE || label == nameUTF16BE {
		// UTF-16 would have shown in the first bytes: the label lies
		// about a document in an ASCII-compatible charset.
		corrected = from + " " + said
		label, from = nameUTF8, fromDetected
	}
	if utf8.Valid(body) {
		if label != nameUTF8 && !isASCII(body) {
			// Valid UTF-8 with text beyond ASCII under a legacy
			// label: UTF-8 mislabelled, which decoding as the label
			// would turn into mojibake ("CafÃ©").
			return finish(body, nameUTF8, fromDetected, from+" "+said, false)
		}
		// Pure ASCII reads the same in every ASCII-compatible charset.
		return finish(body, label, from, corrected, false)
	}
	if label != nameUTF8 {
		out, replaced := convert(body, label)
		return finish(out, label, from, "", replaced)
	}
	// Invalid UTF-8 under a UTF-8 label, or under none.
	if multi, invalid := utf8Counts(body); multi > invalid {
		// Mostly UTF-8 with a few bad bytes: keep the rest.
		return finish(bytes.ToValidUTF8(body, replacement), nameUTF8, from, corrected, true)
	}
	// Mostly invalid: a legacy document, labelled UTF-8 or not at all.
	legacy := nameFallback
	if h, _ := header(); h != "" && h != nameUTF8 && h != nameUTF16LE && h != nameUTF16BE {
		legacy = h
	}
	if from != fromDetected {
		corrected = from + " " + said
	}
	out, replaced := convert(body, legacy)
	return finish(out, legacy, fromDetected, corrected, replaced)
}

// finish records how a document was read and makes its XML declaration,
// if it names an encoding other than UTF-8, say UTF-8: the body is UTF-8
// now, and the parser would otherwise decode it a second time. It also
// replaces the two non-characters XML forbids (U+FFFE, U+FFFF), which are
// valid UTF-8 but stop the parser.
func finish(body []byte, cs, from, corrected string, replaced bool) decoded {
	if start, end, ok := prologEncodingSpan(body); ok && !strings.EqualFold(string(body[start:end]), "utf-8") {
		out := make([]byte, 0, len(body)-(end-start)+len("UTF-8"))
		out = append(append(append(out, body[:start]...), "UTF-8"...), body[end:]...)
		body = out
	}
	if bytes.Contains(body, []byte("\xef\xbf")) && (bytes.Contains(body, nonCharFFFE) || bytes.Contains(body, nonCharFFFF)) {
		body = bytes.ReplaceAll(body, nonCharFFFE, replacement)
		body = bytes.ReplaceAll(body, nonCharFFFF, replacement)
		replaced = true
	}
	return decoded{body: body, charset: cs, from: from, corrected: corrected, replaced: replaced}
}

// The UTF-8 encodings of U+FFFE and U+FFFF.
var (
	nonCharFFFE = []byte("\xef\xbf\xbe")
	nonCharFFFF = []byte("\xef\xbf\xbf")
)

// jsonDocument reads a JSON Feed: UTF-8 whatever the headers say (RFC
// 8259 §8.1; the JSON Feed specification), a leading byte order mark
// dropped and invalid bytes made U+FFFD.
func jsonDocument(body []byte) decoded {
	body = bytes.TrimPrefix(body, utf8BOM)
	if utf8.Valid(body) {
		return decoded{body: body, charset: nameUTF8, from: fromJSON}
	}
	return decoded{body: bytes.ToValidUTF8(body, replacement), charset: nameUTF8, from: fromJSON, replaced: true}
}

// convert decodes body from the named character set to UTF-8; bytes the
// set has no character for become U+FFFD, and replaced says whether any
// did.
func convert(body []byte, name string) (out []byte, replaced bool) {
	if enc, _ := charset.Lookup(name); enc != nil {
		// The decoders replace what they cannot read rather than fail;
		// should one fail anyway, the bytes are read as UTF-8 below.
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			return out, bytes.Contains(out, replacement)
		}
	}
	return bytes.ToValidUTF8(body, replacement), !utf8.Valid(body)
}

// replacement is U+FFFD in UTF-8.
var replacement = []byte(string(utf8.RuneError))

// lookupLabel returns the canonical name of the character set a label
// names, or "" for no label, an unknown one, or one WHATWG refuses to
// decode.
func lookupLabel(label string) string {
	if label == "" {
		return ""
	}
	enc, name := charset.Lookup(label)
	if enc == nil || name == nameReplacement {
		return ""
	}
	return name
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// bomOf returns the character set a byte order mark names and the mark's
// length.
func bomOf(b []byte) (string, int) {
	switch {
	case bytes.HasPrefix(b, utf8BOM):
		return nameUTF8, len(utf8BOM)
	case bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return nameUTF16BE, 2
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}):
		return nameUTF16LE, 2
	}
	return "", 0
}

// utf16Unmarked recognises UTF-16 without a byte order mark by its first
// character, '<' (XML 1.0, appendix F).
func utf16Unmarked(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0, '<', 0}):
		return nameUTF16BE
	case bytes.HasPrefix(b, []byte{'<', 0}):
		return nameUTF16LE
	}
	return ""
}

// isJSON reports whether a document is JSON: its first character past
// white space (and a byte order mark) is '{', as feed type detection has
// it.
func isJSON(b []byte) bool {
	b = bytes.TrimLeft(bytes.TrimPrefix(b, utf8BOM), " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// maxPrologBytes bounds the search for the end of an XML declaration.
const maxPrologBytes = 512

// prologEncoding is the encoding an XML declaration names, "" when the
// document has no declaration or it names none.
func prologEncoding(b []byte) string {
	if start, end, ok := prologEncodingSpan(b); ok {
		return string(b[start:end])
	}
	return ""
}

// prologEncodingSpan locates the value of the encoding pseudo-attribute of
// the XML declaration at the start of b (after white space, as lenient
// parsers allow).
func prologEncodingSpan(b []byte) (start, end int, ok bool) {
	off := len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
	if !bytes.HasPrefix(b[off:], []byte("<?xml")) {
		return 0, 0, false
	}
	decl := b[off:min(len(b), off+maxPrologBytes)]
	stop := bytes.Index(decl, []byte("?>"))
	if stop < 0 {
		return 0, 0, false
	}
	decl = decl[:stop]
	i := bytes.Index(decl, []byte("encoding"))
	if i < 0 {
		return 0, 0, false
	}
	rest := bytes.TrimLeft(decl[i+len("encoding"):], " \t\r\n")
	if len(rest) == 0 || rest[0] != '=' {
		return 0, 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || (rest[0] != '"' && rest[0] != '\'') {
		return 0, 0, false
	}
	closing := bytes.IndexByte(rest[1:], rest[0])
	if closing < 0 {
		return 0, 0, false
	}
	start = off + len(decl) - len(rest) + 1
	return start, start + closing, true
}

// headerCharset is the charset parameter of a Content-Type header, read
// leniently: servers send malformed headers ("text/xml;charset=latin1;").
func headerCharset(contentType string) string {
	if contentType == "" {
		return ""
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		return params["charset"]
	}
	for _, p := range strings.Split(contentType, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(name), "charset") {
			return strings.Trim(strings.TrimSpace(value), `"'`)
		}
	}
	return ""
}

// isASCII reports whether b is pure ASCII.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// utf8Counts counts b's valid multi-byte UTF-8 sequences and its bytes
// that are no part of one.
func utf8Counts(b []byte) (multi, invalid int) {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			invalid++
		} else {
			multi++
		}
		i += size
	}
	return multi, invalid
}
