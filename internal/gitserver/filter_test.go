package gitserver

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// objectTypes counts the objects of a repository by type.
func objectTypes(t *testing.T, dir string) map[string]int {
	t.Helper()
	out, err := runGit(dir, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, typ := range strings.Fields(out) {
		n[typ]++
	}
	return n
}

// A server started WithFilter advertises filtering and wants of any
// object, and a blob-less clone from it (protocol v0 or v2, and through
// Omit's own upload-pack) holds no blob; without it, the same clone gets
// every blob. Every response's bytes are counted.
func TestFilterIsServedOnlyWhenEnabled(t *testing.T) {
	root := t.TempDir()
	repo, _ := fixture(t, root)
	omitted, err := runGit(repo.Bare, "rev-parse", "main:modules/001-one/hooks")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		filter   bool
		protocol string
		omit     bool
	}{
		{name: "filter, protocol v2", filter: true, protocol: "2"},
		{name: "filter, protocol v0", filter: true, protocol: "0"},
		{name: "filter, protocol v0, an object omitted", filter: true, protocol: "0", omit: true},
		{name: "no filter", protocol: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []HTTPOption
			if tt.filter {
				opts = append(opts, WithFilter())
			}
			srv, err := StartHTTP(root, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			if tt.omit {
				srv.Omit("modules", omitted)
			}

			ep, err := transport.NewEndpoint(srv.URL("modules"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.NewClient(ep)
			if err != nil {
				t.Fatal(err)
			}
			sess, err := c.NewUploadPackSession(ep, nil)
			if err != nil {
				t.Fatal(err)
			}
			ar, err := sess.AdvertisedReferencesContext(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			sess.Close()
			for _, want := range []capability.Capability{capability.Filter, capability.AllowReachableSHA1InWant} {
				if got := ar.Capabilities.Supports(want); got != tt.filter {
					t.Fatalf("%s advertised: %v, want %v", want, got, tt.filter)
				}
			}

			sent := srv.BytesSent()
			dir := filepath.Join(t.TempDir(), "clone.git")
			cmd := exec.Command("git", "-c", "protocol.version="+tt.protocol, "clone", "--quiet", "--bare", "--filter=blob:none", srv.URL("modules"), dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("clone: %v: %s", err, out)
			}
			if srv.BytesSent() <= sent {
				t.Fatal("the bytes sent were not counted")
			}
			n := objectTypes(t, dir)
			if blobs := n["blob"]; (blobs == 0) != tt.filter {
				t.Fatalf("the clone holds %d blobs (%v)", blobs, n)
			}
			if _, err := runGit(dir, "cat-file", "-e", omitted); (err != nil) != tt.omit {
				t.Fatalf("the omitted tree is in the clone: %v", err == nil)
			}
		})
	}
}
