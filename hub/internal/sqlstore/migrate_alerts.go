package sqlstore

import (
	"time"

	"gorm.io/gorm"
)

// Version 10: alert rules, the alerts they fired and their deliveries (see
// alerts.go). A rule belongs to a crawler or a user and goes with it; an
// alert and its deliveries go with their rule.

type alertRuleV10 struct {
	ID          int64      `gorm:"primaryKey"`
	CrawlerID   *int64     `gorm:"index:idx_alert_rules_crawler_id"`
	Crawler     *crawlerV1 `gorm:"foreignKey:CrawlerID;constraint:OnUpdate:RESTRICT,OnDelete:CASCADE"`
	UserID      *int64     `gorm:"index:idx_alert_rules_user_id"`
	User        *userV1    `gorm:"foreignKey:UserID;constraint:OnUpdate:RESTRICT,OnDelete:CASCADE"`
	Kind        string     `gorm:"size:16;not null"`
	Query       string     `gorm:"type:text;not null;default:''"`
	Sensitivity string     `gorm:"size:16;not null"`
	Channel     string     `gorm:"size:16;not null"`
	Target      string     `gorm:"size:2048;not null"`
	Secret      string     `gorm:"size:512;not null;default:''"`
	QuietUntil  *time.Time // a spike rule's cooldown ends then
	CursorAt    *time.Time // a match rule has read comments fetched up to then
	State       []byte     // a spike rule's detector state (pkg/spike.Detector.State)
	CreatedAt   time.Time  `gorm:"not null"`
	Alerts      []alertV10 `gorm:"foreignKey:RuleID;constraint:OnUpdate:RESTRICT,OnDelete:CASCADE"`
}

func (alertRuleV10) TableName() string { return "alert_rules" }

type alertV10 struct {
	ID         int64              `gorm:"primaryKey"`
	RuleID     int64              `gorm:"not null;uniqueIndex:idx_alerts_rule_key,priority:1"`
	Key        string             `gorm:"size:200;not null;uniqueIndex:idx_alerts_rule_key,priority:2"`
	Kind       string             `gorm:"size:16;not null"`
	CrawlerID  *int64             `gorm:""`
	UserID     *int64             `gorm:""`
	At         time.Time          `gorm:"not null"`
	Observed   float64            `gorm:"not null"`
	Expected   float64            `gorm:"not null"`
	Details    string             `gorm:"type:text;not null;default:''"`
	Test       bool               `gorm:"not null;default:false"`
	CreatedAt  time.Time          `gorm:"not null;index:idx_alerts_created_at"`
	Deliveries []alertDeliveryV10 `gorm:"foreignKey:AlertID;constraint:OnUpdate:RESTRICT,OnDelete:CASCADE"`
}

func (alertV10) TableName() string { return "alerts" }

type alertDeliveryV10 struct {
	ID            string     `gorm:"primaryKey;size:36"`
	AlertID       int64      `gorm:"not null;index:idx_alert_deliveries_alert_id"`
	Channel       string     `gorm:"size:16;not null"`
	Target        string     `gorm:"size:2048;not null"`
	Body          string     `gorm:"type:text;not null"`
	State         string     `gorm:"size:16;not null;index:idx_alert_deliveries_due,priority:1"`
	Attempts      int        `gorm:"not null;default:0"`
	NextAttemptAt time.Time  `gorm:"not null;index:idx_alert_deliveries_due,priority:2"`
	GiveUpAt      time.Time  `gorm:"not null"`
	LastError     string     `gorm:"size:500;not null;default:''"`
	LastStatus    int        `gorm:"not null;default:0"`
	CreatedAt     time.Time  `gorm:"not null"`
	DeliveredAt   *time.Time ``
}

func (alertDeliveryV10) TableName() string { return "alert_deliveries" }

func migrateV10(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&alertRuleV10{}, &alertV10{}, &alertDeliveryV10{})
}
