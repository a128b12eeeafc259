package slackhook

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHook_AnswersAsSlack(t *testing.T) {
	h := Start(t)
	long := strings.Repeat("x", 3001)
	for _, tt := range []struct {
		name, url, body string
		status          int
		answer          string
	}{
		{"text", h.URL, `{"text": "hello"}`, 200, "ok"},
		{"blocks", h.URL, `{"text": "f", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]}`, 200, "ok"},
		{"not JSON", h.URL, `text=hello`, 400, "invalid_payload"},
		{"nothing to say", h.URL, `{"username": "x"}`, 400, "no_text"},
		{"section too long", h.URL, `{"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "` + long + `"}}]}`, 400, "invalid_blocks"},
		{"unknown block", h.URL, `{"blocks": [{"type": "banner"}]}`, 400, "invalid_blocks"},
		{"no such hook", strings.TrimSuffix(h.URL, "X") + "Y", `{"text": "hello"}`, 404, "no_service"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(tt.url, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || string(b) != tt.answer {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, b, tt.status, tt.answer)
			}
		})
	}
	if n := len(h.Messages()); n != 2 {
		t.Fatalf("%d messages kept, want the 2 accepted", n)
	}
	h.Archive()
	resp, err := http.Post(h.URL, "application/json", strings.NewReader(`{"text": "late"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("archived channel: %d, want 410", resp.StatusCode)
	}
}
