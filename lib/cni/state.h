/* SPDX-License-Identifier: Apache-2.0 */
/* The `sriov` CNI plugin's records on the node, in upstream sriov-cni's formats so that a node
 * can switch between the two plugins with pods running (k8snetworkplumbingwg/sriov-cni
 * pkg/utils/utils.go SaveNetConf, pkg/utils/pci_allocator.go):
 *
 *   <dir>/<containerid>-<ifname>   0600  upstream's NetConf fields only (cniVersion, name,
 *                                        type, ipam.type, the VF settings the configuration
 *                                        made, OrigVfState (the VF as it was before ADD),
 *                                        Master, MAC, MTU, VFID): what DEL needs, a few KiB
 *   <dir>/pci/<pci>                0600  the network namespace path of the attachment holding
 *                                        the VF
 *   <dir>/pci/vf_lock/<pci>.lock         flock(2)ed while a VF is being set up or released
 *   <dir>/pci/vf_lock/ib-guids.lock      flock(2)ed while an ib-sriov ADD checks and records
 *                                        the GUID it sets
 *   <dir>/pci/vf_lock/rdma-moves.lock    flock(2)ed node-wide around every VF driver re-bind and
 *                                        RDMA device move, by the plugin and by the agent
 *
 * <dir> is /var/lib/cni/sriov on a node. */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cni/conf.h"

#define CNI_STATE_DIR_DEFAULT "/var/lib/cni/sriov"

/* upstream's VfState */
struct cni_vf_orig {
        char host_ifname[IFNAMSIZ]; /* "" for a VF without netdev (DPDK mode) */
        bool spoofchk, trust;
        char admin_mac[18], effective_mac[18];
        int vlan, qos;
        int vlan_proto; /* 0x8100 / 0x88a8; 0 in records that lack it */
        int min_tx_rate, max_tx_rate;
        uint32_t link_state;
        int mtu; /* 0 when unknown */
};

struct cni_cache {
        char device_id[32];
        char master[IFNAMSIZ];
        int vfid;
        char mac[18]; /* the MAC ADD applied ("" none) */
        bool has_mtu;
        int mtu;
        struct cni_vf_orig orig;
        /* what the configuration set, i.e. what DEL restores besides the admin MAC */
        bool has_vlan;
        int spoofchk, trust; /* -1 unset */
        bool has_rate;
        int link_state; /* -1 unset */
        char ipam_type[256];
        char type[16]; /* the CNI type that wrote it: "sriov" ("" reads as that), "ib-sriov" */
        /* The VF's RDMA device moved into the pod's namespace (exclusive RDMA mode), as
         * upstream ib-sriov-cni's RdmaNetState: DEL moves it back */
        bool rdma_moved;
        uint32_t rdma_index; /* the kernel's device index; 0 in upstream's records */
        char rdma_name[64];
        char rdma_driver[64]; /* for messages only, not written */
        /* InfiniBand: the VF's GUID before ADD set one, upstream's HostIFGUID
         * ("xx:xx:xx:xx:xx:xx:xx:xx"); "" when ADD set none. DEL sets it back. */
        char host_guid[24];
        /* InfiniBand: the GUID ADD set for the pod, in upstream ib-sriov-cni's field
         * runtimeConfig.infinibandGUID; "" when ADD set none. Another ADD asking for it is
         * refused while this attachment holds its VF (cni_cache_find_guid). */
        char guid[24];
};

/* "<containerid>-<ifname>"; -EINVAL when that is not a safe file name. */
int cni_cache_name(const char *container_id, const char *ifname, char *buf, size_t size);

/* Writes the record atomically (0600), creating dir (0700). */
int cni_cache_write(const char *dir, const char *name, const struct cni_conf *conf,
                    const struct cni_cache *rec);
/* -ENOENT when there is none; -EBADMSG when it cannot be parsed (field named in e). */
int cni_cache_read(const char *dir, const char *name, struct cni_cache *ret, struct cni_error *e);
/* The record's text as cni_cache_read() parses it; path only names it in messages. */
int cni_cache_parse(const char *path, const char *text, size_t size, struct cni_cache *ret,
                    struct cni_error *e);
int cni_cache_remove(const char *dir, const char *name); /* a missing record is 0 */
/* The most recently written record in dir for the VF pci (its name in name): the one of the
 * attachment that held the VF last. -ENOENT when none names it. */
int cni_cache_find_latest(const char *dir, const char *pci, char *name, size_t size,
                          struct cni_cache *ret);

/* The newest record in dir (not the one named self) whose pod GUID (struct cni_cache.guid) is
 * guid, of a VF other than skip_pci, that is the newest record of its VF (an older one is of an
 * attachment whose VF another took since) and whose VF is allocated: for each such record, in
 * no particular order, holds(name, rec, holder netns path, userdata) says whether it counts
 * (its holder's namespace is alive: host access, the caller's). 1 with name, ret and holder
 * filled for the first that counts, 0 when none does, or a negative errno (dir unreadable; a
 * missing dir is 0). Records that cannot be parsed are skipped. */
int cni_cache_find_guid(const char *dir, const char *self, uint64_t guid, const char *skip_pci,
                        bool (*holds)(const char *name, const struct cni_cache *rec,
                                      const char *holder, void *userdata),
                        void *userdata, char *name, size_t name_size, struct cni_cache *ret,
                        char *holder, size_t holder_size);

/* Takes the VF's lock, waiting up to timeout_ms; returns the locked fd (close to unlock),
 * -ETIMEDOUT, or another negative errno. */
int cni_pci_lock(const char *dir, const char *pci, int timeout_ms);
/* The node's GUID lock (<dir>/pci/vf_lock/ib-guids.lock), as cni_pci_lock: an ib-sriov ADD
 * with a GUID holds it from its check that no other VF or attachment has that GUID until its
 * record (naming the GUID) is written, so that two ADDs asking for one GUID for two VFs at
 * once (each under its own VF's lock) cannot both pass the check. */
int cni_guid_lock(const char *dir, int timeout_ms);
/* The node's lock around everything that re-binds a VF's driver or moves an RDMA device
 * between network namespaces (<dir>/pci/vf_lock/rdma-moves.lock), as cni_pci_lock. Each such
 * step frees the device's uverbsN/umadN/issmN minors and its mlx5_N name and takes the lowest
 * free ones again: two at once can swap them between two pods. Held by the plugin's ADD, DEL
 * and undo only around those steps (and the check of the char devices after them), and by the
 * agent around its GUID and driver changes; never while waiting for anything else. */
#define CNI_MOVE_LOCK_NAME "rdma-moves"
int cni_move_lock(const char *dir, int timeout_ms);
/* The holder's netns path; -ENOENT when the VF is not allocated. */
int cni_pci_holder(const char *dir, const char *pci, char *buf, size_t size);
int cni_pci_save(const char *dir, const char *pci, const char *netns);
int cni_pci_release(const char *dir, const char *pci); /* a missing record is 0 */

/* At most this many directory entries are looked at per directory by cni_state_count(). */
#define CNI_STATE_COUNT_MAX 65536

/* The records in dir, for the agent's metrics: attachment records (regular files
 * <containerid>-<ifname>) and VFs recorded as held (regular files pci/<pci>); files being
 * written (a leading '.') are not records. A missing dir or pci/ counts 0: nothing was
 * attached yet. -errno when dir cannot be read (not mounted into the agent's container,
 * permissions), -E2BIG when it has more than CNI_STATE_COUNT_MAX entries. */
int cni_state_count(const char *dir, size_t *attachments, size_t *held);
