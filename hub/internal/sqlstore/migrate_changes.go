package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 8: change sequence numbers on crawlers and users, the counter
// that hands them out and the log of deleted crawlers (see changes.go).

// changeCounterV8 is the one row that numbers configuration changes.
type changeCounterV8 struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	Seq       int64 `gorm:"not null"`
	PrunedSeq int64 `gorm:"not null"`
}

func (changeCounterV8) TableName() string { return "change_counter" }

// crawlerDeletionV8 records that a crawler was deleted by the change Seq.
type crawlerDeletionV8 struct {
	ChangeSeq int64     `gorm:"primaryKey;autoIncrement:false"`
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	DeletedAt time.Time `gorm:"not null;index:idx_crawler_deletions_deleted_at"`
}

func (crawlerDeletionV8) TableName() string { return "crawler_deletions" }

func migrateV8(tx *gorm.DB) error {
	for _, stmt := range []string{
		"ALTER TABLE crawlers ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0",
		"ALTER TABLE users ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0",
		"CREATE INDEX idx_crawlers_change_seq ON crawlers (change_seq)",
		"CREATE INDEX idx_users_change_seq ON users (change_seq)",
	} {
		if err := tx.Exec(stmt).Error; err != nil {
			return err
		}
	}
	if err := tx.Migrator().CreateTable(&changeCounterV8{}, &crawlerDeletionV8{}); err != nil {
		return err
	}
	// Rows that exist now keep change 0: a reader starts with a full read.
	return tx.Create(&changeCounterV8{ID: changeCounterID}).Error
}
