package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Alerts: rules, the alerts they fire and the deliveries of each alert.
//
// Only the leading hub evaluates rules and sends, and every write it makes
// for them is fenced by its term: a statement changes nothing unless the
// hub_leader row still names that term with a holder, so a deposed leader
// neither records an alert nor claims a delivery once a standby has taken
// over. An alert is recorded with its deliveries, in one transaction,
// before the first attempt to send it; its key (the step or batch that
// fired) is unique per rule, so a new leader that evaluates the same step
// again finds it told. A delivery's id is the X-BW-Delivery every attempt
// carries, whichever hub makes it.

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// alertRetention is how long alerts and their deliveries are kept.
const alertRetention = 30 * 24 * time.Hour

// AlertRule is an alert rule. Secret (a webhook's signing key) never leaves
// the hub.
type AlertRule struct {
	ID          int64 `gorm:"primaryKey"`
	CrawlerID   *int64
	UserID      *int64
	Kind        string
	Query       string
	Sensitivity string
	Channel     string
	Target      string
	Secret      string
	QuietUntil  *time.Time
	CursorAt    *time.Time
	State       []byte
	CreatedAt   time.Time
}

func (AlertRule) TableName() string { return "alert_rules" }

// Alert is one alert a rule fired. Key names what fired (the step, the
// term, the batch), unique per rule. Details holds the alert's top terms
// and sample as JSON.
type Alert struct {
	ID        int64 `gorm:"primaryKey"`
	RuleID    int64
	Key       string
	Kind      string
	CrawlerID *int64
	UserID    *int64
	At        time.Time
	Observed  float64
	Expected  float64
	Details   string
	Test      bool
	CreatedAt time.Time
}

func (Alert) TableName() string { return "alerts" }

// AlertDelivery is one alert's delivery to its rule's channel. Body is the
// exact message every attempt sends.
type AlertDelivery struct {
	ID            string `gorm:"primaryKey"`
	AlertID       int64
	Channel       string
	Target        string
	Body          string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	GiveUpAt      time.Time
	LastError     string
	LastStatus    int
	CreatedAt     time.Time
	DeliveredAt   *time.Time
}

func (AlertDelivery) TableName() string { return "alert_deliveries" }

// ErrFenced is returned when a write is refused because the term it is
// fenced by no longer leads.
var ErrFenced = errors.New("sqlstore: this hub no longer leads")

// fenceSQL is true while the hub_leader row names the term with a holder.
const fenceSQL = "EXISTS (SELECT 1 FROM hub_leader WHERE id = 1 AND term = ? AND holder <> '')"

// CreateAlertRule stores a rule whose crawler or user exists.
func (s *Store) CreateAlertRule(ctx context.Context, r AlertRule) (AlertRule, error) {
	r.ID = 0
	r.CreatedAt = now()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		switch {
		case r.CrawlerID != nil:
			if err := tx.Model(&Crawler{}).Where("id = ?", *r.CrawlerID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: crawler %d does not exist", ErrInvalid, *r.CrawlerID)
			}
		case r.UserID != nil:
			if err := tx.Model(&User{}).Where("id = ?", *r.UserID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: user %d does not exist", ErrInvalid, *r.UserID)
			}
		default:
			return fmt.Errorf("%w: a rule needs a crawler or a user", ErrInvalid)
		}
		return tx.Create(&r).Error
	})
	if err != nil {
		return AlertRule{}, fmt.Errorf("sqlstore: unable to create alert rule: %w", err)
	}
	return r, nil
}

// ListAlertRules lists every rule by id, without their detector states
// (RuleStates reads those).
func (s *Store) ListAlertRules(ctx context.Context) ([]AlertRule, error) {
	var out []AlertRule
	if err := s.db.WithContext(ctx).Omit("state").Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list alert rules: %w", err)
	}
	return out, nil
}

// GetAlertRule reads one rule.
func (s *Store) GetAlertRule(ctx context.Context, id int64) (AlertRule, error) {
	var out AlertRule
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&out).Error; err != nil {
		return AlertRule{}, fmt.Errorf("sqlstore: unable to read alert rule %d: %w", id, notFound(err))
	}
	return out, nil
}

// DeleteAlertRule removes a rule with its alerts and their deliveries.
func (s *Store) DeleteAlertRule(ctx context.Context, id int64) error {
	res := s.db.WithContext(ctx).Where("id = ?", id).Delete(&AlertRule{})
	if res.Error != nil {
		return fmt.Errorf("sqlstore: unable to delete alert rule %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("sqlstore: unable to delete alert rule %d: %w", id, ErrNotFound)
	}
	return nil
}

// RuleStates reads the detector states of rules.
func (s *Store) RuleStates(ctx context.Context, ids []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(ids))
	for i := 0; i < len(ids); i += maxIDsPerQuery {
		var rows []struct {
			ID    int64
			State []byte
		}
		err := s.db.WithContext(ctx).Model(&AlertRule{}).Select("id, state").Where("id IN ?", ids[i:min(len(ids), i+maxIDsPerQuery)]).Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("sqlstore: unable to read detector states: %w", err)
		}
		for _, r := range rows {
			out[r.ID] = r.State
		}
	}
	return out, nil
}

// SaveRuleStates records spike rules' detector states, fenced by term.
func (s *Store) SaveRuleStates(ctx context.Context, term uint64, states map[int64][]byte) error {
	if len(states) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := fenceTx(tx, term); err != nil {
			return err
		}
		for id, st := range states {
			if err := tx.Model(&AlertRule{}).Where("id = ?", id).UpdateColumn("state", st).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrFenced) {
		err = fmt.Errorf("sqlstore: unable to save detector states: %w", err)
	}
	return err
}

// SetRuleQuietUntil records when a spike rule's cooldown ends, fenced by
// term.
func (s *Store) SetRuleQuietUntil(ctx context.Context, term uint64, id int64, until time.Time) error {
	until = dbTime(until)
	res := s.db.WithContext(ctx).Model(&AlertRule{}).Where("id = ? AND "+fenceSQL, id, term).UpdateColumn("quiet_until", until)
	if res.Error != nil {
		return fmt.Errorf("sqlstore: unable to record the cooldown of alert rule %d: %w", id, res.Error)
	}
	return nil
}

// FireAlert records an alert and its deliveries (due at once) in one
// transaction fenced
// by term, with the rule's new cooldown end (quietUntil, when set) and
// match cursor (cursor, when set). deliveries makes the deliveries once the
// alert has its id. It reports false when the rule already has an alert of
// the same key (nothing is written) and ErrFenced when term no longer
// leads.
func (s *Store) FireAlert(ctx context.Context, term uint64, a Alert, quietUntil, cursor *time.Time,
	deliveries func(Alert) ([]AlertDelivery, error)) (Alert, bool, error) {
	a.ID = 0
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now() // else: when the alert was detected
	}
	a.CreatedAt = dbTime(a.CreatedAt)
	a.At = dbTime(a.At)
	fired := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := fenceTx(tx, term); err != nil {
			return err
		}
		res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "rule_id"}, {Name: "key"}}, DoNothing: true}).Create(&a)
		if res.Error != nil {
			return res.Error
		}
		if err := ruleStateTx(tx, a.RuleID, quietUntil, cursor); err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return nil
		}
		fired = true
		ds, err := deliveries(a)
		if err != nil {
			return err
		}
		for i := range ds {
			ds[i].AlertID = a.ID
			ds[i].State = DeliveryPending
			ds[i].CreatedAt = a.CreatedAt
			ds[i].NextAttemptAt = a.CreatedAt
			ds[i].GiveUpAt = dbTime(ds[i].GiveUpAt)
		}
		if len(ds) == 0 {
			return nil
		}
		return tx.Create(&ds).Error
	})
	if errors.Is(err, ErrFenced) {
		return Alert{}, false, err
	}
	if err != nil {
		return Alert{}, false, fmt.Errorf("sqlstore: unable to record an alert of rule %d: %w", a.RuleID, err)
	}
	return a, fired, nil
}

// AdvanceRuleCursor moves a match rule's cursor with no alert (nothing
// matched), fenced by term.
func (s *Store) AdvanceRuleCursor(ctx context.Context, term uint64, id int64, cursor time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := fenceTx(tx, term); err != nil {
			return err
		}
		return ruleStateTx(tx, id, nil, &cursor)
	})
	if err != nil && !errors.Is(err, ErrFenced) {
		err = fmt.Errorf("sqlstore: unable to move the cursor of alert rule %d: %w", id, err)
	}
	return err
}

func fenceTx(tx *gorm.DB, term uint64) error {
	var n int64
	if err := tx.Raw("SELECT COUNT(*) FROM hub_leader WHERE id = 1 AND term = ? AND holder <> ''", term).Scan(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return ErrFenced
	}
	return nil
}

func ruleStateTx(tx *gorm.DB, id int64, quietUntil, cursor *time.Time) error {
	set := map[string]any{}
	if quietUntil != nil {
		set["quiet_until"] = dbTime(*quietUntil)
	}
	if cursor != nil {
		set["cursor_at"] = dbTime(*cursor)
	}
	if len(set) == 0 {
		return nil
	}
	return tx.Model(&AlertRule{}).Where("id = ?", id).UpdateColumns(set).Error
}

// DueDelivery is a delivery due for an attempt with its rule's channel
// secret.
type DueDelivery struct {
	AlertDelivery
	RuleID int64
	Secret string
}

// DueDeliveries lists up to limit pending deliveries whose next attempt is
// due at now, oldest first.
func (s *Store) DueDeliveries(ctx context.Context, at time.Time, limit int) ([]DueDelivery, error) {
	var out []DueDelivery
	err := s.db.WithContext(ctx).Table("alert_deliveries d").
		Select("d.*, r.id AS rule_id, r.secret AS secret").
		Joins("JOIN alerts a ON a.id = d.alert_id").
		Joins("JOIN alert_rules r ON r.id = a.rule_id").
		Where("d.state = ? AND d.next_attempt_at <= ?", DeliveryPending, dbTime(at)).
		Order("d.next_attempt_at, d.id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read due deliveries: %w", err)
	}
	return out, nil
}

// NextDeliveryAt is when the earliest pending delivery falls due (zero:
// none is pending).
func (s *Store) NextDeliveryAt(ctx context.Context) (time.Time, error) {
	var out []time.Time
	err := s.db.WithContext(ctx).Model(&AlertDelivery{}).Where("state = ?", DeliveryPending).
		Order("next_attempt_at").Limit(1).Pluck("next_attempt_at", &out).Error
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlstore: unable to read pending deliveries: %w", err)
	}
	if len(out) == 0 {
		return time.Time{}, nil
	}
	return out[0], nil
}

// ClaimDelivery takes a due delivery for one attempt, fenced by term: the
// attempt is counted and the next one put off to retryAt, so no other hub
// attempts it meanwhile. It reports false when the delivery is no longer
// due as read (another attempt claimed it, it was delivered, or deleted).
func (s *Store) ClaimDelivery(ctx context.Context, term uint64, id string, attempts int, at, retryAt time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE alert_deliveries SET attempts = attempts + 1, next_attempt_at = ? "+
		"WHERE id = ? AND state = ? AND attempts = ? AND next_attempt_at <= ? AND "+fenceSQL,
		dbTime(retryAt), id, DeliveryPending, attempts, dbTime(at), term)
	if res.Error != nil {
		return false, fmt.Errorf("sqlstore: unable to claim delivery %s: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeferDelivery puts a due delivery off to until without attempting it
// (its destination is busy or failing), fenced by term; its attempts are
// not counted. It reports false when the delivery is no longer due as read.
func (s *Store) DeferDelivery(ctx context.Context, term uint64, id string, attempts int, at, until time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Exec("UPDATE alert_deliveries SET next_attempt_at = ? "+
		"WHERE id = ? AND state = ? AND attempts = ? AND next_attempt_at <= ? AND "+fenceSQL,
		dbTime(until), id, DeliveryPending, attempts, dbTime(at), term)
	if res.Error != nil {
		return false, fmt.Errorf("sqlstore: unable to defer delivery %s: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeliveryOutcome is what an attempt found.
type DeliveryOutcome struct {
	State  string // DeliveryDelivered, DeliveryFailed, or DeliveryPending to retry
	Status int    // the answer's HTTP status (0: none)
	Error  string
	At     time.Time
	// RetryAt is when a pending delivery is attempted next.
	RetryAt time.Time
}

// maxDeliveryError bounds the error kept with a delivery.
const maxDeliveryError = 500

// FinishDelivery records the outcome of attempt number attempt (as
// counted by its claim). A later claim's outcome is not overwritten.
func (s *Store) FinishDelivery(ctx context.Context, id string, attempt int, o DeliveryOutcome) error {
	msg := o.Error
	if len(msg) > maxDeliveryError {
		msg = msg[:maxDeliveryError]
	}
	set := map[string]any{"state": o.State, "last_status": o.Status, "last_error": msg}
	switch o.State {
	case DeliveryDelivered:
		set["delivered_at"] = dbTime(o.At)
	case DeliveryPending:
		set["next_attempt_at"] = dbTime(o.RetryAt)
	}
	res := s.db.WithContext(ctx).Model(&AlertDelivery{}).Where("id = ? AND attempts = ? AND state = ?", id, attempt, DeliveryPending).UpdateColumns(set)
	if res.Error != nil {
		return fmt.Errorf("sqlstore: unable to record an attempt of delivery %s: %w", id, res.Error)
	}
	return nil
}

// AlertWithDeliveries is an alert and its deliveries.
type AlertWithDeliveries struct {
	Alert
	Deliveries []AlertDelivery
}

// AlertEvents lists a rule's latest alerts (all rules' when ruleID is 0),
// newest first, with their deliveries.
func (s *Store) AlertEvents(ctx context.Context, ruleID int64, limit int) ([]AlertWithDeliveries, error) {
	q := s.db.WithContext(ctx).Order("id DESC").Limit(limit)
	if ruleID > 0 {
		q = q.Where("rule_id = ?", ruleID)
	}
	var alerts []Alert
	if err := q.Find(&alerts).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read alerts: %w", err)
	}
	out := make([]AlertWithDeliveries, len(alerts))
	if len(alerts) == 0 {
		return out, nil
	}
	ids := make([]int64, len(alerts))
	at := map[int64]int{}
	for i, a := range alerts {
		out[i].Alert = a
		ids[i] = a.ID
		at[a.ID] = i
	}
	var ds []AlertDelivery
	if err := s.db.WithContext(ctx).Where("alert_id IN ?", ids).Order("created_at, id").Find(&ds).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read deliveries: %w", err)
	}
	for _, d := range ds {
		i := at[d.AlertID]
		out[i].Deliveries = append(out[i].Deliveries, d)
	}
	return out, nil
}

// PruneAlerts deletes alerts (and their deliveries) older than
// alertRetention before now.
func (s *Store) PruneAlerts(ctx context.Context, at time.Time) error {
	if err := s.db.WithContext(ctx).Where("created_at < ?", dbTime(at.Add(-alertRetention))).Delete(&Alert{}).Error; err != nil {
		return fmt.Errorf("sqlstore: unable to prune alerts: %w", err)
	}
	return nil
}

// MinuteCounts returns, per crawler, the comments of each minute bucket in
// [from, to), for the crawlers listed (all when ids is empty).
func (s *Store) MinuteCounts(ctx context.Context, ids []int64, from, to time.Time) (map[int64]map[time.Time]int64, error) {
	return s.bucketCounts(ctx, "activity_minutes", ids, from, to)
}

// HourCounts is MinuteCounts over hour buckets.
func (s *Store) HourCounts(ctx context.Context, ids []int64, from, to time.Time) (map[int64]map[time.Time]int64, error) {
	return s.bucketCounts(ctx, "activity_hours", ids, from, to)
}

// bucketCounts is bucketShares without the negative comments.
func (s *Store) bucketCounts(ctx context.Context, table string, ids []int64, from, to time.Time) (map[int64]map[time.Time]int64, error) {
	shares, err := s.bucketShares(ctx, table, ids, from, to)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]map[time.Time]int64, len(shares))
	for id, buckets := range shares {
		m := make(map[time.Time]int64, len(buckets))
		for at, c := range buckets {
			m[at] = c.Comments
		}
		out[id] = m
	}
	return out, nil
}

// CrawlerOwners maps every crawler to its user and creation time.
func (s *Store) CrawlerOwners(ctx context.Context) (map[int64]CrawlerOwner, error) {
	var rows []struct {
		ID        int64
		UserID    int64
		CreatedAt time.Time
	}
	if err := s.db.WithContext(ctx).Model(&Crawler{}).Select("id, user_id, created_at").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to read crawler owners: %w", err)
	}
	out := make(map[int64]CrawlerOwner, len(rows))
	for _, r := range rows {
		out[r.ID] = CrawlerOwner{UserID: r.UserID, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// CrawlerOwner is a crawler's user and creation time.
type CrawlerOwner struct {
	UserID    int64
	CreatedAt time.Time
}

// TermTotals sums, over crawlers' hour buckets in [from, to), the counts
// of the given terms (all terms when terms is nil), leaving out the tail;
// with n > 0 it keeps the n most frequent.
func (s *Store) TermTotals(ctx context.Context, crawlers []int64, terms []string, from, to time.Time, n int) ([]api.TermCount, error) {
	if len(crawlers) == 0 {
		return nil, nil
	}
	q := s.db.WithContext(ctx).Model(&termCountRow{}).Select("term, SUM(count) AS total").
		Where("crawler_id IN ? AND bucket >= ? AND bucket < ? AND term <> ?", crawlers, dbTime(from.Truncate(time.Hour)), dbTime(to), tailTerm).
		Group("term").Order("total DESC, term")
	if terms != nil {
		if len(terms) == 0 {
			return nil, nil
		}
		q = q.Where("term IN ?", terms)
	}
	if n > 0 {
		q = q.Limit(n)
	}
	var rows []struct {
		Term  string
		Total int64
	}
	if err := q.Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to sum term counts: %w", err)
	}
	out := make([]api.TermCount, len(rows))
	for i, r := range rows {
		out[i] = api.TermCount{Term: r.Term, Count: r.Total}
	}
	return out, nil
}
