package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certFiles are the files of the one self-signed serving certificate
// nginx, HAProxy and apf terminate TLS with.
type certFiles struct {
	cert, key string // PEM: the certificate; its key (nginx, apf)
	pem       string // both, one after the other (HAProxy)
}

// writeCert makes a self-signed ECDSA P-256 certificate for 127.0.0.1
// and localhost, valid for a day, and writes its files into dir.
func writeCert(dir string) (certFiles, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certFiles{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return certFiles{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "datapath-bench"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return certFiles{}, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return certFiles{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	f := certFiles{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), pem: filepath.Join(dir, "tls.pem")}
	if err := os.WriteFile(f.cert, certPEM, 0o644); err != nil {
		return certFiles{}, err
	}
	if err := os.WriteFile(f.key, keyPEM, 0o600); err != nil {
		return certFiles{}, err
	}
	if err := os.WriteFile(f.pem, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		return certFiles{}, err
	}
	return f, nil
}

// clientConfig is a TLS client configuration that trusts the certificate.
func (f certFiles) clientConfig() (*tls.Config, error) {
	b, err := os.ReadFile(f.cert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no certificate in " + f.cert)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
