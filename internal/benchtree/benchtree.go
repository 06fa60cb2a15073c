package benchtree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Script finds gen-modules.sh: $GEN_MODULES, else shared/bench beside the
// repository root.
func Script() (string, error) {
	if p := os.Getenv("GEN_MODULES"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "..", "shared", "bench", "gen-modules.sh")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("gen-modules.sh not found: set GEN_MODULES or keep shared/ beside the repository")
		}
		dir = parent
	}
}

// Generate writes an n-module tree into dir (modules/ and global-hooks/);
// args are gen-modules.sh's options (--weights K).
func Generate(n int, dir string, args ...string) error {
	script, err := Script()
	if err != nil {
		return err
	}
	out, err := exec.Command("bash", append([]string{script, fmt.Sprint(n), dir}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", script, err, out)
	}
	return nil
}
