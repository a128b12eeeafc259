package cassandra

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

func keyOf(crawler int64, day int64, i int) rowKey {
	return rowKey{partKey{crawler, day}, int64(i) * 1000, "k" + strconv.Itoa(i)}
}

// TestKnownKeys_NoFalseNegatives: every key added is reported as maybe
// held, across the filter's growth, and keys never added mostly are not.
func TestKnownKeys_NoFalseNegatives(t *testing.T) {
	m := newKnownKeys()
	p := partKey{1, 86400}
	if !m.observe(p, false, true) {
		t.Fatal("an empty partition is not alone")
	}
	const n = 100_000
	var keys []rowKey
	for i := range n {
		keys = append(keys, keyOf(1, 86400, i))
	}
	for start := 0; start < n; start += 1000 {
		m.add(keys[start : start+1000])
	}
	for _, k := range keys {
		if !m.mayHold(k) {
			t.Fatalf("key %v added but not held", k)
		}
	}
	positives := 0
	for i := n; i < 2*n; i++ {
		if m.mayHold(keyOf(1, 86400, i)) {
			positives++
		}
	}
	// Each block is built for 0.8 % or less; the chain of blocks a
	// partition grows to adds theirs up (about 2 %).
	if rate := float64(positives) / n; rate > 0.03 {
		t.Fatalf("false positive rate %.3f, want at most 0.03", rate)
	}
	t.Logf("false positive rate over %d keys: %.4f", n, float64(positives)/n)
	if m.mayHold(keyOf(2, 86400, 1)) != true {
		t.Fatal("a partition never observed must be read")
	}
}

// TestKnownKeys_Observe: a partition is known whole only from the moment
// its writers set is seen empty, and never again once another writer is
// seen or its memory is given up.
func TestKnownKeys_Observe(t *testing.T) {
	m := newKnownKeys()
	a, b, c := partKey{1, 0}, partKey{2, 0}, partKey{3, 0}
	if m.observe(a, false, false) {
		t.Error("a partition naming only this Store, not remembered, taken as alone")
	}
	if m.observe(b, true, false) {
		t.Error("a partition naming another writer taken as alone")
	}
	if !m.observe(c, false, true) {
		t.Fatal("an empty partition not alone")
	}
	m.add([]rowKey{keyOf(3, 0, 1)})
	if !m.observe(c, false, false) {
		t.Fatal("the partition this Store alone wrote is no longer alone")
	}
	if m.mayHold(keyOf(3, 0, 2)) {
		t.Fatal("a key never written may be held")
	}
	if m.observe(c, true, false) {
		t.Fatal("still alone after another writer was seen")
	}
	if !m.mayHold(keyOf(3, 0, 2)) || m.keys != 0 {
		t.Fatalf("after another writer: key not read, or %d keys still counted", m.keys)
	}
	if m.observe(c, false, true) {
		t.Fatal("alone again after another writer was seen (its set read empty once more)")
	}
	// Write without a read of the writers set marks a partition it has no
	// memory of.
	d := partKey{4, 0}
	m.wrote([]rowKey{keyOf(4, 0, 1)})
	if m.observe(d, false, true) {
		t.Fatal("a partition Write wrote taken as alone by a read that found its set empty")
	}
}

// TestKnownKeys_Bound: past the bound, the least recently written
// partitions are forgotten and read again.
func TestKnownKeys_Bound(t *testing.T) {
	m := newKnownKeys()
	m.maxKeys = 100
	for crawler := int64(1); crawler <= 3; crawler++ {
		p := partKey{crawler, 0}
		if !m.observe(p, false, true) {
			t.Fatal("an empty partition is not alone")
		}
		var keys []rowKey
		for i := range 45 {
			keys = append(keys, keyOf(crawler, 0, i))
		}
		m.add(keys)
	}
	if m.keys > 100 {
		t.Fatalf("%d keys remembered, bound 100", m.keys)
	}
	if e := m.parts[partKey{1, 0}]; e == nil || e.alone || e.blocks != nil {
		t.Fatal("the least recently written partition's filter was kept, or its mark dropped")
	}
	if !m.mayHold(keyOf(1, 0, 200)) {
		t.Fatal("a forgotten partition's keys are not read")
	}
	if m.observe(partKey{1, 0}, false, false) {
		t.Fatal("a forgotten partition naming this Store taken as alone")
	}
	if m.mayHold(keyOf(3, 0, 200)) {
		t.Fatal("the most recent partition was forgotten")
	}
}

// TestWriteFresh_ReadsOnlyWhatMayBeHeld: new comments in partitions the
// Store alone writes are written without a read; those delivered again
// are read, and not counted twice.
func TestWriteFresh_ReadsOnlyWhatMayBeHeld(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	base := time.Now().UTC().Add(-time.Hour)
	var first []api.Comment
	var intents []store.Intent
	for i := range 500 {
		first = append(first, mkComment(int64(1+i%5), "c"+strconv.Itoa(i), base.Add(-time.Duration(i)*time.Second)))
	}
	for c := range int64(5) {
		intents = append(intents, store.Intent{NodeID: "n", Seq: uint64(c + 1), CrawlerID: c + 1, UserID: 1, Days: []time.Time{base, base.Add(-time.Duration(499) * time.Second)}})
	}
	// The intents read the partitions' writers beside them, for the write.
	if err := s.Intend(ctx, intents); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	prefetched := len(s.prefetched)
	s.mu.Unlock()
	if prefetched == 0 {
		t.Fatal("Intend read no writers set")
	}
	fresh, err := s.WriteFresh(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fresh {
		if !f {
			t.Fatalf("comment %d of a first write not new", i)
		}
	}
	if n := s.heldKeysRead.Load(); n != 0 {
		t.Fatalf("%d keys read for a batch of new comments in new partitions, want 0", n)
	}
	s.mu.Lock()
	left := len(s.prefetched)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d writers sets Intend read were not used by the write", left)
	}
	// 20 delivered again among 30 new.
	var second []api.Comment
	for i := range 20 {
		second = append(second, first[i*7])
	}
	for i := range 30 {
		second = append(second, mkComment(int64(1+i%5), "n"+strconv.Itoa(i), base.Add(-time.Duration(i)*time.Second-time.Millisecond)))
	}
	fresh, err = s.WriteFresh(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fresh {
		if f != (i >= 20) {
			t.Fatalf("comment %d (%s): fresh %v, want %v", i, second[i].ID, f, i >= 20)
		}
	}
	// The 20 held are read; a new one only when the filter gives a false
	// positive (under 1 % a key: at most a few of 30).
	if n := s.heldKeysRead.Load(); n < 20 || n > 25 {
		t.Fatalf("%d keys read, want the 20 delivered again and at most 5 false positives", n)
	}
	total := 0
	for c := int64(1); c <= 5; c++ {
		got, err := s.Recent(ctx, c, 1000)
		if err != nil {
			t.Fatal(err)
		}
		total += len(got)
	}
	if total != 530 {
		t.Fatalf("%d comments stored, want 530", total)
	}
}

// TestWriteFresh_AnotherWriterIsSeen: two stores on one keyspace (a
// crawler moved from one spawn to another, and back). Each sees the
// other's writes in the partition's writers set and reads the keys, so a
// comment the other stored is never counted twice, nor taken from the
// increment that counted it.
func TestWriteFresh_AnotherWriterIsSeen(t *testing.T) {
	a, uri := openTest(t)
	ctx := ctxT(t)
	b, err := Open(ctx, uri, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	base := time.Now().UTC().Add(-time.Hour)
	tag := func(c api.Comment, node string, seq uint64) api.Comment { c.NodeID, c.IncSeq = node, seq; return c }
	x, y, z := mkComment(4, "x", base), mkComment(4, "y", base.Add(time.Second)), mkComment(4, "z", base.Add(2*time.Second))
	// As a spawn writes: the intents (which read the partition's writers
	// beside them), then the comments.
	write := func(s *Store, node string, seq uint64, cs ...api.Comment) []bool {
		t.Helper()
		if err := s.Intend(ctx, []store.Intent{{NodeID: node, Seq: seq, CrawlerID: 4, UserID: 1, Days: []time.Time{base}}}); err != nil {
			t.Fatal(err)
		}
		for i := range cs {
			cs[i] = tag(cs[i], node, seq)
		}
		fresh, err := s.WriteFresh(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	if got := write(a, "node-a", 1, x, y); !reflect.DeepEqual(got, []bool{true, true}) {
		t.Fatalf("a's first write: %v", got)
	}
	// The crawler moves to b: x is held, z is new.
	if got := write(b, "node-b", 1, x, z); !reflect.DeepEqual(got, []bool{false, true}) {
		t.Fatalf("b's write after the move: %v, want [false true]", got)
	}
	// And back to a, which remembers x and y but never wrote z.
	if got := write(a, "node-a", 2, z, y); !reflect.DeepEqual(got, []bool{false, false}) {
		t.Fatalf("a's write after the move back: %v, want [false false]", got)
	}
	if got := write(b, "node-b", 2, y); !reflect.DeepEqual(got, []bool{false}) {
		t.Fatalf("b's write of a's comment: %v, want [false]", got)
	}
	counts := map[string]int64{}
	for _, node := range []string{"node-a", "node-b"} {
		incs, err := a.Recover(ctx, node, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, inc := range incs {
			counts[node+"/"+strconv.FormatUint(inc.Seq, 10)] = inc.Count
		}
	}
	if want := map[string]int64{"node-a/1": 2, "node-a/2": 0, "node-b/1": 1, "node-b/2": 0}; !reflect.DeepEqual(counts, want) {
		t.Fatalf("stored under each increment: %v, want %v", counts, want)
	}
}

// TestWriteFresh_AfterReopen: a spawn restarted (a new Store on the same
// keyspace) remembers nothing, and reads the keys of the partitions its
// earlier self wrote.
func TestWriteFresh_AfterReopen(t *testing.T) {
	a, uri := openTest(t)
	ctx := ctxT(t)
	base := time.Now().UTC().Add(-time.Hour)
	if _, err := a.WriteFresh(ctx, []api.Comment{mkComment(2, "x", base)}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := Open(ctx, uri, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	fresh, err := b.WriteFresh(ctx, []api.Comment{mkComment(2, "x", base), mkComment(2, "y", base)})
	if err != nil || !reflect.DeepEqual(fresh, []bool{false, true}) {
		t.Fatalf("after reopening: fresh %v, err %v, want [false true]", fresh, err)
	}
}

// TestWriteFresh_RemovedAndLiftedComesBack: a comment the Store wrote,
// removed with its author's account and delivered again once the account
// is active: it may be held by the Store's memory, so it is read, found
// absent, written and counted again.
func TestWriteFresh_RemovedAndLiftedComesBack(t *testing.T) {
	s, _ := openTest(t)
	ctx := ctxT(t)
	c := mkComment(6, "x", time.Now().UTC().Add(-time.Hour))
	if fresh, err := s.WriteFresh(ctx, []api.Comment{c}); err != nil || !fresh[0] {
		t.Fatalf("first write: %v, %v", fresh, err)
	}
	removed, err := s.Bury(ctx, []store.Tombstone{{Source: c.Source, Author: c.Author, Account: true, Until: time.Now().Add(time.Hour)}})
	if err != nil || len(removed) != 1 {
		t.Fatalf("Bury: %v, %v", removed, err)
	}
	if err := s.Lift(ctx, c.Source, []string{c.Author}); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.WriteFresh(ctx, []api.Comment{c})
	if err != nil || !fresh[0] {
		t.Fatalf("delivered again after the lift: %v, %v, want new", fresh, err)
	}
	if got, err := s.Recent(ctx, 6, 10); err != nil || len(got) != 1 {
		t.Fatalf("stored after the lift: %d, %v", len(got), err)
	}
}

// TestWriteFresh_RowsOfAnEarlierRelease: the rows written before the
// writers set existed name no writer; their days are read key by key.
func TestWriteFresh_RowsOfAnEarlierRelease(t *testing.T) {
	s, uri := openTest(t)
	ctx := ctxT(t)
	ks := s.cfg.Keyspace
	s.Close()
	today := time.Now().UTC().Add(-time.Minute)
	adm := admin(t)
	for _, q := range []string{
		`ALTER TABLE ` + ks + `.crawler_days DROP writers`,
		`DELETE FROM ` + ks + `.store_info WHERE name = '` + writersFromRow + `'`,
	} {
		if err := adm.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := adm.Query(`INSERT INTO `+ks+`.comments (crawler_id, day, published_at, comment_id, source, text) VALUES (?, ?, ?, ?, ?, ?)`,
		int64(8), utcDay(today), ms(today), "old", "rss", "an earlier release's row").Exec(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, uri, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if want := utcDay(time.Now()).AddDate(0, 0, 2); !s2.writersFrom.Equal(want) {
		t.Fatalf("writers from %v, want %v", s2.writersFrom, want)
	}
	fresh, err := s2.WriteFresh(ctx, []api.Comment{mkComment(8, "old", today), mkComment(8, "new", today)})
	if err != nil || !reflect.DeepEqual(fresh, []bool{false, true}) {
		t.Fatalf("write into an earlier release's day: fresh %v, err %v, want [false true]", fresh, err)
	}
}

// TestKnownKeys_PartsBound: past the partitions' bound, the least
// recently used marks are dropped.
func TestKnownKeys_PartsBound(t *testing.T) {
	m := newKnownKeys()
	m.maxParts = 8
	for crawler := int64(1); crawler <= 9; crawler++ {
		m.observe(partKey{crawler, 0}, false, true)
	}
	if len(m.parts) > 8 || m.parts[partKey{1, 0}] != nil || m.parts[partKey{9, 0}] == nil {
		t.Fatalf("%d partitions remembered; the oldest kept or the newest dropped", len(m.parts))
	}
}
