/* SPDX-License-Identifier: Apache-2.0 */
/* host_discover(): finds SR-IOV network PFs under bus/pci/devices and reads each with its VFs.
 *
 * A PF is a function with `sriov_totalvfs` whose class is 0x02xxxx (network). The cheap
 * existence check comes first so that the hundreds of VFs in bus/pci/devices cost one
 * faccessat() each. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/discover-kernel.h"
#include "host/discover.h"
#include "host/pci-function.h"
#include "host/printable.h"
#include "host/sysfs-at.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define PCI_CLASS_NETWORK 0x02

typedef char pci_addr_t[PCI_ADDR_MAX];

static int compare_address(const void *a, const void *b)
{
        return strcmp(a, b);
}

static bool is_network_pf(int devices_fd, const char *addr)
{
        char rel[PCI_ADDR_MAX + 32];
        uint32_t class_code;

        snprintf(rel, sizeof(rel), "%s/sriov_totalvfs", addr);
        if (!host_sysfs_exists_at(devices_fd, rel))
                return false;
        snprintf(rel, sizeof(rel), "%s/class", addr);
        int r = host_sysfs_read_hex_u32_at(devices_fd, rel, &class_code);
        if (r < 0) {
                log_pf(LOG_WARNING, r, addr, "SR-IOV function with unreadable class, skipped");
                return false;
        }
        return (class_code >> 16) == PCI_CLASS_NETWORK;
}

/* Sorted PCI addresses of the network PFs, in one array. */
static int list_pfs(int devices_fd, pci_addr_t **ret, size_t *ret_n)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, devices_fd, ".");
        if (r < 0)
                return r;

        _cleanup_free_ pci_addr_t *list = NULL;
        size_t n = 0, allocated = 0;
        const char *name;
        while ((name = host_sysfs_dir_next(&d))) {
                if (!pci_address_is_valid(name) || !is_network_pf(devices_fd, name))
                        continue;
                if (n == allocated) {
                        size_t size = allocated ? 2 * allocated : 8;
                        pci_addr_t *p = realloc(list, size * sizeof(*list));
                        if (!p)
                                return -ENOMEM;
                        list = p;
                        allocated = size;
                }
                strcpy(list[n++], name); /* pci_address_is_valid() bounded it */
        }
        if (d.error < 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return d.error; /* a partial PF list would look like PFs vanished */
        if (n > 1)
                qsort(list, n, sizeof(*list), compare_address);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static int read_sriov_counts(int fd, struct pf_info *pf)
{
        int r = host_sysfs_read_int_at(fd, "sriov_totalvfs", &pf->total_vfs);
        if (r < 0) {
                pf->total_vfs = -1;
                if (host_device_error_append(&pf->error, "sriov_totalvfs: %s",
                                             r == -EINVAL ? "not a number" : strerror(-r)) < 0)
                        return -ENOMEM;
        }
        char buf[32] = "", shown[40];
        r = host_sysfs_read_line_at(fd, "sriov_numvfs", buf, sizeof(buf));
        if (r >= 0)
                r = parse_int(buf, &pf->num_vfs);
        if (r >= 0 && pf->num_vfs < 0)
                r = -ERANGE;
        if (r < 0) {
                pf->num_vfs = -1;
                if ((r == -EINVAL || r == -ERANGE
                         ? host_device_error_append(&pf->error,
                                                    "sriov_numvfs: '%s' is not a VF count",
                                                    host_printable_name(buf, shown, sizeof(shown)))
                         : host_device_error_append(&pf->error, "sriov_numvfs: %s", strerror(-r))) <
                    0)
                        return -ENOMEM;
        }
        r = host_sysfs_read_hex_u16_at(fd, "sriov_vf_device", &pf->vf_device);
        if (r < 0) {
                pf->vf_device = 0;
                if (host_device_error_append(&pf->error, "sriov_vf_device: %s", strerror(-r)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int read_pf(const struct discover_scan *scan, const char *addr, struct pf_info *pf)
{
        *pf =
            (struct pf_info){ .numa_node = -1, .iommu_group = -1, .total_vfs = -1, .num_vfs = -1 };
        strcpy(pf->pci_address, addr); /* pci_address_is_valid() bounded it */

        _cleanup_close_ int fd = host_sysfs_open_dir_at(scan->devices_fd, addr);
        if (fd < 0) /* vanished since it was listed */
                return host_device_error_append(&pf->error, "PCI directory: %s", strerror(-fd));

        int r = host_pci_function_read_ids(fd, &pf->vendor, &pf->device, &pf->error);
        if (r >= 0 && host_sysfs_read_hex_u16_at(fd, "subsystem_vendor", &pf->subsystem_vendor) < 0)
                pf->subsystem_vendor = 0;
        if (r >= 0 && host_sysfs_read_hex_u16_at(fd, "subsystem_device", &pf->subsystem_device) < 0)
                pf->subsystem_device = 0;
        if (r >= 0 && host_sysfs_read_hex_u32_at(fd, "class", &pf->class_code) < 0)
                pf->class_code = 0;
        if (r >= 0)
                r = host_pci_function_read_driver(fd, pf->driver, &pf->error);
        if (r >= 0)
                r = host_pci_function_read_numa(fd, &pf->numa_node, &pf->error);
        if (r >= 0)
                r = host_pci_function_read_iommu_group(fd, &pf->iommu_group, &pf->error);
        if (r >= 0)
                r = read_sriov_counts(fd, pf);
        if (r >= 0)
                r = host_pci_function_read_net_rdma(scan, fd, pf->pci_address, false, &pf->netdevs,
                                                    &pf->n_netdevs, &pf->rdma, &pf->n_rdma,
                                                    &pf->error);
        if (r >= 0)
                r = host_sriov_read_vfs(scan, fd, pf);
        return r;
}

/* PFs are independent, so they are read by a few threads: on a node with 1000+ VFs the scan
 * is bound by system-call latency, not by CPU, and this roughly divides it by the core count. */
#define MAX_SCAN_THREADS 8

struct pf_queue {
        const struct discover_scan *scan;
        const pci_addr_t *addrs;
        struct pf_info *pfs;
        size_t n;
        atomic_size_t next;
        atomic_int error; /* first fatal error (-ENOMEM); stops the other workers */
};

static void *pf_worker(void *userdata)
{
        struct pf_queue *q = userdata;

        for (;;) {
                size_t i = atomic_fetch_add(&q->next, 1);
                if (i >= q->n || atomic_load(&q->error) < 0)
                        return NULL;
                int r = read_pf(q->scan, q->addrs[i], &q->pfs[i]);
                if (r < 0) {
                        int expected = 0;
                        atomic_compare_exchange_strong(&q->error, &expected, r);
                }
        }
}

static int read_pfs(struct pf_queue *q)
{
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        size_t n_threads = cpus > 1 ? (size_t)cpus : 1;
        if (n_threads > MAX_SCAN_THREADS)
                n_threads = MAX_SCAN_THREADS;
        if (n_threads > q->n)
                n_threads = q->n;

        pthread_t threads[MAX_SCAN_THREADS];
        size_t started = 0;
        /* The calling thread is one of the workers; failing to start more only costs time. */
        for (; started + 1 < n_threads; started++)
                if (pthread_create(&threads[started], NULL, pf_worker, q) != 0)
                        break;
        pf_worker(q);
        for (size_t i = 0; i < started; i++)
                pthread_join(threads[i], NULL);
        return atomic_load(&q->error);
}

static int scan_pfs(const struct discover_scan *scan, struct inventory *inv)
{
        _cleanup_free_ pci_addr_t *addrs = NULL;
        size_t n = 0;

        int r = list_pfs(scan->devices_fd, &addrs, &n);
        if (r < 0)
                return r;
        if (n > 0) {
                inv->pfs = calloc(n, sizeof(*inv->pfs));
                if (!inv->pfs)
                        r = -ENOMEM;
                else
                        inv->n_pfs = n; /* zeroed entries are safe for inventory_done() */
        }
        if (r >= 0 && n > 0) {
                struct pf_queue q = { .scan = scan, .addrs = addrs, .pfs = inv->pfs, .n = n };
                r = read_pfs(&q);
        }
        /* libpci's name database is not thread-safe: look names up after the workers. */
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        for (size_t i = 0; r >= 0 && i < inv->n_pfs; i++)
                if (inv->pfs[i].vendor)
                        r = host_pci_names_lookup(scan->names, inv->pfs[i].vendor,
                                                  inv->pfs[i].device, &inv->pfs[i].vendor_name,
                                                  &inv->pfs[i].device_name);
        return r;
}

static int compare_str_ptr(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted addresses of every PF and VF found, for bsearch: nodes have 1000+ VFs with as many
 * RDMA devices. */
static int sriov_addresses(const struct inventory *inv, const char ***ret, size_t *ret_n)
{
        size_t n = inv->n_pfs;
        for (size_t i = 0; i < inv->n_pfs; i++)
                n += inv->pfs[i].n_vfs;
        const char **l = calloc(n ? n : 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < inv->n_pfs; i++) {
                l[k++] = inv->pfs[i].pci_address;
                for (size_t j = 0; j < inv->pfs[i].n_vfs; j++)
                        l[k++] = inv->pfs[i].vfs[j].pci_address;
        }
        qsort(l, k, sizeof(*l), compare_str_ptr);
        *ret = l;
        *ret_n = k;
        return 0;
}

static int compare_pf(const void *a, const void *b)
{
        return strcmp(((const struct pf_info *)a)->pci_address,
                      ((const struct pf_info *)b)->pci_address);
}

/* One RDMA-capable network function that is not part of SR-IOV: ids, driver, NUMA node,
 * netdevs and RDMA devices. Returns 1 when it is one, 0 when not (not a network function, no
 * driver), negative errno. */
static int read_rdma_nic(const struct discover_scan *scan, const char *addr, struct pf_info *nic)
{
        *nic =
            (struct pf_info){ .numa_node = -1, .iommu_group = -1, .total_vfs = -1, .num_vfs = -1 };
        strcpy(nic->pci_address, addr); /* pci_address_is_valid() bounded it */
        _cleanup_close_ int fd = host_sysfs_open_dir_at(scan->devices_fd, addr);
        if (fd < 0)
                return 0;
        if (host_sysfs_read_hex_u32_at(fd, "class", &nic->class_code) < 0 ||
            (nic->class_code >> 16) != PCI_CLASS_NETWORK)
                return 0;
        int r = host_pci_function_read_ids(fd, &nic->vendor, &nic->device, &nic->error);
        if (r >= 0)
                r = host_pci_function_read_driver(fd, nic->driver, &nic->error);
        if (r >= 0 && nic->driver[0] == 0)
                return 0;
        if (r >= 0)
                r = host_pci_function_read_numa(fd, &nic->numa_node, &nic->error);
        if (r >= 0)
                r = host_pci_function_read_pcie_root(scan, fd, nic->pcie_root);
        if (r >= 0)
                r = host_pci_function_read_net_rdma(scan, fd, nic->pci_address, false,
                                                    &nic->netdevs, &nic->n_netdevs, &nic->rdma,
                                                    &nic->n_rdma, &nic->error);
        return r < 0 ? r : 1;
}

/* RDMA devices whose PCI function is not an SR-IOV PF or VF found above: the whole-card RDMA
 * plugin serves every network function with RDMA, SR-IOV or not. Found from the functions the
 * RDMA scan read off class/infiniband's links (rdma-sysfs.h) rather than by probing every PCI
 * function. Virtual devices (rxe) have no card: they are tied to a netdev. */
static int scan_rdma_nics(const struct discover_scan *scan, struct inventory *inv)
{
        if (scan->rdma.n_function_devices == 0)
                return 0; /* no RDMA stack loaded, or virtual devices only */
        _cleanup_free_ const char **known = NULL;
        size_t n_known = 0;
        int r = sriov_addresses(inv, &known, &n_known);
        for (size_t f = 0; r >= 0 && f < scan->rdma.n_function_devices; f++) {
                const char *addr = scan->rdma.function_devices[f].pci_address;
                if (bsearch(&addr, known, n_known, sizeof(*known), compare_str_ptr))
                        continue;
                bool seen = false;
                for (size_t i = 0; i < inv->n_rdma_nics && !seen; i++)
                        seen = strcmp(inv->rdma_nics[i].pci_address, addr) == 0;
                if (seen)
                        continue;
                if (GROW_ARRAY(inv->rdma_nics, inv->cap_rdma_nics, inv->n_rdma_nics + 1) < 0) {
                        r = -ENOMEM;
                        break;
                }
                struct pf_info *l = inv->rdma_nics;
                r = read_rdma_nic(scan, addr, &l[inv->n_rdma_nics]);
                if (r > 0)
                        inv->n_rdma_nics++;
                else
                        pf_info_done(&l[inv->n_rdma_nics]);
        }
        if (r >= 0 && inv->n_rdma_nics > 1)
                qsort(inv->rdma_nics, inv->n_rdma_nics, sizeof(*inv->rdma_nics), compare_pf);
        return r < 0 ? r : 0;
}

int host_discover(const struct discover_options *opts, struct inventory *ret)
{
        const char *root = opts && opts->sysfs_root ? opts->sysfs_root : "/sys";
        struct inventory inv = {};

        *ret = (struct inventory){};
        _cleanup_close_ int root_fd = host_sysfs_open_dir_at(AT_FDCWD, root);
        if (root_fd < 0)
                return log_error_errno(root_fd, "Cannot open sysfs root %s", root);
        _cleanup_close_ int devices_fd = host_sysfs_open_dir_at(root_fd, "bus/pci/devices");
        if (devices_fd < 0)
                return log_error_errno(devices_fd, "Cannot open %s/bus/pci/devices", root);

        struct discover_scan scan = {
                .root_fd = root_fd,
                .devices_fd = devices_fd,
                .names = opts && opts->pci_names ? host_pci_names_new() : NULL,
        };
        int r = host_rdma_scan_init(&scan.rdma, root_fd);
        if (r >= 0)
                r = scan_pfs(&scan, &inv);
        if (r >= 0)
                r = scan_rdma_nics(&scan, &inv);
        if (r >= 0 && opts && opts->query_kernel)
                host_discover_query_kernel(&inv); /* VLANs, eswitch mode, verbs port attributes */
        host_rdma_scan_done(&scan.rdma);
        host_pci_names_free(scan.names);
        if (r < 0) {
                inventory_done(&inv);
                return log_error_errno(r, "Discovery under %s failed", root);
        }
        *ret = inv;
        return 0;
}

bool host_sysfs_root_is_live(const char *sysfs_root)
{
        struct stat root, sys;

        if (!sysfs_root)
                return true;
        if (stat(sysfs_root, &root) < 0 || stat("/sys", &sys) < 0)
                return false;
        return root.st_dev == sys.st_dev && root.st_ino == sys.st_ino;
}
