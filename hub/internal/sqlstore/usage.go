package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// maxIDsPerQuery bounds the IN lists the store builds, well under SQLite's
// and PostgreSQL's limits on bound parameters.
const maxIDsPerQuery = 500

// maxNodeID is the longest node id applied_increments can hold.
const maxNodeID = 64

// ApplyIncrements adds a batch of usage increments to the crawlers' and
// users' usage, each exactly once, and returns the increments it applied
// now, in input order (for one a recovery had counted short, with the
// difference it added; see ApplyRecovered).
//
// Why increments: docs/decisions/0003-usage-increments-applied-once.md. One
// transaction inserts the id
// (NodeID, Seq) of every increment into applied_increments with ON CONFLICT
// DO NOTHING, and only an increment whose row was actually inserted adds its
// Count, with UPDATE … SET usage = usage + n (never a read-modify-write). An
// increment seen before, in this batch or an earlier one, by this caller or a
// concurrent one, inserts nothing and adds nothing, so usage equals the sum of
// distinct increments whatever polls are lost, repeated or reordered. The
// increment ids and the usage commit or roll back together.
//
// The count goes to the crawler's user as stored in SQL; for a crawler that
// no longer exists it goes to inc.UserID, and the increment is still
// recorded. A crawler's CursorAt moves forward to inc.Newest, never back,
// and its CursorPos to inc.Position (NextCursorPos); neither is ever set
// past the clock and MaxCursorAhead. A
// negative count (a spawn bug) is recorded with count 0, so it is
// acknowledged and never comes back.
//
// Rows are locked in one global order (increment ids, then crawlers by id,
// then users by id), so concurrent callers on PostgreSQL cannot deadlock.
func (s *Store) ApplyIncrements(ctx context.Context, incs []api.Increment) ([]api.Increment, error) {
	applied, err := s.applyIncrements(ctx, incs, false)
	if err == nil {
		s.pruneAnalyticsSometimes(ctx)
	}
	return applied, err
}

// ApplyRecovered is ApplyIncrements for increments a live spawn counted
// from the store on behalf of a lost node. They are marked recovered: if the
// node was only cut off and reports one of them later with a higher count
// (the rest of its batch landed after the store was read), ApplyIncrements
// adds the difference, once, so usage still equals what is stored.
func (s *Store) ApplyRecovered(ctx context.Context, incs []api.Increment) ([]api.Increment, error) {
	return s.applyIncrements(ctx, incs, true)
}

func (s *Store) applyIncrements(ctx context.Context, incs []api.Increment, recovered bool) ([]api.Increment, error) {
	if len(incs) == 0 {
		return nil, nil
	}
	incs = slices.Clone(incs) // counts may become differences below
	at := now()
	for i, inc := range incs {
		if inc.NodeID == "" || len(inc.NodeID) > maxNodeID {
			return nil, fmt.Errorf("%w: increment %d has node id %q (want 1 to %d bytes)", ErrInvalid, inc.Seq, inc.NodeID, maxNodeID)
		}
		s.boundCursor(&incs[i], at)
	}
	order := make([]int, len(incs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(incs[a].NodeID, incs[b].NodeID), cmp.Compare(incs[a].Seq, incs[b].Seq))
	})

	// A second copy of an id in the batch is the same increment: only the
	// first can count.
	type incID struct {
		node string
		seq  uint64
	}
	firsts := order[:0:0]
	seen := make(map[incID]bool, len(order))
	for _, i := range order {
		k := incID{incs[i].NodeID, incs[i].Seq}
		if !seen[k] {
			seen[k] = true
			firsts = append(firsts, i)
		}
	}
	order = firsts

	var applied []api.Increment
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		applied = applied[:0]
		inserted, err := s.recordIncrementsTx(tx, incs, order, recovered, now())
		if err != nil {
			return err
		}
		fresh := slices.Clone(inserted)
		for _, i := range order {
			inc := incs[i]
			if inc.Count < 0 {
				s.logger.Warn("negative usage increment ignored", "node_id", inc.NodeID, "seq", inc.Seq, "crawler_id", inc.CrawlerID, "count", inc.Count)
			}
			if inserted[i] || recovered {
				continue
			}
			more, err := s.recoveredShortfallTx(tx, inc)
			if err != nil {
				return err
			}
			if more > 0 {
				incs[i].Count, fresh[i] = more, true
			}
		}

		if !recovered {
			if err := s.applyAnalyticsTx(tx, incs, order, inserted); err != nil {
				return err
			}
		}

		// Who owns each crawler, as SQL says.
		var crawlerIDs []int64
		for i, inc := range incs {
			if fresh[i] {
				crawlerIDs = append(crawlerIDs, inc.CrawlerID)
			}
		}
		if len(crawlerIDs) == 0 {
			return nil
		}
		slices.Sort(crawlerIDs)
		crawlerIDs = slices.Compact(crawlerIDs)
		owner := make(map[int64]int64, len(crawlerIDs))
		for chunk := range slices.Chunk(crawlerIDs, maxIDsPerQuery) {
			var rows []struct{ ID, UserID int64 }
			if err := tx.Model(&Crawler{}).Select("id", "user_id").Where("id IN ?", chunk).Scan(&rows).Error; err != nil {
				return fmt.Errorf("read crawler owners: %w", err)
			}
			for _, r := range rows {
				owner[r.ID] = r.UserID
			}
		}

		byCrawler := make(map[int64]*usageDelta, len(crawlerIDs))
		byUser := make(map[int64]int64)
		for i, inc := range incs {
			if !fresh[i] {
				continue
			}
			inc.Count = max(inc.Count, 0)
			applied = append(applied, inc)
			userID, exists := owner[inc.CrawlerID]
			if exists {
				d := byCrawler[inc.CrawlerID]
				if d == nil {
					d = &usageDelta{}
					byCrawler[inc.CrawlerID] = d
				}
				d.count += inc.Count
				if inc.Newest.After(d.newest) {
					d.newest = inc.Newest
				}
				d.pos = max(d.pos, inc.Position)
				d.ids = d.ids.Merge(inc.Sources)
			} else {
				userID = inc.UserID
			}
			if userID <= 0 {
				s.logger.Warn("usage increment has no user", "node_id", inc.NodeID, "seq", inc.Seq, "crawler_id", inc.CrawlerID, "count", inc.Count)
				continue
			}
			byUser[userID] += inc.Count
		}
		if err := s.addCrawlerUsageTx(tx, crawlerIDs, byCrawler); err != nil {
			return err
		}
		return s.addUserUsageTx(tx, byUser)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to apply %d usage increments: %w", len(incs), err)
	}
	return applied, nil
}

// usageDelta is what a batch adds to one crawler.
type usageDelta struct {
	count  int64
	newest time.Time
	pos    int64
	ids    SourceIDs // newest source ids, merged into cursor_ids
}

// rowsPerStatement bounds the rows one multi-row statement writes: a few
// thousand bound parameters, far below both databases' limits.
const rowsPerStatement = 400

// recordIncrementsTx inserts the id of every increment (order: sorted by
// id, without repeats) into applied_increments, a few hundred rows a
// statement, and reports which were new: ON CONFLICT DO NOTHING inserts
// only those, and RETURNING names them. An increment's analytics are
// marked applied by the insert that records it (they are applied in the
// same transaction); a recovered one carries none.
func (s *Store) recordIncrementsTx(tx *gorm.DB, incs []api.Increment, order []int, recovered bool, at time.Time) ([]bool, error) {
	inserted := make([]bool, len(incs))
	type incID struct {
		node string
		seq  uint64
	}
	for chunk := range slices.Chunk(order, rowsPerStatement) {
		var sql strings.Builder
		sql.WriteString("INSERT INTO applied_increments (node_id, seq, crawler_id, count, applied_at, recovered, analytics) VALUES ")
		args := make([]any, 0, 7*len(chunk))
		for j, i := range chunk {
			if j > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			inc := incs[i]
			args = append(args, inc.NodeID, int64(inc.Seq), inc.CrawlerID, max(inc.Count, 0), at, recovered, inc.Analytics != nil && !recovered)
		}
		sql.WriteString(" ON CONFLICT DO NOTHING RETURNING node_id, seq")
		rows, err := tx.Raw(sql.String(), args...).Rows()
		if err != nil {
			return nil, fmt.Errorf("record %d increments: %w", len(chunk), err)
		}
		got := make(map[incID]bool, len(chunk))
		for rows.Next() {
			var k incID
			var seq int64
			if err := rows.Scan(&k.node, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("record increments: %w", err)
			}
			k.seq = uint64(seq)
			got[k] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("record increments: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("record increments: %w", err)
		}
		for _, i := range chunk {
			inserted[i] = got[incID{incs[i].NodeID, incs[i].Seq}]
		}
	}
	return inserted, nil
}

// addCrawlerUsageTx adds each crawler's delta to its usage and moves its
// cursors forward (never back), a few hundred crawlers a statement, in id
// order: UPDATE … SET usage = usage + v.n FROM (VALUES …) v, never a
// read-modify-write.
func (s *Store) addCrawlerUsageTx(tx *gorm.DB, ids []int64, deltas map[int64]*usageDelta) error {
	var todo []int64
	for _, id := range ids {
		if d := deltas[id]; d != nil && (d.count != 0 || !d.newest.IsZero() || d.pos != 0 || len(d.ids) > 0) {
			todo = append(todo, id)
		}
	}
	for chunk := range slices.Chunk(todo, rowsPerStatement) {
		if err := s.lockRowsTx(tx, "crawlers", chunk); err != nil {
			return err
		}
		// Source ids merge key by key with what the rows hold, read under
		// the lock (SQLite runs one writing transaction at a time).
		merged, err := s.mergeCursorIDsTx(tx, chunk, deltas)
		if err != nil {
			return err
		}
		values := s.valuesRows(len(chunk), "BIGINT", "BIGINT", "TIMESTAMPTZ", "BIGINT", "TEXT")
		args := make([]any, 0, 5*len(chunk)+1)
		for _, id := range chunk {
			d := deltas[id]
			var at any // NULL: no cursor time
			if !d.newest.IsZero() {
				at = dbTime(d.newest)
			}
			args = append(args, id, d.count, at, d.pos, merged[id]) // "": unchanged
		}
		sql := "WITH v(id, n, at, pos, ids) AS (VALUES " + values + ") " +
			"UPDATE crawlers SET usage = crawlers.usage + v.n, " +
			"cursor_at = CASE WHEN v.at IS NOT NULL AND (crawlers.cursor_at IS NULL OR crawlers.cursor_at < v.at) THEN v.at ELSE crawlers.cursor_at END, " +
			// NextCursorPos: v.pos is never in the future (boundCursor);
			// a saved position that is gives way to it.
			"cursor_pos = CASE WHEN v.pos > 0 AND (crawlers.cursor_pos < v.pos OR crawlers.cursor_pos > ?) THEN v.pos ELSE crawlers.cursor_pos END, " +
			"cursor_ids = CASE WHEN v.ids <> '' THEN v.ids ELSE crawlers.cursor_ids END " +
			"FROM v WHERE crawlers.id = v.id"
		args = append(args, now().Add(MaxCursorAhead).UnixMicro())
		if err := tx.Exec(sql, args...).Error; err != nil {
			return fmt.Errorf("add usage to %d crawlers: %w", len(chunk), err)
		}
	}
	return nil
}

// mergeCursorIDsTx reads the cursor_ids of the crawlers of ids whose
// deltas bring source ids and returns, by crawler, the merged column text
// to write; a crawler whose ids do not change is left out.
func (s *Store) mergeCursorIDsTx(tx *gorm.DB, ids []int64, deltas map[int64]*usageDelta) (map[int64]string, error) {
	var with []int64
	for _, id := range ids {
		if len(deltas[id].ids) > 0 {
			with = append(with, id)
		}
	}
	out := make(map[int64]string, len(with))
	if len(with) == 0 {
		return out, nil
	}
	var rows []struct {
		ID        int64
		CursorIDs SourceIDs
	}
	if err := tx.Model(&Crawler{}).Select("id", "cursor_ids").Where("id IN ?", with).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read cursor ids: %w", err)
	}
	for _, r := range rows {
		next := r.CursorIDs.Merge(deltas[r.ID].ids)
		if len(next) == len(r.CursorIDs) && maps.Equal(next, r.CursorIDs) {
			continue
		}
		text, err := next.Value()
		if err != nil {
			return nil, fmt.Errorf("write cursor ids: %w", err)
		}
		out[r.ID] = text.(string)
	}
	return out, nil
}

// addUserUsageTx adds to the users' usage, as addCrawlerUsageTx does for
// crawlers. Usage for a user that no longer exists is dropped, with a
// warning.
func (s *Store) addUserUsageTx(tx *gorm.DB, byUser map[int64]int64) error {
	ids := make([]int64, 0, len(byUser))
	for id, n := range byUser {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, rowsPerStatement) {
		values := s.valuesRows(len(chunk), "BIGINT", "BIGINT")
		args := make([]any, 0, 2*len(chunk))
		for _, id := range chunk {
			args = append(args, id, byUser[id])
		}
		if err := s.lockRowsTx(tx, "users", chunk); err != nil {
			return err
		}
		res := tx.Exec("WITH v(id, n) AS (VALUES "+values+") UPDATE users SET usage = users.usage + v.n FROM v WHERE users.id = v.id", args...)
		if res.Error != nil {
			return fmt.Errorf("add usage to %d users: %w", len(chunk), res.Error)
		}
		if res.RowsAffected < int64(len(chunk)) {
			var found []int64
			if err := tx.Model(&User{}).Where("id IN ?", chunk).Pluck("id", &found).Error; err != nil {
				return fmt.Errorf("read users: %w", err)
			}
			for _, id := range chunk {
				if !slices.Contains(found, id) {
					s.logger.Warn("usage for unknown user dropped", "user_id", id, "count", byUser[id])
				}
			}
		}
	}
	return nil
}

// param is a bound parameter of a VALUES list, typed where the database
// needs it: PostgreSQL cannot infer a type for a parameter in VALUES,
// while SQLite keeps what it is given (and would turn a time into a number
// if told TIMESTAMPTZ).
func (s *Store) param(pgType string) string {
	if s.dialect == DialectPostgres {
		return "CAST(? AS " + pgType + ")"
	}
	return "?"
}

// valuesRows is the row list of a VALUES of n rows whose columns have the
// given PostgreSQL types: "(?, ?), (?, ?)", each parameter cast as param
// casts it.
func (s *Store) valuesRows(n int, pgTypes ...string) string {
	cols := make([]string, len(pgTypes))
	for i, t := range pgTypes {
		cols[i] = s.param(t)
	}
	row := "(" + strings.Join(cols, ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// lockRowsTx locks rows of table by id in id order on PostgreSQL, before a
// statement that updates them all: concurrent transactions (a recovery, a
// hub taking over) then wait for each other instead of deadlocking. SQLite
// runs one writing transaction at a time.
func (s *Store) lockRowsTx(tx *gorm.DB, table string, ids []int64) error {
	if s.dialect != DialectPostgres {
		return nil
	}
	var locked []int64
	if err := tx.Table(table).Where("id IN ?", ids).Order("id").Clauses(clause.Locking{Strength: "UPDATE"}).Pluck("id", &locked).Error; err != nil {
		return fmt.Errorf("lock %s: %w", table, err)
	}
	return nil
}

// recoveredShortfallTx handles a node's report of an increment already
// applied: when a recovery counted it, from the store, lower than the node
// does, the recorded count is raised to the node's and the difference
// returned, to be added to usage. Otherwise it returns 0.
func (s *Store) recoveredShortfallTx(tx *gorm.DB, inc api.Increment) (int64, error) {
	var prev AppliedIncrement
	if err := tx.Where("node_id = ? AND seq = ?", inc.NodeID, inc.Seq).Take(&prev).Error; err != nil {
		return 0, fmt.Errorf("read increment %s/%d: %w", inc.NodeID, inc.Seq, err)
	}
	if !prev.Recovered || inc.Count <= prev.Count {
		return 0, nil
	}
	res := tx.Model(&AppliedIncrement{}).Where("node_id = ? AND seq = ? AND count = ?", inc.NodeID, inc.Seq, prev.Count).Update("count", inc.Count)
	if res.Error != nil {
		return 0, fmt.Errorf("raise recovered increment %s/%d: %w", inc.NodeID, inc.Seq, res.Error)
	}
	if res.RowsAffected != 1 {
		return 0, nil // raised meanwhile by a concurrent report
	}
	s.logger.Info("recovered increment completed by its node", "node_id", inc.NodeID, "seq", inc.Seq, "crawler_id", inc.CrawlerID, "recovered", prev.Count, "reported", inc.Count)
	return inc.Count - prev.Count, nil
}

// AppliedIDs reports which of a node's increment sequence numbers have been
// applied, in the order given, without duplicates. The hub acknowledges
// these, whether they were applied by this poll or an earlier one.
func (s *Store) AppliedIDs(ctx context.Context, nodeID string, seqs []uint64) ([]uint64, error) {
	found := make(map[uint64]bool, len(seqs))
	uniq := slices.Clone(seqs)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	for chunk := range slices.Chunk(uniq, maxIDsPerQuery) {
		var got []uint64
		err := s.db.WithContext(ctx).Model(&AppliedIncrement{}).
			Where("node_id = ? AND seq IN ?", nodeID, chunk).Pluck("seq", &got).Error
		if err != nil {
			return nil, fmt.Errorf("sqlstore: unable to read applied increments of node %s: %w", nodeID, err)
		}
		for _, seq := range got {
			found[seq] = true
		}
	}
	out := make([]uint64, 0, len(found))
	for _, seq := range seqs {
		if found[seq] {
			out = append(out, seq)
			delete(found, seq)
		}
	}
	return out, nil
}

// PruneApplied forgets increment ids applied before olderThan and reports
// how many it removed. A forgotten id would be applied again if it came
// back, so olderThan must lie further in the past than the oldest
// increment a spawn (or a usage recovery) may still send.
func (s *Store) PruneApplied(ctx context.Context, olderThan time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("applied_at < ?", dbTime(olderThan)).Delete(&AppliedIncrement{})
	if res.Error != nil {
		return 0, fmt.Errorf("sqlstore: unable to prune applied increments: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// MaxAppliedSeq is the highest increment sequence number applied from a
// node, 0 when none was. Usage a lost node stored after it is what its
// recovery reads back from the comment store.
func (s *Store) MaxAppliedSeq(ctx context.Context, nodeID string) (uint64, error) {
	var seq *uint64
	err := s.db.WithContext(ctx).Model(&AppliedIncrement{}).Where("node_id = ?", nodeID).
		Select("MAX(seq)").Scan(&seq).Error
	if err != nil {
		return 0, fmt.Errorf("sqlstore: unable to read the last increment of node %s: %w", nodeID, err)
	}
	if seq == nil {
		return 0, nil
	}
	return *seq, nil
}
