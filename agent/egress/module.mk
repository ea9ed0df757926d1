# agent/egress: the node's EgressShard (docs/dataplane-egress.md): the shard
# reader and status builder (shard.c, pure) and the watcher/status thread.
$(eval $(call lib,gegress,agent/egress/shard.c agent/egress/egress.c))
$(eval $(call unit_test,test_egress_shard,tests/unit/test_egress_shard.c,gegress gcommon,jansson curl mhd yaml pthread m))
# (the pure part and its JSON helpers only)
$(eval $(call fuzzer,fuzz_egress_shard,tests/fuzz/fuzz_egress_shard.c agent/egress/shard.c common/json.c,,jansson))
# End to end: real API server, the agent binary on three netns nodes with an internet host, CNI ADDs.
$(eval $(call netns_test,test_egress,tests/netns/test_egress.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c tests/lib/daemon.c,gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
build/san/tests/test_egress: | build/rel/bin/galactic-agent build/rel/bin/galactic-cni build/rel/bin/galactic-translator build/rel/bin/galactic-bpf build/rel/bin/galactic-preflight
