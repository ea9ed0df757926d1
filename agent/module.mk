# galactic-agent: the node daemon (state record + backend + reconcile loop).
$(eval $(call lib,gagent,agent/state.c))
$(eval $(call prog,galactic-agent,agent/main.c,gcniagent greport gcni gagent gdpbpf gdp gnl gcommon,jansson nl bpf curl mhd pthread m))
