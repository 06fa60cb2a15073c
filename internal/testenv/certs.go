package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the throw-away key material of one control plane: a CA that signs
// the API server's serving cert and the admin client cert, and the key pair
// the API server signs service-account tokens with.
type pki struct {
	caPEM         []byte
	adminCertPEM  []byte
	adminKeyPEM   []byte
	caFile        string
	servingCert   string
	servingKey    string
	saPublicFile  string
	saPrivateFile string
	adminCertFile string
	adminKeyFile  string
}

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "addon-operator-testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	issue := func(serial int64, cn string, orgs []string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: orgs},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(7 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
			DNSNames:     dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
	}
	servingCert, servingKey, err := issue(2, "kube-apiserver", nil, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost", "kubernetes", "kubernetes.default"})
	if err != nil {
		return nil, err
	}
	// system:masters is the group RBAC always authorizes: the test identity is cluster admin.
	adminCert, adminKey, err := issue(3, "admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p := &pki{
		caPEM:         pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		adminCertPEM:  adminCert,
		adminKeyPEM:   adminKey,
		caFile:        filepath.Join(dir, "ca.crt"),
		servingCert:   filepath.Join(dir, "apiserver.crt"),
		servingKey:    filepath.Join(dir, "apiserver.key"),
		saPublicFile:  filepath.Join(dir, "sa.pub"),
		saPrivateFile: filepath.Join(dir, "sa.key"),
		adminCertFile: filepath.Join(dir, "admin.crt"),
		adminKeyFile:  filepath.Join(dir, "admin.key"),
	}
	files := map[string][]byte{
		p.caFile:        p.caPEM,
		p.servingCert:   servingCert,
		p.servingKey:    servingKey,
		p.saPublicFile:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		p.saPrivateFile: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		p.adminCertFile: adminCert,
		p.adminKeyFile:  adminKey,
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return p, nil
}
