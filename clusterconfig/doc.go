// Package clusterconfig reads a cluster's config from the repository, in
// the values ConfigMap's shape (docs/operator.md, "Config in git").
//
// Where: Settings.Layers, an ordered list of paths relative to the tree's
// root, each with {cluster} replaced by the cluster's name. A layer is a
// file (clusters/{cluster}/config.yaml, the default), a glob
// (clusters/common-*.yaml: the matches in name order) or a folder, written
// with a trailing slash (clusters/{cluster}/: its *.yaml, *.yml and *.json
// files in name order, not its subfolders). A layer that names nothing is
// an error unless it is Optional.
//
// Layering: files are applied in order, later over earlier, as Helm
// applies values files: maps merge key by key at every depth, a list or a
// scalar replaces what was there whole, and null removes a key (at the top
// level, a whole section or flag). Flags (<module>Enabled),
// <module>Maintenance and <module>Drift are scalars, so the last file that
// sets one wins.
//
// Shape: one YAML (or JSON) mapping whose keys are ConfigMap keys: global
// (a mapping), a module's section under its values key (camelCase, as in
// the ConfigMap; the kebab-case module name is refused with the key to
// use), <module>Enabled (true or false), <module>Maintenance
// (NoResourceReconciliation or Managed) and <module>Drift (warn or
// correct). The result, Config.Data, is the ConfigMap's data: key to YAML
// text, so what reads the ConfigMap reads it unchanged.
//
// The operator's own settings: the key addon-operator (OperatorKey), which
// no module's values key can be, holds settings of the operator for the
// cluster (for fleets: its ring, its change windows), merged across layers
// as a section is and read with Config.Operator; only the sections
// Settings.OperatorSections names are accepted, so none is ignored
// silently.
//
// SOPS: a file that is SOPS-encrypted (secretfile.IsEncrypted) is
// decrypted with Settings.Keyring, or previewed with placeholders when
// Settings.Preview is set; Config.Encrypted lists, per key, the paths of
// the values that were encrypted in any layer, for redaction.
//
// Limits: a file up to MaxFileSize (an encrypted one up to
// secretfile.MaxFileSize), at most MaxFiles files, aliases expanded up to
// maxNodes nodes per file. Paths that leave the tree's root, lexically or
// through a symlink, are refused.
package clusterconfig
