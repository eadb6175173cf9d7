package store_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestConfigVersion: writes to the configuration a step reads (GORM creates, updates and
// deletes, raw statements) bump the config version, in their transaction; other writes and refused
// writes do not. The process that wrote sees the new version at once; another process sees it
// once its last read is older than its TTL.
func TestConfigVersion(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	eager := storetest.Twin(t, s, func(o *store.Options) { o.VersionTTL = -1 })       // reads every time
	lazy := storetest.Twin(t, s, func(o *store.Options) { o.VersionTTL = time.Hour }) // trusts its first read
	ctx := context.Background()
	version := func(st *store.Store) int64 {
		t.Helper()
		v, err := st.ConfigVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	v := version(eager)
	lazyV := version(lazy)
	if own := version(s); own != v || lazyV != v {
		t.Fatalf("versions: own %d, eager %d, lazy %d", own, v, lazyV)
	}
	bumped := func(what string) {
		t.Helper()
		if got := version(eager); got <= v {
			t.Fatalf("%s: version %d, want above %d", what, got, v)
		}
		if own := version(s); own != version(eager) {
			t.Fatalf("%s: the writing process reads %d, the database has %d", what, own, version(eager))
		}
		v = version(eager)
	}
	unchanged := func(what string) {
		t.Helper()
		if got := version(eager); got != v {
			t.Fatalf("%s: version %d, want %d", what, got, v)
		}
	}

	storetest.Task(t, s, a, u.ID)
	unchanged("a task")
	name := "renamed"
	if _, err := s.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{Name: &name}, nil); err != nil {
		t.Fatal(err)
	}
	bumped("an agent's update")
	if err := s.SetAgentToolEnabled(ctx, a.ID, "core.CalculatorTool", true, nil); err != nil {
		t.Fatal(err)
	}
	bumped("a tool enabled")
	if err := s.TxForTest(ctx, func(tx *gorm.DB) error {
		return tx.Exec("UPDATE agents SET notes = ? WHERE id = ?", "raw", a.ID).Error
	}); err != nil {
		t.Fatal(err)
	}
	bumped("a raw UPDATE in a transaction")
	if err := s.GormDBForTest().Exec("DELETE FROM agent_tools WHERE agent_id = ?", a.ID).Error; err != nil {
		t.Fatal(err)
	}
	bumped("a raw DELETE outside a transaction")
	if err := s.GormDBForTest().Exec("DELETE FROM agent_tools WHERE agent_id = ?", a.ID).Error; err != nil {
		t.Fatal(err)
	}
	unchanged("a DELETE that matched nothing")
	if _, err := s.UpdateAgent(ctx, a.ID+1000, u.ID, store.AgentFields{Name: &name}, nil); err == nil {
		t.Fatal("update of a missing agent accepted")
	}
	unchanged("a refused update")
	if err := s.TxForTest(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE agents SET notes = ? WHERE id = ?", "rolled back", a.ID).Error; err != nil {
			return err
		}
		return gorm.ErrInvalidData
	}); err == nil {
		t.Fatal("rollback expected")
	}
	unchanged("a rolled-back transaction")
	if err := s.DeleteAgent(ctx, a.ID, nil); err != nil {
		t.Fatal(err)
	}
	bumped("an agent's deletion")
	if got := version(lazy); got != lazyV {
		t.Fatalf("a process within its TTL reads %d, want its last read %d", got, lazyV)
	}
}
