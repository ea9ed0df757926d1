# common/: the Kubernetes client and controller toolkit shared by the agent and
# the translator (docs/common.md).
COMMON_SRCS := common/log.c common/gmap.c common/json.c common/yaml_lite.c \
	common/kube_config.c common/kube_client.c common/kube_watch.c \
	common/kube_store.c common/backoff.c common/informer.c common/workqueue.c \
	common/leader.c common/metrics.c
COMMON_LDLIBS := curl jansson mhd pthread m

$(eval $(call lib,gcommon,$(COMMON_SRCS)))
