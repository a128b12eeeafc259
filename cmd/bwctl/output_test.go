package main

import (
	"strings"
	"testing"
)

func TestPrintTable_AlignsAndCapsCells(t *testing.T) {
	long := strings.Repeat("é", 200)
	cases := []struct {
		name string
		rows [][]string
		want []string // the lines, right-trimmed
	}{
		{"aligned", [][]string{{"1", "acme", "active"}, {"22", "Globex Corporation", "limit_reached"}}, []string{
			"ID  NAME                STATE",
			"1   acme                active",
			"22  Globex Corporation  limit_reached",
		}},
		{"control characters", [][]string{{"1", "a\tb\x1b[31m", "x"}}, []string{
			"ID  NAME      STATE",
			"1   a b [31m  x",
		}},
		{"long cell cut", [][]string{{"1", long, "active"}}, []string{
			"ID  NAME" + strings.Repeat(" ", maxCellColumn-len("NAME")+2) + "STATE",
			"1   " + strings.Repeat("é", maxCellColumn-1) + "…  active",
		}},
		{"no rows", nil, []string{"ID  NAME  STATE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := printTable(&b, []string{"ID", "NAME", "STATE"}, tc.rows); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for i := range lines {
				lines[i] = strings.TrimRight(lines[i], " ")
			}
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
