package clusterconfig

import (
	"reflect"
	"sort"
	"strings"
)

// Override is a value the cluster sets (the values ConfigMap, or a values
// Secret) at a path the config in git sets too: config drift, reported and
// not applied (docs/operator.md, "Config in git").
type Override struct {
	// Key is the ConfigMap key; Path the dotted path below it ("" for
	// the whole key: a flag, a mode, or a section that is not a mapping
	// on one side).
	Key  string `json:"key"`
	Path string `json:"path,omitempty"`
	// File is the file in git that sets the value: the last layer that
	// set it.
	File string `json:"file"`
}

// String is key.path.
func (o Override) String() string {
	if o.Path == "" {
		return o.Key
	}
	return o.Key + "." + o.Path
}

// Overlay lays the config in git over what the cluster sets (the values
// ConfigMap's data, with a values Secret's merged in): keys git does not
// set come from the cluster; in a key both set, mappings merge key by key
// at every depth with git's values over the cluster's, and anything else
// is git's. Every value of the cluster's that git replaces with a
// different one is an Override, in key and path order. A nil git config
// returns the cluster's data unchanged.
//
// The cluster's text that does not parse, under a key git sets, is
// replaced whole and reported as an override of the key; under a key git
// does not set it is passed on, for the values store to refuse as today.
func Overlay(cluster map[string]string, git *Config) (map[string]string, []Override, error) {
	if git == nil {
		return cluster, nil, nil
	}
	out := make(map[string]string, len(cluster)+len(git.Data))
	for k, v := range cluster {
		out[k] = v
	}
	var overrides []Override
	keys := make([]string, 0, len(git.Data))
	for k := range git.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		gitText := git.Data[k]
		file := ""
		if o := git.Origin[k]; len(o) > 0 {
			file = o[len(o)-1]
		}
		cText, ok := cluster[k]
		if !ok || cText == gitText {
			out[k] = gitText
			continue
		}
		gv, err := parseText(gitText)
		if err != nil {
			return nil, nil, errorf(file, k, 0, "%v", err)
		}
		cv, err := parseText(cText)
		if err != nil || cv == nil {
			out[k] = gitText
			if err != nil {
				overrides = append(overrides, Override{Key: k, File: file})
			}
			continue
		}
		var paths []overridden
		merged := overlayValue(cv, gv, nil, &paths)
		for _, p := range paths {
			overrides = append(overrides, Override{Key: k, Path: p.text, File: git.fileOf(k, p.keys)})
		}
		if len(paths) == 0 && reflect.DeepEqual(merged, gv) {
			out[k] = gitText
			continue
		}
		text, err := encode(merged)
		if err != nil {
			return nil, nil, errorf(file, k, 0, "%v", err)
		}
		out[k] = text
	}
	return out, overrides, nil
}

// overridden is a path where git replaced the cluster's value: its map
// keys and their text.
type overridden struct {
	keys []string
	text string
}

// overlayValue lays git's value over the cluster's, noting in paths each
// path where the cluster's value is replaced by a different one.
func overlayValue(cluster, git any, path []string, paths *[]overridden) any {
	cm, ok1 := cluster.(map[string]any)
	gm, ok2 := git.(map[string]any)
	if !ok1 || !ok2 {
		if !reflect.DeepEqual(cluster, git) {
			*paths = append(*paths, overridden{keys: path, text: pathText(path)})
		}
		return git
	}
	out := make(map[string]any, len(cm)+len(gm))
	for k, v := range cm {
		out[k] = v
	}
	names := make([]string, 0, len(gm))
	for k := range gm {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c, ok := cm[k]
		if !ok || c == nil {
			out[k] = gm[k]
			continue
		}
		out[k] = overlayValue(c, gm[k], append(path[:len(path):len(path)], k), paths)
	}
	return out
}

// pathText writes map keys dotted, a key with a dot or a bracket in
// brackets.
func pathText(path []string) string {
	var b strings.Builder
	for _, k := range path {
		if strings.ContainsAny(k, ".[]") {
			b.WriteString("[" + k + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}
