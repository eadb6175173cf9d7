package store

import (
	"context"
	"fmt"
)

// QueueStats are the depths the metrics endpoint reports: tasks by status and, per outbox,
// items by state.
type QueueStats struct {
	Tasks    map[string]int64 // status → tasks
	Outboxes []OutboxStats
}

// OutboxStats counts the items of one outbox.
type OutboxStats struct {
	Name     string // "webhook", "mail", "notification"
	Pending  int64  // still to deliver (state pending)
	Retrying int64  // pending after at least one failed attempt
	GaveUp   int64  // given up after the last attempt (abandoned, failed)
}

// QueueStats counts tasks by status and the outboxes' items by state, with one grouped query
// per table. Errors: the database's.
func (s *Store) QueueStats(ctx context.Context) (*QueueStats, error) {
	db := s.conn(ctx)
	var rows []struct {
		Status string
		N      int64
	}
	if err := db.Raw("SELECT status, COUNT(*) AS n FROM tasks GROUP BY status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	out := &QueueStats{Tasks: make(map[string]int64, len(rows))}
	for _, r := range rows {
		out.Tasks[r.Status] = r.N
	}
	for _, o := range []struct {
		name string
		box  outbox
	}{{"webhook", webhookOutbox()}, {"mail", mailOutbox()}, {"notification", noticeOutbox()}} {
		var states []struct {
			State    string
			N        int64
			Retrying int64
		}
		q := "SELECT state, COUNT(*) AS n, SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END) AS retrying FROM " +
			o.box.table + " GROUP BY state"
		if err := db.Raw(q).Scan(&states).Error; err != nil {
			return nil, fmt.Errorf("count %s outbox: %w", o.name, err)
		}
		st := OutboxStats{Name: o.name}
		for _, r := range states {
			switch r.State {
			case outboxPending:
				st.Pending, st.Retrying = r.N, r.Retrying
			case o.box.gaveUp:
				st.GaveUp = r.N
			}
		}
		out.Outboxes = append(out.Outboxes, st)
	}
	return out, nil
}
