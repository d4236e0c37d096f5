package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Default request-header names, the ones kube-aggregator and kubeadm
// configure. kube-apiserver's flags themselves default to empty.
const (
	DefaultUsernameHeader     = "X-Remote-User"
	DefaultGroupHeader        = "X-Remote-Group"
	DefaultExtraHeadersPrefix = "X-Remote-Extra-"
)

// Options configures authentication. The fields are named after
// kube-apiserver's flags, given in each comment. The zero
// value authenticates nobody and refuses anonymous requests; start from
// DefaultOptions for kube-apiserver's defaults.
type Options struct {
	// TokenAuthFile (--token-auth-file) is a CSV file of static bearer
	// tokens; see ParseTokens.
	TokenAuthFile string
	// ClientCAFile (--client-ca-file) holds the PEM certificates of the
	// CAs that sign client certificates. A verified certificate's common
	// name is the user name, its organizations the groups.
	ClientCAFile string

	// RequestHeaderClientCAFile (--requestheader-client-ca-file) holds
	// the CAs of front proxies. A request whose client certificate
	// verifies against them (and whose common name is allowed) is taken
	// to be from the user its request headers name. Empty turns
	// request-header authentication off.
	RequestHeaderClientCAFile string
	// RequestHeaderAllowedNames (--requestheader-allowed-names) are the
	// common names a proxy certificate may have; empty allows any.
	RequestHeaderAllowedNames []string
	// RequestHeaderUsernameHeaders (--requestheader-username-headers):
	// the first of these headers with a value names the user. Empty
	// means X-Remote-User.
	RequestHeaderUsernameHeaders []string
	// RequestHeaderUIDHeaders (--requestheader-uid-headers): the first
	// of these with a value is the user's UID.
	RequestHeaderUIDHeaders []string
	// RequestHeaderGroupHeaders (--requestheader-group-headers): every
	// value of these headers is a group. Empty means X-Remote-Group.
	RequestHeaderGroupHeaders []string
	// RequestHeaderExtraHeadersPrefix
	// (--requestheader-extra-headers-prefix): a header starting with one
	// of these adds its values to the user's extra under the rest of its
	// name, lower-cased and percent-decoded. Empty means X-Remote-Extra-.
	RequestHeaderExtraHeadersPrefix []string

	// AnonymousAuth (--anonymous-auth) lets requests without credentials
	// in as system:anonymous in group system:unauthenticated; the
	// authorizer then decides what they may do. kube-apiserver's default
	// is true.
	AnonymousAuth bool

	// KeepAuthorization leaves the Authorization header on the request
	// after authentication, for a gateway that passes the caller's own
	// credentials to the API behind it. (The request-header identity
	// headers are still removed: they are only trusted from the front
	// proxy.)
	KeepAuthorization bool
}

// DefaultOptions returns kube-apiserver's defaults: anonymous requests on,
// nothing else configured.
func DefaultOptions() Options {
	return Options{AnonymousAuth: true}
}

// AddFlags registers the options as kube-apiserver's flags on fs, with the
// current values of o as defaults. List flags take comma-separated values
// and may be repeated.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile,
		"CSV file of static bearer tokens: token,user,uid[,\"group1,group2\"] per line.")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile,
		"PEM bundle of CAs for client certificates; a verified certificate authenticates as its common name, with its organizations as groups.")
	fs.StringVar(&o.RequestHeaderClientCAFile, "requestheader-client-ca-file", o.RequestHeaderClientCAFile,
		"PEM bundle of front-proxy CAs; only a connection whose certificate they verify may name the user in request headers.")
	fs.Var((*listFlag)(&o.RequestHeaderAllowedNames), "requestheader-allowed-names",
		"Common names a front-proxy certificate may have (empty: any that verifies).")
	fs.Var((*listFlag)(&o.RequestHeaderUsernameHeaders), "requestheader-username-headers",
		"Headers naming the user, first non-empty wins (default "+DefaultUsernameHeader+").")
	fs.Var((*listFlag)(&o.RequestHeaderUIDHeaders), "requestheader-uid-headers",
		"Headers giving the user's UID, first non-empty wins.")
	fs.Var((*listFlag)(&o.RequestHeaderGroupHeaders), "requestheader-group-headers",
		"Headers giving the user's groups, every value one group (default "+DefaultGroupHeader+").")
	fs.Var((*listFlag)(&o.RequestHeaderExtraHeadersPrefix), "requestheader-extra-headers-prefix",
		"Header name prefixes giving the user's extra attributes (default "+DefaultExtraHeadersPrefix+").")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth,
		"Serve requests without credentials as system:anonymous (group system:unauthenticated), subject to authorization.")
}

// listFlag is a comma-separated, repeatable string list flag.
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Type implements pflag.Value.
func (l *listFlag) Type() string { return "strings" }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// New builds the authenticator that opts describe, reading the token and
// CA files once.
func New(opts Options) (*Authenticator, error) {
	a := &Authenticator{anonymous: opts.AnonymousAuth}
	var err error
	if opts.TokenAuthFile != "" {
		if a.tokens, err = LoadTokenFile(opts.TokenAuthFile); err != nil {
			return nil, err
		}
	}
	if opts.ClientCAFile != "" {
		if a.clientCAs, err = loadCAFile(opts.ClientCAFile); err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
	}
	// The identity headers are stripped whether or not request-header
	// authentication is on: a backend behind apf that trusts apf's own
	// proxy certificate must never see a client's made-up X-Remote-User.
	p := &proxyAuth{
		allowedNames:  clean(opts.RequestHeaderAllowedNames),
		userHeaders:   orDefault(opts.RequestHeaderUsernameHeaders, DefaultUsernameHeader),
		uidHeaders:    clean(opts.RequestHeaderUIDHeaders),
		groupHeaders:  orDefault(opts.RequestHeaderGroupHeaders, DefaultGroupHeader),
		extraPrefixes: orDefault(opts.RequestHeaderExtraHeadersPrefix, DefaultExtraHeadersPrefix),
	}
	for i, pre := range p.extraPrefixes {
		p.extraPrefixes[i] = strings.ToLower(pre)
	}
	a.identityHeaders = append(a.identityHeaders, p.userHeaders...)
	a.identityHeaders = append(a.identityHeaders, p.uidHeaders...)
	a.identityHeaders = append(a.identityHeaders, p.groupHeaders...)
	a.extraPrefixes = p.extraPrefixes
	if opts.RequestHeaderClientCAFile != "" {
		if p.roots, err = loadCAFile(opts.RequestHeaderClientCAFile); err != nil {
			return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		a.proxy = p
	} else if len(p.allowedNames) > 0 {
		return nil, errors.New("--requestheader-allowed-names needs --requestheader-client-ca-file")
	}
	if !opts.KeepAuthorization {
		a.identityHeaders = append(a.identityHeaders, "Authorization")
	}
	for i, h := range a.identityHeaders {
		a.identityHeaders[i] = http.CanonicalHeaderKey(h)
	}
	return a, nil
}

// TLSConfig returns a copy of base (or a new configuration when base is
// nil) that asks for client certificates and verifies those given against
// both the client CA and the request-header CA, so that one listener serves
// users with certificates, front proxies and token or anonymous clients
// (which send none). Which CA signed a certificate, and so what it proves,
// is decided per request by the Authenticator. With neither CA file set,
// base is returned copied and unchanged: verifying against no pool would
// fall back to the system roots.
func TLSConfig(opts Options, base *tls.Config) (*tls.Config, error) {
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if opts.ClientCAFile == "" && opts.RequestHeaderClientCAFile == "" {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	for _, f := range []struct{ flag, path string }{
		{"--client-ca-file", opts.ClientCAFile},
		{"--requestheader-client-ca-file", opts.RequestHeaderClientCAFile},
	} {
		if f.path == "" {
			continue
		}
		certs, err := readCerts(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.flag, err)
		}
		for _, c := range certs {
			pool.AddCert(c)
		}
	}
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.ClientCAs = pool
	return cfg, nil
}

// loadCAFile reads a PEM bundle into a pool.
func loadCAFile(path string) (*x509.CertPool, error) {
	certs, err := readCerts(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// readCerts parses every CERTIFICATE block of a PEM file. Unlike
// CertPool.AppendCertsFromPEM it fails on a block that does not parse and on
// a file without certificates, instead of silently trusting less.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: PEM block %d: %w", path, n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificates", path)
	}
	return certs, nil
}

// clean returns the non-empty, trimmed entries of list.
func clean(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// orDefault is clean(list), or def alone when that is empty.
func orDefault(list []string, def string) []string {
	if c := clean(list); len(c) > 0 {
		return c
	}
	return []string{def}
}
