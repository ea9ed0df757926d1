# agent/identity: the node's identity from the API (docs/identity.md): the
# NodeDataplane spec, the NodeID allocator and the NodeDataplane status.
$(eval $(call lib,gident,agent/identity/ident.c agent/identity/alloc.c agent/identity/identity.c))
IDENT_LDLIBS := jansson curl mhd yaml pthread m

$(eval $(call unit_test,test_identity,tests/unit/test_identity.c,gident gcommon,$(IDENT_LDLIBS)))
# (the pure part and its JSON helpers only: common/module.mk is read after this file)
$(eval $(call fuzzer,fuzz_identity,tests/fuzz/fuzz_identity.c agent/identity/ident.c common/json.c,,jansson))
# Real kube-apiserver + kube-controller-manager (garbage collector): races, pins, release.
$(eval $(call e2e_test,test_identity_api,tests/e2e/test_identity_api.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c,gident gcommon,$(IDENT_LDLIBS)))
# galactic-agent itself: identity from the API on netns nodes, restart with the API down, /readyz.
$(eval $(call netns_test,test_agent_identity,tests/netns/test_agent_identity.c tests/lib/topo.c tests/lib/daemon.c tests/lib/cp.c tests/lib/kreq.c,gident gdpbpf gdp gnl gcommon,jansson nl bpf curl mhd yaml pthread m))
build/san/tests/test_agent_identity: | build/rel/bin/galactic-agent build/rel/bin/galactic-bpf
