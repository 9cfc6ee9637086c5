/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration fields of CNI type `ib-sriov` (upstream k8snetworkplumbingwg/ib-sriov-cni
 * pkg/types/types.go, as cmd/ib-sriov-cni reads them), beside those cni_conf_parse() reads:
 *
 *   rdmaIsolation        bool: move the VF's RDMA device into the pod's namespace; needs the
 *                        RDMA subsystem in exclusive mode
 *   ibKubernetesEnabled  bool: refuse the ADD unless args.cni["mellanox.infiniband.app"] is
 *                        "configured" and a GUID is given (ib-kubernetes sets both)
 *   vfioPciMode          bool: a VF on vfio-pci (no netdev); detected from the driver too
 *   pkey                 string, accepted and not used (as upstream)
 *
 * The GUID: runtimeConfig.infinibandGUID, else args.cni.guid (upstream's source), else CNI_ARGS
 * `GUID=`; "xx:xx:xx:xx:xx:xx:xx:xx" (either case), not all zeros. Pure: no host access. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cni/conf.h"

#define CNI_GUID_STR_MAX 24

struct cni_ib_conf {
        bool rdma_isolation;
        bool ib_kubernetes_enabled;
        bool vfio_pci_mode;
        bool ib_configured; /* args.cni["mellanox.infiniband.app"] == "configured" */
        bool has_guid;
        uint64_t guid;      /* first octet most significant, as `ip link ... node_guid` takes it */
        char guid_from[32]; /* which field gave it, for messages */
};

/* Fills ret from stdin (data, len) and CNI_ARGS (args, may be NULL). A bad field is refused
 * with code 7 (4 for CNI_ARGS) naming it; returns 0 or a negative errno. */
int cni_ib_conf_parse(const char *data, size_t len, const char *args, struct cni_ib_conf *ret,
                      struct cni_error *e);

/* "xx:..:xx" (8 octets) -> value; -EINVAL otherwise. */
int cni_guid_parse(const char *s, uint64_t *ret);
void cni_guid_format(uint64_t guid, char out[static CNI_GUID_STR_MAX]);
