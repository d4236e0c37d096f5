package testproc

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// WaitReady waits, until deadline, for a server that writes the CA of its
// serving certificate to caFile at start-up and then becomes ready: once
// caFile holds a certificate, newClient makes a client trusting it, and
// probe is asked with that client until it returns nil. It returns the
// client, or fails at once if p exits first, and at the deadline with
// probe's last error.
func WaitReady(p *Process, name, caFile string, deadline time.Time,
	newClient func(roots *x509.CertPool) *http.Client, probe func(*http.Client) error) (*http.Client, error) {
	var (
		client *http.Client
		last   = fmt.Errorf("no CA certificate in %s yet", caFile)
	)
	for {
		if done, err := p.Exited(); done {
			return nil, fmt.Errorf("%s exited before it was ready: %v", name, err)
		}
		if client == nil {
			if pem, err := os.ReadFile(caFile); err == nil {
				if roots := x509.NewCertPool(); roots.AppendCertsFromPEM(pem) {
					client = newClient(roots)
				}
			}
		}
		if client != nil {
			if last = probe(client); last == nil {
				return client, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not ready by the deadline: %v", name, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Do sends one request with a bearer token (and a JSON body, when body is
// not empty) and reads the whole answer.
func Do(ctx context.Context, client *http.Client, method, url, token, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// ReadyzProbe is a probe for WaitReady that asks url's /readyz with a
// bearer token and wants a 200.
func ReadyzProbe(baseURL, token string, timeout time.Duration) func(*http.Client) error {
	return func(c *http.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		code, body, err := Do(ctx, c, http.MethodGet, baseURL+"/readyz", token, "")
		switch {
		case err != nil:
			return err
		case code != http.StatusOK:
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	}
}
