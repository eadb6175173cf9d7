package push

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHubFanout publishes one ~1 KiB event (a task resource's size) to many subscribers
// of one topic over real TCP connections (bare clients that count event ends), and waits until
// every subscriber has it: ns/op is the time to deliver one event to all, ns/delivery per
// subscriber. The clients share the process (and the cores) with the hub.
func BenchmarkHubFanout(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, n int) {
	h, srv := plainHub(b)
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	var delivered atomic.Int64
	var wg sync.WaitGroup
	for range n {
		conn, br, _ := rawSubscribe(b, srv.Listener.Addr().String(), TaskTopic(1), tok)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			buf := make([]byte, 4096)
			for {
				k, err := br.Read(buf)
				if err != nil {
					return
				}
				delivered.Add(int64(bytes.Count(buf[:k], []byte("\n\n"))))
			}
		}()
	}
	for h.Subscribers() < n {
		time.Sleep(time.Millisecond)
	}
	data := []byte(`{"id":1,"status":"COMPLETED","prompt":"` + strings.Repeat("x", 900) + `"}`)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		want := int64(i+1) * int64(n)
		if err := h.Publish(context.Background(), TaskTopic(1), data); err != nil {
			b.Fatal(err)
		}
		for delivered.Load() < want {
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
	b.StopTimer()
	_ = h.Close()
	wg.Wait()
}
