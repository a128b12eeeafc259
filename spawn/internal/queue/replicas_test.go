package queue

import (
	"strings"
	"testing"
)

func TestParseURL_Replicas(t *testing.T) {
	cases := []struct {
		name, url   string
		servers     string
		shown       string
		replicas    int
		errContains string
	}{
		{name: "cluster of three", url: "nats://a:4222,nats://b:4222,nats://c:4222?replicas=3",
			servers: "nats://a:4222,nats://b:4222,nats://c:4222", shown: "nats://a:4222,nats://b:4222,nats://c:4222?replicas=3", replicas: 3},
		{name: "one server", url: "nats://a:4222?replicas=1", servers: "nats://a:4222", shown: "nats://a:4222?replicas=1", replicas: 1},
		{name: "credentials hidden", url: "nats://bw:s3cret@a:4222,nats://bw:s3cret@b:4222?replicas=2",
			servers: "nats://bw:s3cret@a:4222,nats://bw:s3cret@b:4222", shown: "nats://***@a:4222,nats://***@b:4222?replicas=2", replicas: 2},
		{name: "none", url: "nats://a:4222", servers: "nats://a:4222", shown: "nats://a:4222"},
		{name: "not on the last server", url: "nats://a:4222?replicas=3,nats://b:4222", errContains: "parameters go after the last server"},
		{name: "too many", url: "nats://a:4222?replicas=6", errContains: "replicas=6: want 1 to 5"},
		{name: "zero", url: "nats://a:4222?replicas=0", errContains: "want 1 to 5"},
		{name: "not a number", url: "nats://a:4222?replicas=three", errContains: "want 1 to 5"},
		{name: "other parameter", url: "nats://a:4222?replicas=3&stream=X", errContains: "only a server"},
		{name: "twice", url: "nats://a:4222?replicas=3&replicas=1", errContains: "only a server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseURL(tc.url)
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("parseURL(%q) = %+v, %v; want an error with %q", tc.url, got, err, tc.errContains)
				}
				return
			}
			if err != nil || got.servers != tc.servers || got.shown != tc.shown || got.replicas != tc.replicas {
				t.Fatalf("parseURL(%q) = %+v, %v; want servers %q, shown %q, replicas %d", tc.url, got, err, tc.servers, tc.shown, tc.replicas)
			}
		})
	}
}
