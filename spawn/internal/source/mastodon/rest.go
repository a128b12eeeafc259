package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAPIErrorBytes caps the body read of a REST error answer.
const maxAPIErrorBytes = 4 << 10

// apiError is a REST answer other than 2xx, with Mastodon's error message.
type apiError struct {
	method, path string
	code         int
	status       string
	message      string
}

func (e *apiError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("%s %s answered %s", e.method, e.path, e.status)
	}
	return fmt.Sprintf("%s %s answered %s: %s", e.method, e.path, e.status, e.message)
}

// HTTPStatus is the code the instance answered: the node shows a crawler
// whose instance answers errors as degraded.
func (e *apiError) HTTPStatus() int { return e.code }

// refused reports whether an error is the instance refusing the token or
// its scopes (401, 403).
func refused(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && (ae.code == http.StatusUnauthorized || ae.code == http.StatusForbidden)
}

// notFound reports whether an error is a 404.
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == http.StatusNotFound
}

// api calls one REST endpoint of the instance with the access token and
// decodes its JSON answer, at most limit bytes, into out (nil discards
// it). It returns the answer's headers.
func (i *instance) api(ctx context.Context, method, path string, limit int64, out any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, i.base.String()+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if i.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+i.opts.Token)
	}
	resp, err := i.rest.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	i.noteBudget(resp.Header, resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAPIErrorBytes))
		var doc struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &doc)
		return resp.Header, &apiError{method: method, path: clip(path), code: resp.StatusCode, status: resp.Status, message: clip(doc.Error)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.Header, err
	}
	if int64(len(body)) > limit {
		return resp.Header, fmt.Errorf("%w: %s %s is larger than %d bytes", ErrMalformed, method, clip(path), limit)
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.Header, fmt.Errorf("%w: %s %s: %v", ErrMalformed, method, clip(path), err)
	}
	return resp.Header, nil
}

// nextLink is the URL of a Link header's rel="next", "" when there is
// none.
func nextLink(h http.Header) string { return relLink(h, "next") }

// relLink is the URL of a Link header's link of relation rel, "" when
// there is none.
func relLink(h http.Header, rel string) string {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="`+rel+`"`) {
				continue
			}
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}
