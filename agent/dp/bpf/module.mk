# eBPF backend (agent/dp/bpf): CO-RE TC programs, their skeleton, the loader
# library, golden-packet and traffic tests, and the map-population bench.
# Guarded: the top Makefile globs two levels deep; mk/rules.mk pulls in the
# third level, and a later glob change must not define everything twice.
ifndef GALACTIC_DP_BPF_MK
GALACTIC_DP_BPF_MK := 1

BPFTOOL ?= bpftool
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I. -Ibuild/gen
BPF_SRCS := $(wildcard agent/dp/bpf/*.bpf.h) agent/dp/bpf/srv6.h

build/gen/vmlinux.h:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  BTF     $@")
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

build/gen/srv6.bpf.o: agent/dp/bpf/srv6.bpf.c $(BPF_SRCS) build/gen/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(CLANG) $(BPF_CFLAGS) -c -o $@ $<

build/gen/srv6.skel.h: build/gen/srv6.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name srv6_bpf > $@.tmp && mv $@.tmp $@

GENERATED += build/gen/vmlinux.h build/gen/srv6.skel.h

$(eval $(call lib,gdpbpf,agent/dp/bpf/bpf_dp.c agent/dp/bpf/bpf_sync.c agent/dp/bpf/bpf_backend.c))

$(eval $(call netns_test,test_bpf_golden,tests/netns/test_bpf_golden.c,gdpbpf gdp gnl,bpf nl))
$(eval $(call bench,bench_bpf_maps,tests/bench/bench_bpf_maps.c tests/bench/bench.c,gdpbpf gdp gnl,bpf nl jansson))
$(eval $(call bench,bench_bpf_fwd,tests/bench/bench_bpf_fwd.c tests/bench/bench.c,gdpbpf gdp gnl,bpf nl check jansson))
$(eval $(call netns_test,test_bpf_topo,tests/netns/test_bpf_topo.c tests/lib/topo.c,gagent gdpbpf gdp gnl gcommon,bpf nl jansson pthread))
$(eval $(call netns_test,test_bpf_traffic,tests/netns/test_bpf_traffic.c,gdpbpf gdp gnl,bpf nl))

endif
