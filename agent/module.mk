# galactic-agent: the node daemon (state record + backend + reconcile loop).
$(eval $(call lib,gagent,agent/state.c))
$(eval $(call prog,galactic-agent,agent/main.c,gagent gdp gnl,jansson nl pthread))
