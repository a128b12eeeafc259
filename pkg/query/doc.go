// Package query is the query language of crawlers: it parses a query,
// gives it a canonical form and a query uuid (the key that routes equal
// queries to the same spawn so they share one data source), evaluates it,
// and compiles it to what the services understand natively.
//
// # Language
//
//	query  := or
//	or     := and ( "OR" and )*
//	and    := unary ( ["AND"] unary )*          juxtaposition is AND
//	unary  := ( "-" | "NOT" ) unary | atom
//	atom   := WORD | "\"" PHRASE "\"" | "#" TAG | "@" USER | "from:" USER
//	        | "lang:" CODE | "(" query ")"
//
// NOT binds tighter than AND, AND tighter than OR: `a OR b c` is
// `a OR (b AND c)` and `-a b` is `(NOT a) AND b`. OR, AND and NOT are
// operators only in capitals; "or" is a word. A "-" binds to the term right
// after it ("- a" is an error, "e-mail" a word).
//
// Matching is case-insensitive and whole-word: a word or phrase matches
// where it occurs in an item's text with no word byte on either side
// (ContainsWord; letters, digits, '_' and non-ASCII are word bytes), so
// golang does not match "golangs". #tag and @user match the text tokens
// "#tag" and "@user" the same way: the tag #go matches "#go" but not a bare
// "go" nor "#golang", while the word go matches both "go" and "#go".
// from:user tests the item's author, lang:code its language (lang:en
// matches "en" and "en-gb").
//
// A query must be able to match something on its own: every branch of its
// ORs must require a word, phrase, #tag, @user or from: to occur, so
// `-java`, `NOT a OR -b` and `lang:en` alone are refused while
// `golang -java lang:en` is fine. That lets an index of many queries find
// the candidates for an item from the positive terms it contains, and
// keeps every query expressible as a service rule. Limits (MaxQueryLength,
// MaxAtoms, MaxDepth) bound a query; errors wrap ErrInvalid and name the
// place: `query: unclosed "(" at column 9`.
//
// # Canonical form and uuid
//
// Parse returns a Query in canonical form (Query.String): operators
// flattened, operands lowercased, sorted and de-duplicated, single-kid
// groups unwrapped, double negations removed. It parses back to itself, so
// `rust OR golang` and `(golang OR  Rust)` share the canonical form and the
// query uuid (Query.UUID, UUIDOf), a UUIDv5 of source kind and canonical
// form.
//
// # The comma lists of old
//
// A comma outside quotes separates terms, each a query of its own, and the
// query is their OR: `golang,new release` is `golang OR (new AND release)`,
// as Twitter's track reads it. ParseList reads the list form of the API.
// Canonical, Keywords and UUID are the list functions from before the
// language; rss crawlers keep them for their feed URLs, and UUIDOf keeps
// the old uuid of a list wherever the canonical form allows (LegacyUUID
// tells which crawlers move).
//
// # Services
//
// TrackTerms and CSDL compile a query to filters Twitter's v1.1 track and
// a DataSift-shaped stream accept that cover it: every item it matches
// passes them, and the caller evaluates the query on what arrives. XRule
// states it exactly as an X API v2 filtered-stream rule.
package query
