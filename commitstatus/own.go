package commitstatus

import (
	"strconv"
	"strings"
)

// The contexts and descriptions the Notifier posts, read back: what a
// cluster of the next ring needs from its peers' statuses. The report's
// own state is in the description, since the forge's state (pending,
// success, failure) says applied and healthy alike.

// contextPrefix starts every context the Notifier posts.
const contextPrefix = "addon-operator"

// ringTag is the start of a description that names a ring.
func ringTag(ring int) string { return "[ring " + strconv.Itoa(ring) + "] " }

// withRing is desc starting with the ring's tag (unchanged without a
// ring), cut to maxDescription after the tag so the tag is never lost.
func withRing(desc string, ring *int) string {
	if ring == nil {
		return desc
	}
	return truncate(ringTag(*ring)+desc, maxDescription)
}

// Own is what a status posted by an addon-operator says.
type Own struct {
	// Cluster and Module are from the context: addon-operator/<cluster>
	// for the revision, addon-operator/<cluster>/<module> for a module.
	Cluster, Module string
	// State is the report's state, from the description.
	State State
	// Ring is the posting cluster's ring; HasRing is false for a status
	// posted without one (Options.Ring unset, or an older version).
	Ring    int
	HasRing bool
}

// ParseOwn reads a status's context and description as the Notifier
// writes them; ok is false for a status that is not one of ours (another
// CI's context, a description in another shape).
func ParseOwn(context, description string) (Own, bool) {
	rest, found := strings.CutPrefix(context, contextPrefix+"/")
	if !found {
		return Own{}, false
	}
	var o Own
	o.Cluster, o.Module, _ = strings.Cut(rest, "/")
	if o.Cluster == "" || strings.Contains(o.Module, "/") || (o.Module == "" && strings.HasSuffix(rest, "/")) {
		return Own{}, false
	}
	desc := description
	if tag, after, ok := strings.Cut(desc, "] "); ok && strings.HasPrefix(tag, "[ring ") {
		n, err := strconv.Atoi(strings.TrimPrefix(tag, "[ring "))
		if err != nil || n < 0 {
			return Own{}, false
		}
		o.Ring, o.HasRing, desc = n, true, after
	}
	if o.Module != "" {
		// module <name> <state> on <cluster>...
		desc, found = strings.CutPrefix(desc, "module "+o.Module+" ")
		if !found {
			return Own{}, false
		}
	}
	word, _, _ := strings.Cut(desc, " ")
	word = strings.TrimSuffix(word, ":")
	if o.State = State(word); !o.State.Valid() {
		return Own{}, false
	}
	return o, true
}
