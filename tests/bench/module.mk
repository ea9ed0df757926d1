# The burst bench (issue 13 items 1-3): today's upstream write pattern vs
# ours. Its stand-in writers are a test tool, not a bench (make bench runs
# every BENCHES entry) and not a product binary: build/rel/bench-tools/.
BURST_STANDIN_SRCS := tests/bench/burst_standin.c
build/rel/bench-tools/burst-standin: $(call objs,rel,$(BURST_STANDIN_SRCS)) $(call libfiles,rel,gcommon)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_rel) -o $@ $^ $(call ldlibs,$(COMMON_LDLIBS) $(LIBDEPS_gcommon))
-include $(patsubst %.o,%.d,$(call objs,rel,$(BURST_STANDIN_SRCS)))
$(eval $(call bench,bench_burst,tests/bench/bench_burst.c tests/bench/bench.c tests/lib/cnirt.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/daemon.c,gdp gnl gcommon,$(COMMON_LDLIBS) nl))
build/rel/bench/bench_burst: | build/rel/bench-tools/burst-standin build/rel/bin/galactic-agent build/rel/bin/galactic-translator build/rel/bin/galactic-cni $(CNI_ALIASES:%=build/rel/bin/%)
