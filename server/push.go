package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// subscribe serves the embedded push hub at {prefix}/.well-known/mercure (Mercure's subscribe
// shape, outside /api/v1 and its gate: the hub authenticates by subscriber token or session
// cookie itself). It answers 404 when the embedded hub is not the push channel in use.
func (s *Server) subscribe(c *gin.Context) {
	if st := push.StatusOf(s.cfg.Current()); s.push == nil || st.Kind != push.KindEmbedded || !st.Available {
		s.fail(c, svcerr.New(svcerr.ErrNotFound, "the embedded push hub is not in use"))
		return
	}
	endlessWrites(c)
	if err := s.push.Subscribe(c.Writer, c.Request); err != nil {
		s.fail(c, err)
	}
}

// sessionUser authenticates a push subscriber by its session cookie: the user and the session.
func sessionUser(accounts *account.Service) func(*http.Request) (int64, int64, error) {
	return func(r *http.Request) (int64, int64, error) {
		ck, err := r.Cookie(sessionCookieName)
		if err != nil {
			return 0, 0, svcerr.ErrUnauthenticated
		}
		id, err := accounts.Authenticate(r.Context(), ck.Value)
		if err != nil {
			return 0, 0, err
		}
		return id.User.ID, id.Session.ID, nil
	}
}
