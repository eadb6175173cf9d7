package push

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// publisherTokenTTL is the lifetime of the JWT sent with one publication (some clock skew
// between the service and the hub is tolerated).
const publisherTokenTTL = 5 * time.Minute

// Mercure publishes to an external Mercure hub: POST {publish URL} with the form fields topic,
// data and private=on, authorised by a publisher JWT (HS256, mercure.publish = [topic]) signed
// with mercure_jwt_key. Updates are private, so only subscribers whose token grants the topic
// receive them.
type Mercure struct {
	url    string
	key    []byte
	client *http.Client
	now    func() time.Time
}

var _ Publisher = (*Mercure)(nil)

// NewMercure returns a publisher for the hub at publishURL (mercure_publish_url, which defaults
// to mercure_url). client nil means one with PublishTimeout; every publication is bounded by
// PublishTimeout either way.
func NewMercure(publishURL string, key []byte, client *http.Client) *Mercure {
	if client == nil {
		client = &http.Client{Timeout: PublishTimeout}
	}
	return &Mercure{url: publishURL, key: key, client: client, now: time.Now}
}

// Publish posts one private update. Errors: ErrUnavailable when the hub cannot be reached,
// times out or answers other than 2xx (the error carries the status and the start of the body,
// never the token).
func (m *Mercure) Publish(ctx context.Context, topic string, data []byte) error {
	now := m.now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		Mercure: mercureClaim{Publish: []string{topic}},
		RegisteredClaims: jwt.RegisteredClaims{
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(publisherTokenTTL)),
		},
	}).SignedString(m.key)
	if err != nil {
		return fmt.Errorf("push: sign publisher token: %w", err)
	}
	form := url.Values{"topic": {topic}, "data": {string(data)}, "private": {"on"}}
	ctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("push: mercure request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := m.client.Do(req)
	if err != nil {
		return fmt.Errorf("push: publish to mercure: %v: %w", err, svcerr.ErrUnavailable)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push: mercure answered %d: %s: %w", resp.StatusCode, strings.TrimSpace(string(body)), svcerr.ErrUnavailable)
	}
	return nil
}
