package sqlstore

import "gorm.io/gorm"

// migrateV14 counts the positive and negative comments of each activity
// bucket; the neutral ones are the rest. Buckets written before it count
// every comment as neutral.
func migrateV14(tx *gorm.DB) error {
	for _, table := range []string{"activity_minutes", "activity_hours"} {
		for _, col := range []string{"positive", "negative"} {
			if err := tx.Exec("ALTER TABLE " + table + " ADD COLUMN " + col + " BIGINT NOT NULL DEFAULT 0").Error; err != nil {
				return err
			}
		}
	}
	return nil
}
