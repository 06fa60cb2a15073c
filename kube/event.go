package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventSource names the operator as the reporter of its Events.
const eventSource = "addon-operator"

// Warning records a Warning Event on the values ConfigMap, for problems a
// user fixes in the cluster or the repository (a release name another
// tool owns).
func (c *ConfigMap) Warning(ctx context.Context, reason, message string) error {
	return c.Event(ctx, corev1.EventTypeWarning, reason, message)
}

// Event records an Event of eventType (Normal or Warning) on the values
// ConfigMap.
func (c *ConfigMap) Event(ctx context.Context, eventType, reason, message string) error {
	ref := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: c.namespace, Name: c.name}
	if cm, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, c.name, metav1.GetOptions{}); err == nil {
		ref.UID, ref.ResourceVersion = cm.UID, cm.ResourceVersion
	}
	if err := c.record(ctx, ref, eventType, reason, message); err != nil {
		return fmt.Errorf("record event %s on ConfigMap %s: %w", reason, c.Name(), err)
	}
	return nil
}

// EventOn records an Event on ref, an object of the ConfigMap's namespace
// (a module's Module object: docs/operator.md, "Events"), with the same
// source and redaction as the ConfigMap's own Events.
func (c *ConfigMap) EventOn(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message string) error {
	ref.Namespace = c.namespace
	if err := c.record(ctx, ref, eventType, reason, message); err != nil {
		return fmt.Errorf("record event %s on %s %s: %w", reason, ref.Kind, ref.Name, err)
	}
	return nil
}

func (c *ConfigMap) record(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message string) error {
	if c.redact != nil {
		message = c.redact(message)
	}
	// cut after the redaction: a secret cut first would no longer be the
	// text the redactor knows, and its start would be sent
	if len(message) > maxEventMessage {
		// a cut rune is dropped, not sent as invalid UTF-8
		message = strings.ToValidUTF8(message[:maxEventMessage], "") + "…"
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: ref.Name + ".", Namespace: c.namespace},
		InvolvedObject: ref, Reason: reason, Message: message, Type: eventType,
		Source: corev1.EventSource{Component: eventSource}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "addonops.io/" + eventSource, ReportingInstance: eventSource,
	}
	_, err := c.client.CoreV1().Events(c.namespace).Create(ctx, ev, metav1.CreateOptions{FieldManager: FieldManagerEvents})
	return err
}

// maxEventMessage bounds an Event's message (a hook's output can be long).
const maxEventMessage = 1000

// RedactEvents makes every Event message go through fn first: secret
// config values shown as <redacted> (docs/operator.md, "Secrets"). Call it
// before the ConfigMap is used.
func (c *ConfigMap) RedactEvents(fn func(string) string) { c.redact = fn }
