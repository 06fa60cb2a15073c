package health

import (
	"hash/maphash"
	"math"
)

// seed keys the fingerprints; they are compared within one process only.
var seed = maphash.MakeSeed()

// Type tags keep values of different types apart ("1" and 1, [] and {}).
const (
	tagNil uint64 = iota + 0x9e3779b97f4a7c15
	tagBool
	tagNumber
	tagString
	tagList
	tagMap
)

// fingerprint hashes an object without its status and the API server's
// bookkeeping (metadata.resourceVersion, managedFields, generation): it
// changes when someone changes what the object says (a `kubectl set
// image`, a label), not when a controller reports on it. It is computed
// in the watch's filter, so a change reaches the tracker without a read
// (docs/operator.md, "Drift"). Maps are hashed without sorting their keys
// (a sum of their entries' hashes), which keeps it allocation-free.
func fingerprint(obj map[string]any) uint64 {
	h := tagMap
	for k, v := range obj {
		switch k {
		case "status":
			continue
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				break
			}
			mh := tagMap
			for mk, mv := range md {
				switch mk {
				case "resourceVersion", "managedFields", "generation":
					continue
				}
				mh += entry(mk, mv)
			}
			h += mix(maphash.String(seed, k) ^ mix(mh))
			continue
		}
		h += entry(k, v)
	}
	return mix(h)
}

// entry is one map entry's hash.
func entry(k string, v any) uint64 {
	return mix(maphash.String(seed, k) ^ hashValue(v))
}

// hashValue hashes a JSON value as the API server's decoders make them.
func hashValue(v any) uint64 {
	switch x := v.(type) {
	case nil:
		return tagNil
	case bool:
		if x {
			return mix(tagBool + 1)
		}
		return mix(tagBool)
	case string:
		return mix(tagString ^ maphash.String(seed, x))
	case int64:
		return mix(tagNumber ^ uint64(x))
	case int:
		return mix(tagNumber ^ uint64(x))
	case int32:
		return mix(tagNumber ^ uint64(x))
	case float64:
		// 2 and 2.0 are one number, whichever decoder read it
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return mix(tagNumber ^ uint64(int64(x)))
		}
		return mix(tagNumber ^ math.Float64bits(x))
	case []any:
		h := tagList
		for _, e := range x {
			h = mix(h ^ hashValue(e))
		}
		return mix(h + uint64(len(x)))
	case map[string]any:
		h := tagMap
		for k, e := range x {
			h += entry(k, e)
		}
		return mix(h)
	default:
		// not a JSON value: the watches never hand one over
		return tagNil
	}
}

// mix is splitmix64's finalizer: every input bit moves every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
