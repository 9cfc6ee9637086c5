# Unit tests that need more than the layer libraries (registered above, from test/unit/test-*.c).

# test-cni-ib: the `ib-sriov` CNI type's GUID handling (agent/cni/ib.c), and the RDMA move after
# its re-bind (agent/cni/rdma.c), against the netlink double. The rtnetlink and RDMA sockets the
# host layer opens are the double's (host_netlink_open wrapped at link time) and interface names
# resolve to the double's PF (if_nametoindex).
if(TARGET test-cni-ib)
    target_sources(test-cni-ib PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni/ib.c
                                       ${CMAKE_SOURCE_DIR}/agent/cni/rdma.c)
    target_include_directories(test-cni-ib PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni)
    target_link_options(test-cni-ib PRIVATE -Wl,--wrap=host_netlink_open
                        -Wl,--wrap=if_nametoindex)
endif()

# test-metrics-vf: the VF counters and pod join of the metrics endpoint (agent/metrics-vf.c)
# from the netlink double's RTM_GETLINK replies, on the double's socket handed in.
if(TARGET test-metrics-vf)
    target_sources(test-metrics-vf PRIVATE ${CMAKE_SOURCE_DIR}/agent/metrics-vf.c)
    target_include_directories(test-metrics-vf PRIVATE ${CMAKE_SOURCE_DIR}/agent)
endif()
