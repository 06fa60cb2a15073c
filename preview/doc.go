// Package preview computes what `addon-operator render` and `diff` show
// (docs/operator.md, "Command line"): a tree loaded, admitted against
// ConfigMap data as the operator admits it, its enabled modules resolved
// and their charts rendered without a cluster (Render), a ref checked out
// for that (RenderRef), and two previews compared module by module
// (Compare). Nothing of the previewed tree runs unless ExecHooks is set;
// then only its hooks' --config and enabled scripts (docs/security.md,
// "Previews").
//
// It imports lifecycle/hookrun (the enabled-script runner alone: no
// running tree, no metrics), lifecycle/runstate (Admit), loader, kube
// (Render) and gitsync; never lifecycle or cmd. cmd keeps the flags
// and the printing.
package preview
