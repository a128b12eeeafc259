package cassandra

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

func TestParseURI_Cluster(t *testing.T) {
	cases := []struct {
		name, uri string
		want      Config
	}{
		{"three nodes, quorum", "cassandra://127.0.0.2,127.0.0.3,127.0.0.4/ks?replication=3&consistency=quorum",
			Config{Hosts: []string{"127.0.0.2:9042", "127.0.0.3:9042", "127.0.0.4:9042"}, Keyspace: "ks", Replication: 3, Consistency: gocql.Quorum}},
		{"all of two copies", "cassandra://a,b/ks?replication=2&consistency=all",
			Config{Hosts: []string{"a:9042", "b:9042"}, Keyspace: "ks", Replication: 2, Consistency: gocql.All}},
		{"three over data centers", "cassandra://a/ks?replication=dc1:2,dc2:1&consistency=three",
			Config{Hosts: []string{"a:9042"}, Keyspace: "ks", Replication: 1, DataCenters: map[string]int{"dc1": 2, "dc2": 1}, Consistency: gocql.Three}},
		{"each quorum over data centers", "cassandra://a/ks?replication=dc1:3,dc2:3&consistency=each_quorum",
			Config{Hosts: []string{"a:9042"}, Keyspace: "ks", Replication: 1, DataCenters: map[string]int{"dc1": 3, "dc2": 3}, Consistency: gocql.EachQuorum}},
		// Without replication the keyspace may already exist with any
		// factor: the consistency is taken as given.
		{"consistency alone", "cassandra://a/ks?consistency=three",
			Config{Hosts: []string{"a:9042"}, Keyspace: "ks", Replication: 1, Consistency: gocql.Three}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseURI(tc.uri)
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", tc.uri, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseURI(%q) = %+v, want %+v", tc.uri, got, tc.want)
			}
		})
	}
}

func TestParseURI_RefusesUnreachableConsistency(t *testing.T) {
	cases := []struct{ name, uri, want string }{
		{"three of two", "cassandra://a,b/ks?replication=2&consistency=three", "consistency=three needs 3 copies of each row, replication keeps 2"},
		{"two of one", "cassandra://a/ks?replication=1&consistency=two", "consistency=two needs 2 copies"},
		{"three of two over data centers", "cassandra://a/ks?replication=dc1:1,dc2:1&consistency=three", "replication keeps 2"},
		{"each quorum without data centers", "cassandra://a/ks?replication=3&consistency=each_quorum", "needs replication per data center"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseURI(tc.uri)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseURI(%q) = %v, want an error saying %q", tc.uri, err, tc.want)
			}
		})
	}
}
