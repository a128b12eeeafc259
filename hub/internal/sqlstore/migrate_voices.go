package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 15: crawler names, the authors and languages of each crawler
// hour, and each crawler's authors of the last week (see voices.go).

// authorCountV15 is one author's comments in one crawler hour, with the
// reposts and likes they had when fetched. AuthorKey is the author's id at
// its source, else its name; the row with the empty key holds the comments
// of the authors folded away (the tail).
type authorCountV15 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_author_counts_bucket"`
	AuthorKey string    `gorm:"primaryKey;size:255"`
	Author    string    `gorm:"size:255;not null;default:''"`
	AuthorID  string    `gorm:"size:255;not null;default:''"`
	Comments  int64     `gorm:"not null"`
	Reposts   int64     `gorm:"not null;default:0"`
	Likes     int64     `gorm:"not null;default:0"`
}

func (authorCountV15) TableName() string { return "author_counts" }

// langCountV15 is a crawler hour's comments in one language ("" for not
// known).
type langCountV15 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_lang_counts_bucket"`
	Lang      string    `gorm:"primaryKey;size:16"`
	Comments  int64     `gorm:"not null"`
}

func (langCountV15) TableName() string { return "lang_counts" }

// authorWeekV15 is an author's comments in a crawler's hours of the week
// (authorWeekFromV15): author_counts summed hour by hour as hours close,
// so the last 7 days' top authors are read, not summed.
type authorWeekV15 struct {
	CrawlerID int64  `gorm:"primaryKey;autoIncrement:false;index:idx_author_week_top,priority:1"`
	AuthorKey string `gorm:"primaryKey;size:255"`
	Author    string `gorm:"size:255;not null;default:''"`
	AuthorID  string `gorm:"size:255;not null;default:''"`
	Comments  int64  `gorm:"not null;index:idx_author_week_top,priority:2"`
	Reposts   int64  `gorm:"not null;default:0"`
	Likes     int64  `gorm:"not null;default:0"`
}

func (authorWeekV15) TableName() string { return "author_week" }

// authorWeekFromV15 is the one row saying which hours author_week counts:
// from Since to before Until.
type authorWeekFromV15 struct {
	ID    int64     `gorm:"primaryKey;autoIncrement:false"`
	Since time.Time `gorm:"not null"`
	Until time.Time `gorm:"not null"`
}

func (authorWeekFromV15) TableName() string { return "author_week_from" }

func migrateV15(tx *gorm.DB) error {
	if err := tx.Exec("ALTER TABLE crawlers ADD COLUMN name VARCHAR(400) NOT NULL DEFAULT ''").Error; err != nil {
		return err
	}
	if err := tx.Migrator().CreateTable(&authorCountV15{}, &langCountV15{}, &authorWeekV15{}, &authorWeekFromV15{}); err != nil {
		return err
	}
	// Nothing counted yet: the week holds no hour.
	epoch := time.Unix(0, 0).UTC()
	return tx.Create(&authorWeekFromV15{ID: 1, Since: epoch, Until: epoch}).Error
}
