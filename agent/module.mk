# galactic-agent: the node daemon (state record + backend + reconcile loop).
$(eval $(call lib,gagent,agent/state.c))
$(eval $(call prog,galactic-agent,agent/main.c,gcniagent gcni gagent gdp gnl,jansson nl pthread))
