# apf — build, run and test entry points.
#
# `make run` and `make test` are the two commands a fresh clone needs; every
# tool they use is installed here, pinned, into ./bin.

GO          ?= go
BIN         := $(CURDIR)/bin
STATICCHECK := $(BIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
BENCHSTAT   := $(BIN)/benchstat
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
PKGS        := ./...
# Timeouts of the test binaries: they stop a test that hangs. They are far
# above what the tests take on two idle cores (internal/server's race run
# about six minutes), because a busy machine takes two or three times as
# long, and a timeout is no place to measure speed.
UNIT_TIMEOUT ?= 30m
MODULE_TIMEOUT ?= 15m

.PHONY: all build run test lint fmt-check vet staticcheck unit e2e examples peer-test kube-bins kube-test bench bench-peer bench-streams bench-adaptive bench-gateway gateway-tools bench-datapath datapath-tools fuzz soak clean chromium report-screenshot image image-test image-push buildah promtool rules-test observability-test console-test console-screenshot

all: build

# The version and commit apf version prints, stamped into the binary; a
# binary built without them (go install, go build) reads what the Go
# toolchain recorded instead. The binary is static (no cgo) and free of
# the build machine's paths, so that `make image` can put it as it is into
# the container image.
APF_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
APF_COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
APF_LDFLAGS := -X main.version=$(APF_VERSION) -X main.commit=$(APF_COMMIT)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(APF_LDFLAGS)' -o $(BIN)/apf ./cmd/apf

# run: the live demo on the embedded default configuration: apf serve in
# front of a demo API, a flooding client and well-behaved ones, a table
# redrawn every second, a summary at the end (Ctrl-C stops it earlier).
run: build
	$(BIN)/apf demo --duration 60s

# chromium comes first: cmd/apf's browser test renders the sim report in it
# and, under CI, fails rather than skips without it.
test: chromium lint unit e2e examples image-test rules-test observability-test console-test peer-test kube-test

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

# unit: the tests that run kubectl use bin/kubectl (kube-bins), the version
# apf follows, rather than whatever kubectl the machine has; and test/testproc,
# the process runner the outside-in test modules share.
unit: kube-bins
	$(GO) test -race -count=1 -timeout $(UNIT_TIMEOUT) $(PKGS)
	cd test/testproc && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# e2e: load tests over real HTTP on loopback, built without -race (they
# measure APF under load, which the race detector's cost would swamp).
e2e:
	$(GO) test -count=1 -timeout $(MODULE_TIMEOUT) -run 'TestElephantAndMice' ./apfhttp/
	$(GO) test -count=1 -timeout $(MODULE_TIMEOUT) -run 'TestGatewayFairness|TestSimMatchesServe|TestChaos|TestOverload|TestRollingRestart|TestSharedConcurrencyLimit|TestSharedBudgetKill9' ./internal/server/

# examples: build every program under examples/ into ./bin and run each in
# its self-test mode (loopback only, a few seconds in all).
examples:
	$(GO) build -o $(BIN)/ ./examples/...
	$(BIN)/httpservice -selftest
	$(BIN)/grpcstyle

# image: the container image of the Containerfile, built offline from the
# binary `make build` produced and the host's CA certificates, copied into
# bin/image as the build context (APF_BINARY=context: the Containerfile's Go
# stage, and the registry it would come from, are never used). buildah
# (installed when missing) builds it without a daemon into a store of its
# own under bin/containers, with the vfs driver, which needs no overlay
# mount. The image is tagged localhost/apf:VERSION, VERSION being what the
# binary's apf version prints (its labels too), written to
# bin/apf-image.tar as an OCI archive, and named in bin/apf-image.ref. The
# store keeps the latest image only (the stages' working containers and
# images go too).
IMAGE_STORE   := $(BIN)/containers
BUILDAH       := buildah --root $(IMAGE_STORE)/storage --runroot $(IMAGE_STORE)/run --storage-driver vfs
IMAGE_ARCHIVE := $(BIN)/apf-image.tar
IMAGE_REF     := $(BIN)/apf-image.ref
HOST_CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt

image: build buildah
	rm -rf $(BIN)/image $(IMAGE_ARCHIVE) $(IMAGE_REF)
	mkdir -p $(BIN)/image
	cp $(BIN)/apf $(BIN)/image/apf
	cp $(HOST_CA_CERTS) $(BIN)/image/ca-certificates.crt
	@set -e; \
	json=$$($(BIN)/image/apf version -o json); \
	version=$$(printf '%s\n' "$$json" | sed -n 's/^  "version": "\(.*\)",$$/\1/p'); \
	commit=$$(printf '%s\n' "$$json" | sed -n 's/^  "commit": "\(.*\)",$$/\1/p'); \
	[ -n "$$version" ] || { echo "$(BIN)/apf version -o json gave no version: $$json" >&2; exit 1; }; \
	tag=$$(printf '%s' "$$version" | tr -c 'A-Za-z0-9_.-' '_'); \
	$(BUILDAH) rmi --all --force >/dev/null; \
	set -x; \
	$(BUILDAH) build --quiet --identity-label=false -f Containerfile -t localhost/apf:$$tag \
		--build-arg APF_BINARY=context --build-arg VERSION="$$version" --build-arg COMMIT="$$commit" \
		--build-arg CREATED="$$(date -u +%Y-%m-%dT%H:%M:%SZ)" $(BIN)/image; \
	$(BUILDAH) push --quiet localhost/apf:$$tag oci-archive:$(IMAGE_ARCHIVE):apf:$$tag; \
	{ set +x; } 2>/dev/null; \
	$(BUILDAH) rm --all >/dev/null; $(BUILDAH) rmi --prune >/dev/null; \
	echo localhost/apf:$$tag > $(IMAGE_REF)

# image-test: the image as built, inspected (deploy/image_test.go): its
# entrypoint, user and labels, its files, and the binary taken out of the
# archive's layers, run.
image-test: image
	APF_IMAGE=$$(cat $(IMAGE_REF)) APF_IMAGE_ARCHIVE=$(IMAGE_ARCHIVE) APF_BUILDAH='$(BUILDAH)' APF_BINARY=$(BIN)/apf \
		$(GO) test -count=1 -run '^TestImage$$' ./deploy/

# image-push: copy the image `make image` built to IMAGE_DEST, any
# destination buildah push takes (docker://REGISTRY/apf:TAG, oci:DIR:TAG).
image-push: buildah
	@[ -n "$(IMAGE_DEST)" ] || { echo "give IMAGE_DEST, e.g. make image-push IMAGE_DEST=docker://registry.example.com/apf:v1" >&2; exit 2; }
	$(BUILDAH) push $$(cat $(IMAGE_REF)) $(IMAGE_DEST)

# peer-test: differential tests against upstream k8s.io/apiserver (separate
# module). Without -race: it checks answers, and building upstream's tree with
# the race detector would double the cost of a cold CI run.
peer-test:
	cd bench/peer && $(GO) vet ./... && $(GO) test -count=1 -timeout $(MODULE_TIMEOUT) ./...

# kube-bins: kube-apiserver and kubectl v1.37.2, built from the k8s.io/kubernetes
# module that test/kube requires, into ./bin. Rebuilt only when they are
# missing or test/kube's go.mod or go.sum changed. Without -race, trimmed
# and stripped; the version variables say v1.37.2 as a release build's do
# (kubectl version, /version, the User-Agent).
KUBE_VERSION := v1.37.2
KUBE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=37 -X $(p).gitTreeState=clean)
KUBE_BINS := $(BIN)/kube-apiserver $(BIN)/kubectl

kube-bins: $(KUBE_BINS)

$(BIN)/kube-apiserver $(BIN)/kubectl: test/kube/go.mod test/kube/go.sum
	cd test/kube && $(GO) build -trimpath -ldflags='$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

# The tools under ./bin also answer to their relative names (make
# bin/kubectl), as a shell in the checkout would call them.
bin/kube-apiserver bin/kubectl bin/staticcheck bin/benchstat: bin/%: $(BIN)/%
	@:

# kube-test: differential tests of apf serve against a real kube-apiserver
# and kubectl (test/kube, a separate module): the same requests to both,
# the answers compared. Without -race, like peer-test.
kube-test: build kube-bins
	cd test/kube && $(GO) vet ./... && $(GO) test -count=1 -timeout $(MODULE_TIMEOUT) ./...

# rules-test: promtool's checks of the Prometheus rules of
# deploy/observability: the rule file is valid and its unit tests
# (apf-rules.test.yaml: input series, the alerts and recorded values
# expected) pass.
RULES_DIR := deploy/observability/prometheus
rules-test: promtool
	$(PROMTOOL) check rules $(RULES_DIR)/apf-rules.yaml
	cd $(RULES_DIR) && $(PROMTOOL) test rules apf-rules.test.yaml

# observability-test: the Grafana dashboard and the rules against apf serve
# (test/observability, a separate module: it requires
# github.com/prometheus/prometheus for the PromQL parser): every expression
# parses and names only metrics and labels bin/apf serve exports after
# traffic; the dashboard imports as it is; promtool's tests cover every rule.
observability-test: build
	cd test/observability && $(GO) vet ./... && $(GO) test -count=1 -timeout $(MODULE_TIMEOUT) ./...

# console-test: the live web console of bin/apf serve in headless Chromium
# (test/console, a separate module: it requires chromedp): every level
# shown, already before the first event arrives, the numbers moving while a
# flood starts and stops, a level's queue picture opened with the keyboard,
# every panel fitting 1400 px, nothing loaded from the network. It fails,
# rather than skips, without chromium when CI is set.
console-test: build chromium
	cd test/console && $(GO) vet ./... && $(GO) test -count=1 -timeout $(MODULE_TIMEOUT) ./...

# console-screenshot: the same test, with the flood held long enough to
# draw some history, keeping its screenshot as docs/images/console.png, and
# the page's first paint (its event stream held back) as
# docs/images/console-first.png.
CONSOLE_PNG := docs/images/console.png
CONSOLE_FIRST_PNG := docs/images/console-first.png
console-screenshot: build chromium
	@mkdir -p $(dir $(CONSOLE_PNG))
	cd test/console && CONSOLE_SCREENSHOT=$(CURDIR)/$(CONSOLE_PNG) CONSOLE_FLOOD_HOLD=45s \
		CONSOLE_FIRST_SCREENSHOT=$(CURDIR)/$(CONSOLE_FIRST_PNG) \
		$(GO) test -count=1 -timeout 3m -run 'TestConsole$$|TestConsoleFirstLook$$' ./...
	@ls -l $(CONSOLE_PNG) $(CONSOLE_FIRST_PNG)

# bench: the Go benchmarks of every package, then bench-gateway,
# bench-adaptive and bench-datapath.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(MAKE) bench-gateway
	$(MAKE) bench-adaptive
	$(MAKE) bench-datapath

$(BENCHSTAT):
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

# bench-peer: apf's fair-queuing core against upstream's queueset, scenario by
# scenario (bench/peer, BenchmarkPeer/<scenario>/<impl>), printed by benchstat
# with upstream and apf as side-by-side columns and apf's change against
# upstream. benchstat only splits columns on key=value name parts, so the
# positional <scenario>/<impl> parts are rewritten to scenario=/impl= first.
# The defaults (10 runs of 500ms per benchmark) give benchstat enough samples
# and take about 4 minutes on 2 cores. Each run is a process of its own that
# measures every scenario once, apf then upstream, so that the two columns
# take turns on the machine: a VM's speed can change from one minute to the
# next (docs/benchmarks.md, "The saturated scenario and the machine"), and
# ten apf runs followed by ten upstream runs would compare two machines; the
# saturated scenario's runs are then split by the machine each had
# (bench/peer/cmd/peermodes). The raw output stays in bin/peer-bench.txt.
PEER_BENCH_COUNT ?= 10
PEER_BENCHTIME   ?= 500ms
bench-peer: $(BENCHSTAT)
	@mkdir -p $(BIN)
	cd bench/peer && $(GO) test -c -o $(abspath $(BIN))/peer.test .
	{ cd bench/peer && rc=0 && for i in $$(seq $(PEER_BENCH_COUNT)); do \
		$(abspath $(BIN))/peer.test -test.run '^$$' -test.bench '^BenchmarkPeer$$' -test.benchmem \
			-test.count 1 -test.benchtime $(PEER_BENCHTIME) || rc=$$?; \
	done; echo $$rc > $(abspath $(BIN))/peer-bench.rc; } | tee $(BIN)/peer-bench.txt
	@exit $$(cat $(BIN)/peer-bench.rc)
	sed -E 's#^BenchmarkPeer/([^/[:space:]]+)/([^/[:space:]-]+)#BenchmarkPeer/scenario=\1/impl=\2#' \
		$(BIN)/peer-bench.txt > $(BIN)/peer-bench.keyed.txt
	$(BENCHSTAT) -col '/impl@(upstream apf)' $(BIN)/peer-bench.keyed.txt
	cd bench/peer && $(GO) run ./cmd/peermodes $(BIN)/peer-bench.txt

# bench-streams: held watch streams through apf serve --upstream against a
# plain httputil.ReverseProxy (bench/streams): 20,000 over HTTP/2 client
# connections and 8,000 over HTTP/1.1, RSS per stream and CPU per relayed
# event; a few minutes. STREAMS_FLAGS adds the program's own flags
# (-h2-streams, -h1-streams, -period, -window, -profiles -dir DIR).
STREAMS_FLAGS ?=
bench-streams:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/streams-bench ./bench/streams
	$(BIN)/streams-bench $(STREAMS_FLAGS)

# bench-adaptive: the adaptive server concurrency limit against static ones
# (bench/adaptive) in front of an upstream whose capacity goes 40 -> 10 ->
# 40, a flood and four light users, then deadline-aware queueing off and on
# under an open flood; about six minutes. ADAPTIVE_FLAGS adds the program's
# own flags (-phase, -settle, -flood, -deadline-measure, -adaptive=false,
# -deadline=false).
ADAPTIVE_FLAGS ?=
bench-adaptive:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/adaptive-bench ./bench/adaptive
	$(BIN)/adaptive-bench $(ADAPTIVE_FLAGS)

# bench-gateway: apf serve beside nginx and HAProxy in front of a service
# (bench/gateway): an upstream of 20 ms requests serving 20 at once, one
# user flooding over 200 connections, four light users at 5 req/s, 20 s a
# row, every proxy with 2 workers, all on loopback; the table of
# docs/benchmarks.md#fairness-in-front-of-a-service, medians of
# GATEWAY_RUNS runs, about 3 minutes a run. GATEWAY_FLAGS adds the
# program's own flags (-duration, -rows, -dir DIR -keep for the proxies'
# configurations and logs).
GATEWAY_RUNS  ?= 3
GATEWAY_FLAGS ?=
bench-gateway: build gateway-tools
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/gateway-bench ./bench/gateway
	PATH="$$PATH:/usr/sbin:/sbin" $(BIN)/gateway-bench -apf $(BIN)/apf -runs $(GATEWAY_RUNS) $(GATEWAY_FLAGS)

# gateway-tools: make Debian's nginx, haproxy and wrk available (make
# bench-gateway runs them). Nothing to do when all three are on PATH;
# otherwise the missing ones are installed with apt-get, as root or
# through sudo. The benchmark starts its own nginx and HAProxy processes
# on loopback ports with configurations of its own; on a machine run by
# systemd, the packages also enable their system services.
GATEWAY_TOOLS := nginx haproxy wrk
gateway-tools:
	@missing=; for t in $(GATEWAY_TOOLS); do \
		PATH="$$PATH:/usr/sbin:/sbin" command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	$(call apt_sudo,$$missing); \
	set -x; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing

# bench-datapath: the gateway's data path beside nginx and HAProxy
# (bench/datapath): an upstream answering 1 KiB at once, in front of it
# nothing, nginx, HAProxy, apf serve (built-in configuration, a token user),
# apf's own server and transport with a bare relay, an HTTP/1.1 relay on
# event loops with and without APF in it, and a plain Go reverse proxy,
# every one with 2 workers, all on loopback:
# throughput with wrk over plain HTTP and TLS, HTTP/2 clients with h2load,
# CPU per request at 5,000 req/s and the latency one sequential client
# sees; the tables of docs/benchmarks.md#the-gateways-data-path-beside-nginx-and-haproxy,
# medians of DATAPATH_RUNS runs, interleaved, about 3 minutes a run.
# DATAPATH_FLAGS adds the program's own flags (-duration, -rows, -measure,
# -rate, -dir DIR -keep for the configurations and logs).
DATAPATH_RUNS  ?= 3
DATAPATH_FLAGS ?=
bench-datapath: build datapath-tools
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/datapath-bench ./bench/datapath
	PATH="$$PATH:/usr/sbin:/sbin" $(BIN)/datapath-bench -apf $(BIN)/apf -runs $(DATAPATH_RUNS) $(DATAPATH_FLAGS)

# datapath-tools: gateway-tools, and h2load (Debian's nghttp2-client),
# which make bench-datapath runs for its HTTP/2 clients; installed the same
# way when it is not on PATH.
datapath-tools: gateway-tools
	@if command -v h2load >/dev/null 2>&1; then exit 0; fi; \
	$(call apt_sudo,h2load); \
	set -x; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nghttp2-client

# soak: the long variants of the load tests (APF_SOAK=1): the chaos run
# for 5 minutes and the overload run for 10, without -race like e2e; the
# storage faults with every etcd member down for 90 s; five rounds of
# rolling restarts; three cycles of the shared concurrency limit's uneven
# load, kill, etcd outage and new replica, a minute of load in each; a
# replica process killed with SIGKILL after half a minute of load.
soak:
	APF_SOAK=1 $(GO) test -count=1 -timeout 60m -run 'TestChaos|TestOverload|TestStorageFaults|TestRollingRestart|TestSharedConcurrencyLimit|TestSharedBudgetKill9' -v ./internal/server/

# fuzz: run every fuzz target for FUZZTIME each. A new interesting input is
# minimized for at most FUZZMINIMIZE: the default minute stalls a target
# whose inputs are whole configurations. Go 1.26's fuzzing coordinator can
# fail a target at the end of its time with "context deadline exceeded"
# when a worker is busy as the time runs out, without any failing input; a
# target that fails is run once more, which a real finding fails again at
# once (its input is kept in the package's testdata/fuzz and run first).
FUZZTIME ?= 60s
FUZZMINIMIZE ?= 5s
fuzz_one = $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $(2) || \
	{ echo "$(1) failed; running it once more" >&2; $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $(2); }
fuzz:
	$(call fuzz_one,FuzzDecode,./config)
	$(call fuzz_one,FuzzRoundTrip,./config)
	$(call fuzz_one,FuzzQueueSet,./fairqueue)
	$(call fuzz_one,FuzzEstimate,./workestimate)
	$(call fuzz_one,FuzzParse,./request)
	$(call fuzz_one,FuzzClassify,./classify)
	$(call fuzz_one,FuzzCompile,./classify)
	$(call fuzz_one,FuzzExplain,./classify)
	$(call fuzz_one,FuzzExplain,./engine)
	$(call fuzz_one,FuzzItemCounter,./apfhttp)
	$(call fuzz_one,FuzzTokenFile,./internal/auth/authn)
	$(call fuzz_one,FuzzABACPolicy,./internal/auth/authz)
	$(call fuzz_one,FuzzImpersonationHeaders,./internal/auth/impersonation)
	$(call fuzz_one,FuzzCreateBody,./internal/api/flowapi)
	$(call fuzz_one,FuzzPatch,./internal/api/flowapi)
	$(call fuzz_one,FuzzWriteMetadata,./internal/api/flowapi)
	$(call fuzz_one,FuzzQueryParams,./internal/api/flowapi)
	$(call fuzz_one,FuzzOpenAPIAccept,./internal/api/discovery)
	$(call fuzz_one,FuzzDiscoveryAccept,./internal/api/discovery)
	$(call fuzz_one,FuzzMerge,./internal/api/discovery)
	$(call fuzz_one,FuzzParseQuery,./internal/debug/explain)
	$(call fuzz_one,FuzzParseLine,./internal/debug/explain)
	$(call fuzz_one,FuzzFormatExplanation,./apfhttp)
	$(call fuzz_one,FuzzLineHandler,./internal/server)
	$(call fuzz_one,FuzzAuditSource,./sim)
	$(call fuzz_one,FuzzParseWorkload,./sim)
	$(call fuzz_one,FuzzDecode,./internal/proxy/route)
	$(call fuzz_one,FuzzMatchesNetHTTP,./internal/server/h1)
	$(call fuzz_one,FuzzParseRequest,./internal/server/h1)
	$(call fuzz_one,FuzzAppendAnswer,./internal/server/h1)
	$(call fuzz_one,FuzzAnswer,./internal/proxy/wire)
	$(call fuzz_one,FuzzAnswerPieces,./internal/proxy/wire)

# apt_sudo,TOOL: the shell lines that stop with a message when TOOL cannot
# be installed with apt-get, and otherwise set $sudo to what runs apt-get as
# root ("" for root, "sudo" for others).
apt_sudo = if ! command -v apt-get >/dev/null 2>&1; then \
		echo "$(1) is not installed and apt-get is not available: install $(1) by hand" >&2; exit 1; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; \
	elif command -v sudo >/dev/null 2>&1; then sudo=sudo; \
	else echo "$(1) is not installed, and installing it needs root: run make as root or install sudo" >&2; exit 1; fi

# chromium: make Debian's chromium available (the browser test of the apf sim
# report needs it). Nothing to do when it is on PATH; otherwise installed with
# apt-get, as root or through sudo.
chromium:
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	$(call apt_sudo,chromium); \
	set -x; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium

# buildah: make Debian's buildah available (make image builds with it).
# Nothing to do when it is on PATH; otherwise installed with apt-get, as
# root or through sudo. Its recommended packages (a runtime, fuse-overlayfs)
# are not needed: the image is built without running a container, on vfs.
buildah:
	@if command -v buildah >/dev/null 2>&1; then exit 0; fi; \
	$(call apt_sudo,buildah); \
	set -x; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends buildah

# promtool: make Prometheus's promtool available (make rules-test runs it).
# Nothing to do when it is on PATH or in ./bin; otherwise Debian's
# prometheus package is fetched with apt-get download (after apt-get update,
# as root or through sudo) and only its promtool is unpacked into ./bin:
# installing the package would also start a Prometheus server.
PROMTOOL = $(shell command -v promtool 2>/dev/null || echo $(BIN)/promtool)
promtool:
	@if command -v promtool >/dev/null 2>&1 || [ -x $(BIN)/promtool ]; then exit 0; fi; \
	$(call apt_sudo,promtool); \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && set -ex && \
	$$sudo apt-get update && \
	(cd "$$tmp" && apt-get download prometheus && dpkg-deb -x prometheus_*.deb root) && \
	mkdir -p $(BIN) && cp "$$tmp/root/usr/bin/promtool" $(BIN)/promtool && \
	$(BIN)/promtool --version

# report-screenshot: run apf sim on the annotated flood workload and save a
# screenshot of its HTML report, as shown in examples/sim/README.md. The
# window is wide enough for three plots a row and tall enough to reach the
# flooded global-default level.
REPORT_DIR  ?= /tmp/apf-sim-report
REPORT_PNG  := docs/images/sim-report.png
REPORT_WINDOW ?= 1440,2380
report-screenshot: build chromium
	$(BIN)/apf sim examples/sim/flood.yaml --report $(REPORT_DIR) > /dev/null
	@mkdir -p $(dir $(REPORT_PNG))
	@profile=$$(mktemp -d); \
	timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir=$$profile/profile --window-size=$(REPORT_WINDOW) \
		--screenshot=$(CURDIR)/$(REPORT_PNG) file://$(REPORT_DIR)/index.html 2>$$profile/stderr; \
	rc=$$?; [ $$rc = 0 ] || grep -v 'dbus/' $$profile/stderr >&2; rm -rf $$profile; exit $$rc
	@ls -l $(REPORT_PNG)

clean:
	rm -rf $(BIN)
