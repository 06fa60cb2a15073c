package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// clientRequests are client-go's request metrics under the original's
// names. client-go takes one adapter per process, so they are made once
// and registered with whichever registry asks first.
var clientRequests = struct {
	latency *prometheus.HistogramVec
	results *prometheus.CounterVec
}{
	latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "addon_operator_kubernetes_client_request_latency_seconds", Help: "Latency of the API server requests client-go made; url has no query.",
		Buckets: []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50},
	}, []string{"verb", "url"}),
	results: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "addon_operator_kubernetes_client_request_result_total", Help: "API server requests client-go made, by result.",
	}, []string{"code", "method", "host"}),
}

func init() {
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestLatency: requestLatency{}, RequestResult: requestResult{}})
}

// RegisterClientMetrics adds client-go's request metrics to reg (once per
// process: the program's registry, not a test's).
func RegisterClientMetrics(reg prometheus.Registerer) error {
	if err := reg.Register(clientRequests.latency); err != nil {
		return err
	}
	return reg.Register(clientRequests.results)
}

type requestLatency struct{}

func (requestLatency) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	// the query (label selectors, resourceVersions) would make every
	// request its own series
	u.RawQuery, u.Fragment = "", ""
	clientRequests.latency.WithLabelValues(verb, u.String()).Observe(latency.Seconds())
}

type requestResult struct{}

func (requestResult) Increment(_ context.Context, code, method, host string) {
	clientRequests.results.WithLabelValues(code, method, host).Inc()
}
