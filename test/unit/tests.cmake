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

# test-cni-alloc-specs: what the kubelet handed a pod for a VF's RDMA device, read from its
# device manager checkpoint or the agent's DRA claim records (agent/cni/alloc-specs.c).
if(TARGET test-cni-alloc-specs)
    target_sources(test-cni-alloc-specs PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni/alloc-specs.c
                                                ${CMAKE_SOURCE_DIR}/agent/cni/dra-owner.c)
    target_include_directories(test-cni-alloc-specs PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni)
    target_link_libraries(test-cni-alloc-specs PRIVATE layer-cni) # dra-owner.h's cni/conf.h
endif()

# test-apply-lock: the agent's driver binds and GUID changes (agent/apply.c) wait for the CNI
# plugin's node-wide lock around re-binds and RDMA moves.
if(TARGET test-apply-lock)
    target_sources(test-apply-lock PRIVATE ${CMAKE_SOURCE_DIR}/agent/apply.c)
    target_include_directories(test-apply-lock PRIVATE ${CMAKE_SOURCE_DIR}/agent)
endif()

# test-metrics-vf: the VF counters and pod join of the metrics endpoint (agent/metrics-vf.c)
# from the netlink double's RTM_GETLINK replies, on the double's socket handed in.
if(TARGET test-metrics-vf)
    target_sources(test-metrics-vf PRIVATE ${CMAKE_SOURCE_DIR}/agent/metrics-vf.c)
    target_include_directories(test-metrics-vf PRIVATE ${CMAKE_SOURCE_DIR}/agent)
endif()

# test-ib-attachments: the GUIDs the agent takes as pods' (agent/ib-attachments.c), from the
# ib-sriov CNI plugin's records in a temporary state directory.
if(TARGET test-ib-attachments)
    target_sources(test-ib-attachments PRIVATE ${CMAKE_SOURCE_DIR}/agent/ib-attachments.c)
    target_include_directories(test-ib-attachments PRIVATE ${CMAKE_SOURCE_DIR}/agent)
endif()

# test-rdma-boot: --rdma-mode now and at the next boot (agent/rdma-boot.c) against the netlink
# double, the modprobe.d directory under a temporary root, across simulated reboots.
if(TARGET test-rdma-boot)
    target_sources(test-rdma-boot PRIVATE ${CMAKE_SOURCE_DIR}/agent/rdma-boot.c)
    target_include_directories(test-rdma-boot PRIVATE ${CMAKE_SOURCE_DIR}/agent)
endif()

# test-dra-owner: a VF the agent's DRA driver prepared goes to its claim's pods only
# (agent/cni/dra-owner.c), from claim records in a temporary state directory.
if(TARGET test-dra-owner)
    target_sources(test-dra-owner PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni/dra-owner.c
                                          ${CMAKE_SOURCE_DIR}/agent/cni/podres.c)
    target_include_directories(test-dra-owner PRIVATE ${CMAKE_SOURCE_DIR}/agent/cni)
endif()
