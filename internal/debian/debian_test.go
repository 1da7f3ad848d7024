package debian

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeApt writes an apt-get stand-in that records its arguments in log and
// fails when asked to install the package "broken".
func fakeApt(t *testing.T, dir, log string) string {
	t.Helper()
	p := filepath.Join(dir, "apt-get")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nfor a in \"$@\"; do [ \"$a\" = broken ] && exit 100; done\nexit 0\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnsure: nothing runs when the package is present; a missing one is
// installed by update then install -y, announced first; a refusal (turned
// off, not root, apt-get failing, still missing afterwards) gives the
// command to run by hand.
func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	apt := fakeApt(t, dir, log)
	root := func() bool { return true }
	calls := func() string { b, _ := os.ReadFile(log); return string(b) }

	var out strings.Builder
	in := Installer{Log: &out, AptGet: apt, IsRoot: root}
	if err := in.Ensure(context.Background(), "pkg", "test", func() bool { return true }); err != nil || calls() != "" {
		t.Fatalf("present package: error %v, apt-get calls %q", err, calls())
	}
	installed := false
	present := func() bool { return installed || strings.Contains(calls(), "install -y pkg") }
	if err := in.Ensure(context.Background(), "pkg", "gendata fashion-mnist", present); err != nil {
		t.Fatal(err)
	}
	if calls() != "update\ninstall -y pkg\n" || !strings.Contains(out.String(), "gendata fashion-mnist needs Debian's pkg, which is not installed: installing it now") {
		t.Errorf("apt-get calls %q, log %q", calls(), out.String())
	}
	for i, c := range []struct {
		in      Installer
		pkg     string
		present func() bool
		want    string
	}{
		{Installer{AptGet: apt, IsRoot: root, Disabled: true}, "x", func() bool { return false }, "installing was turned off"},        // 0
		{Installer{AptGet: apt, IsRoot: func() bool { return false }}, "x", func() bool { return false }, "only root may install it"}, // 1
		{Installer{AptGet: apt, IsRoot: root}, "broken", func() bool { return false }, "apt-get install"},                             // 2
		{Installer{AptGet: apt, IsRoot: root}, "x", func() bool { return false }, "still does not find"},                              // 3
		{Installer{AptGet: filepath.Join(dir, "none"), IsRoot: root}, "x", func() bool { return false }, "is not on this machine"},    // 4
	} {
		err := c.in.Ensure(context.Background(), c.pkg, "test", c.present)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "apt-get install -y "+c.pkg) {
			t.Errorf("case %d: error %v, want %q and the command", i, err, c.want)
		}
	}
}
