package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/store/storetest"
)

func TestSettingUpdatedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s := storetest.NewWithClock(t, func() time.Time { return now })
	if at, err := s.SettingUpdatedAt(ctx, "mail_driver"); err != nil || at != nil {
		t.Fatalf("absent key = %v, %v", at, err)
	}
	if err := s.PutSettings(ctx, map[string]any{"mail_driver": "smtp"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if err := s.PutSettings(ctx, map[string]any{"mail_driver": "none"}); err != nil {
		t.Fatal(err)
	}
	if at, err := s.SettingUpdatedAt(ctx, "mail_driver"); err != nil || at == nil || !at.Equal(now) {
		t.Fatalf("updated_at = %v, %v; want %v", at, err, now)
	}
}
