package commitstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTPError is a forge's answer other than 2xx.
type HTTPError struct {
	Code int
	// RetryAfter is the forge's Retry-After header, if any: seconds or
	// an HTTP date, read against the notifier's clock.
	RetryAfter string
	// Body is the start of the answer, for the log.
	Body string
}

func (e *HTTPError) Error() string {
	msg := "HTTP " + strconv.Itoa(e.Code)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Retryable: a 429 or a 5xx may pass later; any other 4xx will not, and
// retrying it only adds load.
func (e *HTTPError) Retryable() bool {
	return e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// retryable reports whether a post that failed with err may be retried:
// transport errors and the answers HTTPError.Retryable names.
func retryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Retryable()
	}
	return !errors.Is(err, errTerminal)
}

// errTerminal marks errors no retry can fix (a bad setting, a bad file).
var errTerminal = errors.New("not retried")

// maxErrorBody bounds what an error keeps of a forge's answer.
const maxErrorBody = 256

// postJSON posts body as JSON to url with the headers, and turns an
// answer other than 2xx into an *HTTPError.
func postJSON(ctx context.Context, client *http.Client, url string, headers map[string]string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", errTerminal, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "addon-operator")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	if resp.StatusCode/100 == 3 {
		return redirectError(resp)
	}
	return &HTTPError{
		Code:       resp.StatusCode,
		RetryAfter: resp.Header.Get("Retry-After"),
		Body:       strings.Join(strings.Fields(string(b)), " "),
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// marshal is json.Marshal for bodies that cannot fail to encode.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings: unreachable
	}
	return b
}
