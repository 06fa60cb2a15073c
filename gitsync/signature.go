package gitsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// verify checks the commit's signature against the trusted keys in
// keysDir (none: no check).
func verify(keysDir string, c *object.Commit) error {
	if keysDir == "" {
		return nil
	}
	entries, err := os.ReadDir(keysDir)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	var keys []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(keysDir, e.Name()))
		if err != nil {
			return fmt.Errorf("trusted keys: %w", err)
		}
		keys = append(keys, string(b))
	}
	if len(keys) == 0 {
		return fmt.Errorf("trusted keys: no key files in %s", keysDir)
	}
	if strings.TrimSpace(c.PGPSignature) == "" {
		return fmt.Errorf("commit %s (%s) is not signed, and signature verification is on", short(c.Hash.String()), firstLine(c.Message))
	}
	for _, k := range keys {
		if _, err := c.Verify(k); err == nil {
			return nil
		}
	}
	return fmt.Errorf("commit %s (%s) is not signed by a trusted key", short(c.Hash.String()), firstLine(c.Message))
}
