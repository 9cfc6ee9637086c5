/* SPDX-License-Identifier: Apache-2.0 */
#include "dra/slices.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/macro.h"

#define ATTR_DRIVER "sriovnetwork.k8snetworkplumbingwg.io/"

void dra_device_name(const char *pci, char buf[PCI_ADDR_MAX])
{
        size_t i = 0;
        for (; i < PCI_ADDR_MAX - 1 && pci[i]; i++)
                buf[i] = pci[i] == ':' || pci[i] == '.' ? '-' : pci[i];
        buf[i] = 0;
}

static const struct vf_info *find_vf(const struct inventory *inv, const char *pci,
                                     const struct pf_info **ret_pf)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                for (size_t j = 0; j < inv->pfs[i].n_vfs; j++)
                        if (strcmp(inv->pfs[i].vfs[j].pci_address, pci) == 0) {
                                *ret_pf = &inv->pfs[i];
                                return &inv->pfs[i].vfs[j];
                        }
        return NULL;
}

static const char *link_type_name(const struct pf_info *pf)
{
        if (pf->n_netdevs == 0)
                return "unknown";
        switch (pf->netdevs[0].link_type) {
        case LINK_TYPE_ETH:
                return "ethernet";
        case LINK_TYPE_IB:
                return "infiniband";
        default:
                return "unknown";
        }
}

static json_t *str_attr(const char *s)
{
        return json_pack("{s:s}", "string", s);
}

/* The attributes a VF and a whole card share: where it sits (PCIe root, bus ID, NUMA node) and
 * what it is (vendor and device ID). Returns the OR of jansson's results (non-zero: failed). */
static int set_pci_attrs(json_t *attrs, const char *pci, const char *pcie_root, int numa_node,
                         uint16_t vendor_id, uint16_t device_id)
{
        char vendor[8], device[8];
        snprintf(vendor, sizeof(vendor), "%04x", vendor_id);
        snprintf(device, sizeof(device), "%04x", device_id);
        int r = 0;
        if (pcie_root[0])
                r |= json_object_set_new(attrs, "resource.kubernetes.io/pcieRoot",
                                         str_attr(pcie_root));
        r |= json_object_set_new(attrs, "resource.kubernetes.io/pciBusID", str_attr(pci));
        if (numa_node >= 0)
                r |= json_object_set_new(attrs, "dra.net/numaNode",
                                         json_pack("{s:I}", "int", (json_int_t)numa_node));
        r |= json_object_set_new(attrs, ATTR_DRIVER "pciAddress", str_attr(pci));
        r |= json_object_set_new(attrs, ATTR_DRIVER "vendor", str_attr(vendor));
        r |= json_object_set_new(attrs, ATTR_DRIVER "deviceID", str_attr(device));
        return r;
}

/* The pool's names (ours and the ones Multus' DRA support reads), then the device entry; takes
 * `attrs` in every case. */
static json_t *device_entry(json_t *attrs, int r, const struct dp_pool *pool,
                            const struct dp_device *d, const char *device_type)
{
        char name[PCI_ADDR_MAX];
        dra_device_name(d->id, name);
        r |= json_object_set_new(attrs, ATTR_DRIVER "resourceName", str_attr(pool->resource));
        r |= json_object_set_new(attrs, ATTR_DRIVER "deviceType", str_attr(device_type));
        r |= json_object_set_new(attrs, "k8s.cni.cncf.io/resourceName", str_attr(pool->resource));
        r |= json_object_set_new(attrs, "k8s.cni.cncf.io/deviceID", str_attr(d->id));
        if (r) {
                json_decref(attrs);
                return NULL;
        }
        return json_pack("{s:s,s:o}", "name", name, "attributes", attrs);
}

static json_t *device_json(const struct dp_pool *pool, const struct dp_device *d,
                           const struct pf_info *pf, const struct vf_info *vf)
{
        json_t *attrs = json_object();
        if (!attrs)
                return NULL;
        int r = set_pci_attrs(attrs, d->id, vf->pcie_root, vf->numa_node, vf->vendor, vf->device);
        if (pf_netdev_name(pf))
                r |= json_object_set_new(attrs, ATTR_DRIVER "PFName", str_attr(pf_netdev_name(pf)));
        r |= json_object_set_new(attrs, ATTR_DRIVER "pfPciAddress", str_attr(pf->pci_address));
        char pf_device[8];
        snprintf(pf_device, sizeof(pf_device), "%04x", pf->device);
        r |= json_object_set_new(attrs, ATTR_DRIVER "pfDeviceID", str_attr(pf_device));
        /* As dra-driver-sriov (and the device plugin before it) says it: a PF whose eswitch
         * mode devlink does not tell (no devlink, or a node read without the kernel) is in
         * legacy SR-IOV mode, the only one such a PF has. */
        r |= json_object_set_new(attrs, ATTR_DRIVER "EswitchMode",
                                 str_attr(pf->eswitch_mode[0] ? pf->eswitch_mode : "legacy"));
        r |= json_object_set_new(attrs, ATTR_DRIVER "vfID",
                                 json_pack("{s:I}", "int", (json_int_t)vf->vf_index));
        r |= json_object_set_new(attrs, ATTR_DRIVER "linkType", str_attr(link_type_name(pf)));
        r |= json_object_set_new(attrs, ATTR_DRIVER "rdmaCapable",
                                 json_pack("{s:b}", "bool", pool->is_rdma && d->rdma_device[0]));
        return device_entry(attrs, r, pool, d, device_type_to_string(pool->device_type));
}

static const char *netdev_link_type(const struct netdev_info *n, size_t count)
{
        if (count == 0)
                return "unknown";
        return n[0].link_type == LINK_TYPE_ETH  ? "ethernet"
               : n[0].link_type == LINK_TYPE_IB ? "infiniband"
                                                : "unknown";
}

/* A whole card as the inventory has it: a PF, a VF or an RDMA NIC outside SR-IOV. */
struct card_fn {
        const char *pcie_root, *ifname, *link_type;
        uint16_t vendor, device;
};

static bool find_card(const struct inventory *inv, const char *pci, struct card_fn *ret)
{
        for (int list = 0; list < 2; list++) {
                const struct pf_info *fns = list == 0 ? inv->pfs : inv->rdma_nics;
                size_t n = list == 0 ? inv->n_pfs : inv->n_rdma_nics;
                for (size_t i = 0; i < n; i++) {
                        const struct pf_info *f = &fns[i];
                        if (strcmp(f->pci_address, pci) == 0) {
                                *ret = (struct card_fn){
                                        .pcie_root = f->pcie_root,
                                        .ifname = pf_netdev_name(f),
                                        .link_type = netdev_link_type(f->netdevs, f->n_netdevs),
                                        .vendor = f->vendor,
                                        .device = f->device,
                                };
                                return true;
                        }
                        for (size_t j = 0; list == 0 && j < f->n_vfs; j++) {
                                const struct vf_info *v = &f->vfs[j];
                                if (strcmp(v->pci_address, pci) != 0)
                                        continue;
                                *ret = (struct card_fn){
                                        .pcie_root = v->pcie_root,
                                        .ifname = v->n_netdevs ? v->netdevs[0].name : NULL,
                                        .link_type = netdev_link_type(v->netdevs, v->n_netdevs),
                                        .vendor = v->vendor,
                                        .device = v->device,
                                };
                                return true;
                        }
                }
        }
        return false;
}

/* One whole card of a whole-card RDMA pool: the same attribute names as a VF where they mean
 * the same (no PF, no VF index), deviceType "rdma-shared", and the card's RDMA device. */
static json_t *card_json(const struct dp_pool *pool, const struct dp_device *d,
                         const struct card_fn *fn)
{
        json_t *attrs = json_object();
        if (!attrs)
                return NULL;
        int r = set_pci_attrs(attrs, d->id, fn->pcie_root, d->numa_node, fn->vendor, fn->device);
        if (fn->ifname)
                r |= json_object_set_new(attrs, ATTR_DRIVER "ifName", str_attr(fn->ifname));
        r |= json_object_set_new(attrs, ATTR_DRIVER "linkType", str_attr(fn->link_type));
        r |= json_object_set_new(attrs, ATTR_DRIVER "rdmaCapable", json_pack("{s:b}", "bool", 1));
        if (d->rdma_device[0])
                r |= json_object_set_new(attrs, ATTR_DRIVER "rdmaDevice", str_attr(d->rdma_device));
        return device_entry(attrs, r, pool, d, DRA_DEVICE_TYPE_CARD);
}

static bool is_dns_label(const char *s, size_t len)
{
        if (len == 0 || len > DRA_DEVICE_NAME_MAX || s[0] == '-' || s[len - 1] == '-')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

static bool is_dns_subdomain(const char *s, size_t len, size_t max)
{
        if (len == 0 || len > max)
                return false;
        for (size_t start = 0; start <= len;) {
                size_t end = start;
                while (end < len && s[end] != '.')
                        end++;
                if (!is_dns_label(s + start, end - start))
                        return false;
                start = end + 1;
        }
        return true;
}

/* "<domain>/<id>" or "<id>": a DNS subdomain of at most 63 and a C identifier of at most 32. */
static const char *qualified_name_problem(const char *key)
{
        const char *slash = strchr(key, '/');
        const char *id = slash ? slash + 1 : key;
        if (slash && !is_dns_subdomain(key, (size_t)(slash - key), DRA_ATTRIBUTE_DOMAIN_MAX))
                return "its domain must be a DNS subdomain of at most 63 characters";
        size_t n = strlen(id);
        if (n == 0 || n > DRA_ATTRIBUTE_ID_MAX)
                return "its name after the domain must have 1 to 32 characters";
        if (!((id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z')))
                return "its name after the domain must start with a letter";
        for (size_t i = 1; i < n; i++)
                if (!((id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= 'a' && id[i] <= 'z') ||
                      (id[i] >= '0' && id[i] <= '9') || id[i] == '_'))
                        return "its name after the domain must be a C identifier";
        return NULL;
}

bool dra_device_is_valid(json_t *device, char *why, size_t size)
{
        const char *name = json_string_value(json_object_get(device, "name")) ?: "";
        if (!is_dns_label(name, strlen(name))) {
                snprintf(why, size,
                         "device name \"%s\" is not a DNS label (at most %d characters of a-z, "
                         "0-9 and '-')",
                         name, DRA_DEVICE_NAME_MAX);
                return false;
        }
        json_t *attrs = json_object_get(device, "attributes");
        size_t n = json_object_size(attrs) + json_object_size(json_object_get(device, "capacity"));
        if (n > DRA_ATTRIBUTES_PER_DEVICE) {
                snprintf(why, size,
                         "device %s: %zu attributes and capacities, resource.k8s.io/v1 allows "
                         "%d per device",
                         name, n, DRA_ATTRIBUTES_PER_DEVICE);
                return false;
        }
        const char *key;
        json_t *v;
        json_object_foreach(attrs, key, v)
        {
                const char *problem = qualified_name_problem(key);
                if (problem) {
                        snprintf(why, size, "device %s: attribute name %s: %s", name, key, problem);
                        return false;
                }
                const char *str = json_string_value(json_object_get(v, "string"))
                                      ?: json_string_value(json_object_get(v, "version"));
                if (str && strlen(str) > DRA_ATTRIBUTE_VALUE_MAX) {
                        snprintf(why, size,
                                 "device %s: attribute %s: value \"%s\" has %zu characters, "
                                 "resource.k8s.io/v1 allows %d",
                                 name, key, str, strlen(str), DRA_ATTRIBUTE_VALUE_MAX);
                        return false;
                }
        }
        return true;
}

/* FNV-1a, for a short stable tag of a node name cut to fit. */
static uint32_t fnv1a(const char *s)
{
        uint32_t h = 2166136261u;
        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 16777619u;
        return h;
}

void dra_slice_name(const char *node, size_t index, char *buf, size_t size)
{
        char suffix[48];
        snprintf(suffix, sizeof(suffix), "-sriov-agent-%zu", index);
        size_t n = strlen(node), room = DRA_OBJECT_NAME_MAX - strlen(suffix);
        if (n <= room) {
                snprintf(buf, size, "%s%s", node, suffix);
                return;
        }
        /* Cut, without leaving a '.' or '-' at the cut (the name stays a DNS subdomain), and
         * tagged with a hash of the whole name so that two long names sharing a prefix do not
         * share slices. */
        size_t keep = room - 9;
        while (keep > 0 && (node[keep - 1] == '.' || node[keep - 1] == '-'))
                keep--;
        snprintf(buf, size, "%.*s-%08x%s", (int)keep, node, fnv1a(node), suffix);
}

/* Every device of one resource, or none: the first that breaks a limit rejects the resource. */
static int check_pool(json_t **devs, size_t from, size_t *k, const struct dp_pool *p,
                      json_t *rejected)
{
        char why[512];
        for (size_t i = from; i < *k; i++) {
                if (dra_device_is_valid(devs[i], why, sizeof(why)))
                        continue;
                for (size_t j = from; j < *k; j++)
                        json_decref(devs[j]);
                *k = from;
                if (!rejected)
                        return 0;
                return json_array_append_new(rejected, json_pack("{s:s,s:s}", "resourceName",
                                                                 p->resource, "reason", why)) < 0
                           ? -ENOMEM
                           : 0;
        }
        return 0;
}

static int compare_names(const void *a, const void *b)
{
        const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
        return strcmp(json_string_value(json_object_get(x, "name")),
                      json_string_value(json_object_get(y, "name")));
}

int dra_slices_build(const struct dp_pool_set *pools, const struct inventory *inv, const char *node,
                     const char *driver, const struct dp_usage *held, json_t **ret)
{
        json_t *rejected = NULL;
        int r = dra_slices_build_checked(pools, inv, node, driver, held, ret, &rejected);
        size_t i;
        json_t *e;
        json_array_foreach(rejected, i, e)
        {
                log_warning("DRA: resource %s left out of the ResourceSlices: %s",
                            json_string_value(json_object_get(e, "resourceName")),
                            json_string_value(json_object_get(e, "reason")));
        }
        json_decref(rejected);
        return r;
}

int dra_slices_build_checked(const struct dp_pool_set *pools, const struct inventory *inv,
                             const char *node, const char *driver, const struct dp_usage *held,
                             json_t **ret, json_t **rejected)
{
        json_auto_t *rej = json_array();
        if (!rej)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < pools->n_pools; i++)
                n += pools->pools[i].kind == DP_POOL_SRIOV ? pools->pools[i].n_devices
                                                           : pools->pools[i].n_cards;
        _cleanup_free_ json_t **devs = calloc(n ?: 1, sizeof(*devs));
        if (!devs)
                return -ENOMEM;
        size_t k = 0;
        int r = 0;
        for (size_t i = 0; i < pools->n_pools && r == 0; i++) {
                const struct dp_pool *p = &pools->pools[i];
                size_t from = k;
                if (p->kind == DP_POOL_RDMA_SHARED) {
                        /* Pods of the device plugin share every card of the pool: while one
                         * holds an ID, no card of it is offered to a claim. */
                        const struct dp_resource_usage *u =
                            held ? dp_usage_find(held, p->resource) : NULL;
                        for (size_t j = 0; (!u || u->n_ids == 0) && j < p->n_cards; j++) {
                                struct card_fn fn;
                                if (!find_card(inv, p->cards[j].id, &fn))
                                        continue;
                                if (!(devs[k] = card_json(p, &p->cards[j], &fn))) {
                                        r = -ENOMEM;
                                        break;
                                }
                                k++;
                        }
                        if (r == 0)
                                r = check_pool(devs, from, &k, p, rej);
                        continue;
                }
                for (size_t j = 0; j < p->n_devices; j++) {
                        const struct pf_info *pf = NULL;
                        const struct vf_info *vf = find_vf(inv, p->devices[j].id, &pf);
                        if (!vf) /* pools come from this inventory: a VF gone meanwhile */
                                continue;
                        if (held && dp_usage_in_use(held, p->resource, p->devices[j].id))
                                continue;
                        if (!(devs[k] = device_json(p, &p->devices[j], pf, vf))) {
                                r = -ENOMEM;
                                break;
                        }
                        k++;
                }
                if (r == 0)
                        r = check_pool(devs, from, &k, p, rej);
        }
        if (k > 1)
                qsort(devs, k, sizeof(*devs), compare_names);
        json_t *slices = r == 0 ? json_array() : NULL;
        size_t count = (k + DRA_DEVICES_PER_SLICE - 1) / DRA_DEVICES_PER_SLICE;
        for (size_t s = 0; slices && s < count; s++) {
                json_t *list = json_array();
                for (size_t i = s * DRA_DEVICES_PER_SLICE;
                     list && i < k && i < (s + 1) * DRA_DEVICES_PER_SLICE; i++)
                        if (json_array_append(list, devs[i]) < 0)
                                json_decref(TAKE_PTR(list));
                char name[512];
                dra_slice_name(node, s, name, sizeof(name));
                json_t *slice =
                    list ? json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:I},s:o}}", "apiVersion",
                                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata",
                                     "name", name, "spec", "driver", driver, "nodeName", node,
                                     "pool", "name", node, "resourceSliceCount", (json_int_t)count,
                                     "devices", list)
                         : NULL;
                if (!slice || json_array_append_new(slices, slice) < 0)
                        json_decref(TAKE_PTR(slices));
        }
        for (size_t i = 0; i < k; i++)
                json_decref(devs[i]);
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees devs */
        if (!slices)
                return -ENOMEM;
        *ret = slices;
        if (rejected)
                *rejected = json_incref(rej);
        return 0;
}
