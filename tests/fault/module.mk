# The fault suite (issue 12 item 2, docs/reliability.md "Faults"): the real
# control plane, netns nodes with real agents, faults injected while pods
# run. `make test` runs the short form (in test-netns); `make soak` the long one.
FAULT_SRCS := tests/lib/fpod.c tests/lib/noderec.c tests/lib/common_proxy.c tests/lib/cnirt.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c tests/lib/daemon.c
$(eval $(call netns_test,test_fault_agent,tests/fault/test_fault_agent.c $(FAULT_SRCS),gagent gcni gdp gnl gcommon,jansson curl nl pthread))
build/san/tests/test_fault_agent: | build/san/bin/galactic-cni $(CNI_ALIASES:%=build/san/bin/%) build/rel/bin/galactic-agent
# translator killed, token rotated, API server down, etcd compaction, node deleted (agents, translators, stand-in incumbents)
$(eval $(call netns_test,test_fault_cluster,tests/fault/test_fault_cluster.c $(FAULT_SRCS),gagent gcni gdp gnl gcommon,jansson curl nl pthread))
build/san/tests/test_fault_cluster: | build/san/bin/galactic-cni $(CNI_ALIASES:%=build/san/bin/%) build/rel/bin/galactic-agent build/rel/bin/galactic-translator

SOAK_TESTS := build/san/tests/test_fault_agent build/san/tests/test_fault_cluster
GT_SOAK_ROUNDS ?= 3
.PHONY: soak
soak: all $(ALL_SAN) $(SOAK_TESTS)
	./tests/run-suites.sh --begin
	GT_SOAK=1 GT_SOAK_ROUNDS=$(GT_SOAK_ROUNDS) GT_BINARY_TIMEOUT=7200 ./tests/run-suites.sh soak $(SOAK_TESTS)
	./tests/run-suites.sh --summary soak
