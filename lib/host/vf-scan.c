/* SPDX-License-Identifier: Apache-2.0 */
/* VFs of a PF: the PF's virtfnN links give index and address; each VF directory is then read
 * like any PCI function, and its physfn back-link is checked, which is how a VF whose PF
 * vanished mid-scan is told apart from a healthy one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/pci-function.h"
#include "host/printable.h"
#include "host/sysfs-at.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

static int compare_vf_index(const void *a, const void *b)
{
        const struct vf_info *x = a, *y = b;
        return (x->vf_index > y->vf_index) - (x->vf_index < y->vf_index);
}

/* Lists virtfnN links; VFs get index and address only. Bad links become PF errors. */
static int list_virtfn_links(int pf_fd, struct pf_info *pf)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, pf_fd, ".");
        if (r < 0)
                return host_device_error_append(&pf->error, "cannot list the PF directory: %s",
                                                strerror(-r));

        size_t allocated = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char addr[PCI_ADDR_MAX + 1], shown[64];
                int index;

                if (strncmp(name, "virtfn", 6) != 0)
                        continue;
                if (parse_int(name + 6, &index) < 0 || index < 0) {
                        r = host_device_error_append(
                            &pf->error, "'%s': not a virtfn index",
                            host_printable_name(name, shown, sizeof(shown)));
                        continue;
                }
                int k = host_sysfs_read_link_at(pf_fd, name, addr, sizeof(addr), NULL);
                if (k < 0 || !pci_address_is_valid(addr)) {
                        r = host_device_error_append(&pf->error, "%s: %s", name,
                                                     k < 0 ? strerror(-k)
                                                           : "link does not name a PCI address");
                        continue;
                }
                if (pf->n_vfs == allocated) { /* doubling: 4 reallocs for 128 VFs, not 128 */
                        size_t size = allocated ? 2 * allocated : 16;
                        struct vf_info *p = realloc(pf->vfs, size * sizeof(*p));
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        pf->vfs = p;
                        allocated = size;
                }
                struct vf_info *p = pf->vfs;
                p[pf->n_vfs] = (struct vf_info){
                        .vf_index = index,
                        .numa_node = -1,
                        .iommu_group = -1,
                        .vlan = -1,
                };
                strcpy(p[pf->n_vfs].pci_address, addr);
                pf->n_vfs++;
        }
        if (r >= 0 && pf->n_vfs > 1)
                qsort(pf->vfs, pf->n_vfs, sizeof(*pf->vfs), compare_vf_index);
        return r;
}

static int check_physfn(int vf_fd, const struct pf_info *pf, struct vf_info *vf)
{
        char target[PCI_ADDR_MAX + 1];

        /* The link's name is checked first: naming the PF being scanned, it points at the
         * directory we are reading from; only another name needs the (rarer) dangling check. */
        int r = host_sysfs_read_link_at(vf_fd, "physfn", target, sizeof(target), NULL);
        if (r < 0)
                return host_device_error_append(&vf->error, "physfn: %s", strerror(-r));
        if (strcasecmp(target, pf->pci_address) == 0)
                return 0;
        if (!host_sysfs_exists_at(vf_fd, "physfn"))
                return host_device_error_append(
                    &vf->error, "physfn: link to '%s' dangles (PF vanished?)", target);
        return host_device_error_append(&vf->error, "physfn: names '%s', not PF %s", target,
                                        pf->pci_address);
}

static int read_vf(const struct discover_scan *scan, int pf_fd, const struct pf_info *pf,
                   struct vf_info *vf)
{
        char link[32];
        int r;

        snprintf(link, sizeof(link), "virtfn%d", vf->vf_index);
        _cleanup_close_ int fd = host_sysfs_open_dir_at(pf_fd, link);
        if (fd < 0)
                return host_device_error_append(&vf->error, "%s -> %s: %s", link, vf->pci_address,
                                                fd == -ENOENT ? "VF directory is missing"
                                                              : strerror(-fd));

        /* The kernel sets a VF's ids from its PF (vendor, sriov_vf_device) rather than from
         * config space, so reading them back per VF would cost six calls to learn nothing. */
        vf->vendor = pf->vendor;
        vf->device = pf->vf_device;
        r = check_physfn(fd, pf, vf);
        if (r >= 0)
                r = host_pci_function_read_driver(fd, vf->driver, &vf->error);
        if (r >= 0)
                r = host_pci_function_read_numa(fd, &vf->numa_node, &vf->error);
        if (r >= 0)
                r = host_pci_function_read_iommu_group(fd, &vf->iommu_group, &vf->error);
        if (r >= 0 && vf->iommu_group >= 0 && strcmp(vf->driver, "vfio-pci") == 0) {
                /* vfio's no-IOMMU mode (a VM without a virtual IOMMU) names its groups; only
                 * vfio-bound VFs are read, so the common case costs nothing. */
                char name[32];
                vf->iommu_noiommu =
                    host_sysfs_read_line_at(fd, "iommu_group/name", name, sizeof(name)) >= 0 &&
                    strcmp(name, "vfio-noiommu") == 0;
        }
        if (r >= 0)
                r = host_pci_function_read_net_rdma(scan, fd, vf->pci_address, true, &vf->netdevs,
                                                    &vf->n_netdevs, &vf->rdma, &vf->n_rdma,
                                                    &vf->error);
        return r;
}

int host_sriov_read_vfs(const struct discover_scan *scan, int pf_fd, struct pf_info *pf)
{
        int r = list_virtfn_links(pf_fd, pf);
        /* A VF sits below its PF's host bridge: read once per PF (discovery's system-call
         * budget per function is tight, see test/bench/syscall-budget.py). The PF's own root
         * places a whole card in DRA. */
        char root[PCIE_ROOT_MAX] = "";
        if (r >= 0)
                (void)host_pci_function_read_pcie_root(scan, pf_fd, root);
        memcpy(pf->pcie_root, root, sizeof(root));
        for (size_t i = 0; r >= 0 && i < pf->n_vfs; i++) {
                r = read_vf(scan, pf_fd, pf, &pf->vfs[i]);
                memcpy(pf->vfs[i].pcie_root, root, sizeof(root));
        }
        if (r >= 0 && pf->num_vfs >= 0 && (size_t)pf->num_vfs != pf->n_vfs)
                r = host_device_error_append(&pf->error,
                                             "sriov_numvfs is %d but %zu virtfn links exist",
                                             pf->num_vfs, pf->n_vfs);
        return r;
}
