package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ptopofl/ptopofl/internal/devstack"
)

// tlsFiles are the stack's own files in a `devstack certs` directory, or
// nil for no TLS.
func tlsFiles(dir string) *devstack.TLSFiles {
	if dir == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	f := devstack.CertFiles(abs, devstack.StackCommonName)
	return &f
}

// runCerts is `devstack certs --dir DIR [--sites a,b] [--clients x,y]
// [--hosts h1,h2]`: a
// new test CA in DIR and certificates signed by it: the stack's, the
// server worker's and the starter's, one per site (common name
// ptopofl-site-<site>), and any extra client names.
func runCerts(args []string) int {
	fs := flag.NewFlagSet("devstack certs", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for ca.pem and NAME.pem / NAME-key.pem (required)")
	sites := fs.String("sites", "", "comma-separated site names: one certificate each, named "+devstack.SiteCommonName("SITE"))
	clients := fs.String("clients", "", "comma-separated extra client certificate names")
	hosts := fs.String("hosts", "", "comma-separated extra DNS names of the servers' certificate (besides localhost and 127.0.0.1)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: devstack certs --dir DIR [--sites a,b,...] [--clients x,y,...] [--hosts h1,h2,...]")
		fs.PrintDefaults()
	}
	if !parseDirArgs(fs, args, dir) {
		return 2
	}
	names := []string{devstack.ServerCommonName, devstack.StarterCommonName}
	for _, s := range split(*sites) {
		names = append(names, devstack.SiteCommonName(s))
	}
	names = append(names, split(*clients)...)
	if err := devstack.MakeCerts(*dir, names, split(*hosts)); err != nil {
		fmt.Fprintf(os.Stderr, "devstack certs: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "devstack certs: CA and %d certificates in %s\n", len(names)+1, *dir)
	return 0
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseDirArgs parses the flags of a sub-command that requires --dir and
// takes no argument; false (after the usage, on a missing --dir or an
// argument) means exit 2.
func parseDirArgs(fs *flag.FlagSet, args []string, dir *string) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if *dir == "" || fs.NArg() != 0 {
		fs.Usage()
		return false
	}
	return true
}
