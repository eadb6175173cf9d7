// Package taskstream serves the event stream of one task: it replays the task's event log
// from a cursor, then delivers new events as they are written, and ends with the event that
// ends the run.
//
// Events live in the database (store.TaskEvents), so a stream served by one process sees the
// events every other process writes: the process's Broker wakes its streams at once when this
// process wrote events (the store's commit listeners, Commit.EventTasks), and within Poll when another did (one query
// of the watched tasks' event counters per interval, however many streams are open). A stream
// reads only by sequence after its cursor, so it never skips or repeats an event, whatever
// woke it.
package taskstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Defaults of a Broker.
const (
	DefaultPoll        = time.Second      // how soon a stream sees events another process wrote
	DefaultKeepAlive   = 15 * time.Second // a comment line this often keeps proxies from closing idle streams
	DefaultMaxPerOwner = 32               // open streams of one user or key (event_streams_per_user)
	DefaultRecheck     = time.Second      // how soon a stream ends after its credential did
)

// Sink receives what a stream sends; the HTTP layer renders it as Server-Sent Events.
type Sink interface {
	// Event sends one event. kinds maps the media ids of message events to their kind (image,
	// audio …); assets deleted since are missing.
	Event(ev *store.TaskEvent, kinds map[string]string) error
	// KeepAlive sends a comment line.
	KeepAlive() error
	// Flush pushes what was sent to the client.
	Flush()
	// Authorized reports whether the credential that opened the stream still stands; asked
	// every Recheck, the stream ends (nil from Serve) once it answers an error.
	Authorized(ctx context.Context) error
}

// Broker serves the event streams of one process. Build it with New; run its poll loop with
// Start and Stop (App.Start/Stop). The zero Poll and KeepAlive mean the defaults.
type Broker struct {
	Store     *store.Store
	Poll      time.Duration
	KeepAlive time.Duration
	// Recheck is how often an open stream asks its sink whether the credential that opened it
	// still stands (a logout, a password change, a revoked key end it); 0 means DefaultRecheck.
	Recheck time.Duration
	// MaxPerOwner bounds the streams one owner holds open at once (Acquire); 0 means
	// DefaultMaxPerOwner.
	MaxPerOwner int
	Log         *slog.Logger

	base     startstop.Base
	ending   chan struct{} // closed by EndStreams
	endOnce  sync.Once
	mu       sync.Mutex
	watchers map[int64]map[chan struct{}]struct{}
	seen     map[int64]int64 // event_seq of watched tasks at the last poll
	owners   map[string]int  // open streams per owner (Acquire)
}

// Acquire takes one of owner's stream slots (owner names a user or an agent key) for a stream
// about to be served, and returns its release, which the stream calls once it ended. Errors:
// svcerr.ErrRateLimited when owner holds MaxPerOwner streams already: each open stream holds a
// goroutine and reads the database whenever its task is written, so one client cannot open
// them without bound.
func (b *Broker) Acquire(owner string) (release func(), err error) {
	limit := b.MaxPerOwner
	if limit <= 0 {
		limit = DefaultMaxPerOwner
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owners == nil {
		b.owners = map[string]int{}
	}
	if b.owners[owner] >= limit {
		return nil, svcerr.RateLimited(5*time.Second, fmt.Sprintf("at most %d event streams may be open at once; close one first", limit))
	}
	b.owners[owner]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.owners[owner]--; b.owners[owner] <= 0 {
				delete(b.owners, owner)
			}
		})
	}, nil
}

// New returns a broker over st.
func New(st *store.Store, log *slog.Logger) *Broker {
	return &Broker{Store: st, Log: log, watchers: map[int64]map[chan struct{}]struct{}{}, seen: map[int64]int64{},
		ending: make(chan struct{})}
}

// EndStreams ends every open stream, and every stream served from now on once it has sent
// what its replay found: the process is stopping, and an open stream would hold the HTTP
// server's Shutdown until the client goes away. A stream ends between two events, after a
// flush, so the client's reconnect (to another process) with Last-Event-ID resumes after the
// last event it received, missing none. Safe to call more than once and from any goroutine.
func (b *Broker) EndStreams() { b.endOnce.Do(func() { close(b.ending) }) }

// Notify wakes the streams of tasks ids (events were committed for them).
func (b *Broker) Notify(ids []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		b.wakeLocked(id)
	}
}

func (b *Broker) wakeLocked(id int64) {
	for ch := range b.watchers[id] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

func (b *Broker) watch(id int64) chan struct{} {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watchers[id] == nil {
		b.watchers[id] = map[chan struct{}]struct{}{}
	}
	b.watchers[id][ch] = struct{}{}
	return ch
}

func (b *Broker) unwatch(id int64, ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.watchers[id], ch)
	if len(b.watchers[id]) == 0 {
		delete(b.watchers, id)
		delete(b.seen, id)
	}
}

// Subscribers is the number of open event streams of this process (metrics).
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, ws := range b.watchers {
		n += len(ws)
	}
	return n
}

// Start runs the poll loop that notices events other processes wrote.
func (b *Broker) Start(ctx context.Context) { b.base.Start(ctx, b.pollLoop) }

// Stop ends the poll loop (open streams keep running on local wake-ups until they end).
func (b *Broker) Stop(ctx context.Context) error { return b.base.Stop(ctx) }

func (b *Broker) interval(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (b *Broker) pollLoop(ctx context.Context) {
	t := time.NewTicker(b.interval(b.Poll, DefaultPoll))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.poll(ctx)
		}
	}
}

// CheckNow does what a poll does, now: the cross-process wake-up listener (re)connected, and
// events written while it was not listening would otherwise wait for the next poll.
func (b *Broker) CheckNow(ctx context.Context) { b.poll(ctx) }

// poll reads the event counters of every watched task and wakes the streams of those that
// moved since the last poll.
func (b *Broker) poll(ctx context.Context) {
	b.mu.Lock()
	ids := make([]int64, 0, len(b.watchers))
	for id := range b.watchers {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	for len(ids) > 0 {
		n := min(len(ids), 500)
		cs, err := b.Store.EventCursors(ctx, ids[:n])
		ids = ids[n:]
		if err != nil {
			if ctx.Err() == nil && b.Log != nil {
				b.Log.Warn("task event poll failed", "error", err)
			}
			return
		}
		b.mu.Lock()
		for _, c := range cs {
			if last, ok := b.seen[c.TaskID]; !ok || last != c.EventSeq {
				b.seen[c.TaskID] = c.EventSeq
				b.wakeLocked(c.TaskID)
			}
		}
		b.mu.Unlock()
	}
}

// Serve streams the events of task taskID after sequence after into sink until the task's
// latest run ends (its ending event was sent with nothing stored after it, or the run had
// ended with nothing left after the cursor: a replay delivers every stored run), ctx is
// cancelled (the client went away), or the process stops (EndStreams). The caller has checked
// that the client may see the task. Errors: the store's, and the sink's (the client is gone).
func (b *Broker) Serve(ctx context.Context, taskID, after int64, sink Sink) error {
	wake := b.watch(taskID)
	defer b.unwatch(taskID, wake)
	keep := time.NewTicker(b.interval(b.KeepAlive, DefaultKeepAlive))
	defer keep.Stop()
	recheck := time.NewTicker(b.interval(b.Recheck, DefaultRecheck))
	defer recheck.Stop()
	for first := true; ; first = false {
		evs, err := b.Store.TaskEvents(ctx, taskID, after, store.MaxEventsPage)
		if err != nil {
			return err
		}
		kinds, err := b.mediaKinds(ctx, evs)
		if err != nil {
			return err
		}
		for i := range evs {
			if err := sink.Event(&evs[i], kinds); err != nil {
				return err
			}
			after = evs[i].Sequence
			// A run's end ends the stream only when it is the task's last event: a replay of a
			// task that ran again (a follow-up, a retry) delivers every run, and a stream that
			// reaches a later run goes on with it.
			if evs[i].Ends() && i == len(evs)-1 {
				if more, err := b.hasMore(ctx, taskID, after); err != nil || !more {
					sink.Flush()
					return err
				}
			}
		}
		if len(evs) == store.MaxEventsPage {
			continue // more to replay
		}
		if first && len(evs) == 0 {
			cs, err := b.Store.EventCursors(ctx, []int64{taskID})
			if err != nil {
				return err
			}
			if len(cs) == 0 || (cs[0].Ended && cs[0].EventSeq <= after) {
				return nil // deleted, or over with nothing after the cursor
			}
		}
		sink.Flush()
		if done, err := b.wait(ctx, taskID, wake, keep.C, recheck.C, sink); done || err != nil {
			return err
		}
	}
}

// hasMore reports whether task taskID has events after sequence after (false when the task is
// gone). Errors: the store's.
func (b *Broker) hasMore(ctx context.Context, taskID, after int64) (bool, error) {
	cs, err := b.Store.EventCursors(ctx, []int64{taskID})
	if err != nil {
		return false, err
	}
	return len(cs) == 1 && cs[0].EventSeq > after, nil
}

// wait blocks until the stream has something to read (a wake-up, or a keep-alive sent), and
// reports done when the stream ends instead: the client went away, the process stops
// (EndStreams), the task was deleted, or the credential that opened it ended (asked every Recheck, without reading the task).
func (b *Broker) wait(ctx context.Context, taskID int64, wake <-chan struct{}, keep, recheck <-chan time.Time, sink Sink) (done bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-b.ending:
			return true, nil
		case <-wake:
			return false, nil
		case <-recheck:
			if err := sink.Authorized(ctx); err != nil {
				if !errors.Is(err, svcerr.ErrUnauthenticated) {
					return true, err
				}
				if b.Log != nil {
					b.Log.InfoContext(ctx, "task event stream ended: its credential ended", "task_id", taskID)
				}
				return true, nil
			}
		case <-keep:
			// A deleted task writes no terminal event: its stream ends here instead.
			if cs, err := b.Store.EventCursors(ctx, []int64{taskID}); err != nil {
				return true, err
			} else if len(cs) == 0 {
				return true, nil
			}
			if err := sink.KeepAlive(); err != nil {
				return true, err
			}
			sink.Flush()
			return false, nil
		}
	}
}

// mediaKinds looks up the kinds of the media that message events attach, in one query.
func (b *Broker) mediaKinds(ctx context.Context, evs []store.TaskEvent) (map[string]string, error) {
	var ids []string
	for i := range evs {
		if m := evs[i].Message; m != nil {
			ids = append(ids, m.MediaIDs...)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	assets, err := b.Store.MediaAssets(ctx, ids)
	if err != nil {
		return nil, err
	}
	kinds := make(map[string]string, len(assets))
	for id, a := range assets {
		kinds[id] = a.Kind
	}
	return kinds, nil
}
