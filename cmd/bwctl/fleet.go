package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func nodeList(c *cli, _ *input) error {
	nodes, err := c.client.ListNodes(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, nodes)
	}
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, []string{n.ID, n.URL, n.State, strconv.Itoa(n.Subscribers), strconv.Itoa(n.Failures), ageText(n.LastPoll), orDash(n.Store),
			orDash(strings.Join(n.Sources, ","))})
	}
	return printTable(c.out, []string{"ID", "URL", "STATE", "SUBSCRIBERS", "FAILURES", "LAST POLL", "STORE", "SOURCES"}, rows)
}

func nodeDrain(c *cli, in *input) error {
	n, err := c.client.DrainNode(c.ctx, in.args[0])
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, n)
	}
	return printKV(c.out, [][2]string{
		{"id", n.ID},
		{"state", n.State},
		{"subscribers", strconv.Itoa(n.Subscribers)},
	})
}

func reload(c *cli, in *input) error {
	kind := "soft" // the parser saw exactly one of --hard and --soft
	if in.on("hard") {
		kind = "hard"
	}
	r, err := c.client.Reload(c.ctx, kind)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, r)
	}
	return printKV(c.out, [][2]string{
		{"kind", r.Kind},
		{"assigned", strconv.Itoa(r.Assigned)},
		{"moved", strconv.Itoa(r.Moved)},
		{"removed", strconv.Itoa(r.Removed)},
		{"failed", strconv.Itoa(r.Failed)},
	})
}

// stateOrder is how status lists crawler states: the lifecycle first.
var stateOrder = []string{
	api.StatePending, api.StateRunning, api.StateDegraded, api.StateQuotaWait, api.StateLimitReached,
	api.StateDisabled, api.StateFailed, api.StateMissing,
}

func status(c *cli, _ *input) error {
	h, err := c.client.Health(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, h)
	}
	routing := h.Routing
	if routing == "" {
		routing = "-"
	}
	if err := printKV(c.out, [][2]string{
		{"hub", displayURL(c.client.BaseURL())},
		{"role", orDash(h.Role)},
		{"leader", orDash(h.Leader)},
		{"epoch", h.Epoch},
		{"routing", routing},
		{"nodes", strconv.Itoa(len(h.Nodes))},
		{"crawlers", fmt.Sprintf("%d total, %d assigned", h.Crawlers.Total, h.Crawlers.Assigned)},
	}); err != nil {
		return err
	}
	if len(h.Nodes) > 0 {
		rows := make([][]string, 0, len(h.Nodes))
		for _, n := range h.Nodes {
			rows = append(rows, []string{n.ID, n.URL, strconv.Itoa(n.Subscribers)})
		}
		fmt.Fprintln(c.out)
		if err := printTable(c.out, []string{"NODE", "URL", "SUBSCRIBERS"}, rows); err != nil {
			return err
		}
	}
	if len(h.Crawlers.ByState) > 0 {
		states := make([]string, 0, len(h.Crawlers.ByState))
		for s := range h.Crawlers.ByState {
			states = append(states, s)
		}
		rank := func(s string) int {
			if i := slices.Index(stateOrder, s); i >= 0 {
				return i
			}
			return len(stateOrder)
		}
		sort.Slice(states, func(i, j int) bool {
			if ri, rj := rank(states[i]), rank(states[j]); ri != rj {
				return ri < rj
			}
			return states[i] < states[j]
		})
		rows := make([][]string, 0, len(states))
		for _, s := range states {
			rows = append(rows, []string{s, strconv.Itoa(h.Crawlers.ByState[s])})
		}
		fmt.Fprintln(c.out)
		return printTable(c.out, []string{"STATE", "CRAWLERS"}, rows)
	}
	return nil
}
