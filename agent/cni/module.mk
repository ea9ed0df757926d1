# galactic-cni (the plugin) and the CNI pieces shared with the agent. libgcni
# needs common/mac.c: from libgmac where nothing links libgcommon.
CNI_CORE_SRCS := agent/cni/cni.c agent/cni/base62.c agent/cni/config.c \
	agent/cni/result.c agent/cni/proto.c
$(eval $(call lib,gcni,$(CNI_CORE_SRCS)))
# Linked with libjansson.a: the plugin needs nothing on a node beyond glibc
# (tests/images/test_images.sh reads its DT_NEEDED).
$(eval $(call prog,galactic-cni,agent/cni/plugin.c,gcni gmac,jansson_static))
# The upstream plugin names, so attachment definitions the VPC operator renders
# today reach galactic-cni unchanged: the same binary, the name picks the role
# (docs/cni.md). Symlinks here; a node installs them as copies or links.
CNI_ALIASES := galactic-veth galactic-bgp galactic-tap
define cni_alias
build/$(1)/bin/$(2): build/$(1)/bin/galactic-cni
	@ln -sfn galactic-cni $$@
endef
$(foreach v,rel san,$(foreach n,$(CNI_ALIASES),$(eval $(call cni_alias,$(v),$(n)))))
ALL_REL += $(CNI_ALIASES:%=build/rel/bin/%)
ALL_SAN += $(CNI_ALIASES:%=build/san/bin/%)
# The agent side (linked into galactic-agent): socket server + attach path.
$(eval $(call lib,gcniagent,agent/cni/listener.c agent/cni/verbs.c agent/cni/pod.c \
	agent/cni/learn.c))
# (links with gagent gdp gnl: agent/record, the model/backend and libgnl)

# Tests, benchmarks and fuzzers of the CNI path.
$(eval $(call unit_test,test_cni_config,tests/unit/test_cni_config.c,gcni gmac,jansson))
$(eval $(call unit_test,test_cni_learn,tests/unit/test_cni_learn.c,gcniagent gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
$(eval $(call unit_test,test_cni_proto,tests/unit/test_cni_proto.c,gcni gmac,jansson pthread))
# (a fuzzer takes its libraries' sources when this file is read, before
# common/module.mk defines libgmac: common/mac.c is named here instead)
$(eval $(call fuzzer,fuzz_cni_config,tests/fuzz/fuzz_cni_config.c common/mac.c,gcni,jansson))
$(eval $(call fuzzer,fuzz_cni_proto,tests/fuzz/fuzz_cni_proto.c common/mac.c,gcni,jansson))
$(eval $(call netns_test,test_cni_plugin,tests/netns/test_cni_plugin.c tests/lib/topo.c tests/lib/noderec.c,gagent gdp gnl gcommon,jansson nl pthread))
# libcni's cnitool + tuning (tests/controlplane/build-cni.sh) against real agents.
$(eval $(call netns_test,test_cnitool,tests/netns/test_cnitool.c tests/lib/cnirt.c tests/lib/topo.c tests/lib/noderec.c,gagent gdp gnl gcommon,jansson nl pthread))
# Issue 9 end to end: real control plane, agents reporting, the translator and
# the stand-in incumbents, the VPC operator's conflists through libcni (cnirt).
UPSTREAM_E2E_SRCS := tests/lib/cnirt.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c tests/lib/daemon.c
$(eval $(call netns_test,test_upstream_e2e,tests/netns/test_upstream_e2e.c $(UPSTREAM_E2E_SRCS),gdp gnl,jansson curl nl))
$(eval $(call netns_test,test_upstream_e2e_maplist,tests/netns/test_upstream_e2e_maplist.c $(UPSTREAM_E2E_SRCS),gdp gnl,jansson curl nl))
# make bench: 200 concurrent ADDs (p50/p99, time until the last pod pings across nodes).
$(eval $(call bench,bench_cni,tests/bench/bench_cni.c tests/bench/bench.c tests/lib/topo.c tests/lib/cnirt.c,gdp gnl,jansson nl))
# The netns suite runs the sanitized plugin binary: keep it up to date.
build/san/tests/test_cni_plugin build/san/tests/test_cnitool build/san/tests/test_upstream_e2e build/san/tests/test_upstream_e2e_maplist: | build/san/bin/galactic-cni $(CNI_ALIASES:%=build/san/bin/%)
build/san/tests/test_upstream_e2e build/san/tests/test_upstream_e2e_maplist: | build/san/bin/galactic-translator build/rel/bin/galactic-agent
