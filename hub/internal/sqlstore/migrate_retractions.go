package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 11: what sources and operators take back. retractions is the log
// the hub hands every spawn (its id is the log position); compliance_runs
// records each X compliance check; crawlers and users get a retention
// (seconds, 0 for none).

type retractionV11 struct {
	ID         int64     `gorm:"primaryKey"`
	Op         string    `gorm:"size:16;not null"`
	Source     string    `gorm:"size:16;not null"`
	Target     string    `gorm:"size:1024;not null"`
	Body       string    `gorm:"type:text;not null;default:''"`
	OriginNode string    `gorm:"size:64;not null;default:''"`
	At         time.Time `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null;index:idx_retractions_created_at"`
}

func (retractionV11) TableName() string { return "retractions" }

type complianceRunV11 struct {
	ID         int64     `gorm:"primaryKey"`
	StartedAt  time.Time `gorm:"not null;index:idx_compliance_runs_started_at"`
	FinishedAt *time.Time
	Node       string `gorm:"size:64;not null;default:''"`
	JobID      string `gorm:"size:64;not null;default:''"`
	Status     string `gorm:"size:16;not null"`
	Checked    int64  `gorm:"not null;default:0"`
	Deleted    int64  `gorm:"not null;default:0"`
	Error      string `gorm:"size:500;not null;default:''"`
}

func (complianceRunV11) TableName() string { return "compliance_runs" }

func migrateV11(tx *gorm.DB) error {
	for _, stmt := range []string{
		"ALTER TABLE crawlers ADD COLUMN retention_seconds BIGINT NOT NULL DEFAULT 0",
		"ALTER TABLE users ADD COLUMN retention_seconds BIGINT NOT NULL DEFAULT 0",
	} {
		if err := tx.Exec(stmt).Error; err != nil {
			return err
		}
	}
	return tx.Migrator().CreateTable(&retractionV11{}, &complianceRunV11{})
}
