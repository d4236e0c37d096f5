// Command gateway compares, in one run on loopback, how apf serve and
// the usual proxies protect light users of a service from one user who
// floods it (`make bench-gateway`, results in docs/benchmarks.md).
//
// The service is played by an upstream this program serves itself: every
// request takes -service (20 ms) and at most -capacity (20) are served at
// once, the others waiting for a slot; it counts how many it serves at
// once, its peak, and the moment the count first reaches -capacity.
//
// Each row puts one proxy, with two workers, between the clients and the
// upstream:
//
//	nginx           proxy_pass, nothing else
//	nginx-limit     limit_conn of -per-user (10) per Authorization header
//	haproxy-stick   a stick-table keyed on the Authorization header,
//	                refusing a request when -per-user of that key are
//	                already in progress
//	apf-kubernetes  apf serve, the built-in configuration, --concurrency-limit
//	                -capacity
//	apf-service     apf serve --profile service --concurrency-limit -capacity
//
// The clients authenticate with bearer tokens (apf's token file; nginx
// and HAProxy key on the Authorization header). Four light users send 5
// requests a second each, at fixed times whatever the answers (an open
// loop, each on a keep-alive connection of its own); once they run, one
// user floods with wrk over 200 connections for -duration. The row's
// figures are the light users' latency (median and 99th percentile of the
// requests sent during the flood; requests refused or failed are counted
// apart), the flood's answered requests per second (2xx only, as wrk
// counts them), the upstream's peak concurrency, and the time from the
// flood's start until the upstream first served -capacity at once.
//
// With -runs N every row is run N times, interleaved (row by row, run
// after run), and the table gives each figure's median over the runs.
//
// nginx, haproxy and wrk are taken from PATH (the Makefile installs
// them with apt-get when missing), apf from -apf. Every process the
// program starts is stopped by it, and every wait is bounded.
package main
