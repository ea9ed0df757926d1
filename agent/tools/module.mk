# Operator tools built on the agent's libraries (not linked into the agent).
# galactic-bpf: preflight, apply/observe on the agent's state dir, counters from the pins, teardown.
$(eval $(call prog,galactic-bpf,agent/tools/galactic-bpf.c,gagent gdpbpf gdp gnl gcommon,bpf nl jansson pthread))
# galactic-cni-install: the DaemonSet's init step (atomic install of the plugin under its names).
$(eval $(call prog,galactic-cni-install,agent/tools/galactic-cni-install.c,,))
