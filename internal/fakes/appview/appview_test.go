package appview

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

func get(t *testing.T, s *Server, actors ...string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(s.URL() + ProfilesPath + "?" + url.Values{"actors": actors}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestGetProfiles_KnownActorsInOrderUnknownAbsent(t *testing.T) {
	s := Start(t)
	s.Set("did:plc:alice", "alice.test")
	s.Set("did:plc:bob", "bob.test")
	s.Set("did:plc:carol", InvalidHandle)
	s.Set("did:plc:gone", "gone.test")
	s.Delete("did:plc:gone")
	status, body := get(t, s, "did:plc:bob", "did:plc:nobody", "ALICE.test", "did:plc:carol", "did:plc:gone", "did:plc:bob")
	if status != 200 {
		t.Fatalf("status %d %v", status, body)
	}
	got := fmt.Sprint(body["profiles"])
	want := "[map[did:did:plc:bob handle:bob.test] map[did:did:plc:alice handle:alice.test] map[did:did:plc:carol handle:handle.invalid]]"
	if got != want {
		t.Errorf("profiles %s, want %s", got, want)
	}
	if s.Calls() != 1 || s.Actors() != 6 {
		t.Errorf("calls %d actors %d", s.Calls(), s.Actors())
	}
}

func TestGetProfiles_RefusesMoreThan25Actors(t *testing.T) {
	s := Start(t)
	var actors []string
	for i := range 26 {
		actors = append(actors, fmt.Sprint("did:plc:a", i))
	}
	status, body := get(t, s, actors...)
	if status != 400 || body["error"] != "InvalidRequest" || body["message"] != "Error: Params/actors must not have more than 25 elements" {
		t.Errorf("status %d body %v", status, body)
	}
	if status, _ := get(t, s, actors[:25]...); status != 200 {
		t.Errorf("25 actors: status %d", status)
	}
	if status, body := get(t, s); status != 400 || body["error"] != "InvalidRequest" {
		t.Errorf("no actors: status %d body %v", status, body)
	}
	if s.Refused() != 2 {
		t.Errorf("refused %d", s.Refused())
	}
}
