// Package query is the query language of crawlers: it parses a query,
// gives it a canonical form and a query uuid (the key that routes equal
// queries to the same spawn so they share one data source), evaluates it,
// and compiles it to what the services understand natively (TrackTerms,
// CSDL, XRule). The language, case-insensitive and whole-word:
//
//	query  := or
//	or     := and ( "OR" and )*
//	and    := near ( ["AND"] near )*           juxtaposition is AND
//	near   := unary ( ("NEAR/" N | "NEAR/" N "f") unary )*
//	unary  := ( "-" | "NOT" ) unary | atom
//	atom   := WORD | PREFIX "*" | "\"" PHRASE "\"" | "#" TAG | "@" USER
//	        | "from:" USER | "lang:" CODE | "(" query ")"
//
// NOT binds tighter than NEAR, NEAR tighter than AND, AND tighter than
// OR; OR, AND, NOT and NEAR/n are operators only in capitals, and a "-"
// binds to the term right after it. A NEAR's operands are words, prefixes,
// phrases, #tags, @users, OR groups of them and NEARs, which it weighs as
// Lucene's span-near queries do (near.go).
// A comma outside quotes separates terms of the old list form, ORed
// (ParseList). The README's "The query language" shows what each form
// matches; why a canonical form, which queries are refused and how the old
// lists keep their uuids: docs/decisions/0006-query-language-canonical-form.md.
package query
