// Package schema is the Cap'n Proto encoding of an ipustack run profile,
// generated from profile.capnp. Use package profile, not this one: it owns
// the Go model, the file header and validation.
//
// The generated file is committed so that building ipustack needs neither
// the capnp compiler nor the Go plugin. To regenerate after editing the
// schema (needs `capnp` and `capnpc-go` on PATH):
//
//	apt-get install -y capnproto
//	go install capnproto.org/go/capnp/v3/capnpc-go@v3.1.0-alpha.1
//	go generate ./profile/schema
package schema

//go:generate sh -c "capnp compile -I\"$(go list -m -f '{{.Dir}}' capnproto.org/go/capnp/v3)/std\" -ogo profile.capnp"
