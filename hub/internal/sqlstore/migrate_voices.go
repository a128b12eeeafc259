package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 14: crawler names, and the authors and languages of each crawler
// hour (see voices.go).

// authorCountV14 is one author's comments in one crawler hour, with the
// reposts and likes they had when fetched. AuthorKey is the author's id at
// its source, else its name; the row with the empty key holds the comments
// of the authors folded away (the tail).
type authorCountV14 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_author_counts_bucket"`
	AuthorKey string    `gorm:"primaryKey;size:255"`
	Author    string    `gorm:"size:255;not null;default:''"`
	AuthorID  string    `gorm:"size:255;not null;default:''"`
	Comments  int64     `gorm:"not null"`
	Reposts   int64     `gorm:"not null;default:0"`
	Likes     int64     `gorm:"not null;default:0"`
}

func (authorCountV14) TableName() string { return "author_counts" }

// langCountV14 is a crawler hour's comments in one language ("" for not
// known).
type langCountV14 struct {
	CrawlerID int64     `gorm:"primaryKey;autoIncrement:false"`
	Bucket    time.Time `gorm:"primaryKey;index:idx_lang_counts_bucket"`
	Lang      string    `gorm:"primaryKey;size:16"`
	Comments  int64     `gorm:"not null"`
}

func (langCountV14) TableName() string { return "lang_counts" }

func migrateV14(tx *gorm.DB) error {
	if err := tx.Exec("ALTER TABLE crawlers ADD COLUMN name VARCHAR(400) NOT NULL DEFAULT ''").Error; err != nil {
		return err
	}
	return tx.Migrator().CreateTable(&authorCountV14{}, &langCountV14{})
}
