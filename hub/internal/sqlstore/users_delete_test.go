package sqlstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestStore_DeleteUserOnlyWithoutCrawlers(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		u := mustUser(t, s, "leaving", 0)
		c := mustCrawler(t, s, newCrawler(u.ID, "q"))
		err := s.DeleteUser(ctx, u.ID)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "still has 1 crawlers") {
			t.Fatalf("delete of a user with a crawler: %v, want ErrInvalid naming the crawler", err)
		}
		if _, err := s.GetUser(ctx, u.ID); err != nil {
			t.Fatalf("the refused delete removed the user: %v", err)
		}
		if err := s.DeleteCrawler(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetUser(ctx, u.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("user after delete: %v, want ErrNotFound", err)
		}
		if err := s.DeleteUser(ctx, u.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v, want ErrNotFound", err)
		}
	})
}
