package main

import (
	"strings"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func userAdd(c *cli, in *input) error {
	req := api.UserCreate{Name: in.args[0]}
	if strings.TrimSpace(req.Name) == "" {
		return usagef("user name is empty")
	}
	if in.has("limit") {
		n, err := parseLimit("--limit", in.value("limit"))
		if err != nil {
			return err
		}
		req.CommentLimit = n
	}
	if in.has("retention") {
		if _, err := parseRetention(in.value("retention")); err != nil {
			return err
		}
		req.Retention = in.value("retention")
	}
	u, err := c.client.CreateUser(c.ctx, req)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userList(c *cli, _ *input) error {
	users, err := c.client.ListUsers(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.out, users)
	}
	rows := make([][]string, 0, len(users))
	for _, u := range users {
		rows = append(rows, []string{itoa(u.ID), u.Name, limitText(u.CommentLimit), itoa(u.Usage), u.State, timeText(u.CreatedAt)})
	}
	return printTable(c.out, []string{"ID", "NAME", "LIMIT", "USAGE", "STATE", "CREATED"}, rows)
}

func userShow(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	u, err := c.client.GetUser(c.ctx, id)
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func userSetLimit(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	n, err := parseLimit("limit N", in.args[1])
	if err != nil {
		return err
	}
	u, err := c.client.UpdateUser(c.ctx, id, api.UserUpdate{CommentLimit: &n})
	if err != nil {
		return err
	}
	return c.showUser(u)
}

func (c *cli) showUser(u api.User) error {
	if c.json {
		return printJSON(c.out, u)
	}
	return printKV(c.out, [][2]string{
		{"id", itoa(u.ID)},
		{"name", u.Name},
		{"comment_limit", limitText(u.CommentLimit)},
		{"usage", itoa(u.Usage)},
		{"state", u.State},
		{"retention", orDash(u.Retention)},
		{"created_at", timeText(u.CreatedAt)},
	})
}

func userSetRetention(c *cli, in *input) error {
	id, err := parseID("user ID", in.args[0])
	if err != nil {
		return err
	}
	if _, err := parseRetention(in.args[1]); err != nil {
		return err
	}
	r := in.args[1]
	u, err := c.client.UpdateUser(c.ctx, id, api.UserUpdate{Retention: &r})
	if err != nil {
		return err
	}
	return c.showUser(u)
}

// parseRetention checks a retention as the hub will read it.
func parseRetention(s string) (string, error) {
	if _, err := api.ParseRetention(s); err != nil {
		return "", usagef("%v", err)
	}
	return s, nil
}

// Crawlers.
