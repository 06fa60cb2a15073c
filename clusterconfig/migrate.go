package clusterconfig

import (
	"bytes"
	"fmt"
	"sort"

	yamlv3 "go.yaml.in/yaml/v3"
)

// FromConfigMap writes ConfigMap data as one config file: keys in name
// order, no comments, each value as the operator reads it. Loading the
// file gives back the same data, as values (ParseData); the text of a
// value may differ (YAML is re-written). Keys whose text is empty or
// null mean nothing to the operator and are left out: dropped lists them.
func FromConfigMap(data map[string]string) (file []byte, dropped []string, err error) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	root := &yamlv3.Node{Kind: yamlv3.MappingNode}
	for _, k := range keys {
		v, err := parseText(data[k])
		if err != nil {
			return nil, nil, fmt.Errorf("ConfigMap key %s: %w", k, err)
		}
		if v == nil {
			dropped = append(dropped, k)
			continue
		}
		var val yamlv3.Node
		if err := val.Encode(v); err != nil {
			return nil, nil, fmt.Errorf("ConfigMap key %s: %w", k, err)
		}
		root.Content = append(root.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: k}, &val)
	}
	var b bytes.Buffer
	if len(root.Content) == 0 {
		return []byte("{}\n"), dropped, nil
	}
	e := yamlv3.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(root); err != nil {
		return nil, nil, err
	}
	if err := e.Close(); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), dropped, nil
}
