package main

import (
	"strconv"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// scaling prints the hub's autoscaling signal (GET /v1/scaling).
func scaling(c *cli, _ *input) error {
	s, err := c.client.Scaling(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, s)
	}
	return printKV(c.out, scalingKV(s))
}

func scalingKV(s api.Scaling) [][2]string {
	return [][2]string{
		{"nodes", strconv.Itoa(s.Nodes)},
		{"subscribers", strconv.Itoa(s.Subscribers)},
		{"target_subscribers_per_node", strconv.Itoa(s.TargetSubscribersPerNode)},
		{"desired_nodes", strconv.Itoa(s.DesiredNodes)},
	}
}
