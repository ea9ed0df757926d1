# libgdp: desired-state model, backend interface, kernel backend + reconciler.
GDP_SRCS := agent/dp/model.c agent/dp/backend.c agent/dp/kernel.c
$(eval $(call lib,gdp,$(GDP_SRCS)))
# Kernel tests with real traffic between network-namespace nodes (tests/lib/topo.*).
$(eval $(call netns_test,test_kernel_traffic,tests/netns/test_kernel_traffic.c tests/lib/topo.c,gagent gdp gnl,jansson nl))
