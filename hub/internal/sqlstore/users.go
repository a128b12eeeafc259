package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// MaxUserName is the longest user name, in characters.
const MaxUserName = 200

// CreateUser adds a user. The name is trimmed and must be 1 to MaxUserName
// characters; limit is the comment limit, 0 for none.
func (s *Store) CreateUser(ctx context.Context, name string, limit int64) (User, error) {
	name = strings.TrimSpace(name)
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		return User{}, fmt.Errorf("%w: user name is not valid UTF-8", ErrInvalid)
	case n == 0:
		return User{}, fmt.Errorf("%w: user name is empty", ErrInvalid)
	case n > MaxUserName:
		return User{}, fmt.Errorf("%w: user name has %d characters, at most %d allowed", ErrInvalid, n, MaxUserName)
	}
	if err := validLimit(limit); err != nil {
		return User{}, err
	}
	u := User{Name: name, CommentLimit: limit}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		u.ChangeSeq = seq
		return tx.Create(&u).Error
	})
	if err != nil {
		return User{}, fmt.Errorf("sqlstore: unable to create user: %w", err)
	}
	return u, nil
}

// GetUser reads one user; ErrNotFound when the id does not exist.
func (s *Store) GetUser(ctx context.Context, id int64) (User, error) {
	var u User
	if err := s.db.WithContext(ctx).Take(&u, "id = ?", id).Error; err != nil {
		return User{}, fmt.Errorf("sqlstore: unable to read user %d: %w", id, notFound(err))
	}
	return u, nil
}

// ListUsers reads every user, ordered by id.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	users := []User{}
	if err := s.db.WithContext(ctx).Order("id").Find(&users).Error; err != nil {
		return nil, fmt.Errorf("sqlstore: unable to list users: %w", err)
	}
	return users, nil
}

// SetUserLimit changes a user's comment limit (0 for none) and returns the
// updated user.
func (s *Store) SetUserLimit(ctx context.Context, id, limit int64) (User, error) {
	if err := validLimit(limit); err != nil {
		return User{}, err
	}
	var u User
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&u, "id = ?", id).Error; err != nil {
			return notFound(err)
		}
		u.CommentLimit, u.UpdatedAt, u.ChangeSeq = limit, now(), seq
		return tx.Model(&User{}).Where("id = ?", id).
			UpdateColumns(map[string]any{"comment_limit": u.CommentLimit, "updated_at": u.UpdatedAt, "change_seq": u.ChangeSeq}).Error
	})
	if err != nil {
		return User{}, fmt.Errorf("sqlstore: unable to set the limit of user %d: %w", id, err)
	}
	return u, nil
}

// SetUserRetention changes a user's default retention in seconds (0 for
// none) and returns the updated user. The user's crawlers without their
// own take it on their next reload.
func (s *Store) SetUserRetention(ctx context.Context, id, seconds int64) (User, error) {
	if err := validRetention(seconds); err != nil {
		return User{}, err
	}
	var u User
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		seq, err := nextChangeTx(tx)
		if err != nil {
			return err
		}
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Take(&u, "id = ?", id).Error; err != nil {
			return notFound(err)
		}
		u.RetentionSeconds, u.UpdatedAt, u.ChangeSeq = seconds, now(), seq
		return tx.Model(&User{}).Where("id = ?", id).
			UpdateColumns(map[string]any{"retention_seconds": u.RetentionSeconds, "updated_at": u.UpdatedAt, "change_seq": u.ChangeSeq}).Error
	})
	if errors.Is(err, ErrInvalid) {
		return User{}, err
	}
	if err != nil {
		return User{}, fmt.Errorf("sqlstore: unable to set the retention of user %d: %w", id, err)
	}
	return u, nil
}

// DeleteUser removes a user who has no crawlers left; one who still has
// some is refused (ErrInvalid, saying how many), so no crawler is left
// without its customer and no usage is lost by accident.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := nextChangeTx(tx); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&Crawler{}).Where("user_id = ?", id).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: user %d still has %d crawlers: delete them first", ErrInvalid, id, n)
		}
		res := tx.Where("id = ?", id).Delete(&User{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
	if errors.Is(err, ErrInvalid) {
		return err
	}
	if err != nil {
		return fmt.Errorf("sqlstore: unable to delete user %d: %w", id, err)
	}
	return nil
}

func validLimit(limit int64) error {
	if limit < 0 {
		return fmt.Errorf("%w: comment limit must be 0 (no limit) or more, got %d", ErrInvalid, limit)
	}
	return nil
}
