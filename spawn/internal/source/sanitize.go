package source

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds on what an upstream item may carry into a comment. Items are
// untrusted input: a feed can put a megabyte in a GUID or a script in a link.
const (
	// MaxIDBytes caps an item id; a longer one (or one with control
	// characters or invalid UTF-8) is replaced by its hash, which stays
	// stable for the same upstream id.
	MaxIDBytes = 256
	// MaxURLBytes caps an item link; a longer one is dropped.
	MaxURLBytes = 2048
)

// EarliestPublished is the earliest publication time an item may claim: no
// source this product reads existed before it, so an earlier date (year 0,
// a zero Unix time) is a broken feed and the item counts as published when
// it was first seen.
var EarliestPublished = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

// idHashPrefix marks an id that was too long or unprintable to keep.
const idHashPrefix = "sha256:"

// ItemID returns raw as an item id when it is short and printable, else a
// stable hash of it.
func ItemID(raw string) string {
	if len(raw) <= MaxIDBytes && printable(raw) {
		return raw
	}
	sum := sha256.Sum256([]byte(raw))
	return idHashPrefix + hex.EncodeToString(sum[:])
}

// WebURL returns s when it is an absolute http or https URL of sane length,
// with its scheme in lower case, else "": a javascript: or data: link never
// reaches a comment, and "HTTPS://x" is stored as "https://x".
func WebURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxURLBytes || !printable(s) {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + s[len(u.Scheme):] // url.Parse lower-cases the scheme, the prefix of s
}

// ClockSlack is how far past a spawn's clock a log position (Item.Position,
// a time_us) may lie: the difference between the service's clock and the
// spawn's. A later position comes from a broken or hostile clock and is
// not believed.
const ClockSlack = 2 * time.Second

// FuturePosition reports whether a log position (a time_us) lies more than
// ClockSlack past now. Such a cursor, saved before positions were bounded,
// would make every item to come look delivered already.
func FuturePosition(pos int64, now time.Time) bool {
	return pos > now.Add(ClockSlack).UnixMicro()
}

// PublishedAt bounds the time an item claims to be published by what is
// possible: not before EarliestPublished and not after firstSeen, the time
// the spawn first saw it. A date in the future (a skewed clock, a broken
// feed) would otherwise carry a crawler's cursor past every real item to
// come. A zero or impossible claim yields firstSeen.
func PublishedAt(claimed, firstSeen time.Time) time.Time {
	if claimed.IsZero() || claimed.Before(EarliestPublished) || claimed.After(firstSeen) {
		return firstSeen.UTC()
	}
	return claimed.UTC()
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
