package statusapi

import (
	"net"
	"net/http"
	"strings"
)

// LocalOnly answers clients on the operator's own host and refuses others
// (the debug endpoints, and pprof when it is on).
func LocalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromOwnHost(r) {
			http.Error(w, "the debug endpoints answer only on the operator's own host: run the command in its pod (kubectl exec) or through kubectl port-forward", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fromOwnHost: the connection came in on loopback from loopback, or from
// the address it came in on (a pod talking to its own IP), and the request
// names its host by an IP or "localhost". A proxy in the pod that delivers
// others' requests from a loopback address to the pod's IP (a service
// mesh's sidecar) fails the first test; a web page whose name was rebound
// to 127.0.0.1 fails the last.
func fromOwnHost(r *http.Request) bool {
	remote := hostIP(r.RemoteAddr)
	localAddr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if remote == nil || !ok || !ipOrLocalhost(r.Host) {
		return false
	}
	local := hostIP(localAddr.String())
	if remote.IsLoopback() {
		return local != nil && local.IsLoopback()
	}
	return remote.Equal(local)
}

// ipOrLocalhost: a Host header that names an IP address or localhost.
func ipOrLocalhost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || net.ParseIP(host) != nil
}

func hostIP(addr string) net.IP {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}
