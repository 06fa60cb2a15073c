package main

import (
	"log/slog"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/values"
)

// valuesBackend is where the operator reads config values: the values
// ConfigMap, with the values Secret merged over it when one is set
// (docs/operator.md, "Secrets").
func valuesBackend(cm *kube.ConfigMap, secret *kube.ValuesSecret, withSecret bool, redactor *values.Redactor, logger *slog.Logger) lifecycle.ConfigBackend {
	if !withSecret {
		return cm
	}
	return kube.NewClusterValues(cm, secret, redactor, func(err error) {
		logger.Error("values Secret not applied", "err", err)
	})
}

// redactedReports hides secret config values in commit status reasons.
type redactedReports struct {
	r        commitstatus.Reporter
	redactor *values.Redactor
}

var _ commitstatus.Reporter = redactedReports{}

func (r redactedReports) Report(rep commitstatus.Report) {
	rep.Reason = r.redactor.Text(rep.Reason)
	r.r.Report(rep)
}

// redactedError is err with its message redacted (nil stays nil); it
// unwraps to err, for the exit code.
func redactedError(r *values.Redactor, err error) error {
	if err == nil {
		return nil
	}
	msg := r.Text(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
