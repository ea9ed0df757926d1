# The daemons' OCI images (make images), run from the image: entrypoints as
# the image's user, the agent with the chart's capabilities, the atomic CNI
# install step over a running copy (a script: root, chroot, unshare).
E2E_TESTS += tests/images/test_images.sh
