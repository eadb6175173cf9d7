package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestFullShardRefusesNewKeysOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := New(5, time.Minute, clock)
	l.perShard = 2

	// Fill one shard with two keys.
	var inShard []string
	target := l.shard("seed-key")
	for i := 0; len(inShard) < 3; i++ {
		k := fmt.Sprintf("k%d", i)
		if l.shard(k) == target {
			inShard = append(inShard, k)
		}
	}
	for _, k := range inShard[:2] {
		if ok, _ := l.Allow(k); !ok {
			t.Fatalf("%s refused while the shard had room", k)
		}
	}
	now = now.Add(10 * time.Second)
	ok, ra := l.Allow(inShard[2])
	if ok {
		t.Fatal("new key accepted into a full shard")
	}
	if ra != 50*time.Second { // the shard's next sweep is one window after its creation
		t.Fatalf("retryAfter = %s, want 50s", ra)
	}
	if ok, _ := l.Allow(inShard[0]); !ok {
		t.Fatal("known key refused because its shard is full")
	}

	// Once the old keys have been idle for two windows, the sweep frees the shard.
	now = now.Add(2 * time.Minute)
	if ok, _ := l.Allow(inShard[2]); !ok {
		t.Fatal("new key still refused after the shard was swept")
	}
	if got := len(target.entries); got != 1 {
		t.Fatalf("shard holds %d entries after the sweep, want 1", got)
	}
}
