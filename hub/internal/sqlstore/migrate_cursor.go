package sqlstore

import "gorm.io/gorm"

// migrateV12 adds the crawler's newest source id per data source (a JSON
// object, "" for none), so a subscriber moved to another node fills the
// gap of a source without replay (X, Mastodon) from where it stood.
func migrateV12(tx *gorm.DB) error {
	return tx.Exec("ALTER TABLE crawlers ADD COLUMN cursor_ids TEXT NOT NULL DEFAULT ''").Error
}
