// Package tests holds contain's end-to-end tests: they build the binary and
// run it on real process trees. See harness_test.go.
package tests
