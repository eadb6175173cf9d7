package webhook_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/webhook"
)

// The vector was computed independently of this package:
//
//	D=$(printf %s 's3cr3t-secret' | sha256sum | cut -d' ' -f1)
//	  # 48e3c8b05d2b851579c77ef11ba9c6e4c3dc7b3bca55f5d109dfe52cf92393fa
//	printf %s '1700000000.{"id":7,"status":"COMPLETED"}' | openssl dgst -sha256 -hmac "$D"
//	  # 512142274777082de6e80b5a09d47da4be6c2bea5d5507188cb5f4b7ae06626f
const (
	katSecret    = "s3cr3t-secret"
	katDigest    = "48e3c8b05d2b851579c77ef11ba9c6e4c3dc7b3bca55f5d109dfe52cf92393fa"
	katTimestamp = 1700000000
	katBody      = `{"id":7,"status":"COMPLETED"}`
	katSignature = "512142274777082de6e80b5a09d47da4be6c2bea5d5507188cb5f4b7ae06626f"
)

func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	if got := webhook.SecretDigest(katSecret); got != katDigest {
		t.Fatalf("SecretDigest = %s, want %s", got, katDigest)
	}
	if got := webhook.Sign(katDigest, katTimestamp, []byte(katBody)); got != katSignature {
		t.Fatalf("Sign = %s, want %s", got, katSignature)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	at := time.Unix(katTimestamp, 0)
	cases := []struct {
		name          string
		ts, sig, body string
		now           time.Time
		want          error
	}{
		{"valid", "1700000000", katSignature, katBody, at, nil},
		{"valid at the window's edge", "1700000000", katSignature, katBody, at.Add(300 * time.Second), nil},
		{"stale", "1700000000", katSignature, katBody, at.Add(301 * time.Second), webhook.ErrBadTimestamp},
		{"from the future", "1700000000", katSignature, katBody, at.Add(-301 * time.Second), webhook.ErrBadTimestamp},
		{"malformed timestamp", "+1700000000", katSignature, katBody, at, webhook.ErrBadTimestamp},
		{"missing timestamp", "", katSignature, katBody, at, webhook.ErrBadTimestamp},
		{"other body", "1700000000", katSignature, katBody + " ", at, webhook.ErrBadSignature},
		{"uppercase signature", "1700000000", "512142274777082DE6E80B5A09D47DA4BE6C2BEA5D5507188CB5F4B7AE06626F", katBody, at, webhook.ErrBadSignature},
		{"missing signature", "1700000000", "", katBody, at, webhook.ErrBadSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := webhook.Verify(katDigest, tc.ts, tc.sig, []byte(tc.body), tc.now)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzVerify: Verify never panics on received headers and bodies, and accepts exactly the
// deliveries whose signature is Sign's over the same timestamp and body.
func FuzzVerify(f *testing.F) {
	f.Add("1700000000", katSignature, []byte(katBody))
	f.Add("1700000000", "", []byte{})
	f.Add("-1", "zz", []byte("\x00"))
	f.Add("01700000000", katSignature, []byte(katBody))
	f.Add("99999999999999999999", katSignature, []byte(katBody))
	now := time.Unix(katTimestamp, 0)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		err := webhook.Verify(katDigest, ts, sig, body, now)
		if err != nil && !errors.Is(err, webhook.ErrBadTimestamp) && !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil {
			n, perr := strconv.ParseInt(ts, 10, 64)
			if perr != nil || webhook.Sign(katDigest, n, body) != sig {
				t.Fatalf("accepted ts %q sig %q", ts, sig)
			}
		}
		// A correct signature over a fresh timestamp always verifies.
		good := now.Unix() + int64(len(body)%600) - 300
		gts := strconv.FormatInt(good, 10)
		if err := webhook.Verify(katDigest, gts, webhook.Sign(katDigest, good, body), body, now); err != nil {
			t.Fatalf("valid delivery refused: %v", err)
		}
	})
}
