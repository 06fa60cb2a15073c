package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoBinaries says the control-plane binaries are not built; the message
// tells the user how to build them.
var ErrNoBinaries = errors.New("control-plane binaries missing: run `make testcluster`")

const (
	readyTimeout  = 60 * time.Second
	stopGrace     = 5 * time.Second
	startAttempts = 3
)

// ControlPlane is a running etcd + kube-apiserver pair on loopback.
type ControlPlane struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file with the same identity.
	KubeconfigPath string
	// Dir holds the control plane's certificates, data and logs.
	Dir string

	binDir    string
	pki       *pki
	etcdURL   string
	apiPort   int
	etcd      *exec.Cmd
	apiserver *exec.Cmd
	logOut    io.Writer
	ownsDir   bool
	workloads bool
	work      workloadProcs

	apiserverExited <-chan struct{}
	etcdExited      <-chan struct{}
}

// Option configures Start.
type Option func(*ControlPlane)

// WithBinDir sets where etcd and kube-apiserver are found (default: the
// repository's bin/, or $ADDON_OPERATOR_TESTENV_BIN).
func WithBinDir(dir string) Option { return func(c *ControlPlane) { c.binDir = dir } }

// WithDir sets the working directory (default: a new temporary directory).
func WithDir(dir string) Option { return func(c *ControlPlane) { c.Dir = dir } }

// WithLogOutput sends both processes' output to w (default: files in Dir).
func WithLogOutput(w io.Writer) Option { return func(c *ControlPlane) { c.logOut = w } }

// Start launches etcd and kube-apiserver on free loopback ports and waits
// until the API server answers /readyz.
func Start(ctx context.Context, opts ...Option) (*ControlPlane, error) {
	c := &ControlPlane{}
	for _, o := range opts {
		o(c)
	}
	if c.binDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return nil, err
		}
		c.binDir = dir
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(c.binDir, b)); err != nil {
			return nil, fmt.Errorf("%w (looked for %s)", ErrNoBinaries, filepath.Join(c.binDir, b))
		}
	}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "addon-operator-testenv-")
		if err != nil {
			return nil, err
		}
		c.Dir = dir
		c.ownsDir = true
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	p, err := newPKI(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}
	c.pki = p
	for attempt := 1; ; attempt++ {
		if err = c.startEtcd(ctx); err == nil {
			err = c.StartAPIServer(ctx)
		}
		if err == nil || attempt == startAttempts || ctx.Err() != nil {
			break
		}
		// a port chosen as free can be taken by another process before ours
		// binds it (test packages start control planes in parallel): retry
		c.stopProcesses()
		_ = os.RemoveAll(filepath.Join(c.Dir, "etcd"))
		c.apiPort = 0
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.writeKubeconfig(); err != nil {
		c.Stop()
		return nil, err
	}
	if c.workloads {
		if err := c.startWorkloads(ctx); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// DefaultBinDir finds bin/ at the repository root (the directory with go.mod
// above the working directory), unless $ADDON_OPERATOR_TESTENV_BIN is set.
func DefaultBinDir() (string, error) {
	if d := os.Getenv("ADDON_OPERATOR_TESTENV_BIN"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "testcluster")); err == nil {
				return filepath.Join(dir, "bin"), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: repository root not found above the working directory", ErrNoBinaries)
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *ControlPlane) output(name string) (io.Writer, error) {
	if c.logOut != nil {
		return c.logOut, nil
	}
	return os.OpenFile(filepath.Join(c.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

func (c *ControlPlane) command(name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(filepath.Join(c.binDir, name), args...)
	out, err := c.output(name)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	// The child dies with the test process, so an aborted run leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

func (c *ControlPlane) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cmd, err := c.command("etcd",
		"--name=testenv",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+c.etcdURL,
		"--advertise-client-urls="+c.etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	c.etcd = cmd
	exited := make(chan struct{})
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
	}()
	c.etcdExited = exited
	return c.waitEtcd(ctx)
}

// waitEtcd waits until etcd answers /health, or reports that it exited.
func (c *ControlPlane) waitEtcd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.etcdExited:
			return fmt.Errorf("etcd exited before it was ready:\n%s", c.logTail("etcd"))
		case <-ctx.Done():
			return fmt.Errorf("etcd not ready after %s:\n%s", readyTimeout, c.logTail("etcd"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StartAPIServer starts kube-apiserver against the running etcd on the same
// port as before (a fresh port the first time) and waits for /readyz. Tests
// use it with StopAPIServer to restart the API server under a running client.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	if c.apiPort == 0 {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.apiPort = port
	}
	cmd, err := c.command("kube-apiserver",
		"--etcd-servers="+c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.apiPort),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file="+c.pki.servingCert,
		"--tls-private-key-file="+c.pki.servingKey,
		"--client-ca-file="+c.pki.caFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+c.pki.saPublicFile,
		"--service-account-signing-key-file="+c.pki.saPrivateFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		// No controller-manager runs, so nothing would create default service accounts.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		// A loopback advertise address is refused by the endpoint reconciler.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=0",
	)
	if err != nil {
		return err
	}
	c.apiserver = cmd
	c.Config = &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(c.apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.caPEM,
			CertData: c.pki.adminCertPEM,
			KeyData:  c.pki.adminKeyPEM,
		},
		QPS:   -1,
		Burst: -1,
	}
	return c.waitReady(ctx)
}

func (c *ControlPlane) waitReady(ctx context.Context) error {
	transport, err := rest.TransportFor(c.Config)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	exited := make(chan struct{})
	proc := c.apiserver
	go func() {
		_, _ = proc.Process.Wait()
		close(exited)
	}()
	c.apiserverExited = exited
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Config.Host+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("kube-apiserver exited before it was ready:\n%s", c.logTail("kube-apiserver"))
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s:\n%s", readyTimeout, c.logTail("kube-apiserver"))
		case <-tick.C:
		}
	}
}

// logTail is the end of a process's log, for errors (Stop may remove Dir).
func (c *ControlPlane) logTail(name string) string {
	if c.logOut != nil {
		return "(output went to the configured writer)"
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	const max = 3000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func (c *ControlPlane) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.pki.adminCertPEM, ClientKeyData: c.pki.adminKeyPEM}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "testenv"
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	return clientcmd.WriteToFile(*cfg, c.KubeconfigPath)
}

// StopAPIServer stops kube-apiserver and leaves etcd running.
func (c *ControlPlane) StopAPIServer() {
	stopProcess(c.apiserver, c.apiserverExited)
	c.apiserver = nil
}

// Stop stops both processes by PID: SIGTERM, then SIGKILL after a bound.
// It removes Dir only when Start created it.
func (c *ControlPlane) Stop() {
	c.stopProcesses()
	if c.ownsDir {
		_ = os.RemoveAll(c.Dir)
	}
}

func (c *ControlPlane) stopProcesses() {
	c.stopWorkloads()
	if c.apiserver != nil {
		c.StopAPIServer()
	}
	if c.etcd != nil {
		stopProcess(c.etcd, c.etcdExited)
		c.etcd = nil
	}
}

func stopProcess(cmd *exec.Cmd, exited <-chan struct{}) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Main is a package's TestMain: it starts one control plane, hands it to
// setup, runs the tests and stops it. It returns the exit code.
func Main(m interface{ Run() int }, setup func(*ControlPlane)) int {
	cp, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	setup(cp)
	return m.Run()
}
