package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Schema migrations: an ordered list of Go functions, each applied once in
// its own transaction and recorded in schema_migrations by it; each
// describes the schema with its own frozen struct types (userV1, …), never
// with the live models. Hubs starting together are serialised; a database
// a newer hub migrated is refused. Why: docs/decisions/0009-migrations-in-go.md.

// migration is one schema step.
type migration struct {
	version int64
	name    string
	up      func(tx *gorm.DB) error
}

// migrations is the schema's history. Append only: never edit or reorder a
// migration that has shipped.
var migrations = []migration{
	{version: 1, name: "create users, crawlers and applied_increments", up: migrateV1},
	{version: 2, name: "create known_nodes", up: migrateV2},
	{version: 3, name: "add applied_increments.recovered", up: migrateV3},
	{version: 4, name: "rewrite crawler queries in the query language's canonical form", up: migrateV4},
	{version: 5, name: "add crawlers.cursor_pos", up: migrateV5},
	{version: 6, name: "create term_counts, activity_minutes, activity_hours, crawler_suggestions; add applied_increments.analytics", up: migrateV6},
	{version: 7, name: "create hub_leader", up: migrateV7},
	{version: 8, name: "add crawlers.change_seq and users.change_seq; create change_counter and crawler_deletions", up: migrateV8},
	{version: 9, name: "create leader_complaints", up: migrateV9},
	{version: 10, name: "create alert_rules, alerts and alert_deliveries", up: migrateV10},
	{version: 11, name: "create retractions and compliance_runs; add crawlers.retention_seconds and users.retention_seconds", up: migrateV11},
	{version: 12, name: "add crawlers.cursor_ids", up: migrateV12},
	{version: 13, name: "add compliance_runs.source", up: migrateV13},
	{version: 14, name: "add activity_minutes and activity_hours positive and negative", up: migrateV14},
	{version: 15, name: "add crawlers.name; create author_counts, lang_counts, author_week and author_week_from", up: migrateV15},
}

// migrationLockKey is the PostgreSQL advisory lock taken while migrating
// ("bwmigr" in ASCII).
const migrationLockKey int64 = 0x62776d696772

// schemaMigration is a row of schema_migrations.
type schemaMigration struct {
	Version   int64
	Name      string
	AppliedAt time.Time
}

func (schemaMigration) TableName() string { return "schema_migrations" }

// migrate applies every migration of list the database has not recorded.
func (s *Store) migrate(ctx context.Context, list []migration) error {
	for i := 1; i < len(list); i++ {
		if list[i].version <= list[i-1].version {
			return fmt.Errorf("sqlstore: migrations out of order: %d after %d", list[i].version, list[i-1].version)
		}
	}
	db := s.db.WithContext(ctx)
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := s.lockMigrationsTx(tx); err != nil {
			return err
		}
		return tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
			version BIGINT NOT NULL PRIMARY KEY,
			name VARCHAR(200) NOT NULL,
			applied_at TIMESTAMP NOT NULL
		)`).Error
	})
	if err != nil {
		return fmt.Errorf("sqlstore: unable to create schema_migrations: %w", err)
	}
	var newest int64
	if err := db.Model(&schemaMigration{}).Select("COALESCE(MAX(version), 0)").Scan(&newest).Error; err != nil {
		return fmt.Errorf("sqlstore: unable to read schema version: %w", err)
	}
	if known := latestVersion(list); newest > known {
		return fmt.Errorf("sqlstore: database schema version %d is newer than this hub knows (%d): run a newer hub", newest, known)
	}
	for _, m := range list {
		applied := false
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := s.lockMigrationsTx(tx); err != nil {
				return err
			}
			var n int64
			if err := tx.Model(&schemaMigration{}).Where("version = ?", m.version).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if err := m.up(tx); err != nil {
				return err
			}
			applied = true
			return tx.Create(&schemaMigration{Version: m.version, Name: m.name, AppliedAt: now()}).Error
		})
		if err != nil {
			return fmt.Errorf("sqlstore: unable to apply schema migration %d (%s): %w", m.version, m.name, err)
		}
		if applied {
			s.logger.Info("schema migration applied", "version", m.version, "name", m.name)
		}
	}
	return nil
}

// lockMigrationsTx serialises migrating hubs on PostgreSQL until tx ends.
func (s *Store) lockMigrationsTx(tx *gorm.DB) error {
	if s.dialect != DialectPostgres {
		return nil
	}
	return tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockKey).Error
}

func latestVersion(list []migration) int64 {
	if len(list) == 0 {
		return 0
	}
	return list[len(list)-1].version
}

// Version 1: the initial schema.

type userV1 struct {
	ID           int64  `gorm:"primaryKey"`
	Name         string `gorm:"size:200;not null"`
	Email        string `gorm:"size:320"`
	Billing      string `gorm:"size:200"`
	CommentLimit int64  `gorm:"not null;default:0"`
	Usage        int64  `gorm:"not null;default:0"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (userV1) TableName() string { return "users" }

type crawlerV1 struct {
	ID           int64   `gorm:"primaryKey"`
	UserID       int64   `gorm:"not null;index:idx_crawlers_user_id"`
	User         *userV1 `gorm:"foreignKey:UserID;constraint:OnUpdate:RESTRICT,OnDelete:RESTRICT"`
	Source       string  `gorm:"size:16;not null"`
	Query        string  `gorm:"type:text;not null"`
	Keywords     string  `gorm:"type:text;not null;default:''"`
	QueryUUID    string  `gorm:"size:36;not null;index:idx_crawlers_query_uuid"`
	CommentLimit int64   `gorm:"not null;default:0"`
	Usage        int64   `gorm:"not null;default:0"`
	Enabled      bool    `gorm:"not null;default:true"`
	LimitReached bool    `gorm:"not null;default:false"`
	Version      int64   `gorm:"not null;default:1"`
	CursorAt     *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (crawlerV1) TableName() string { return "crawlers" }

type appliedIncrementV1 struct {
	NodeID    string    `gorm:"primaryKey;size:64"`
	Seq       uint64    `gorm:"primaryKey;autoIncrement:false"`
	CrawlerID int64     `gorm:"not null"`
	Count     int64     `gorm:"not null"`
	AppliedAt time.Time `gorm:"not null;index:idx_applied_increments_applied_at"`
}

func (appliedIncrementV1) TableName() string { return "applied_increments" }

func migrateV1(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&userV1{}, &crawlerV1{}, &appliedIncrementV1{})
}

// knownNodeV2 is known_nodes as migration 2 creates it.
type knownNodeV2 struct {
	ID     string    `gorm:"primaryKey;size:64"`
	URL    string    `gorm:"size:2048;not null"`
	SeenAt time.Time `gorm:"not null"`
}

func (knownNodeV2) TableName() string { return "known_nodes" }

func migrateV2(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&knownNodeV2{})
}

func migrateV3(tx *gorm.DB) error {
	return tx.Exec("ALTER TABLE applied_increments ADD COLUMN recovered BOOLEAN NOT NULL DEFAULT FALSE").Error
}

// migrateV5 adds the crawler's cursor position in a replayable source log
// (a Jetstream time_us), so a moved subscriber resumes exactly there.
func migrateV5(tx *gorm.DB) error {
	return tx.Exec("ALTER TABLE crawlers ADD COLUMN cursor_pos BIGINT NOT NULL DEFAULT 0").Error
}
