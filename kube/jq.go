package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/itchyny/gojq"
)

// filter runs the member's jqFilter on in (nil without a filter).
func (mb *member) filter(in jqInput) any {
	if mb.jq == nil {
		return nil
	}
	err := in.err
	if err == nil {
		var r any
		start := time.Now()
		r, err = runJq(mb.jq, in.v)
		if mb.onFilter != nil {
			mb.onFilter(time.Since(start))
		}
		if err == nil {
			return r
		}
	}
	return map[string]any{"error": err.Error()}
}

// jqInput is an object as plain JSON values for gojq, shared by the filters
// of every member.
type jqInput struct {
	v   any
	err error
}

// inputOf is the filters' input from what the store keeps.
func inputOf(body any) jqInput {
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return jqInput{err: err}
		}
	}
	return plainJSON(b)
}

// plainJSON decodes to the plain JSON values gojq takes (int64 in the API
// server's objects is not one).
func plainJSON(b []byte) jqInput {
	var v any
	err := json.Unmarshal(b, &v)
	return jqInput{v: v, err: err}
}

// Bounds on one jqFilter run over one object (docs/security.md, "Limits"):
// a filter is the tree's code running in the operator's process.
const (
	jqTimeout    = 5 * time.Second
	jqMaxResults = 1000    // values the filter emits
	jqMaxOutput  = 1 << 20 // bytes of its result as JSON
)

// runJq applies a compiled filter to plain JSON values; several results
// become a list. A filter past a bound fails with an error saying which.
func runJq(code *gojq.Code, v any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	iter := code.RunWithContext(ctx, v)
	var results []any
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			return nil, err
		}
		if len(results) == jqMaxResults {
			return nil, fmt.Errorf("jqFilter: more than %d results", jqMaxResults)
		}
		results = append(results, r)
	}
	var out any = results
	if len(results) == 1 {
		out = results[0]
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("jqFilter: result: %w", err)
	}
	if len(b) > jqMaxOutput {
		return nil, fmt.Errorf("jqFilter: result of %d bytes, more than %d", len(b), jqMaxOutput)
	}
	return out, nil
}
