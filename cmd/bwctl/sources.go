package main

import (
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// builtinSources are the source kinds this build knows, as their packages
// declare them (api.BuiltinSources): bwctl offers their names and reads
// what their queries are from them, naming none itself.
var builtinSources = api.NewSourceRegistry(api.BuiltinSources()...)

// sourceNames lists the kinds, for --source's choices, in the order the
// spawn lists them.
func sourceNames() []string {
	var out []string
	for _, s := range api.BuiltinSources() {
		out = append(out, s.Name)
	}
	return out
}

// readsURLs says whether a kind's query is a list of URLs (feeds), which
// its keywords filter.
func readsURLs(source string) bool {
	info, ok := builtinSources.Lookup(source)
	return ok && info.Query == api.QueryURLs
}

// urlSources names the kinds whose query is a list of URLs, for help
// (the feed kinds).
func urlSources() string {
	var out []string
	for _, s := range builtinSources.All() {
		if s.Query == api.QueryURLs {
			out = append(out, s.Name)
		}
	}
	return strings.Join(out, ", ")
}
