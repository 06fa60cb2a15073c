package kube

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"hash"
	"io"
	"sync"
)

// renderedSums are the checksums (checksum) of each release's last render,
// with a digest of what the render was given: a module run whose chart
// and values are those of its release's last render takes that render's
// checksum instead of rendering again. A render is a function of them
// (a client-side render: the same capabilities, no lookups, revision 1),
// except for templates that call random or time functions; those render
// again when their inputs change, or after a restart, as the original
// addon-operator, which digests values and chart files, upgrades them
// (docs/operator.md, "Helm releases"). A run whose values did not change
// (one a binding or a retry starts) renders nothing; a change to any
// global value changes every module's values, and each renders again
// (docs/performance.md).
type renderedSums struct {
	mu   sync.Mutex
	last map[string]renderedSum // by release name
}

// renderedSum is one release's last render: its inputs' digest, its
// checksum.
type renderedSum struct {
	inputs [sha256.Size]byte
	sum    string
}

// checksum is the checksum of r's render: the last one's when r's inputs
// are the last render's, else a new render's, kept.
func (s *renderedSums) checksum(ctx context.Context, r Release, namespace string, charts *chartCache) (string, error) {
	inputs, known := renderInputs(r, namespace)
	if known {
		s.mu.Lock()
		last, ok := s.last[r.Name]
		s.mu.Unlock()
		if ok && last.inputs == inputs {
			return last.sum, nil
		}
	}
	// rendering edits the chart it gets, as an install does: each has its
	// own copy
	c, err := charts.load(r)
	if err != nil {
		return "", err
	}
	sum, err := checksum(ctx, c, r, namespace)
	if err != nil || !known {
		return sum, err
	}
	s.mu.Lock()
	if _, had := s.last[r.Name]; !had && len(s.last) >= maxCachedCharts {
		clear(s.last) // names of modules long gone; the current ones render once more
	}
	s.last[r.Name] = renderedSum{inputs: inputs, sum: sum}
	s.mu.Unlock()
	return sum, nil
}

// renderInputs digests what r's render is given: the release's name and
// namespace, the chart (by its directory and content hash, as the chart
// cache keys it, and the files left out of it) and the values. known is
// false when the chart has no content hash or the values do not encode:
// such a release renders every time.
func renderInputs(r Release, namespace string) (digest [sha256.Size]byte, known bool) {
	if r.ChartHash == "" {
		return digest, false
	}
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		_, _ = io.WriteString(h, s)
		_, _ = h.Write([]byte{0})
	}
	for _, s := range []string{r.Name, namespace, r.ChartDir, r.ChartHash, r.Key} {
		field(h, s)
	}
	for _, s := range r.Exclude {
		field(h, s)
	}
	field(h, "")
	// encoding/json writes map keys sorted: equal values, equal bytes
	if err := json.NewEncoder(h).Encode(r.Values); err != nil {
		return digest, false
	}
	copy(digest[:], h.Sum(nil))
	return digest, true
}
