/* SPDX-License-Identifier: Apache-2.0 */
#include "model/inventory-json.h"

#include <errno.h>
#include <stdio.h>

#include "util/macro.h"
#include "util/parse.h"

/* json_object_set_new() steals the value even on failure; a NULL value makes it fail. */
static int set(json_t *obj, const char *key, json_t *value)
{
        return json_object_set_new(obj, key, value);
}

static int set_string_if(json_t *obj, const char *key, const char *value)
{
        return value && *value ? set(obj, key, json_string(value)) : 0;
}

static int set_int_if(json_t *obj, const char *key, int value)
{
        return value >= 0 ? set(obj, key, json_integer(value)) : 0;
}

static int set_hex16(json_t *obj, const char *key, uint16_t value)
{
        char buf[8];
        snprintf(buf, sizeof(buf), "%04x", value);
        return set(obj, key, json_string(buf));
}

static json_t *rdma_to_json(const struct rdma_device *devs, size_t n)
{
        json_auto_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++) {
                json_auto_t *o = json_object(), *chars = json_array();
                int r = o && chars ? 0 : -1;
                for (size_t c = 0; r == 0 && c < devs[i].n_char_devices; c++)
                        r = json_array_append_new(chars, json_string(devs[i].char_devices[c]));
                if (r == 0)
                        r = set(o, "name", json_string(devs[i].name));
                if (r == 0)
                        r = set(o, "charDevices", TAKE_PTR(chars));
                if (r == 0)
                        r = json_array_append_new(arr, TAKE_PTR(o));
                if (r != 0)
                        return NULL;
        }
        return TAKE_PTR(arr);
}

/* name, mac, mtu of the first netdev: the status has one name per function. */
static int set_netdev(json_t *o, const struct netdev_info *netdevs, size_t n)
{
        if (n == 0)
                return 0;
        int r = set_string_if(o, "name", netdevs[0].name);
        if (r == 0)
                r = set_string_if(o, "mac", netdevs[0].mac);
        if (r == 0)
                r = set_int_if(o, "mtu", netdevs[0].mtu);
        return r;
}

/* sysfs spells a GUID as four groups of four hex digits: "0c42:a103:00b8:c0de". */
static int parse_sysfs_guid(const char *s, uint64_t *ret)
{
        uint64_t g = 0;
        for (size_t i = 0; i < 19; i++) {
                if (i % 5 == 4) {
                        if (s[i] != ':')
                                return -EINVAL;
                        continue;
                }
                const int v = hex_digit_value(s[i]);
                if (v < 0)
                        return -EINVAL;
                g = g << 4 | (uint64_t)v;
        }
        if (s[19] != '\0')
                return -EINVAL;
        *ret = g;
        return 0;
}

/* The VF's InfiniBand GUID as upstream's NodeState shows it ("guid", eight octets): the node
 * GUID the PF reports for it, else its RDMA device's node_guid ("0c42:a103:00b8:c0de" in
 * sysfs); "" when it has neither. */
static void vf_guid_text(const struct vf_info *vf, char *buf, size_t size)
{
        uint64_t g = 0;
        buf[0] = '\0';
        if (vf->has_ib_guids)
                g = vf->ib_node_guid;
        else if (vf->n_rdma > 0) {
                if (parse_sysfs_guid(vf->rdma[0].node_guid, &g) < 0)
                        return;
        } else
                return;
        snprintf(buf, size, "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x", (unsigned)(g >> 56) & 0xff,
                 (unsigned)(g >> 48) & 0xff, (unsigned)(g >> 40) & 0xff, (unsigned)(g >> 32) & 0xff,
                 (unsigned)(g >> 24) & 0xff, (unsigned)(g >> 16) & 0xff, (unsigned)(g >> 8) & 0xff,
                 (unsigned)g & 0xff);
}

json_t *vf_info_to_json(const struct vf_info *vf)
{
        char guid[24];
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        int r = set_netdev(o, vf->netdevs, vf->n_netdevs);
        if (r == 0)
                r = set_string_if(o, "driver", vf->driver);
        if (r == 0)
                r = set(o, "pciAddress", json_string(vf->pci_address));
        if (r == 0 && vf->vendor)
                r = set_hex16(o, "vendor", vf->vendor);
        if (r == 0 && vf->device)
                r = set_hex16(o, "deviceID", vf->device);
        if (r == 0)
                r = set(o, "vfID", json_integer(vf->vf_index));
        if (r == 0)
                r = set_int_if(o, "Vlan", vf->vlan);
        if (r == 0)
                r = set(o, "numaNode", json_integer(vf->numa_node));
        if (r == 0)
                r = set_int_if(o, "iommuGroup", vf->iommu_group);
        if (r == 0 && vf->n_rdma > 0)
                r = set(o, "rdmaDevices", rdma_to_json(vf->rdma, vf->n_rdma));
        vf_guid_text(vf, guid, sizeof(guid));
        if (r == 0)
                r = set_string_if(o, "guid", guid);
        if (r == 0)
                r = set_string_if(o, "error", vf->error);
        return r == 0 ? TAKE_PTR(o) : NULL;
}

static int set_link(json_t *o, const struct pf_info *pf)
{
        if (pf->n_netdevs == 0)
                return 0;
        const struct netdev_info *n = &pf->netdevs[0];
        int r = set_string_if(o, "linkType", link_type_to_string(n->link_type));
        if (r == 0 && n->speed_mbps >= 0) {
                char buf[32];
                snprintf(buf, sizeof(buf), "%d Mb/s", n->speed_mbps);
                r = set(o, "linkSpeed", json_string(buf));
        }
        if (r == 0)
                r = set(o, "linkAdminState", json_string(n->admin_up ? "up" : "down"));
        /* The carrier as the kernel's operstate says it ("up", "down", "lowerlayerdown"):
         * what makes the PF's devices Unhealthy, next to the admin state the agent sets. */
        if (r == 0)
                r = set_string_if(o, "linkState", n->operstate);
        return r;
}

json_t *pf_info_to_json(const struct pf_info *pf)
{
        json_auto_t *o = json_object(), *vfs = json_array();
        if (!o || !vfs)
                return NULL;
        int r = set_netdev(o, pf->netdevs, pf->n_netdevs);
        if (r == 0)
                r = set_string_if(o, "driver", pf->driver);
        if (r == 0)
                r = set(o, "pciAddress", json_string(pf->pci_address));
        if (r == 0 && pf->vendor)
                r = set_hex16(o, "vendor", pf->vendor);
        if (r == 0 && pf->device)
                r = set_hex16(o, "deviceID", pf->device);
        if (r == 0)
                r = set_int_if(o, "numVfs", pf->num_vfs);
        if (r == 0)
                r = set_int_if(o, "totalvfs", pf->total_vfs);
        if (r == 0)
                r = set_link(o, pf);
        if (r == 0)
                r = set_string_if(o, "eSwitchMode", pf->eswitch_mode);
        if (r == 0 && pf->n_alt_names > 0) {
                /* Upstream's InterfaceExt.altNames */
                json_auto_t *alt = json_array();
                r = alt ? 0 : -1;
                for (size_t i = 0; r == 0 && i < pf->n_alt_names; i++)
                        r = json_array_append_new(alt, json_string(pf->alt_names[i]));
                if (r == 0)
                        r = set(o, "altNames", TAKE_PTR(alt));
        }
        if (r == 0)
                r = set(o, "numaNode", json_integer(pf->numa_node));
        if (r == 0)
                r = set_int_if(o, "iommuGroup", pf->iommu_group);
        if (r == 0 && pf->n_rdma > 0)
                r = set(o, "rdmaDevices", rdma_to_json(pf->rdma, pf->n_rdma));
        for (size_t i = 0; r == 0 && i < pf->n_vfs; i++)
                r = json_array_append_new(vfs, vf_info_to_json(&pf->vfs[i]));
        if (r == 0)
                r = set(o, "Vfs", TAKE_PTR(vfs));
        if (r == 0)
                r = set_string_if(o, "error", pf->error);
        return r == 0 ? TAKE_PTR(o) : NULL;
}

json_t *inventory_to_json(const struct inventory *inv)
{
        json_auto_t *root = json_object(), *ifs = json_array();
        int r = root && ifs ? 0 : -1;
        for (size_t i = 0; r == 0 && i < inv->n_pfs; i++)
                r = json_array_append_new(ifs, pf_info_to_json(&inv->pfs[i]));
        if (r == 0)
                r = set(root, "interfaces", TAKE_PTR(ifs));
        return r == 0 ? TAKE_PTR(root) : NULL;
}
