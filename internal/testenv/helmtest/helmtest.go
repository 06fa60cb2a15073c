package helmtest

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config is a Helm action configuration for namespace on the Secrets
// storage, as the operator's: actions run with it see and write the same
// releases.
func Config(cfg *rest.Config, namespace string) (*action.Configuration, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	disc := memory.NewMemCacheClient(dc)
	g := &getter{config: cfg, namespace: namespace, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}
	ac := new(action.Configuration)
	if err := ac.Init(g, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("init helm in %s: %w", namespace, err)
	}
	return ac, nil
}

// Last reads the newest record of the release name in namespace, whoever
// wrote it; driver.ErrReleaseNotFound when there is none.
func Last(cfg *rest.Config, namespace, name string) (*release.Release, error) {
	ac, err := Config(cfg, namespace)
	if err != nil {
		return nil, err
	}
	rel, err := ac.Releases.Last(name)
	if err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", namespace, name, err)
	}
	return rel, nil
}

// getter hands Helm clients for a rest.Config; a kubeconfig loader would
// need a file.
type getter struct {
	config    *rest.Config
	namespace string
	disc      discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*getter)(nil)

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }
func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disc, nil
}
func (g *getter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }
func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
