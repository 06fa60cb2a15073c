package main

import (
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/lifecycle/modulestatus"
)

// moduleObjects is the client of the Module status objects in the
// operator's namespace when the API server serves them (the chart installs
// their CRD: docs/operator.md, "Module objects"); nil, with a line in the
// log, when it does not.
func moduleObjects(d discovery.DiscoveryInterface, cfg *rest.Config, namespace string, logger *slog.Logger) (modulestatus.Client, error) {
	gv := modulestatus.GVR.GroupVersion().String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		logger.Info("no Module objects: the API server does not serve them (install the CRD from deploy/)", "resource", modulestatus.GVR.Resource+"."+modulestatus.GVR.Group)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("module objects: discover %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == modulestatus.GVR.Resource {
			k, err := modulestatus.NewKube(cfg, namespace)
			if err != nil {
				return nil, err
			}
			return k, nil
		}
	}
	return nil, nil
}
