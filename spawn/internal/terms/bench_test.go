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
