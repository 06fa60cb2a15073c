package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testenv"
)

// clientCA makes a CA in dir/name.crt and a client certificate it signed.
func clientCA(t *testing.T, dir, name string) (string, tls.Certificate) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A rotated client CA reaches the server as the certificate does: once
// its file changes, a client signed by the new CA is served and one
// signed by the old is refused; a half-written file keeps the last good
// CA.
func TestServerReloadsClientCA(t *testing.T) {
	ca, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := pool(t, ca)
	dir := t.TempDir()
	caFile, client1 := clientCA(t, dir, "client-ca")
	ca2File, client2 := clientCA(t, dir, "client-ca-2")
	clk := &clock{}
	clk.now.Store(time.Now().UnixNano())
	addr := serve(t, &Server{CertFile: cert, KeyFile: key, ClientCAFiles: []string{caFile}, Handler: http.NotFoundHandler(), Logger: quiet, Now: clk.Now})

	steps := []struct {
		name     string
		write    []byte // the CA file's new content; nil: as it is
		accepted []tls.Certificate
		refused  []tls.Certificate
	}{
		{"the first CA", nil, []tls.Certificate{client1}, []tls.Certificate{client2}},
		{"rotated", readFile(t, ca2File), []tls.Certificate{client2}, []tls.Certificate{client1}},
		{"a half-written file", []byte("-----BEGIN CERT"), []tls.Certificate{client2}, []tls.Certificate{client1}},
		{"both CAs", append(readFile(t, caFile), readFile(t, ca2File)...), []tls.Certificate{client1, client2}, nil},
	}
	for _, st := range steps {
		if st.write != nil {
			if err := os.WriteFile(caFile, st.write, 0o600); err != nil {
				t.Fatal(err)
			}
			clk.add(2 * certReloadEvery)
		}
		for i, c := range st.accepted {
			if err := handshake(addr, roots, c); err != nil {
				t.Errorf("%s: client %d refused: %v", st.name, i, err)
			}
		}
		for i, c := range st.refused {
			if err := handshake(addr, roots, c); err == nil {
				t.Errorf("%s: client %d served", st.name, i)
			}
		}
		if err := handshake(addr, roots); err == nil {
			t.Errorf("%s: a client without a certificate was served", st.name)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
