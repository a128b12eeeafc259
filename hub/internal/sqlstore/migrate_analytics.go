package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 6: analytics tables (see analytics.go).

// termCountV6 is one term's count in one crawler hour. The row with the
// empty term holds the occurrences of the terms cut off (the tail).
type termCountV6 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_term_counts_bucket"`
	Term      string    `gorm:"primaryKey;size:130"`
	Count     int64     `gorm:"not null"`
}

func (termCountV6) TableName() string { return "term_counts" }

// activityMinuteV6 is a crawler's comments in one minute and a HyperLogLog
// sketch of their authors.
type activityMinuteV6 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_activity_minutes_bucket"`
	Comments  int64     `gorm:"not null"`
	Authors   []byte
}

func (activityMinuteV6) TableName() string { return "activity_minutes" }

// activityHourV6 is activityMinuteV6 per hour.
type activityHourV6 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_activity_hours_bucket"`
	Comments  int64     `gorm:"not null"`
	Authors   []byte
}

func (activityHourV6) TableName() string { return "activity_hours" }

// crawlerSuggestionV6 is one candidate query term of a crawler.
type crawlerSuggestionV6 struct {
	CrawlerID int64   `gorm:"primaryKey;autoIncrement:false"`
	Term      string  `gorm:"primaryKey;size:130"`
	Score     float64 `gorm:"not null"`
	Count     int64   `gorm:"not null"`
}

func (crawlerSuggestionV6) TableName() string { return "crawler_suggestions" }

func migrateV6(tx *gorm.DB) error {
	if err := tx.Migrator().CreateTable(&termCountV6{}, &activityMinuteV6{}, &activityHourV6{}, &crawlerSuggestionV6{}); err != nil {
		return err
	}
	// Whether an increment's analytics were applied: usage recovered from
	// the store for a lost node carries none, and its node may still
	// report them.
	return tx.Exec("ALTER TABLE applied_increments ADD COLUMN analytics BOOLEAN NOT NULL DEFAULT FALSE").Error
}
