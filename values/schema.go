package values

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-openapi/errors"
	"github.com/go-openapi/spec"
	"github.com/go-openapi/strfmt"
	"github.com/go-openapi/validate"
)

// Schema file names inside an openapi/ directory.
const (
	ConfigSchemaFile = "config-values.yaml"
	ValuesSchemaFile = "values.yaml"
)

// Schema is one compiled OpenAPI schema for a values section.
type Schema struct {
	source string
	spec   *spec.Schema
	mu     sync.Mutex // a SchemaValidator is not safe for concurrent use
	// validators by section name, which roots the paths in messages
	validators map[string]*validate.SchemaValidator
}

// Schemas are the three effective schemas of a section: config values
// (config-values.yaml), values (values.yaml after x-extend) and the before-Helm
// check (values plus x-required-for-helm). Any of them may be nil.
type Schemas struct {
	Config *Schema
	Values *Schema
	Helm   *Schema
}

// LoadSchemas compiles a section's schemas from the contents of
// openapi/config-values.yaml and openapi/values.yaml (nil when the file is
// absent). dir names the openapi directory in errors. Only fragment
// $refs (#/definitions/...) resolve; see LoadSchemasWithRefs.
func LoadSchemas(dir string, configYAML, valuesYAML []byte) (*Schemas, error) {
	return LoadSchemasWithRefs(dir, nil, configYAML, valuesYAML)
}

// LoadSchemasWithRefs is LoadSchemas where a $ref may also name a file
// beneath the openapi directory, which refs reads (nil: none may).
func LoadSchemasWithRefs(dir string, refs RefReader, configYAML, valuesYAML []byte) (*Schemas, error) {
	out := &Schemas{}
	c := func(src, file string, raw map[string]any) (*Schema, error) { return compile(src, file, raw, refs) }
	var configRaw map[string]any
	if configYAML != nil {
		src := dir + "/" + ConfigSchemaFile
		m, err := ParseYAML(src, configYAML)
		if err != nil {
			return nil, err
		}
		configRaw = map[string]any(m)
		delete(configRaw, "x-extend")
		cfg := deepCopy(configRaw).(map[string]any)
		stripHelmRequired(cfg)
		if out.Config, err = c(src, src, cfg); err != nil {
			return nil, err
		}
	}
	if valuesYAML == nil {
		return out, nil
	}
	src := dir + "/" + ValuesSchemaFile
	m, err := ParseYAML(src, valuesYAML)
	if err != nil {
		return nil, err
	}
	raw := map[string]any(m)
	if ext, ok := raw["x-extend"]; ok {
		if err := extend(src, raw, ext, configRaw); err != nil {
			return nil, err
		}
	}
	helm := deepCopy(raw).(map[string]any)
	liftHelmRequired(helm)
	vals := deepCopy(raw).(map[string]any)
	stripHelmRequired(vals)
	if out.Values, err = c(src, src, vals); err != nil {
		return nil, err
	}
	if out.Helm, err = c(src+" (before Helm)", src, helm); err != nil {
		return nil, err
	}
	return out, nil
}

// extend applies x-extend: the named config-values schema's definitions,
// required, properties, patternProperties, title, description and x-*
// fields are added to the values schema (the values schema wins a conflict).
func extend(src string, raw map[string]any, ext any, configRaw map[string]any) error {
	em, ok := ext.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: x-extend: want a map with \"schema\", got %s", src, kindOf(ext))
	}
	if name, _ := em["schema"].(string); name != ConfigSchemaFile {
		return fmt.Errorf("%s: x-extend: schema %q: only %q can be extended", src, em["schema"], ConfigSchemaFile)
	}
	if configRaw == nil {
		return fmt.Errorf("%s: x-extend names %s, which does not exist", src, ConfigSchemaFile)
	}
	delete(raw, "x-extend")
	for k, v := range configRaw {
		switch {
		case k == "required":
			raw[k] = unionStrings(v, raw[k])
		case k == "definitions" || k == "properties" || k == "patternProperties":
			// either side may be empty or null (`properties:`); anything
			// else that is not a map is an error of the file it is in
			base, ok := asMap(deepCopy(v))
			if !ok {
				return fmt.Errorf("%s: x-extend: %s of %s: want a map, got %s", src, k, ConfigSchemaFile, kindOf(v))
			}
			own, ok := asMap(raw[k])
			if !ok {
				return fmt.Errorf("%s: %s: want a map, got %s", src, k, kindOf(raw[k]))
			}
			if len(base) == 0 && len(own) == 0 && raw[k] == nil {
				continue
			}
			for name, s := range own {
				base[name] = s
			}
			raw[k] = base
		case k == "title" || k == "description" || strings.HasPrefix(k, "x-"):
			if _, has := raw[k]; !has {
				raw[k] = deepCopy(v)
			}
		}
	}
	return nil
}

func unionStrings(a, b any) []any {
	var out []any
	seen := map[string]bool{}
	for _, list := range []any{a, b} {
		l, _ := list.([]any)
		for _, e := range l {
			if s, ok := e.(string); ok && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// walkSchemas calls fn on a schema node and every sub-schema under it.
func walkSchemas(node map[string]any, fn func(map[string]any)) {
	fn(node)
	for _, k := range []string{"properties", "patternProperties", "definitions"} {
		if m, ok := node[k].(map[string]any); ok {
			for _, s := range m {
				if sm, ok := s.(map[string]any); ok {
					walkSchemas(sm, fn)
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if sm, ok := node[k].(map[string]any); ok {
			walkSchemas(sm, fn)
		}
	}
	if l, ok := node["items"].([]any); ok {
		for _, s := range l {
			if sm, ok := s.(map[string]any); ok {
				walkSchemas(sm, fn)
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := node[k].([]any); ok {
			for _, s := range l {
				if sm, ok := s.(map[string]any); ok {
					walkSchemas(sm, fn)
				}
			}
		}
	}
}

// liftHelmRequired merges x-required-for-helm into required, at every level.
func liftHelmRequired(root map[string]any) {
	walkSchemas(root, func(n map[string]any) {
		if x, ok := n["x-required-for-helm"]; ok {
			n["required"] = unionStrings(n["required"], x)
			delete(n, "x-required-for-helm")
		}
	})
}

func stripHelmRequired(root map[string]any) {
	walkSchemas(root, func(n map[string]any) { delete(n, "x-required-for-helm") })
}

// maxSchemaDepth bounds the walks over a compiled schema: a schema nested
// deeper than this is refused rather than walked (it could only come from a
// generated or hostile file).
const maxSchemaDepth = 256

// closeObjects closes a compiled schema where the original addon-operator
// closes one (docs/operator.md, "Values"), after its $refs are resolved: a
// node whose additionalProperties is unset and which lists properties or
// patternProperties gets additionalProperties: false. The walk starts at the
// root and goes down `properties` (but not into a property whose
// additionalProperties is set: it stays as written, its sub-schemas too)
// and `items` (one schema or a list), and nowhere else: the branches of
// allOf/anyOf/oneOf/not, an additionalProperties schema, patternProperties
// and definitions stay as written, so a oneOf branch that lists one of an
// object's properties does not forbid the others. A bare `type: object`
// stays open, as the original's documented `discovery: {type: object}`
// ("no restrictions on keys") needs.
// checkResolved has bounded the depth before it runs.
func closeObjects(s *spec.Schema) {
	if s == nil {
		return
	}
	if s.AdditionalProperties == nil && (s.Properties != nil || s.PatternProperties != nil) {
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
	}
	for name, p := range s.Properties {
		if p.AdditionalProperties != nil {
			continue
		}
		closeObjects(&p)
		s.Properties[name] = p
	}
	if s.Items != nil {
		closeObjects(s.Items.Schema)
		for i := range s.Items.Schemas {
			closeObjects(&s.Items.Schemas[i])
		}
	}
}

// checkResolved refuses a schema in which a $ref is left after expansion:
// go-openapi leaves a circular one in place and resolves it again while
// validating, with its own loader (which reads the file system, outside the
// reader of expand) and a panic for an error, so a recursive schema would
// crash the operator at its first validation.
func checkResolved(src string, s *spec.Schema, depth int) error {
	if s == nil {
		return nil
	}
	if depth > maxSchemaDepth {
		return fmt.Errorf("%s: schema nested deeper than %d levels", src, maxSchemaDepth)
	}
	if ref := s.Ref.String(); ref != "" || s.Ref.IsRoot() {
		return fmt.Errorf("%s: $ref %q is circular: a schema that contains itself is not supported", src, ref)
	}
	var subs []*spec.Schema
	for _, m := range []map[string]spec.Schema{s.Properties, s.PatternProperties, s.Definitions} {
		for _, sub := range m {
			subs = append(subs, &sub)
		}
	}
	for _, l := range [][]spec.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range l {
			subs = append(subs, &l[i])
		}
	}
	subs = append(subs, s.Not)
	for _, sb := range []*spec.SchemaOrBool{s.AdditionalProperties, s.AdditionalItems} {
		if sb != nil {
			subs = append(subs, sb.Schema)
		}
	}
	if s.Items != nil {
		subs = append(subs, s.Items.Schema)
		for i := range s.Items.Schemas {
			subs = append(subs, &s.Items.Schemas[i])
		}
	}
	for _, d := range s.Dependencies {
		subs = append(subs, d.Schema)
	}
	for _, sub := range subs {
		if err := checkResolved(src, sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// compile compiles one schema; src names it in errors, file is the schema
// file its relative $refs resolve against.
func compile(src, file string, raw map[string]any, refs RefReader) (*Schema, error) {
	if err := checkRefs(src, ".", raw); err != nil {
		return nil, err
	}
	j, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var s spec.Schema
	if err := json.Unmarshal(j, &s); err != nil {
		return nil, fmt.Errorf("%s: not an OpenAPI schema: %w", src, err)
	}
	if err := expand(src, file, &s, j, refs); err != nil {
		return nil, err
	}
	if err := checkResolved(src, &s, 0); err != nil {
		return nil, err
	}
	closeObjects(&s)
	sch := &Schema{source: src, spec: &s, validators: map[string]*validate.SchemaValidator{}}
	if _, err := sch.validator("schema"); err != nil {
		return nil, err
	}
	return sch, nil
}

// validator returns the section's validator; the caller holds mu or owns s.
func (s *Schema) validator(section string) (v *validate.SchemaValidator, err error) {
	if v, ok := s.validators[section]; ok {
		return v, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: invalid schema: %v", s.source, r)
		}
	}()
	v = validate.NewSchemaValidator(s.spec, nil, section, strfmt.Default)
	s.validators[section] = v
	return v, nil
}

// Effective is the schema as it is enforced (after x-extend, $refs, the
// additionalProperties default and, for the Helm schema, x-required-for-helm).
func (s *Schema) Effective() map[string]any {
	out := map[string]any{}
	if j, err := json.Marshal(s.spec); err == nil {
		_ = json.Unmarshal(j, &out)
	}
	return out
}

// ValidationError lists every violation of one validation.
type ValidationError struct {
	Section    string
	Schema     string
	Violations []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s values do not match %s:\n  - %s", e.Section, e.Schema, strings.Join(e.Violations, "\n  - "))
}

// Validate checks a section's value; section names the root in messages
// (global, simpleModule).
func (s *Schema) Validate(section string, v any) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	val, err := s.validator(section)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	res, err := validateSafely(s.source, val, v)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if res == nil || res.IsValid() {
		return nil
	}
	var out []string
	for _, e := range res.Errors {
		flatten(e, &out)
	}
	sort.Strings(out)
	out = slices.Compact(out)
	return &ValidationError{Section: section, Schema: s.source, Violations: out}
}

// validateSafely runs a validator: go-openapi panics on some schemas it
// accepted (a sub-validator is built while validating), and a schema from
// a tree must never stop the operator.
func validateSafely(source string, val *validate.SchemaValidator, v any) (res *validate.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: invalid schema: %v", source, r)
		}
	}()
	return val.Validate(v), nil
}

func flatten(err error, out *[]string) {
	if ce, ok := err.(*errors.CompositeError); ok {
		for _, e := range ce.Errors {
			flatten(e, out)
		}
		return
	}
	*out = append(*out, err.Error())
}

// applyDefaults fills in defaults in place the way the original does
// (Kubernetes' structural defaulting, on the schema with $refs resolved):
// a property that is absent and has a non-null default gets a copy of it;
// then every property present, a defaulted one included, is descended
// into, and every element of a list gets the defaults of its `items`
// schema. patternProperties, additionalProperties, tuple items and
// allOf/anyOf/oneOf are not looked at.
func applyDefaults(s *spec.Schema, v any) {
	switch t := v.(type) {
	case map[string]any:
		for name, ps := range s.Properties {
			if _, ok := t[name]; !ok && ps.Default != nil {
				t[name] = deepCopy(ps.Default)
			}
		}
		for name, cur := range t {
			if ps, ok := s.Properties[name]; ok {
				applyDefaults(&ps, cur)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, e := range t {
				applyDefaults(s.Items.Schema, e)
			}
		}
	}
}

// ApplyDefaults returns a copy of v with the schema's defaults filled in.
func (s *Schema) ApplyDefaults(v any) any {
	v = deepCopy(v)
	if s != nil {
		applyDefaults(s.spec, v)
	}
	return v
}
