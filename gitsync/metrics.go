package gitsync

import "github.com/prometheus/client_golang/prometheus"

var revisionInfo = prometheus.NewDesc("addon_operator_git_revision_info",
	"The git revision the operator runs: 1, labelled with the desired ref and the commit.", []string{"ref", "commit"}, nil)

var _ prometheus.Collector = (*Syncer)(nil)

// Describe implements prometheus.Collector.
func (s *Syncer) Describe(ch chan<- *prometheus.Desc) { ch <- revisionInfo }

// Collect reports addon_operator_git_revision_info for the current revision.
func (s *Syncer) Collect(ch chan<- prometheus.Metric) {
	st := s.Status()
	if st.Current == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(revisionInfo, prometheus.GaugeValue, 1, st.DesiredRef, st.Current.Commit)
}
