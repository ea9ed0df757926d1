# Build rules shared by every module.mk fragment.
#
# A fragment declares things with these macros (paths relative to the repo root):
#   $(eval $(call lib,NAME,SRCS))                 static library build/<v>/libNAME.a
#   $(eval $(call prog,NAME,SRCS,LIBS,LDLIBS))    program build/rel/bin/NAME (+ build/san/bin/NAME)
#   $(eval $(call unit_test,NAME,SRCS,LIBS,LDLIBS))   check test run by `make test-unit` (sanitized)
#   $(eval $(call netns_test,NAME,SRCS,LIBS,LDLIBS))  check test needing root + netns (sanitized)
#   $(eval $(call e2e_test,NAME,SRCS,LIBS,LDLIBS))    check test against the real control plane
#   $(eval $(call bench,NAME,SRCS,LIBS,LDLIBS))       benchmark program run by `make bench` (release)
#   $(eval $(call fuzzer,NAME,SRCS,LIBS,LDLIBS))      libFuzzer target (clang) run by `make fuzz`
# LIBS are names declared with `lib` (order matters: dependants first).
# LDLIBS are names of LIB_<name> below (jansson curl nl bpf check mhd yaml nft pthread m z,
# and jansson_static for galactic-cni).

# Pattern rules list $$(GENERATED) (BPF skeletons, vmlinux.h) as order-only
# prerequisites; fragments append to it after this file is read.
.SECONDEXPANSION:

CC      ?= cc
CLANG   ?= clang
PKGS    := jansson libcurl libnl-3.0 libbpf check libmicrohttpd yaml-0.1 libnftables
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# snprintf truncation is deliberate where used (bounded names); lengths that
# matter are checked explicitly at input boundaries.
CWARN   := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter -Wno-format-truncation
CBASE   := -std=gnu17 -g -D_GNU_SOURCE -MMD -MP -I. -Ibuild/gen $(PKG_CFLAGS) $(CWARN)
CFLAGS_rel := $(CBASE) -O2 -fstack-protector-strong
CFLAGS_san := $(CBASE) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS_rel :=
LDFLAGS_san := -fsanitize=address,undefined
LIB_jansson := $(shell pkg-config --libs jansson 2>/dev/null)
# galactic-cni is copied onto the node's CNI bin dir, where libjansson need
# not be installed: jansson is linked in from libjansson.a (libjansson-dev),
# glibc stays dynamic (valgrind follows a dynamic glibc; docs/cni.md "Install").
LIB_jansson_static := -Wl,-Bstatic $(shell pkg-config --static --libs jansson 2>/dev/null) -Wl,-Bdynamic
LIB_curl    := $(shell pkg-config --libs libcurl 2>/dev/null)
LIB_nl      := $(shell pkg-config --libs libnl-3.0 2>/dev/null)
LIB_bpf     := $(shell pkg-config --libs libbpf 2>/dev/null) -lelf -lz
LIB_check   := $(shell pkg-config --libs check 2>/dev/null)
LIB_mhd     := $(shell pkg-config --libs libmicrohttpd 2>/dev/null)
LIB_yaml    := $(shell pkg-config --libs yaml-0.1 2>/dev/null)
LIB_nft     := $(shell pkg-config --libs libnftables 2>/dev/null)
LIB_pthread := -lpthread
LIB_m       := -lm
LIB_z       := -lz

ALL_REL     :=
ALL_SAN     :=
UNIT_TESTS  :=
NETNS_TESTS :=
E2E_TESTS   :=
BENCHES     :=
FUZZERS     :=
SELFTEST_CHECKS :=
GENERATED   :=

# V=1 shows full command lines.
ifeq ($(V),1)
Q :=
else
Q := @
endif

objs = $(addprefix build/$(1)/,$(2:.c=.o))
libfiles = $(foreach l,$(2),build/$(1)/lib$(l).a)
ldlibs = $(foreach l,$(1),$(LIB_$(l)))
# A library declares the system libraries it needs once (LIBDEPS_<name> in its
# fragment); everything linking it gets them. Expanded at link time, so the
# order in which fragments are read does not matter.
libdeps = $(foreach l,$(1),$$(LIBDEPS_$(l)))

build/rel/%.o: %.c | $$(GENERATED)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_rel) -c -o $@ $<

build/san/%.o: %.c | $$(GENERATED)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_san) -c -o $@ $<

define lib
SRCS_$(1) := $(2)
build/rel/lib$(1).a: $(call objs,rel,$(2))
	@mkdir -p $$(@D); rm -f $$@; ar rcs $$@ $$^
build/san/lib$(1).a: $(call objs,san,$(2))
	@mkdir -p $$(@D); rm -f $$@; ar rcs $$@ $$^
-include $(patsubst %.o,%.d,$(call objs,rel,$(2)) $(call objs,san,$(2)))
endef

# prog NAME SRCS LIBS LDLIBS-names
define prog
build/rel/bin/$(1): $(call objs,rel,$(2)) $(call libfiles,rel,$(3))
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD      $$@")
	$(Q)$(CC) $(LDFLAGS_rel) -o $$@ $$^ $$(call ldlibs,$(4) $(call libdeps,$(3)))
build/san/bin/$(1): $(call objs,san,$(2)) $(call libfiles,san,$(3))
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD      $$@")
	$(Q)$(CC) $(LDFLAGS_san) -o $$@ $$^ $$(call ldlibs,$(4) $(call libdeps,$(3)))
ALL_REL += build/rel/bin/$(1)
ALL_SAN += build/san/bin/$(1)
-include $(patsubst %.o,%.d,$(call objs,rel,$(2)) $(call objs,san,$(2)))
endef

# Every suite links tests/lib/gtest.c, which wraps check's _tcase_add_test to
# count the tests it registers (the runner proves that all of them ran).
GTEST_LDFLAGS := -Wl,--wrap=_tcase_add_test
define _test
build/san/tests/$(2): $(call objs,san,$(3) tests/lib/gtest.c) $(call libfiles,san,$(4))
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD      $$@")
	$(Q)$(CC) $(LDFLAGS_san) $(GTEST_LDFLAGS) -o $$@ $$^ $$(call ldlibs,$(5) check $(call libdeps,$(4)))
$(1) += build/san/tests/$(2)
-include $(patsubst %.o,%.d,$(call objs,san,$(3) tests/lib/gtest.c))
endef
unit_test  = $(call _test,UNIT_TESTS,$(1),$(2),$(3),$(4))
netns_test = $(call _test,NETNS_TESTS,$(1),$(2),$(3),$(4))
e2e_test   = $(call _test,E2E_TESTS,$(1),$(2),$(3),$(4))
# Check binaries the runner must fail (tests/runner-selftest.sh), in no suite.
selftest_check = $(call _test,SELFTEST_CHECKS,$(1),$(2),$(3),$(4))

define bench
build/rel/bench/$(1): $(call objs,rel,$(2)) $(call libfiles,rel,$(3))
	@mkdir -p $$(@D)
	$(CC) $(LDFLAGS_rel) -o $$@ $$^ $$(call ldlibs,$(4) $(call libdeps,$(3)))
BENCHES += build/rel/bench/$(1)
-include $(patsubst %.o,%.d,$(call objs,rel,$(2)))
endef

# Fuzzers build every source with clang + libFuzzer + ASan/UBSan into build/fuzz.
CFLAGS_fuzz := $(filter-out -Wno-format-truncation,$(CBASE)) -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
build/fuzz/%.o: %.c | $$(GENERATED)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CLANG   $@")
	$(Q)$(CLANG) $(CFLAGS_fuzz) -c -o $@ $<
define fuzzer
build/fuzz/bin/$(1): $(call objs,fuzz,$(2) $(foreach l,$(3),$(SRCS_$(l))))
	@mkdir -p $$(@D)
	@$(if $(Q),echo "  LD      $$@")
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -o $$@ $$^ $$(call ldlibs,$(4) $(call libdeps,$(3)))
FUZZERS += build/fuzz/bin/$(1)
endef
