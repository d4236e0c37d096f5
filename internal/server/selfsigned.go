package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Without --tls-cert-file the server still speaks HTTPS, as kube-apiserver
// does: it makes a certificate authority of its own and a serving
// certificate signed by it, keeps both in the certificate directory, and
// reuses them on the next start while they are valid and name the address
// served. Clients trust ca.crt (kubectl: certificate-authority in the
// kubeconfig). kubectl sends bearer tokens only over TLS, which is why
// plain HTTP is not the default even on a loopback address.
const (
	caCertFile      = "ca.crt"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	// selfSignedValidity is how long generated certificates last.
	selfSignedValidity = 365 * 24 * time.Hour
	// renewBefore is how close to expiry a stored certificate is
	// replaced.
	renewBefore = 30 * 24 * time.Hour
)

// selfSignedCert returns the serving certificate kept in dir, making a new
// one (and its authority) when there is none, when it expires within
// renewBefore or when it does not name host.
func selfSignedCert(dir, host string, now time.Time) (tls.Certificate, error) {
	names := servingNames(host)
	certPath, keyPath := filepath.Join(dir, servingCertFile), filepath.Join(dir, servingKeyFile)
	if c, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && c.Leaf != nil && usable(c.Leaf, names, now) {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate directory: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("apf-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("apf@%d", now.Unix())},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, n)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), caPEM...)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{caCertFile, caPEM, 0o644},
		{servingCertFile, certPEM, 0o644},
		{servingKeyFile, keyPEM, 0o600},
	} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// servingNames are the names a serving certificate for host must carry:
// host itself when it is specific, and the loopback names.
func servingNames(host string) []string {
	names := []string{"127.0.0.1", "::1", "localhost"}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) && !slices.Contains(names, host) {
		names = append(names, host)
	}
	if h, err := os.Hostname(); err == nil && h != "" && !slices.Contains(names, h) {
		names = append(names, h)
	}
	return names
}

// usable says whether a stored certificate still serves: valid for
// renewBefore more and naming every name.
func usable(c *x509.Certificate, names []string, now time.Time) bool {
	if now.Add(renewBefore).After(c.NotAfter) || now.Before(c.NotBefore) {
		return false
	}
	for _, n := range names {
		if c.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// writeFileAtomic writes data to path through a temporary file, so that a
// crash never leaves half a certificate behind.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
