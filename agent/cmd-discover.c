/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-agent discover: prints what discovery finds on this node (or under a sysfs root). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "host/discover.h"
#include "host/rdma-netlink.h"
#include "model/inventory-json.h"
#include "model/inventory.h"
#include "policy-files.h"
#include "policy/supported-nics.h"
#include "util/macro.h"

enum output_format {
        OUTPUT_TEXT,
        OUTPUT_JSON,
};

static void print_usage(FILE *f)
{
        fprintf(f, "Usage: sriov-agent discover [--sysfs-root DIR] [-o json|text]\n\n"
                   "Lists the SR-IOV network PFs of this node with their VFs, netdevs and RDMA\n"
                   "devices. Devices whose sysfs data is garbled are listed with an error.\n"
                   "PFs whose model is not in the supported-NIC list are marked: policies do\n"
                   "not configure them.\n\n"
                   "  --sysfs-root DIR  read DIR instead of /sys (e.g. a generated tree)\n"
                   "  --supported-nics FILE  more NIC models (supported-nic-ids ConfigMap format)\n"
                   "  --all-nics        treat every model as supported\n"
                   "  -o, --output FMT  text (a table, default) or json (NodeState status form)\n"
                   "  -h, --help        show this help\n\n"
                   "Exit status: 0 when the scan ran, 1 when it could not.\n");
}

static const char *or_dash(const char *s)
{
        return s && *s ? s : "-";
}

static void format_int(char *buf, size_t size, int v)
{
        if (v < 0)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%d", v);
}

static void format_rdma(char *buf, size_t size, const struct rdma_device *rdma, size_t n)
{
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < n && used < size; i++) {
                int k = snprintf(buf + used, size - used, "%s%s", i ? "," : "", rdma[i].name);
                if (k < 0)
                        break;
                used += (size_t)k;
        }
        if (!buf[0])
                snprintf(buf, size, "-");
}

static void print_text_header(void)
{
        printf("%-16s %-12s %-10s %-9s %4s %5s %7s %4s %11s %5s %-5s %s\n", "PCI", "NETDEV",
               "DRIVER", "ID", "NUMA", "IOMMU", "VFS", "LINK", "SPEED", "MTU", "ADMIN", "RDMA");
}

static void print_pf_text(const struct pf_info *pf, const struct supported_nics *supported)
{
        const struct netdev_info *n = pf->n_netdevs ? &pf->netdevs[0] : NULL;
        char id[16], numa[12], iommu[12], vfs[24], speed[24], mtu[12], rdma[256];

        snprintf(id, sizeof(id), "%04x:%04x", pf->vendor, pf->device);
        format_int(numa, sizeof(numa), pf->numa_node);
        format_int(iommu, sizeof(iommu), pf->iommu_group);
        if (pf->num_vfs >= 0)
                snprintf(vfs, sizeof(vfs), "%d/%d", pf->num_vfs, pf->total_vfs);
        else
                snprintf(vfs, sizeof(vfs), "?/%d", pf->total_vfs);
        if (n && n->speed_mbps >= 0)
                snprintf(speed, sizeof(speed), "%d Mb/s", n->speed_mbps);
        else
                snprintf(speed, sizeof(speed), "-");
        format_int(mtu, sizeof(mtu), n ? n->mtu : -1);
        format_rdma(rdma, sizeof(rdma), pf->rdma, pf->n_rdma);
        printf("%-16s %-12s %-10s %-9s %4s %5s %7s %4s %11s %5s %-5s %s\n", pf->pci_address,
               or_dash(n ? n->name : NULL), or_dash(pf->driver), id, numa, iommu, vfs,
               or_dash(n ? link_type_to_string(n->link_type) : NULL), speed, mtu,
               n ? (n->admin_up ? "up" : "down") : "-", rdma);
        if (pf->vendor_name || pf->device_name)
                printf("  %s %s\n", or_dash(pf->vendor_name), or_dash(pf->device_name));
        if (!supported_nics_allows(supported, pf->vendor, pf->device))
                printf("  not supported: model %04x:%04x is not in the supported-NIC list; "
                       "policies do not configure this PF\n",
                       pf->vendor, pf->device);
        if (pf->error)
                printf("  error: %s\n", pf->error);
}

static void print_vf_text(const struct vf_info *vf)
{
        const struct netdev_info *n = vf->n_netdevs ? &vf->netdevs[0] : NULL;
        char pci[24], id[16], numa[12], iommu[12], vfs[24], mtu[12], rdma[256];

        snprintf(pci, sizeof(pci), "  %s", vf->pci_address);
        snprintf(id, sizeof(id), "%04x:%04x", vf->vendor, vf->device);
        format_int(numa, sizeof(numa), vf->numa_node);
        format_int(iommu, sizeof(iommu), vf->iommu_group);
        snprintf(vfs, sizeof(vfs), "vf %d", vf->vf_index);
        format_int(mtu, sizeof(mtu), n ? n->mtu : -1);
        format_rdma(rdma, sizeof(rdma), vf->rdma, vf->n_rdma);
        printf("%-16s %-12s %-10s %-9s %4s %5s %7s %4s %11s %5s %-5s %s\n", pci,
               or_dash(n ? n->name : NULL), or_dash(vf->driver), id, numa, iommu, vfs,
               or_dash(n ? link_type_to_string(n->link_type) : NULL), "", mtu,
               n ? (n->admin_up ? "up" : "down") : "-", rdma);
        if (vf->error)
                printf("    error: %s\n", vf->error);
}

static int print_text(const struct inventory *inv, const struct supported_nics *supported)
{
        if (inv->n_pfs == 0) {
                printf("No SR-IOV network PFs found.\n");
                return 0;
        }
        print_text_header();
        for (size_t i = 0; i < inv->n_pfs; i++) {
                print_pf_text(&inv->pfs[i], supported);
                for (size_t v = 0; v < inv->pfs[i].n_vfs; v++)
                        print_vf_text(&inv->pfs[i].vfs[v]);
        }
        return 0;
}

/* Adds "supported": true/false to each PF of the NodeState-status-shaped JSON (a field of
 * this command's output only; the NodeState itself keeps upstream's fields). */
static int mark_supported(json_t *j, const struct inventory *inv,
                          const struct supported_nics *supported)
{
        json_t *ifaces = json_object_get(j, "interfaces"), *item;
        size_t i;

        json_array_foreach(ifaces, i, item)
        {
                const char *pci = json_string_value(json_object_get(item, "pciAddress"));
                const struct pf_info *pf = pci ? inventory_find_pf(inv, pci) : NULL;
                if (pf && json_object_set_new(item, "supported",
                                              json_boolean(supported_nics_allows(
                                                  supported, pf->vendor, pf->device))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The kernel's RDMA network namespace mode, as the NodeState's status.system.rdmaMode; NULL
 * when the kernel has no RDMA netlink (ib_core not loaded) or the tree is not the live one. */
static const char *rdma_mode(bool query_kernel)
{
        enum host_rdma_netns_mode mode;
        if (!query_kernel || host_rdma_get_netns_mode(NULL, &mode) < 0)
                return NULL;
        return host_rdma_netns_mode_to_string(mode);
}

static int print_json(const struct inventory *inv, const struct supported_nics *supported,
                      const char *rdma)
{
        json_auto_t *j = inventory_to_json(inv);
        if (j && rdma && json_object_set_new(j, "system", json_pack("{s:s}", "rdmaMode", rdma)) < 0)
                j = (json_decref(j), NULL);
        if (!j || mark_supported(j, inv, supported) < 0) {
                fprintf(stderr, "sriov-agent discover: out of memory\n");
                return 1;
        }
        int r = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (r < 0)
                return 1;
        putchar('\n');
        return 0;
}

int cmd_discover(int argc, char **argv)
{
        static const struct option options[] = {
                { "sysfs-root", required_argument, NULL, 'r' },
                { "output", required_argument, NULL, 'o' },
                { "supported-nics", required_argument, NULL, 's' },
                { "all-nics", no_argument, NULL, 'A' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct discover_options opts = { .sysfs_root = NULL };
        _cleanup_(supported_nics_done) struct supported_nics supported = { 0 };
        enum output_format format = OUTPUT_TEXT;
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "o:h", options, NULL)) >= 0) {
                switch (c) {
                case 'r':
                        opts.sysfs_root = optarg;
                        break;
                case 'o':
                        if (strcmp(optarg, "json") == 0)
                                format = OUTPUT_JSON;
                        else if (strcmp(optarg, "text") == 0)
                                format = OUTPUT_TEXT;
                        else {
                                fprintf(stderr,
                                        "sriov-agent discover: unknown output format '%s' "
                                        "(json or text)\n",
                                        optarg);
                                return 1;
                        }
                        break;
                case 's':
                        if (supported_nics_load_file(&supported, optarg) < 0)
                                return 1; /* logged with the file and key */
                        break;
                case 'A':
                        supported.any = true;
                        break;
                case 'h':
                        print_usage(stdout);
                        return 0;
                default:
                        print_usage(stderr);
                        return 1;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sriov-agent discover: unexpected argument '%s'\n", argv[optind]);
                return 1;
        }
        /* Only the live /sys has a kernel behind it worth asking (libibverbs, netlink). */
        opts.query_kernel = host_sysfs_root_is_live(opts.sysfs_root);
        opts.pci_names = format == OUTPUT_TEXT; /* the JSON has no names */

        struct inventory inv;
        if (host_discover(&opts, &inv) < 0)
                return 1; /* host_discover logged why */
        const char *rdma = rdma_mode(opts.query_kernel);
        int r = format == OUTPUT_JSON ? print_json(&inv, &supported, rdma)
                                      : print_text(&inv, &supported);
        if (format == OUTPUT_TEXT && rdma)
                printf("\nRDMA network namespace mode: %s\n", rdma);
        inventory_done(&inv);
        return r;
}
