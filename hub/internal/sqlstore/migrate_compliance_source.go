package sqlstore

import "gorm.io/gorm"

// migrateV13 names the source kind each compliance run checked: any kind
// whose declaration has a Recheck may be checked now, not X's alone. Runs
// recorded before it name none.
func migrateV13(tx *gorm.DB) error {
	return tx.Exec("ALTER TABLE compliance_runs ADD COLUMN source VARCHAR(32) NOT NULL DEFAULT ''").Error
}
