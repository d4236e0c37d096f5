// Package proxies starts and stops the processes the loopback benchmarks
// put between their clients and an upstream (nginx, HAProxy, apf serve,
// helper processes of their own), writes the proxies' configurations, runs
// wrk and reads its summary, and holds the small statistics the benchmarks
// share (medians over runs, percentiles of latencies).
//
// Every process is started in a process group of its own, so that
// stopping it reaches its children too (nginx's workers), and with a
// parent-death signal, so that none outlives the benchmark that started
// it; StopOnSignal stops the ones still running when the benchmark is
// interrupted, since a terminal's Ctrl-C does not reach another process
// group. Every wait is bounded.
//
// The configurations are those of a plain reverse proxy with keep-alive
// connections to its upstream and as many workers as asked (nginx
// worker_processes, HAProxy nbthread, apf's GOMAXPROCS), over plain HTTP
// or TLS; a benchmark adds its own directives (a per-user limit, say)
// where the configuration has room for them.
package proxies
