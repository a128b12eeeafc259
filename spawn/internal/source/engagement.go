package source

import (
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Count is an engagement count as a source's JSON carries it. Only a
// non-negative integer is taken; anything else (null, a string, a
// fraction, a negative number) leaves it unknown instead of failing the
// whole post, whose text matters more than its counts.
type Count struct {
	N     int64
	Known bool
}

// UnmarshalJSON takes a non-negative JSON integer and ignores any other
// value.
func (c *Count) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	*c = Count{N: n, Known: err == nil && n >= 0}
	return nil
}

// EngagementOf is an item's engagement from its reposts and likes, nil
// unless the source gave both.
func EngagementOf(reposts, likes Count) *api.Engagement {
	if !reposts.Known || !likes.Known {
		return nil
	}
	return &api.Engagement{Reposts: reposts.N, Likes: likes.N}
}
