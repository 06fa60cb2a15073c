package ring

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is the rollout part of a cluster's config in git (YAML or JSON):
// {ring, healthy, soak, previousRing}.
type Spec struct {
	// Ring is this cluster's ring: 0 applies first.
	Ring int `json:"ring"`
	// Healthy is how many clusters of the previous ring must have
	// reported a commit healthy: "all" (the default) or a number.
	Healthy Need `json:"healthy,omitzero"`
	// Soak is how long to wait after the last healthy report the policy
	// needed, as Go writes durations (30m, 2h); default none.
	Soak string `json:"soak,omitempty"`
	// Previous lists the clusters of the previous ring, by the names in
	// their contexts; without it they are the clusters whose statuses
	// say they are in it.
	Previous []string `json:"previousRing,omitempty"`
}

// Need is "all" or a number of clusters; the zero value is "all".
type Need struct {
	N int // 0: all
}

// All is the zero Need, written "all".
var All = Need{}

// UnmarshalJSON reads "all", a number, or a number in a string.
func (n *Need) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var i int
		if err := json.Unmarshal(b, &i); err != nil {
			return fmt.Errorf("healthy: %s: want \"all\" or a number of clusters", b)
		}
		return n.set(i, string(b))
	}
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		*n = All
		return nil
	}
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("healthy: %q: want \"all\" or a number of clusters", s)
	}
	return n.set(i, strconv.Quote(s))
}

func (n *Need) set(i int, raw string) error {
	if i < 1 {
		return fmt.Errorf("healthy: %s: want \"all\" or a number of clusters, 1 or more", raw)
	}
	n.N = i
	return nil
}

// MarshalJSON writes "all" or the number.
func (n Need) MarshalJSON() ([]byte, error) {
	if n.N == 0 {
		return []byte(`"all"`), nil
	}
	return []byte(strconv.Itoa(n.N)), nil
}

func (n Need) String() string {
	if n.N == 0 {
		return "all"
	}
	return strconv.Itoa(n.N)
}

// Policy is a parsed Spec.
type Policy struct {
	Ring    int
	Healthy Need
	Soak    time.Duration
	// Previous is the listed clusters of ring Ring-1, sorted (nil: none
	// listed).
	Previous []string
}

// MaxSoak bounds Spec.Soak: a longer one is likelier a typo than a plan.
const MaxSoak = 30 * 24 * time.Hour

// Parse checks s; every problem is reported, naming its field.
func Parse(s Spec) (Policy, error) {
	var errs []error
	p := Policy{Ring: s.Ring, Healthy: s.Healthy}
	if s.Ring < 0 {
		errs = append(errs, fmt.Errorf("ring: %d: want 0 or more", s.Ring))
	}
	if s.Soak != "" {
		d, err := time.ParseDuration(strings.TrimSpace(s.Soak))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("soak: %q: want a duration such as 30m or 2h", s.Soak))
		case d < 0 || d > MaxSoak:
			errs = append(errs, fmt.Errorf("soak: %s: want 0 to %s", s.Soak, MaxSoak))
		default:
			p.Soak = d
		}
	}
	if s.Healthy.N < 0 {
		errs = append(errs, fmt.Errorf("healthy: %d: want \"all\" or a number of clusters, 1 or more", s.Healthy.N))
	}
	if s.Ring == 0 && (s.Healthy != All || s.Soak != "" || len(s.Previous) > 0) {
		errs = append(errs, errors.New("ring 0 applies at once and waits for no ring: healthy, soak and previousRing belong to rings 1 and up"))
	}
	if len(s.Previous) > 0 {
		for i, c := range s.Previous {
			switch {
			case strings.TrimSpace(c) == "" || strings.Contains(c, "/"):
				errs = append(errs, fmt.Errorf("previousRing[%d]: %q: want a cluster's name", i, c))
			case slices.Contains(s.Previous[:i], c):
				errs = append(errs, fmt.Errorf("previousRing[%d]: %q listed twice", i, c))
			}
		}
		p.Previous = slices.Sorted(slices.Values(s.Previous))
		if s.Healthy.N > len(s.Previous) {
			errs = append(errs, fmt.Errorf("healthy: %d: ring %d lists %d clusters (previousRing), so it could never be met", s.Healthy.N, s.Ring-1, len(s.Previous)))
		}
	}
	if len(errs) > 0 {
		return Policy{}, errors.Join(errs...)
	}
	return p, nil
}
