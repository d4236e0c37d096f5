package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

func TestIssuedCertificatesVerify(t *testing.T) {
	ca, other := NewCA(t, "ca"), NewCA(t, "other")
	c := ca.Issue(t, "alice", []string{"devs"})
	opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := c.Leaf.Verify(opts); err != nil {
		t.Fatal(err)
	}
	opts.Roots = other.Pool()
	if _, err := c.Leaf.Verify(opts); err == nil {
		t.Fatal("a certificate verified against another CA")
	}
	certFile, keyFile := WriteFiles(t, c)
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
}
