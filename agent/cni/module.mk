# galactic-cni (the plugin) and the CNI pieces shared with the agent.
CNI_CORE_SRCS := agent/cni/cni.c agent/cni/base62.c agent/cni/config.c \
	agent/cni/result.c agent/cni/proto.c
$(eval $(call lib,gcni,$(CNI_CORE_SRCS)))
$(eval $(call prog,galactic-cni,agent/cni/plugin.c,gcni,jansson))
# The agent side (linked into galactic-agent): socket server + attach path.
$(eval $(call lib,gcniagent,agent/cni/server.c agent/cni/pod.c))
