// Command datapath measures the data path of apf serve as a gateway
// beside nginx and HAProxy, on loopback, in one run, and reports ratios
// (`make bench-datapath`, results in docs/benchmarks.md).
//
// The upstream answers every request at once with 1 KiB (200, text/plain,
// Content-Length 1024). It is this program run with -serve-upstream ADDR,
// a process of its own, so that its CPU is read apart from the proxies'.
// Every request carries the bearer token of one user. The rows:
//
//	direct           the clients straight to the upstream
//	nginx            proxy_pass to an upstream block with keepalive,
//	                 proxy_http_version 1.1, access_log off
//	haproxy          one backend server, http-reuse always
//	apf              apf serve --upstream, APF on with the built-in
//	                 configuration, the user known by --token-auth-file
//	                 (the user's requests land in global-default), an
//	                 embedded etcd in --data-dir; plain HTTP on its
//	                 event loops (package evloop), TLS on h1
//	apf-h1           apf serve --event-loops=false: every connection on
//	                 apf's HTTP/1.1 server (h1), a goroutine each
//	apf-floor        apf's own HTTP/1.1 server and upstream transport
//	                 with a bare relay between them (this program run
//	                 with -serve-floor ADDR UPSTREAM): nothing of APF,
//	                 authentication, deadlines, pools, metrics or logs.
//	                 The floor of apf's design: apf's distance to it is
//	                 what its features cost, its distance to nginx what
//	                 the design (a goroutine a connection) does
//	event-floor      an HTTP/1.1 relay on event loops (this program run
//	                 with -serve-events ADDR UPSTREAM): one epoll loop a
//	                 worker, each on its own thread with its own listener,
//	                 reading and writing every connection it holds; the
//	                 messages framed by their headers and relayed as they
//	                 came, nothing else. The floor of the other design: its
//	                 distance to apf-floor is what the goroutine a
//	                 connection and net/http's request model cost
//	event-apf        event-floor with APF in it (-serve-events-apf ADDR
//	                 UPSTREAM TOKENS LIMIT): the user from the bearer
//	                 token, classification, work estimate and admission
//	                 by a controller with the built-in configuration and
//	                 -apf-concurrency-limit seats, the seat given back
//	                 once the answer is relayed, the PF headers on every
//	                 answer. Admission never blocks a loop
//	                 (controller.AdmitFunc): a request that queues waits
//	                 on its connection and the level's decision comes
//	                 back through the loop's eventfd
//	go-reverseproxy  net/http/httputil.ReverseProxy, this program run
//	                 with -serve-reverseproxy ADDR UPSTREAM: a reference
//	                 for what Go's own proxying costs
//
// Every proxy, the upstream and the Go relays get -workers (2) workers:
// nginx worker_processes, HAProxy nbthread, GOMAXPROCS. apf's
// --concurrency-limit is -apf-concurrency-limit (10,000), which gives the
// user's level more seats than the loads keep requests outstanding, so
// that APF classifies and admits every request (a seat taken and given
// back) and queues or refuses none: what is measured is the data path,
// not the limit. Before a row's first measurement the program checks that
// a request through it is answered 200 with 1 KiB and, through apf, with
// X-Kubernetes-PF-FlowSchema-UID: APF ran.
//
// The measurements (-measure):
//
//	throughput  wrk -t workers -c connections -d duration, HTTP/1.1
//	            keep-alive: requests answered 2xx a second, as a ratio
//	            of direct's and of nginx's
//	tls         the same over HTTPS, TLS terminated by nginx, HAProxy
//	            and apf with one self-signed ECDSA P-256 certificate the
//	            program makes: ratio of nginx's
//	h2          HTTP/2 clients over TLS (ALPN h2): h2load -t workers
//	            -c connections -m streams -D duration against nginx,
//	            HAProxy and apf: ratio of HAProxy's
//	cpu         a fixed rate (-rate, 5,000 a second) over
//	            -rate-connections (50) keep-alive connections for
//	            duration, sent at fixed times whatever the answers (an
//	            open loop; a connection pipelines its next request when
//	            the last is not answered yet): the CPU time (utime+stime
//	            in /proc/PID/stat) of the proxy's whole process group and
//	            of the upstream's, from just before the first request to
//	            the last answer, divided by the requests answered 200
//	latency     one client, -warmup then -latency-requests requests in
//	            sequence on one keep-alive connection: p50 and p99, the
//	            part of them added to direct's, and their ratio of nginx's
//
// The fixed-rate and latency clients are this program's own: HTTP/1.1
// written and read over a net.Conn, far cheaper than net/http's client,
// since the load generator shares the machine with what it measures.
// Everything runs on one machine: the figures are those of the proxies and
// their load generators sharing its cores, meaningful as ratios measured
// in one run on an otherwise quiet machine.
//
// A proxy is started once for its plain HTTP measurements (latency, cpu,
// throughput, in that order: light loads before heavy ones) and once more
// for its TLS ones. With -runs N every row is run N times, interleaved
// (round 1 of every row, then round 2, ...), and the tables, in markdown,
// give each figure's median over the runs.
//
// nginx, haproxy, wrk and h2load are taken from PATH (the Makefile
// installs them with apt-get when missing), apf from -apf. Every process
// the program starts is stopped by it, and every wait is bounded.
package main
