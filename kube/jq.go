package kube

import (
	"context"
	"encoding/json"
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
func (sw *sharedWatch) inputOf(body any) jqInput {
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

// runJq applies a compiled filter to plain JSON values; several results
// become a list.
func runJq(code *gojq.Code, v any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
		results = append(results, r)
	}
	if len(results) == 1 {
		return results[0], nil
	}
	return results, nil
}
