/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/policy-select.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/parse.h"

bool policy_matches_node(const struct policy *p, const struct string_pair *labels, size_t n_labels,
                         const struct string_pair **ret_missing)
{
        for (size_t i = 0; i < p->n_node_selector; i++) {
                const struct string_pair *want = &p->node_selector[i];
                bool found = false;
                for (size_t j = 0; j < n_labels && !found; j++)
                        found = strcmp(labels[j].key, want->key) == 0 &&
                                strcmp(labels[j].value, want->value) == 0;
                if (!found) {
                        if (ret_missing)
                                *ret_missing = want;
                        return false;
                }
        }
        return true;
}

static bool hex_matches(const char *text, uint16_t value)
{
        uint32_t v;
        return parse_hex_u32(text, &v) == 0 && v == value;
}

/* The netdev name, or (as upstream since late 2025) one of its alternative names. */
static bool pf_has_name(const struct pf_info *pf, const char *name)
{
        for (size_t i = 0; i < pf->n_netdevs; i++)
                if (strcmp(pf->netdevs[i].name, name) == 0)
                        return true;
        for (size_t i = 0; i < pf->n_alt_names; i++)
                if (strcmp(pf->alt_names[i], name) == 0)
                        return true;
        return false;
}

bool policy_selects_pf(const struct policy *p, const struct pf_info *pf, struct pf_selection *ret)
{
        const struct nic_selector *nic = &p->nic;
        struct pf_selection sel = { .pf = pf, .vf_start = 0, .vf_end = p->num_vfs - 1 };

        if (!nic->vendor && !nic->device_id && !nic->n_root_devices && !nic->n_pf_names)
                return false; /* empty (or netFilter-only) selector matches nothing here */
        if (nic->vendor && !hex_matches(nic->vendor, pf->vendor))
                return false;
        if (nic->device_id && !hex_matches(nic->device_id, pf->device))
                return false;
        if (nic->n_root_devices > 0) {
                for (size_t i = 0; i < nic->n_root_devices && !sel.by_root_device; i++)
                        sel.by_root_device = strcasecmp(nic->root_devices[i], pf->pci_address) == 0;
                if (!sel.by_root_device)
                        return false;
        }
        if (nic->n_pf_names > 0) {
                for (size_t i = 0; i < nic->n_pf_names && !sel.by_pf_name; i++)
                        if (pf_has_name(pf, nic->pf_names[i].name))
                                sel.by_pf_name = &nic->pf_names[i];
                if (!sel.by_pf_name)
                        return false;
                if (sel.by_pf_name->has_range) {
                        sel.vf_start = sel.by_pf_name->vf_start;
                        sel.vf_end = sel.by_pf_name->vf_end;
                }
        }
        if (ret)
                *ret = sel;
        return true;
}

static int reason(char **ret, const struct policy *p, const struct pf_info *pf, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int reason(char **ret, const struct policy *p, const struct pf_info *pf, const char *field,
                  const char *fmt, ...)
{
        char msg[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (asprintf(ret, "%s: policy %s: PF %s (%s): field %s: %s", p->origin ? p->origin : "API",
                     policy_display_name(p), pf->pci_address,
                     pf_netdev_name(pf) ? pf_netdev_name(pf) : "no netdev", field, msg) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

int policy_check_on_pf(const struct policy *p, const struct pf_info *pf, char **ret_reason)
{
        const struct netdev_info *nd = pf->n_netdevs > 0 ? &pf->netdevs[0] : NULL;

        *ret_reason = NULL;
        if (p->num_vfs <= 0)
                return reason(ret_reason, p, pf, "spec.numVfs",
                              "numVfs %d is not allowed on a selected PF", p->num_vfs);
        /* Upstream checks the vdpa vendor on the selected interface, not in the selector. */
        if (p->vdpa_type && pf->vendor != MELLANOX_VENDOR_ID)
                return reason(ret_reason, p, pf, "spec.vdpaType",
                              "vdpa is supported only on NVIDIA (15b3) NICs, this PF's vendor "
                              "is %04x",
                              pf->vendor);
        if (p->externally_managed) {
                if (p->num_vfs > pf->num_vfs)
                        return reason(ret_reason, p, pf, "spec.numVfs",
                                      "externally managed PF has %d VFs, policy needs %d",
                                      pf->num_vfs, p->num_vfs);
                if (p->mtu > 0 && nd && nd->mtu > 0 && p->mtu > nd->mtu)
                        return reason(ret_reason, p, pf, "spec.mtu",
                                      "externally managed PF has MTU %d, policy wants %d", nd->mtu,
                                      p->mtu);
                if (p->link_type && nd && nd->link_type != LINK_TYPE_UNKNOWN &&
                    (strcasecmp(p->link_type, "ib") == 0) != (nd->link_type == LINK_TYPE_IB))
                        return reason(ret_reason, p, pf, "spec.linkType",
                                      "externally managed PF has link type %s, policy "
                                      "wants %s",
                                      link_type_to_string(nd->link_type), p->link_type);
                return 0;
        }
        /* On NVIDIA cards sriov_totalvfs is a firmware setting: upstream raises it, this agent
         * reports the PF as failed with what to do (lib/plan), so the policy stays valid. */
        if (p->num_vfs > pf->total_vfs && pf->vendor != MELLANOX_VENDOR_ID)
                return reason(ret_reason, p, pf, "spec.numVfs",
                              "numVfs %d exceeds the PF's sriov_totalvfs %d", p->num_vfs,
                              pf->total_vfs);
        if (pf->vendor == MELLANOX_VENDOR_ID && p->num_vfs > MELLANOX_MAX_VFS)
                return reason(ret_reason, p, pf, "spec.numVfs",
                              "numVfs %d exceeds %d, the maximum for Mellanox NICs", p->num_vfs,
                              MELLANOX_MAX_VFS);
        return 0;
}

const char *policy_unsupported_feature(const struct policy *p)
{
        if (p->nic.net_filter)
                return "nicSelector.netFilter selects OpenStack/AWS networks, which this node "
                       "does not provide";
        if (p->has_bridge)
                return "spec.bridge (OVS software bridges) is not supported by sriov-agent";
        return NULL;
}

const char *policy_unsupported_on_pf(const struct policy *p, const struct pf_info *pf)
{
        if (p->eswitch_mode && strcmp(p->eswitch_mode, "switchdev") == 0 &&
            strcmp(pf->eswitch_mode, "legacy") != 0 && strcmp(pf->eswitch_mode, "switchdev") != 0)
                return "eSwitchMode switchdev requested but the PF reports no eswitch (devlink)";
        return NULL;
}
