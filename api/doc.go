// Package api holds the wire types of Black Widow's two HTTP APIs — the admin
// API that bwctl and the dashboard use, and the node API between the hub and
// its spawns — together with the Go client that bwctl itself uses.
//
// The OpenAPI document of both APIs lives beside this file (openapi.yaml).
package api
