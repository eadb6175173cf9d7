package store

import (
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestChangedRows: a SET list of values, NULLs and increments of the column's own value is
// applied to a copy of the rows as the UPDATE applies it; any other expression, an unknown
// column or a value of another type gives nil, so that the caller reads the rows back.
func TestChangedRows(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	owner, code := "w0", "X"
	before := []taskRow{{ID: 7, Status: "QUEUED", EventSeq: 4, RetryCount: 1, LeaseOwner: &owner, ErrorCode: &code}}
	got := changedRows(before, map[string]any{
		"status": "RUNNING", "updated_at": at, "lease_owner": "w1", "lease_expires_at": at, "error_code": nil,
		"event_seq": gorm.Expr("event_seq + ?", 2), "retry_count": gorm.Expr("retry_count + 1"),
	})
	if len(got) != 1 {
		t.Fatalf("changedRows = %v, want one row", got)
	}
	r := got[0]
	if r.Status != "RUNNING" || !r.UpdatedAt.Equal(at) || r.LeaseOwner == nil || *r.LeaseOwner != "w1" ||
		r.LeaseExpiresAt == nil || !r.LeaseExpiresAt.Equal(at) || r.ErrorCode != nil || r.EventSeq != 6 || r.RetryCount != 2 {
		t.Errorf("changed row %+v", r)
	}
	if *before[0].LeaseOwner != "w0" || before[0].EventSeq != 4 || before[0].ErrorCode == nil {
		t.Errorf("the rows before the change were changed: %+v", before[0])
	}
	for name, ch := range map[string]map[string]any{
		"another column's value":           {"max_steps": gorm.Expr("steps_used + ?", 3)},
		"an unknown column":                {"no_such_column": 1},
		"a value of another type":          {"status": 3},
		"NULL in a column that takes none": {"status": nil},
	} {
		if got := changedRows(before, ch); got != nil {
			t.Errorf("%s: changedRows = %+v, want nil (read back)", name, got)
		}
	}
	if got := changedRows(nil, map[string]any{"status": "RUNNING"}); got != nil {
		t.Errorf("no rows: changedRows = %+v, want nil", got)
	}
}
