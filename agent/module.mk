# galactic-agent: the node daemon. libgagent: the record (and its legacy
# import) and the apply pipeline; main.c wires inputs -> record -> pipeline
# -> reports (docs/architecture.md, "The agent").
$(eval $(call lib,gagent,agent/record.c agent/record_codec.c agent/record_index.c agent/record_legacy.c agent/pipeline.c))
LIBDEPS_gagent := jansson pthread
$(eval $(call prog,galactic-agent,agent/main.c,ghealth gident gegress gcniagent greport gcni gagent gdpbpf gdp gnl gcommon,jansson nl bpf curl mhd pthread m))
$(eval $(call unit_test,test_record,tests/unit/test_record.c tests/lib/recfix.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
# The record's codec: every family, decode(encode(x)) == x, the on-disk text byte for byte.
$(eval $(call unit_test,test_record_codec,tests/unit/test_record_codec.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
$(eval $(call unit_test,test_record_index,tests/unit/test_record_index.c,gagent,))
$(eval $(call unit_test,test_pipeline,tests/unit/test_pipeline.c tests/lib/recfix.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
$(eval $(call unit_test,test_pipeline_adopt,tests/unit/test_pipeline_adopt.c tests/lib/recfix.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
# Upgrade from the three files of agents before the record, under ping, both backends.
$(eval $(call netns_test,test_upgrade,tests/netns/test_upgrade.c tests/lib/topo.c,gagent gdpbpf gcni gdp gnl gcommon,bpf nl jansson pthread))
# make bench: the agent's RSS with 1,000 attachments and 100,000 remotes, both backends.
$(eval $(call bench,bench_rss,tests/bench/bench_rss.c tests/bench/bench.c tests/lib/topo.c tests/lib/cnirt.c,gdp gnl,jansson nl))
# make bench: what one verify tick (the read-back between passes) costs the agent at 100,000 remotes (kernel backend).
$(eval $(call bench,bench_verify,tests/bench/bench_verify.c tests/bench/bench.c tests/lib/topo.c tests/lib/daemon.c,gagent gdp gnl gcommon,jansson nl curl pthread))
