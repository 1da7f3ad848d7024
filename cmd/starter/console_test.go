package main

import (
	"strings"
	"testing"
)

// TestConsoleFlagErrors: starter console refuses, before connecting to
// anything, to serve beyond loopback without HTTPS and client
// certificates, naming the flags to give (exit 2).
func TestConsoleFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want []string
	}{
		0: {[]string{"--addr", "0.0.0.0:8080"}, []string{"not a loopback address", "--tls-cert", "--tls-key", "--tls-client-ca"}},
		1: {[]string{"--addr", ":8080"}, []string{"--tls-cert"}},
		2: {[]string{"--addr", "0.0.0.0:8443", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, []string{"--tls-client-ca"}},
		3: {[]string{"--tls-cert", "c.pem"}, []string{"--tls-cert and --tls-key go together"}},
		4: {[]string{"--addr", "8080"}, []string{"--addr \"8080\": want HOST:PORT"}},
		5: {[]string{"--refresh", "1ms"}, []string{"--refresh 1ms"}},
		6: {[]string{"c1"}, []string{`unexpected argument "c1"`}},
	}
	for i, c := range cases {
		code, stdout, stderr := runCLI(append([]string{"console", "--local", "--data-dir", dir}, c.args...)...)
		for _, w := range c.want {
			if code != exitInput || !strings.Contains(stderr, w) || stdout != "" {
				t.Errorf("case %d: %v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", i, c.args, code, stdout, stderr, w)
			}
		}
	}
}
