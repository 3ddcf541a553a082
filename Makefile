# graspd: a GRASP server in C.  `make` builds every program into bin/,
# `make test` runs the whole suite, `make sanitize` runs it under
# AddressSanitizer and UndefinedBehaviorSanitizer.

PREFIX	?= /usr/local
DESTDIR	?=
O	?= build
BIN	?= bin

PKGS	 = libwebsockets libsecp256k1 libcjson sqlite3 libcrypto libssl \
	   nanomsg libevent libcmark
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CC	?= cc
CFLAGS	?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Icommon \
	   $(PKG_CFLAGS) -MMD -MP
override LDLIBS += $(PKG_LIBS) -lz -lm

SAN	 = -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined

ROLES	 = relayd syncd discoveryd historyd
COMMON_SRC := $(wildcard common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(O)/%.o)
TLIB_SRC   := $(wildcard tests/lib/*.c)
TLIB_OBJ   := $(TLIB_SRC:%.c=$(O)/%.o)
UNIT_SRC   := $(wildcard tests/unit/*_test.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/unit/%)
INTEG_SRC  := $(wildcard tests/integration/*_test.c)
INTEG_BIN  := $(INTEG_SRC:tests/integration/%.c=$(O)/tests/integration/%)
BENCH_SRC  := $(wildcard tests/bench/*.c)
BENCH_BIN  := $(BENCH_SRC:tests/bench/%.c=$(O)/tests/bench/%)

# A role is built once its folder has sources.
BUILT_ROLES := $(foreach r,$(ROLES),$(if $(wildcard $(r)/*.c),$(r)))
PROGRAMS := $(BUILT_ROLES:%=$(BIN)/%) \
	    $(if $(wildcard supervisor/*.c),$(BIN)/graspd $(BIN)/graspctl)

.PHONY: all test check unit lint sanitize bench soak clean install deps \
	format
all: $(PROGRAMS)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<
# Only the tests (and the test peer and benchmarks) see tests/lib.
$(O)/tests/%.o: override CFLAGS += -Itests/lib
# common/ is linked by every process: it stays clean of these too.
$(O)/common/%.o: override CFLAGS += -Wshadow -Wconversion

$(O)/libcommon.a: $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

define role_template
$(BIN)/$(1): $(patsubst %.c,$(O)/%.o,$(wildcard $(1)/*.c)) $(O)/libcommon.a
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $$@ $$^ $(LDLIBS)
endef
$(foreach r,$(BUILT_ROLES),$(eval $(call role_template,$(r))))

# graspd (the supervisor) and graspctl.  LIBEXECDIR, where graspd looks
# for the roles when they are not beside it, is compiled into graspd; the
# stamp file rebuilds graspd.o when it changes (make install PREFIX=...).
LIBEXECDIR ?= $(PREFIX)/libexec/graspd
SUP_SRC	:= $(wildcard supervisor/*.c)
CTL_SRC	:= $(wildcard graspctl/*.c)
$(O)/supervisor/libexecdir.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIBEXECDIR)' | cmp -s - $@ || echo '$(LIBEXECDIR)' > $@
$(O)/supervisor/graspd.o: $(O)/supervisor/libexecdir.stamp
$(O)/supervisor/graspd.o: override CFLAGS += -DLIBEXECDIR='"$(LIBEXECDIR)"'
$(BIN)/graspd: $(SUP_SRC:%.c=$(O)/%.o) $(O)/libcommon.a
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BIN)/graspctl: $(CTL_SRC:%.c=$(O)/%.o) $(O)/libcommon.a
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
.PHONY: FORCE
FORCE:

# make install [PREFIX=/usr/local] [DESTDIR=]: graspd and graspctl in sbin,
# the roles in LIBEXECDIR, the manual, the configuration
# /etc/graspd/graspd.conf (the sample, every key at its default, which
# starts as it is; one that exists is kept) beside graspd.conf.sample, the
# systemd unit in SYSTEMDUNITDIR and the init script as
# INITDIR/graspd, with the paths filled in.
SYSCONFDIR	?= /etc/graspd
SYSTEMDUNITDIR	?= $(PREFIX)/lib/systemd/system
INITDIR		?= /etc/init.d
INSTALL_PATHS = -e 's|/usr/local/sbin|$(PREFIX)/sbin|g' \
	   -e 's|/usr/local/libexec/graspd|$(LIBEXECDIR)|g' \
	   -e 's|/usr/local/lib/systemd/system|$(SYSTEMDUNITDIR)|g' \
	   -e 's|/etc/graspd/graspd.conf|$(SYSCONFDIR)/graspd.conf|g'
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(LIBEXECDIR) \
	    $(DESTDIR)$(PREFIX)/share/man/man5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(SYSCONFDIR) \
	    $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(INITDIR)
	install -m 755 $(BIN)/graspd $(BIN)/graspctl $(DESTDIR)$(PREFIX)/sbin/
	$(if $(BUILT_ROLES),install -m 755 $(BUILT_ROLES:%=$(BIN)/%) \
	    $(DESTDIR)$(LIBEXECDIR)/)
	for m in $(wildcard man/*.5 man/*.8); do \
	    sed $(INSTALL_PATHS) $$m > \
	    $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/} || exit 1; \
	done
	install -m 644 etc/graspd.conf \
	    $(DESTDIR)$(SYSCONFDIR)/graspd.conf.sample
	[ -e $(DESTDIR)$(SYSCONFDIR)/graspd.conf ] || install -m 644 \
	    etc/graspd.conf $(DESTDIR)$(SYSCONFDIR)/graspd.conf
	sed $(INSTALL_PATHS) etc/graspd.init > $(DESTDIR)$(INITDIR)/graspd
	chmod 755 $(DESTDIR)$(INITDIR)/graspd
	sed $(INSTALL_PATHS) etc/graspd.service > \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/graspd.service

# make uninstall [PREFIX=] [DESTDIR=]: removes what install put in place,
# except the configuration graspd.conf (the operator's, perhaps edited).
# Neither creates nor removes the roles' user: the unit, the init script
# and the package make it (PRIVILEGES in graspd(8)).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/graspd $(DESTDIR)$(PREFIX)/sbin/graspctl
	rm -f $(ROLES:%=$(DESTDIR)$(LIBEXECDIR)/%)
	-rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null
	for m in $(wildcard man/*.5 man/*.8); do \
	    rm -f $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/}; \
	done
	rm -f $(DESTDIR)$(SYSCONFDIR)/graspd.conf.sample \
	    $(DESTDIR)$(INITDIR)/graspd $(DESTDIR)$(SYSTEMDUNITDIR)/graspd.service
.PHONY: uninstall

# make deb: a Debian package (dpkg-deb, no network) in $(O)/deb/, built
# for /usr by scripts/deb.sh; DEB_OUT, DEB_VERSION, DEB_MAINTAINER change
# where it goes, its version and its maintainer.
deb:
	O=$(O) sh scripts/deb.sh
.PHONY: deb

$(O)/tests/unit/%: $(O)/tests/unit/%.o $(TLIB_OBJ) $(O)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# The supervisor's restart policy, linked alone (no loop, no processes).
$(O)/tests/unit/suppolicy_test: $(O)/supervisor/sup_policy.o
# The role life cycle's table, with the policy whose verdicts it takes.
$(O)/tests/unit/supfsm_test: $(O)/supervisor/sup_fsm.o \
    $(O)/supervisor/sup_policy.o
$(O)/tests/integration/%: $(O)/tests/integration/%.o $(TLIB_OBJ) \
    $(O)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(O)/tests/bench/%: $(O)/tests/bench/%.o $(TLIB_OBJ) $(O)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The scriptable peer relay of the integration tests (tests/peer/peer.h).
$(O)/tests/peer/peer: $(patsubst %.c,$(O)/%.o,$(wildcard tests/peer/*.c)) \
    $(O)/tests/lib/relayproc.o $(O)/tests/lib/tdir.o $(O)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tests: $(UNIT_BIN) $(INTEG_BIN) $(BENCH_BIN) $(O)/tests/peer/peer
# The test programs' objects are kept between builds, not deleted as
# intermediate files, so that a change rebuilds only what it touches.
.SECONDARY:

test check: all tests
	O=$(O) BIN=$(BIN) sh tests/run.sh

unit: $(UNIT_BIN)
	O=$(O) BIN=$(BIN) sh tests/run.sh unit

sanitize:
	$(MAKE) O=build/san BIN=build/san/bin CFLAGS="-O1 -g $(SAN)" \
	    LDFLAGS="$(SAN)" test

bench: all tests
	sh scripts/deps.sh --bench
	O=$(O) BIN=$(BIN) sh tests/bench/run.sh

# Issue #11's long runs: kill -9 of every role 20 times, 2,000 clients.
soak: all tests
	O=$(O) BIN=$(BIN) sh tests/soak/run.sh

# The repository's own checks (tests/lint/run.sh): format, manual pages,
# scripts, the folders' file maps, install and uninstall.
lint: all
	BIN=$(BIN) sh tests/lint/run.sh

deps:
	sh scripts/deps.sh --test

# The tree's C files through .clang-format (make lint checks it).
format:
	git ls-files -z '*.c' '*.h' | xargs -0 clang-format -i

# make fuzz: the libFuzzer harnesses tests/fuzz/<name>_fuzz.c, built with
# clang against common/ compiled with the same sanitizers into
# $(FUZZ_O) (never against libcommon.a), then run one after another, each
# for FUZZ_SECONDS or, when it is set, FUZZ_RUNS inputs.  Each works on
# its own corpus in $(FUZZ_O)/corpus/<name>, seeded from the checked-in
# tests/fuzz/corpus/<name>, and leaves crashes in $(FUZZ_O)/artifacts/.
# FUZZ_TARGETS picks harnesses, FUZZ_ARGS adds libFuzzer options.
# "make test" runs each for a few seconds (tests/fuzz/run_short.sh).
FUZZ_CC		?= clang
FUZZ_O		?= build/fuzz
FUZZ_SECONDS	?= 600
FUZZ_RUNS	?=
FUZZ_ARGS	?=
FUZZ_SAN	 = -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		   -fno-omit-frame-pointer
FUZZ_CFLAGS	 = -g -O1 $(FUZZ_SAN) -std=gnu11 -Wall -Wextra \
		   -Wno-unused-parameter -Icommon -Irelayd $(PKG_CFLAGS) -MMD -MP
FUZZ_SRC	:= $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_NAMES	:= $(FUZZ_SRC:tests/fuzz/%_fuzz.c=%)
FUZZ_TARGETS	?= $(FUZZ_NAMES)
FUZZ_BIN	:= $(FUZZ_NAMES:%=$(FUZZ_O)/%_fuzz)
FUZZ_COMMON_OBJ := $(COMMON_SRC:%.c=$(FUZZ_O)/%.o)
FUZZ_LIMIT	 = $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))

.PHONY: fuzz fuzz-build fuzz-short
$(FUZZ_O)/common/%.o: common/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_O)/libcommon-fuzz.a: $(FUZZ_COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_O)/%_fuzz: tests/fuzz/%_fuzz.c $(FUZZ_O)/libcommon-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_O)/libcommon-fuzz.a $(PKG_LIBS) -lz -lm

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@for n in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_O)/corpus/$$n $(FUZZ_O)/artifacts/$$n || exit 1; \
	    dict=; [ -f tests/fuzz/$$n.dict ] && dict=-dict=tests/fuzz/$$n.dict; \
	    echo "# fuzz_$$n: $(FUZZ_LIMIT)"; \
	    $(FUZZ_O)/$${n}_fuzz $(FUZZ_LIMIT) -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix=$(FUZZ_O)/artifacts/$$n/ $$dict $(FUZZ_ARGS) \
		$(FUZZ_O)/corpus/$$n tests/fuzz/corpus/$$n || exit 1; \
	done

fuzz-short:
	FUZZ_O=$(FUZZ_O) FUZZ_CC=$(FUZZ_CC) sh tests/fuzz/run_short.sh

clean:
	rm -rf build bin

-include $(COMMON_OBJ:.o=.d) $(TLIB_OBJ:.o=.d)
-include $(wildcard $(O)/*/*.d $(O)/tests/*/*.d)
-include $(wildcard $(FUZZ_O)/*.d $(FUZZ_O)/common/*.d)
