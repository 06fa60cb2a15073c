package kube

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restGetter gives Helm clients for a rest.Config, with one discovery cache.
type restGetter struct {
	config    *rest.Config
	namespace string
	disc      discovery.CachedDiscoveryInterface
	deferred  *restmapper.DeferredDiscoveryRESTMapper
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func newRESTGetter(cfg *rest.Config, namespace string) (*restGetter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(dc)
	deferred := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	mapper := restmapper.NewShortcutExpander(deferred, disc, nil)
	return &restGetter{config: cfg, namespace: namespace, disc: disc, deferred: deferred, mapper: mapper}, nil
}

// refresh makes the next mapping read the API's discovery again.
func (g *restGetter) refresh() {
	g.disc.Invalidate()
	g.deferred.Reset()
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disc, nil
}
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
