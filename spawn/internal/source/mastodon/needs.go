package mastodon

import (
	"errors"
	"maps"
	"slices"
	"unicode"

	"github.com/blackwidow-crawl/blackwidow/pkg/query"
)

// maxTagBytes is the longest tag the source subscribes a hashtag stream
// for; a longer one is not a Mastodon hashtag.
const maxTagBytes = 100

// Names of the streams the source subscribes.
const (
	streamPublic  = "public"
	streamHashtag = "hashtag"
	streamUser    = "user" // the token account's home timeline and notifications
)

// needs tells which streams a subscriber's query needs: the hashtag
// streams of tags when every match of the query carries one of them, else
// the public stream (public is true and tags is nil).
func needs(q *query.Query) (tags []string, public bool, err error) {
	if q == nil {
		return nil, false, errors.New("mastodon: the query is empty")
	}
	set, ok := tagCover(q.Root(), false)
	if !ok || len(set) == 0 {
		return nil, true, nil
	}
	return slices.Sorted(maps.Keys(set)), false, nil
}

// tagCover returns tags such that every status n (negated if neg) matches
// carries one of them, when there are such tags among n's positive #tag
// atoms: a tag covers itself; an OR needs a cover of every branch (their
// union); an AND or a NEAR needs one of its kids' (the smallest).
// Negation swaps AND and OR (De Morgan) and a negated atom covers nothing. Tags that are not
// Mastodon hashtags (#2024, digits only) cover nothing either: no hashtag
// stream carries them.
func tagCover(n *query.Node, neg bool) (map[string]bool, bool) {
	switch n.Op {
	case query.OpAtom:
		if neg || n.Atom.Kind != query.Tag || !hashtag(n.Atom.Value) {
			return nil, false
		}
		return map[string]bool{n.Atom.Value: true}, true
	case query.OpNot:
		if len(n.Kids) != 1 {
			return nil, false
		}
		return tagCover(n.Kids[0], !neg)
	}
	// A NEAR needs both its operands, as an AND does.
	all := (n.Op == query.OpOr) != neg // every kid must be covered
	var best map[string]bool
	found := false
	for _, k := range n.Kids {
		c, ok := tagCover(k, neg)
		switch {
		case all && !ok:
			return nil, false
		case all:
			if best == nil {
				best = map[string]bool{}
			}
			maps.Copy(best, c)
			found = true
		case ok && (!found || len(c) < len(best)):
			best, found = c, true
		}
	}
	return best, found
}

// hashtag reports whether tag is a Mastodon hashtag name: letters, digits,
// marks, '_' and the middle dot, not only digits.
func hashtag(tag string) bool {
	if tag == "" || len(tag) > maxTagBytes {
		return false
	}
	digits := true
	for _, r := range tag {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), r == '_', r == '·', r == '\u200c':
			digits = false
		case unicode.IsDigit(r):
		default:
			return false
		}
	}
	return !digits
}
