package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// ParseAdmissionResponse reads what a hook wrote to
// $VALIDATING_RESPONSE_PATH: {"allowed": ..., "message": ..., "warnings":
// [...]} (and "patch", base64 of a JSON patch, from a mutating hook). An
// empty or malformed file is a denial saying so, as in shell-operator;
// the second result is the problem, for the log.
func ParseAdmissionResponse(b []byte) (AdmissionResult, error) {
	var r struct {
		Allowed  bool     `json:"allowed"`
		Message  string   `json:"message"`
		Warnings []string `json:"warnings"`
		Patch    []byte   `json:"patch"`
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return AdmissionResult{Message: "the hook wrote no response"}, fmt.Errorf("empty response file")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return AdmissionResult{Message: "the hook's response is not valid"}, fmt.Errorf("response: %w", err)
	}
	return AdmissionResult{Allowed: r.Allowed, Message: r.Message, Warnings: r.Warnings, Patch: r.Patch}, nil
}

// ParseConversionResponse reads what a hook wrote to
// $CONVERSION_RESPONSE_PATH: {"convertedObjects": [...]} or
// {"failedMessage": "..."}. A failedMessage, an empty or malformed file
// is an error, the message the API server reports.
func ParseConversionResponse(b []byte) ([]runtime.RawExtension, error) {
	var r struct {
		FailedMessage    string                 `json:"failedMessage"`
		ConvertedObjects []runtime.RawExtension `json:"convertedObjects"`
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("the hook wrote no response")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the hook's response is not valid: %w", err)
	}
	if r.FailedMessage != "" {
		return nil, fmt.Errorf("%s", r.FailedMessage)
	}
	return r.ConvertedObjects, nil
}
