package loader

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Webhook binding types (configVersion v1, as shell-operator v1.20.2 names
// them; docs/operator.md, "Validating and conversion webhooks").
const (
	KubernetesValidating = "kubernetesValidating"
	KubernetesMutating   = "kubernetesMutating"
	KubernetesConversion = "kubernetesCustomResourceConversion"
)

// AdmissionBinding is one kubernetesValidating or kubernetesMutating entry:
// a webhook of the operator's ValidatingWebhookConfiguration (or
// MutatingWebhookConfiguration) that runs the hook for each request.
type AdmissionBinding struct {
	// Name is the webhook's name: a domain of at least three segments.
	Name                 string
	Mutating             bool
	Group                string
	IncludeSnapshotsFrom []string
	Rules                []admissionv1.RuleWithOperations
	FailurePolicy        admissionv1.FailurePolicyType // Fail unless set
	SideEffects          admissionv1.SideEffectClass   // None unless set
	TimeoutSeconds       int32                         // 10 unless set
	// LabelSelector is the webhook's objectSelector, NamespaceSelector its
	// namespaceSelector.
	LabelSelector     *metav1.LabelSelector
	NamespaceSelector *metav1.LabelSelector
	MatchConditions   []admissionv1.MatchCondition
}

// ConversionBinding is one kubernetesCustomResourceConversion entry: the
// hook converts custom resources of CRDName along Conversions.
type ConversionBinding struct {
	Name                 string
	Group                string
	IncludeSnapshotsFrom []string
	CRDName              string
	Conversions          []ConversionRule
}

// ConversionRule is one step a conversion hook can make; a version is
// "group/version" or a bare "version".
type ConversionRule struct {
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion"`
}

var (
	admissionOperations = []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect, admissionv1.OperationAll}
	admissionScopes     = []admissionv1.ScopeType{admissionv1.ClusterScope, admissionv1.NamespacedScope, admissionv1.AllScopes}
)

// parseAdmission reads kubernetesValidating or kubernetesMutating entries
// with shell-operator's defaults (Fail, None, 10 s).
func parseAdmission(raw json.RawMessage, mutating bool, cfg *HookConfig) error {
	var entries []struct {
		Name                 string                           `json:"name"`
		Group                string                           `json:"group"`
		IncludeSnapshotsFrom []string                         `json:"includeSnapshotsFrom"`
		Rules                []admissionv1.RuleWithOperations `json:"rules"`
		FailurePolicy        string                           `json:"failurePolicy"`
		SideEffects          string                           `json:"sideEffects"`
		TimeoutSeconds       *int32                           `json:"timeoutSeconds"`
		LabelSelector        *metav1.LabelSelector            `json:"labelSelector"`
		Namespace            *struct {
			LabelSelector *metav1.LabelSelector `json:"labelSelector"`
		} `json:"namespace"`
		MatchConditions []admissionv1.MatchCondition `json:"matchConditions"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of webhook bindings: %w", err)
	}
	for i, e := range entries {
		b := AdmissionBinding{
			Name: e.Name, Mutating: mutating, Group: e.Group, IncludeSnapshotsFrom: e.IncludeSnapshotsFrom,
			Rules: e.Rules, FailurePolicy: admissionv1.Fail, SideEffects: admissionv1.SideEffectClassNone,
			TimeoutSeconds: 10, LabelSelector: e.LabelSelector, MatchConditions: e.MatchConditions,
		}
		if e.Namespace != nil {
			b.NamespaceSelector = e.Namespace.LabelSelector
		}
		where := fmt.Sprintf("entry %d (%s)", i+1, e.Name)
		// the API server refuses a webhook name that is not a qualified
		// domain; saying so here names the hook
		if errs := validation.IsDNS1123Subdomain(e.Name); len(errs) > 0 || strings.Count(e.Name, ".") < 2 {
			return fmt.Errorf("%s: name must be a domain of at least three segments, such as policy.example.com", where)
		}
		if slices.ContainsFunc(cfg.Admission, func(o AdmissionBinding) bool { return o.Name == e.Name }) {
			return fmt.Errorf("%s: name is used twice", where)
		}
		switch p := admissionv1.FailurePolicyType(e.FailurePolicy); p {
		case "":
		case admissionv1.Fail, admissionv1.Ignore:
			b.FailurePolicy = p
		default:
			return fmt.Errorf("%s: failurePolicy %q: want Fail or Ignore", where, e.FailurePolicy)
		}
		switch s := admissionv1.SideEffectClass(e.SideEffects); s {
		case "":
		case admissionv1.SideEffectClassNone, admissionv1.SideEffectClassNoneOnDryRun:
			b.SideEffects = s
		default:
			return fmt.Errorf("%s: sideEffects %q: want None or NoneOnDryRun", where, e.SideEffects)
		}
		if e.TimeoutSeconds != nil {
			if *e.TimeoutSeconds < 1 || *e.TimeoutSeconds > 30 {
				return fmt.Errorf("%s: timeoutSeconds %d: want 1 to 30", where, *e.TimeoutSeconds)
			}
			b.TimeoutSeconds = *e.TimeoutSeconds
		}
		if len(e.Rules) == 0 {
			return fmt.Errorf("%s: rules: at least one rule is required", where)
		}
		for j, r := range e.Rules {
			if err := checkRule(r); err != nil {
				return fmt.Errorf("%s: rule %d: %w", where, j+1, err)
			}
		}
		if err := checkSelector("labelSelector", b.LabelSelector); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := checkSelector("namespace labelSelector", b.NamespaceSelector); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for j, m := range e.MatchConditions {
			if m.Name == "" || m.Expression == "" {
				return fmt.Errorf("%s: matchConditions %d: name and expression are required", where, j+1)
			}
		}
		cfg.Admission = append(cfg.Admission, b)
	}
	return nil
}

func checkRule(r admissionv1.RuleWithOperations) error {
	if len(r.APIGroups) == 0 || len(r.APIVersions) == 0 || len(r.Resources) == 0 || len(r.Operations) == 0 {
		return fmt.Errorf("apiGroups, apiVersions, resources and operations are required")
	}
	for _, op := range r.Operations {
		if !slices.Contains(admissionOperations, op) {
			return fmt.Errorf("operation %q: want CREATE, UPDATE, DELETE, CONNECT or *", op)
		}
	}
	if r.Scope != nil && !slices.Contains(admissionScopes, *r.Scope) {
		return fmt.Errorf("scope %q: want Cluster, Namespaced or *", *r.Scope)
	}
	return nil
}

// parseConversion reads kubernetesCustomResourceConversion entries.
func parseConversion(raw json.RawMessage, cfg *HookConfig) error {
	var entries []struct {
		Name                 string           `json:"name"`
		Group                string           `json:"group"`
		IncludeSnapshotsFrom []string         `json:"includeSnapshotsFrom"`
		CRDName              string           `json:"crdName"`
		Conversions          []ConversionRule `json:"conversions"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of conversion bindings: %w", err)
	}
	for i, e := range entries {
		where := fmt.Sprintf("entry %d (%s)", i+1, e.Name)
		if e.Name == "" {
			return fmt.Errorf("entry %d: name is required", i+1)
		}
		if errs := validation.IsDNS1123Subdomain(e.CRDName); len(errs) > 0 || !strings.Contains(e.CRDName, ".") {
			return fmt.Errorf("%s: crdName %q: want a CRD's name, such as crontabs.stable.example.com", where, e.CRDName)
		}
		if len(e.Conversions) == 0 {
			return fmt.Errorf("%s: conversions: at least one is required", where)
		}
		for j, r := range e.Conversions {
			if r.FromVersion == "" || r.ToVersion == "" || r.FromVersion == r.ToVersion {
				return fmt.Errorf("%s: conversion %d: fromVersion and toVersion are required and differ", where, j+1)
			}
		}
		cfg.Conversion = append(cfg.Conversion, ConversionBinding{
			Name: e.Name, Group: e.Group, IncludeSnapshotsFrom: e.IncludeSnapshotsFrom, CRDName: e.CRDName, Conversions: e.Conversions,
		})
	}
	return nil
}

// HasWebhooks says whether the hook binds any webhook.
func (c *HookConfig) HasWebhooks() bool { return len(c.Admission) > 0 || len(c.Conversion) > 0 }
