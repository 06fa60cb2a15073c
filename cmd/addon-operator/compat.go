package main

import (
	"errors"
	"os"

	"github.com/spf13/pflag"
)

// originalSetting is a setting of the original addon-operator (or of the
// shell-operator it embeds) with no equivalent here. start accepts it, so
// the original's manifests start, and logs that it is ignored.
type originalSetting struct {
	flag, env string
	// boolean flags take no value (--debug-kubernetes-api); any given
	// (=true, =yes) is accepted too
	boolean bool
}

// originalSettings are the original's start flags and environment
// variables that have nothing to act on here: the Helm binary and its
// monitor, admission webhooks, client rate limits (ours are fixed for the
// operator's bursts), metric name prefixes (ours are fixed), the debug
// socket (the debug commands use the HTTP listen address), module
// extenders and the original's later client caches.
var originalSettings = []originalSetting{
	{flag: "prometheus-metrics-prefix", env: "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX"},
	{flag: "hook-metrics-listen-port", env: "ADDON_OPERATOR_HOOK_METRICS_LISTEN_PORT"},
	{flag: "unnumbered-modules-order", env: "UNNUMBERED_MODULES_ORDER"},
	{flag: "strict-check-values-mode-enabled", env: "ADDON_OPERATOR_STRICT_CHECK_VALUES_MODE_ENABLED", boolean: true},
	{flag: "applied-module-extenders", env: "ADDON_OPERATOR_APPLIED_MODULE_EXTENDERS"},
	{flag: "crd-extra-labels", env: "ADDON_OPERATOR_CRD_EXTRA_LABELS"},
	{flag: "crd-filters", env: "ADDON_OPERATOR_CRD_FILTER_PREFIXES"},
	{flag: "helm-history-max", env: "HELM_HISTORY_MAX"},
	{flag: "helm-timeout", env: "HELM_TIMEOUT"},
	{flag: "helm-ignore-release", env: "HELM_IGNORE_RELEASE"},
	{flag: "helm-monitor-kube-client-qps", env: "HELM_MONITOR_KUBE_CLIENT_QPS"},
	{flag: "helm-monitor-kube-client-burst", env: "HELM_MONITOR_KUBE_CLIENT_BURST"},
	{env: "HELM_BIN_PATH"},
	{env: "HELM3"},
	{flag: "admission-server-listen-port", env: "ADDON_OPERATOR_ADMISSION_SERVER_LISTEN_PORT"},
	{flag: "admission-server-certs-dir", env: "ADDON_OPERATOR_ADMISSION_SERVER_CERTS_DIR"},
	{flag: "admission-server-enabled", env: "ADDON_OPERATOR_ADMISSION_SERVER_ENABLED", boolean: true},
	{flag: "validating-webhook-failure-policy", env: "VALIDATING_WEBHOOK_FAILURE_POLICY"},
	{flag: "kube-client-qps", env: "KUBE_CLIENT_QPS"},
	{flag: "kube-client-burst", env: "KUBE_CLIENT_BURST"},
	{flag: "kube-client-timeout", env: "KUBE_CLIENT_TIMEOUT"},
	{flag: "object-patcher-kube-client-qps", env: "OBJECT_PATCHER_KUBE_CLIENT_QPS"},
	{flag: "object-patcher-kube-client-burst", env: "OBJECT_PATCHER_KUBE_CLIENT_BURST"},
	{flag: "object-patcher-kube-client-timeout", env: "OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT"},
	{flag: "jq-library-path", env: "JQ_LIBRARY_PATH"},
	{flag: "log-proxy-hook-json", env: "LOG_PROXY_HOOK_JSON", boolean: true},
	{flag: "debug-unix-socket", env: "DEBUG_UNIX_SOCKET"},
	{flag: "debug-http-addr", env: "DEBUG_HTTP_SERVER_ADDR"},
	{flag: "debug-keep-tmp-files", env: "DEBUG_KEEP_TMP_FILES", boolean: true},
	{flag: "debug-kubernetes-api", env: "DEBUG_KUBERNETES_API", boolean: true},
	{flag: "dedup-client-enabled", env: "DEDUP_CLIENT_ENABLED", boolean: true},
	{flag: "dedup-client-snapshot-store", env: "DEDUP_CLIENT_SNAPSHOT_STORE", boolean: true},
	{flag: "dedup-client-helm-resources-cache", env: "DEDUP_CLIENT_HELM_RESOURCES_CACHE", boolean: true},
	{flag: "dedup-client-reconstruct-lru-size", env: "DEDUP_CLIENT_RECONSTRUCT_LRU_SIZE"},
	{flag: "dedup-client-gc-interval", env: "DEDUP_CLIENT_GC_INTERVAL"},
	{flag: "dedup-client-namespace", env: "DEDUP_CLIENT_NAMESPACES"},
	{flag: "dedup-client-watch-gvk", env: "DEDUP_CLIENT_WATCH_GVKS"},
}

// originalFlagNames are the original's names of flags we have under ours,
// so a start-up line can say which were used.
var originalFlagNames = map[string]string{
	"prometheus-listen-address": "listen-address",
	"kube-config":               "kubeconfig",
}

// acceptedValue takes any value of a flag start ignores.
type acceptedValue struct{ value string }

func (v *acceptedValue) String() string     { return v.value }
func (v *acceptedValue) Set(s string) error { v.value = s; return nil }
func (v *acceptedValue) Type() string       { return "string" }

// errChroot refuses the original's chroot for hooks: ignoring it would run
// hooks outside the chroot their author relies on.
var errChroot = errors.New("ADDON_OPERATOR_SHELL_CHROOT_DIR (--shell-chroot-dir) is not supported: hooks would run outside the chroot; unset it")

// bindOriginal accepts the original's settings that have no equivalent,
// and refuses its chroot for hooks.
func bindOriginal(fs *pflag.FlagSet, e *env) {
	for _, s := range originalSettings {
		if s.flag != "" {
			f := fs.VarPF(&acceptedValue{}, s.flag, "", "the original addon-operator's setting, accepted and ignored")
			if s.boolean {
				f.NoOptDefVal = "true"
			}
		}
	}
	fs.Func("shell-chroot-dir", "refused: hooks would run outside the chroot", func(v string) error {
		if v != "" {
			return errChroot
		}
		return nil
	})
	// the original's names stay out of --help; docs/operator.md lists them
	fs.VisitAll(func(f *pflag.Flag) {
		if isOriginalOnly(f.Name) {
			f.Hidden = true
		}
	})
	if os.Getenv("ADDON_OPERATOR_SHELL_CHROOT_DIR") != "" {
		e.errs = append(e.errs, errChroot)
	}
}

// originalNotes notes, after parsing, each original setting given: a flag
// under its original name, or an ignored flag or variable.
func originalNotes(fs *pflag.FlagSet, e *env) {
	given := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	for name, ours := range originalFlagNames {
		if given[name] {
			e.notes = append(e.notes, note{msg: "setting taken from the original addon-operator's name", args: []any{"flag", "--" + name, "ours", "--" + ours}})
		}
	}
	const ignored = "setting of the original addon-operator ignored: nothing here acts on it"
	for _, s := range originalSettings {
		switch {
		case s.flag != "" && given[s.flag]:
			e.notes = append(e.notes, note{warn: true, msg: ignored, args: []any{"flag", "--" + s.flag}})
		case s.env != "" && os.Getenv(s.env) != "":
			e.notes = append(e.notes, note{warn: true, msg: ignored, args: []any{"env", s.env}})
		}
	}
}

// isOriginalOnly: a flag start accepts only for the original's manifests,
// left out of --help.
func isOriginalOnly(name string) bool {
	if _, ok := originalFlagNames[name]; ok || name == "shell-chroot-dir" {
		return true
	}
	for _, s := range originalSettings {
		if s.flag == name {
			return true
		}
	}
	return false
}
