package terms

import (
	"fmt"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// BenchmarkBuilder is the analytics' cost per comment: one social-post
// text counted into an increment, and the increment built every 512
// comments (a full store batch).
func BenchmarkBuilder(b *testing.B) {
	comments := make([]api.Comment, 1000)
	now := time.Now()
	for i := range comments {
		comments[i] = api.Comment{Author: fmt.Sprint("author", i%97), FetchedAt: now,
			Text: fmt.Sprintf("Go 1.%d released with faster generics and a new iterator package #golang #topic%d @gopher%d https://go.dev/blog/%d", i%30, i%50, i%20, i)}
	}
	b.ReportAllocs()
	bl := NewBuilder()
	for i := 0; b.Loop(); i++ {
		bl.Add(&comments[i%len(comments)], now)
		if i%512 == 511 {
			bl.Build()
			bl = NewBuilder()
		}
	}
}

// benchComments are social-post comments for the benchmarks.
func benchComments(n int) []api.Comment {
	comments := make([]api.Comment, n)
	now := time.Now()
	for i := range comments {
		comments[i] = api.Comment{Author: fmt.Sprint("author", i%97), FetchedAt: now,
			Text: fmt.Sprintf("Go 1.%d released with faster generics and a new iterator package #golang #topic%d @gopher%d https://go.dev/blog/%d", i%30, i%50, i%20, i)}
	}
	return comments
}

// BenchmarkExtract is the cost of finding one comment's terms ahead of
// the store writer (Set.Extract).
func BenchmarkExtract(b *testing.B) {
	comments := benchComments(1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := &comments[i%len(comments)]
		Extract(c.Text, c.Lang)
	}
}

// BenchmarkCount is the cost of counting one comment whose terms were
// extracted into an increment, built every 512 comments (a full store
// batch): the store writer's share of the analytics.
func BenchmarkCount(b *testing.B) {
	comments := benchComments(1000)
	sets := make([]*Set, len(comments))
	for i := range comments {
		sets[i] = Extract(comments[i].Text, comments[i].Lang)
	}
	b.ReportAllocs()
	bl := NewBuilder()
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		bl.AddSet(&comments[i%len(comments)], sets[i%len(comments)], now)
		if i%512 == 511 {
			bl.Build()
			bl.Reset()
		}
	}
}

// multilingualComments are social-post comments beyond ASCII: curly
// apostrophes and quotes, dashes, a no-break space, emoji, accented
// words, Chinese and Japanese.
func multilingualComments(n int) []api.Comment {
	texts := []string{
		"Go 1.%d’s new iterator package — faster generics «at last» 🚀 #golang #topic%d @gopher%d",
		"Le café de la rue n°%d : « très bon » ! #paris%d @ami%d",
		"学习golang第%d天，今天读了泛型。#编程%d @gopher%d",
		"ゴールデンウィークにGo %dを勉強中…楽しい！#golang%d @gopher%d",
	}
	comments := make([]api.Comment, n)
	now := time.Now()
	for i := range comments {
		comments[i] = api.Comment{Author: fmt.Sprint("author", i%97), FetchedAt: now,
			Text: fmt.Sprintf(texts[i%len(texts)], i%30, i%50, i%20)}
	}
	return comments
}

// BenchmarkExtractMultilingual is BenchmarkExtract on texts beyond ASCII,
// which the query language's word rules cut.
func BenchmarkExtractMultilingual(b *testing.B) {
	comments := multilingualComments(1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := &comments[i%len(comments)]
		Extract(c.Text, c.Lang)
	}
}
