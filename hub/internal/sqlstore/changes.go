package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Change numbers, so the hub reads only what changed since its last reload.
// Every transaction that creates, changes or deletes a crawler or a user
// takes the next number from the one row of change_counter (before any
// other row) and stamps it on the rows it writes (change_seq); a deleted
// crawler leaves a row in crawler_deletions with its number. Usage and
// cursors take none. Why a counter row and not a sequence:
// docs/decisions/0008-change-numbers.md.

// changeCounterID is the id of change_counter's one row.
const changeCounterID = 1

// deletionsKept is how long deleted crawlers are remembered. A reader
// whose last read is older than the oldest forgotten deletion is told so
// (ErrChangesPruned) and reads everything again.
const deletionsKept = 24 * time.Hour

// ErrChangesPruned is returned by ChangesSince when deletions after the
// given number have been forgotten: the caller must read everything again.
var ErrChangesPruned = errors.New("sqlstore: changes since this number were pruned")

// Changes is what changed in crawlers and users after a change number.
type Changes struct {
	// Seq is the newest change number included: pass it to the next call.
	// Rows of later changes may be included too; they come again.
	Seq int64
	// Crawlers and Users were created or changed, ordered by id.
	Crawlers []Crawler
	Users    []User
	// Deleted are crawlers deleted, ordered by change number. A crawler id
	// may appear both here and in Crawlers (SQLite may reuse the id of a
	// deleted row): the entry with the higher change number is the newer.
	Deleted []Deletion
}

// Deletion records a crawler deleted by change ChangeSeq.
type Deletion struct {
	CrawlerID int64
	ChangeSeq int64
}

// crawlerDeletion is a row of crawler_deletions.
type crawlerDeletion struct {
	ChangeSeq int64 `gorm:"primaryKey;autoIncrement:false"`
	CrawlerID int64 `gorm:"primaryKey;autoIncrement:false"`
	DeletedAt time.Time
}

func (crawlerDeletion) TableName() string { return "crawler_deletions" }

// changeCounter is change_counter's row.
type changeCounter struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	Seq       int64
	PrunedSeq int64
}

func (changeCounter) TableName() string { return "change_counter" }

// LastChange is the newest change number. Read before ListCrawlers and
// ListUsers, it is where a following ChangesSince starts.
func (s *Store) LastChange(ctx context.Context) (int64, error) {
	c, err := s.counter(s.db.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("sqlstore: unable to read the change counter: %w", err)
	}
	return c.Seq, nil
}

func (s *Store) counter(db *gorm.DB) (changeCounter, error) {
	var c changeCounter
	err := db.Take(&c, "id = ?", changeCounterID).Error
	return c, err
}

// ChangesSince reads the crawlers and users created, changed or deleted
// after change number since. Usage counted meanwhile is not a change; the
// rows returned carry it as stored.
//
// The counter is read first: every change up to it has committed (see the
// comment at the top), so the statements that follow see all of them.
func (s *Store) ChangesSince(ctx context.Context, since int64) (Changes, error) {
	db := s.db.WithContext(ctx)
	c, err := s.counter(db)
	if err != nil {
		return Changes{}, fmt.Errorf("sqlstore: unable to read the change counter: %w", err)
	}
	if since < c.PrunedSeq {
		return Changes{}, fmt.Errorf("sqlstore: changes since %d: %w (deletions up to %d)", since, ErrChangesPruned, c.PrunedSeq)
	}
	out := Changes{Seq: c.Seq, Crawlers: []Crawler{}, Users: []User{}, Deleted: []Deletion{}}
	if since >= c.Seq {
		return out, nil
	}
	if err := db.Where("change_seq > ?", since).Order("id").Find(&out.Crawlers).Error; err != nil {
		return Changes{}, fmt.Errorf("sqlstore: unable to read changed crawlers: %w", err)
	}
	if err := db.Where("change_seq > ?", since).Order("id").Find(&out.Users).Error; err != nil {
		return Changes{}, fmt.Errorf("sqlstore: unable to read changed users: %w", err)
	}
	var dels []crawlerDeletion
	if err := db.Where("change_seq > ?", since).Order("change_seq, crawler_id").Find(&dels).Error; err != nil {
		return Changes{}, fmt.Errorf("sqlstore: unable to read deleted crawlers: %w", err)
	}
	for _, d := range dels {
		out.Deleted = append(out.Deleted, Deletion{CrawlerID: d.CrawlerID, ChangeSeq: d.ChangeSeq})
	}
	return out, nil
}

// nextChangeTx takes the next change number for the rows tx writes. It
// must come before tx touches any crawler or user row.
func nextChangeTx(tx *gorm.DB) (int64, error) {
	var seq int64
	if err := tx.Raw("UPDATE change_counter SET seq = seq + 1 WHERE id = ? RETURNING seq", changeCounterID).Scan(&seq).Error; err != nil {
		return 0, fmt.Errorf("take a change number: %w", err)
	}
	if seq == 0 {
		return 0, errors.New("take a change number: change_counter has no row")
	}
	return seq, nil
}

// recordDeletionTx logs a crawler deleted by change seq and forgets
// deletions older than deletionsKept, raising the counter's pruned number
// so a reader that has not seen them reads everything again.
func recordDeletionTx(tx *gorm.DB, crawlerID, seq int64) error {
	at := now()
	if err := tx.Create(&crawlerDeletion{ChangeSeq: seq, CrawlerID: crawlerID, DeletedAt: at}).Error; err != nil {
		return fmt.Errorf("record deletion: %w", err)
	}
	var pruned *int64
	cutoff := at.Add(-deletionsKept)
	if err := tx.Model(&crawlerDeletion{}).Where("deleted_at < ?", cutoff).Select("MAX(change_seq)").Scan(&pruned).Error; err != nil {
		return fmt.Errorf("find old deletions: %w", err)
	}
	if pruned == nil {
		return nil
	}
	if err := tx.Where("change_seq <= ?", *pruned).Delete(&crawlerDeletion{}).Error; err != nil {
		return fmt.Errorf("forget old deletions: %w", err)
	}
	return tx.Model(&changeCounter{}).Where("id = ? AND pruned_seq < ?", changeCounterID, *pruned).
		UpdateColumn("pruned_seq", *pruned).Error
}
