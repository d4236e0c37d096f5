package proxies

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Nginx is the configuration of an nginx reverse proxy: Listen proxied to
// the one server Upstream over keep-alive HTTP/1.1 connections, no access
// log, Workers worker processes.
type Nginx struct {
	Workers  int
	Listen   string // HOST:PORT
	Upstream string // HOST:PORT
	// HTTP and Location are directives added to the http block and to
	// the location (a limit_conn_zone and its limit_conn, say).
	HTTP, Location string
	// Cert and Key, when set, are the PEM files of TLS on Listen; with
	// HTTP2, HTTP/2 is offered too (by ALPN).
	Cert, Key string
	HTTP2     bool
}

// Config is the text of nginx.conf, whose pid file, logs and temporary
// files are in dir.
func (n Nginx) Config(dir string) string {
	listen := "listen " + n.Listen
	if n.Cert != "" {
		listen += " ssl"
		if n.HTTP2 {
			listen += " http2"
		}
		listen += fmt.Sprintf(";\n    ssl_certificate %s;\n    ssl_certificate_key %s", n.Cert, n.Key)
	}
	return fmt.Sprintf(`worker_processes %d;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %s/tmp-body;
  proxy_temp_path %s/tmp-proxy;
  fastcgi_temp_path %s/tmp-fastcgi;
  uwsgi_temp_path %s/tmp-uwsgi;
  scgi_temp_path %s/tmp-scgi;
  keepalive_requests 1000000;
  %s
  upstream service { server %s; keepalive 256; }
  server {
    %s;
    location / {
      %s
      proxy_pass http://service;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, n.Workers, dir, dir, dir, dir, dir, dir, dir, n.HTTP, n.Upstream, listen, n.Location)
}

// Command writes the configuration into dir and returns the command that
// runs nginx on it in the foreground.
func (n Nginx) Command(dir string) (*exec.Cmd, error) {
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(n.Config(dir)), 0o644); err != nil {
		return nil, err
	}
	return exec.Command("nginx", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path, "-g", "daemon off;"), nil
}

// HAProxy is the configuration of an HAProxy reverse proxy: Listen
// proxied to the one server Upstream, its connections reused by any
// request (http-reuse always), Workers threads.
type HAProxy struct {
	Workers  int
	Listen   string // HOST:PORT
	Upstream string // HOST:PORT
	// Frontend are lines added to the frontend before its
	// default_backend, each indented by two spaces and ending in a
	// newline (a stick-table and its rules, say).
	Frontend string
	// PEM, when set, is the file of the certificate and its key (one
	// after the other) of TLS on Listen, with ALPN the protocols offered
	// ("h2,http/1.1"; empty: none).
	PEM, ALPN string
}

// Config is the text of haproxy.cfg.
func (h HAProxy) Config() string {
	bind := h.Listen
	if h.PEM != "" {
		bind += " ssl crt " + h.PEM
		if h.ALPN != "" {
			bind += " alpn " + h.ALPN
		}
	}
	return fmt.Sprintf(`global
  nbthread %d
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend front
  bind %s
%s  default_backend service
backend service
  http-reuse always
  server s1 %s maxconn 4000
`, h.Workers, bind, h.Frontend, h.Upstream)
}

// Command writes the configuration into dir and returns the command that
// runs HAProxy on it in the foreground.
func (h HAProxy) Command(dir string) (*exec.Cmd, error) {
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(h.Config()), 0o644); err != nil {
		return nil, err
	}
	return exec.Command("haproxy", "-db", "-f", path), nil
}

// APF returns the command of `apf serve` (binary) with args, run with
// GOMAXPROCS=workers.
func APF(binary string, workers int, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(workers))
	return cmd
}

// WriteTokens writes apf's static token file for users: the user NAME,
// the I-th, has the token token-NAME and the uid uid-I.
func WriteTokens(path string, users []string) error {
	var b strings.Builder
	for i, u := range users {
		fmt.Fprintf(&b, "token-%s,%s,uid-%d\n", u, u, i)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// Bearer is the Authorization header of user: apf's token file maps
// token-NAME to the user NAME; nginx and HAProxy can key on the header.
func Bearer(user string) string { return "Bearer token-" + user }
