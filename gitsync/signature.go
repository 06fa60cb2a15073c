package gitsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// verify checks the commit's signature against the trusted keys.
func (s *Syncer) verify(c *object.Commit) error {
	if s.opts.VerifyKeysDir == "" {
		return nil
	}
	entries, err := os.ReadDir(s.opts.VerifyKeysDir)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	var keys []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.opts.VerifyKeysDir, e.Name()))
		if err != nil {
			return fmt.Errorf("trusted keys: %w", err)
		}
		keys = append(keys, string(b))
	}
	if len(keys) == 0 {
		return fmt.Errorf("trusted keys: no key files in %s", s.opts.VerifyKeysDir)
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

// peel follows annotated tags to their commit. An object the store
// cannot read is damage; one of another type is not a commit.
func (s *Syncer) peel(h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		obj, err := s.repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, damaged(fmt.Errorf("commit %s cannot be read from the object store: %w", h, err))
		}
		switch obj.Type() {
		case plumbing.TagObject:
			tag, err := object.DecodeTag(s.repo.Storer, obj)
			if err != nil {
				return nil, damaged(fmt.Errorf("tag %s: %w", h, err))
			}
			h = tag.Target
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(s.repo.Storer, obj)
			if err != nil {
				return nil, damaged(fmt.Errorf("commit %s: %w", h, err))
			}
			return c, nil
		default:
			return nil, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
		}
	}
	return nil, fmt.Errorf("%s: tag chain too long", h)
}
