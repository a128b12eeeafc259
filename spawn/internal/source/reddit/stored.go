package reddit

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Stored things. A listing re-checks what it handed over itself, for a
// week (recheck.go), but that schedule lives in the spawn's memory: a
// move, a restart or a crash loses it. So the kind declares a daily check
// (Info().Recheck) and is a source.Rechecker: the hub's compliance loop
// asks the spawn holding the kind to check the stored things of every
// reddit crawler, and the spawn hands their ids here. One run reads at
// most StoredMax of them through /api/info (100 a request, taking turns
// of the budget only when no poll waits): the newest, half of them
// comments and half posts (what one kind leaves unused goes to the
// other), since Reddit's ids grow with time and the newest are the ones
// most likely deleted since they were stored. Things Reddit no longer
// answers for are left as they are.

// Outcomes of a check of stored things (source.Checked.Status).
const (
	// StoredComplete: every id handed over was read.
	StoredComplete = "complete"
	// StoredPartial: only the newest StoredMax were read.
	StoredPartial = "partial"
	// StoredFailed: a request failed; the things read before it count.
	StoredFailed = "failed"
)

var _ source.Rechecker = (*Kind)(nil)

// Recheck reads the newest StoredMax of the stored things ids names
// through /api/info and reports those deleted or removed.
func (k *Kind) Recheck(ctx context.Context, ids []string) (source.Checked, error) {
	names, skipped := newestNames(ids, k.opts.StoredMax)
	out := source.Checked{Status: StoredComplete, Gone: map[string]string{}}
	if skipped > 0 {
		out.Status = StoredPartial
	}
	checked := 0
	for len(names) > 0 {
		batch := names[:min(maxInfoIDs, len(names))]
		names = names[len(batch):]
		var doc listingDoc
		err := k.client.get(ctx, infoPath+"?"+url.Values{"id": {strings.Join(batch, ",")}, "raw_json": {"1"}}.Encode(), true, &doc)
		if err != nil {
			out.Status = StoredFailed
			return out, fmt.Errorf("%w (after %d of the stored things)", err, checked)
		}
		asked := make(map[string]bool, len(batch))
		for _, n := range batch {
			asked[n] = true
		}
		for _, t := range doc.Data.Children {
			d := &t.Data
			if asked[d.Name] && t.Kind+"_"+d.ID == d.Name && d.gone() {
				out.Gone[IDPrefix+d.Name] = "reddit: deleted or removed"
			}
		}
		checked += len(batch)
	}
	k.opts.Logger.Info("reddit stored things re-checked", "checked", checked, "left_out", skipped, "gone", len(out.Gone))
	return out, nil
}

// newestNames picks, from comment ids of the kind, the fullnames of the
// newest max: half comments, half posts, either kind's unused share going
// to the other; newest first. It returns how many it left out; ids not of
// the kind are ignored.
func newestNames(ids []string, limit int) (names []string, skipped int) {
	type named struct {
		name string
		id   int64
	}
	byKind := map[string][]named{}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		name, ok := strings.CutPrefix(id, IDPrefix)
		if !ok || seen[name] {
			continue
		}
		for _, kind := range []string{kindComment, kindPost} {
			if n, ok := fullnameID(name, kind); ok {
				seen[name] = true
				byKind[kind] = append(byKind[kind], named{name, n})
			}
		}
	}
	comments, posts := byKind[kindComment], byKind[kindPost]
	for _, l := range [][]named{comments, posts} {
		slices.SortFunc(l, func(a, b named) int { return cmp.Compare(b.id, a.id) })
	}
	nc := min(len(comments), max(limit/2, limit-len(posts)))
	np := min(len(posts), limit-nc)
	for _, c := range comments[:nc] {
		names = append(names, c.name)
	}
	for _, p := range posts[:np] {
		names = append(names, p.name)
	}
	return names, len(comments) + len(posts) - nc - np
}
