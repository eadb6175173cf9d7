package store

import (
	"slices"
	"sync"
	"time"
)

// sessionCache keeps the sessions that authenticated recently, with their user and roles, as of
// an auth version (versions.go): an authenticated request costs no read while nothing that could
// end its session or change its user was written, through any process (a change made through
// another process is seen within Options.VersionTTL; one made through this process at once).
type sessionCache struct {
	mu    sync.Mutex
	m     map[string]*cachedSession // by token digest
	byID  map[int64]string          // session id → token digest, for TouchSession
	clock func() time.Time          // the store's, for expiry
}

type cachedSession struct {
	sess    Session
	user    User
	version int64
	loaded  time.Time // monotonic
}

// sessionCacheMaxAge bounds how long a cached session is trusted while the auth version stays
// the same: a session ended outside the service (by hand, in SQL) stops working within it.
const sessionCacheMaxAge = time.Minute

// sessionCacheMax bounds the cache; a full cache is emptied (the next requests read again).
const sessionCacheMax = 10_000

// get returns copies of the cached session of digest and its user when they are of version,
// young enough, and the session has not expired.
func (c *sessionCache) get(digest string, version int64) (*Session, *User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[digest]
	if e == nil || e.version != version || time.Since(e.loaded) >= sessionCacheMaxAge || !e.sess.ExpiresAt.After(c.clock()) {
		return nil, nil, false
	}
	sess, u := e.sess, e.user
	u.Roles = slices.Clone(u.Roles)
	return &sess, &u, true
}

// put caches sess and u (copies) as of version.
func (c *sessionCache) put(digest string, sess *Session, u *User, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= sessionCacheMax {
		c.m, c.byID = map[string]*cachedSession{}, map[int64]string{}
	}
	e := &cachedSession{sess: *sess, user: *u, version: version, loaded: time.Now()}
	e.user.Roles = slices.Clone(u.Roles)
	c.m[digest] = e
	c.byID[sess.ID] = digest
}

// touch records TouchSession's write in the cached session id, if any.
func (c *sessionCache) touch(id int64, lastSeen, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[c.byID[id]]; e != nil && e.sess.ID == id {
		e.sess.LastSeenAt, e.sess.ExpiresAt = lastSeen, expires
	}
}
