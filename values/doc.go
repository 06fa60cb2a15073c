// Package values is the operator's values storage (docs/operator.md,
// "Values"). It is pure: it is handed the contents of values files, schemas
// and ConfigMap data and gives back merged values, patched values and
// validation results.
//
// # Sections and names
//
// Values are keyed by "global" and by each module's camelCase key. A module
// directory "001-simple-module" has order 1, name "simple-module" (also its
// Helm release name) and key "simpleModule". A name must round-trip through
// ModuleKey and ModuleName; names with a digit right after a dash, doubled
// dashes or capitals do not, and are refused.
//
// # Merge order
//
// A section's config values are, merged in this order (the original's):
//
//  1. the section in $MODULES_DIR/values.yaml;
//  2. the section in the module's own values.yaml (modules only; other keys
//     in that file are ignored with a warning);
//  3. the defaults of openapi/config-values.yaml;
//  4. the section in the ConfigMap (a YAML string per key).
//
// The section's values are the config values with the defaults of
// openapi/values.yaml, then the hooks' temporary patches applied in the
// order they were made (so a hook may replace or remove a defaulted key).
// Maps merge key by key, recursively; anything else (a scalar, a list,
// null) in a later source replaces what an earlier one had. Defaults go
// where the original puts them: an absent property with a non-null default
// gets a copy of it, present and defaulted objects are filled in
// recursively, and each element of a list gets its items schema's
// defaults; $refs are followed, patternProperties and additionalProperties
// are not.
//
// # Enabled flags
//
// A module's flag starts false; $MODULES_DIR/values.yaml, the module's
// values.yaml and the ConfigMap may each set <key>Enabled (a boolean, or the
// strings "true"/"false"), later sources winning; a section whose value is the
// literal false (or "false") disables the module at that level. Last, a flag
// that a global hook set through its values patch wins.
//
// # Patches
//
// Hooks return RFC 6902 patches, applied one operation at a time. A module
// hook may change only its own section; a global hook only "global" and
// *Enabled flags, which are read from the document its patches leave. A
// hook's patch that does not apply fails. Temporary patches are kept per
// section and re-applied on top of fresh config values, so a ConfigMap
// change does not lose them; an operation that no longer applies there (a
// replace, copy or move of a key the change removed) is dropped, and
// SetConfig and RestorePatches list what they dropped (DroppedOp). Reads
// never fail because of a stored patch. Compaction drops operations that
// later ones make redundant, so the stored patch stays small, and keeps the
// result of every sequence that applies. Config patches are applied to
// ConfigMap data by ApplyConfigPatch; keys a patch does not change keep the
// user's text.
//
// # Validation
//
// openapi/config-values.yaml validates config values, openapi/values.yaml
// (after x-extend) validates values, and the same schema with
// x-required-for-helm merged into required validates the values a chart
// gets. additionalProperties: false is set where the original sets it: on
// the root, then down properties (not into one whose additionalProperties
// is set) and items, on a node that leaves it unset and lists properties or
// patternProperties; never inside allOf/anyOf/oneOf/not, an
// additionalProperties schema, patternProperties or definitions. A bare
// `type: object` stays open (docs/operator.md, "Values").
//
// # Where things are
//
// store.go holds the Store, its sources and its reads; layers.go the levels
// values come from and how a section's config values merge; enabled.go the
// enable flags; config.go the ConfigMap (parsing, SetConfig, validation,
// config patches); valuespatch.go the hooks' temporary values patches;
// patch.go and compact.go JSON Patch itself; schema.go the OpenAPI
// schemas; names.go module names and keys; tree.go the documents and their
// merge; sensitive.go, redact.go and redactlog.go the secret values
// (Sensitive: their paths per ConfigMap key) and their redaction wherever
// values are shown (Redactor).
//
// # Secrets
//
// The store holds secret values as any other: hooks and charts get them.
// What shows values hides them (docs/operator.md, "Secrets"): documents by
// key path, text by the secrets' own text (4 characters at least) and
// their quoted and base64 forms. go-openapi quotes the value it refuses in
// one message only, a format's ("a.b in body must be of type email:
// \"...\""): Redactor.Text hides that value by the path the message names,
// whatever its length.
package values
