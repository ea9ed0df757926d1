# libgdp: desired-state model, backend interface, kernel backend + reconciler.
GDP_SRCS := agent/dp/model.c agent/dp/vpcname.c agent/dp/backend.c agent/dp/delta.c agent/dp/kernel.c agent/dp/kernel_snap.c agent/dp/kernel_plan.c agent/dp/kernel_diff.c agent/dp/kernel_exec.c agent/dp/kernel_delta.c agent/dp/egress.c agent/dp/steer.c
# the egress shard's translator (agent/dp/egress.h) and pod steering (agent/dp/steer.h)
# run nftables through libnftables; steering reads its listing back as JSON
LIBDEPS_gdp := nft jansson
$(eval $(call lib,gdp,$(GDP_SRCS)))
# Kernel tests with real traffic between network-namespace nodes (tests/lib/topo.*).
$(eval $(call netns_test,test_kernel_traffic,tests/netns/test_kernel_traffic.c tests/lib/topo.c,gagent gdp gnl gcommon,jansson nl pthread))
# make bench: 10k encap routes vs ip -6 -batch, 50k with ENOMEM retries counted.
$(eval $(call bench,bench_routes,tests/bench/bench_routes.c tests/bench/bench.c,gdp gnl,nl jansson))
$(eval $(call unit_test,test_nl_model,tests/unit/test_nl_model.c,gagent gdp gnl gcommon,jansson nl pthread))
$(eval $(call netns_test,test_kernel_nl,tests/netns/test_kernel_nl.c tests/lib/topo.c,gdp gnl,nl jansson))
$(eval $(call unit_test,test_egress_render,tests/unit/test_egress_render.c,gdp gnl,nl jansson))
$(eval $(call unit_test,test_steer,tests/unit/test_steer.c,gdp gnl,nl jansson))
$(eval $(call fuzzer,fuzz_steer,tests/fuzz/fuzz_steer.c agent/dp/steer.c,,jansson nft nl))
# The egress shard with real traffic: two VPCs with the same addresses through one shard, an internet host.
$(eval $(call netns_test,test_egress_dp,tests/netns/test_egress_dp.c tests/lib/topo.c,gdp gnl,nl jansson))
build/san/tests/test_egress_dp: | build/rel/bin/galactic-preflight
