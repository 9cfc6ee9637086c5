/* SPDX-License-Identifier: Apache-2.0 */
/* The floor under the metrics scrape's RDMA part: the files a scrape reads, read alone.
 *
 *   bench-scrape-floor SYSFS_ROOT
 *
 * For every device of SYSFS_ROOT/class/infiniband and every port, the names of the port's
 * state, phys_state, rate and of its counters/ and hw_counters/ files are listed once,
 * untimed; then each run opens each device's ports directory and opens, reads and closes
 * every one of those files relative to it: the least a scrape that reads sysfs can do (no
 * listing, no parsing, no exposition). Prints the median of the runs. What a scrape costs
 * above it is the agent's; the rest is the kernel's price per file on this machine.
 *
 * Then the same number of reads from this machine's real sysfs (kernfs, which a node's scrape
 * reads), where a generated tree sits on tmpfs: the read-only attributes of the PCI devices in
 * /sys/bus/pci/devices, taken in turn, each opened relative to its device directory.
 *
 * Last, the one way under that floor from user space, priced: as many of those files kept open
 * and read again at offset 0 (kernfs makes the text anew for such a read) saves the open and
 * close, but the kernel keeps a page-sized buffer for every sysfs file that has been read and
 * is still open, charged to the reader's cgroup. Prints the time and the slab it held. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench-time.h"

#define RUNS 11

struct device {
        char ports[NAME_MAX + 8]; /* "<device>/ports", relative to class/infiniband */
        char **files;             /* relative to ports: "1/state", "1/counters/port_rcv_data" */
        size_t n_files;
};

static int add_file(struct device *d, const char *port, const char *rel)
{
        char **p = realloc(d->files, (d->n_files + 1) * sizeof(*p));
        if (!p)
                return -1;
        d->files = p;
        if (asprintf(&d->files[d->n_files], "%s/%s", port, rel) < 0)
                return -1;
        d->n_files++;
        return 0;
}

static int add_dir(struct device *d, int ports_fd, const char *port, const char *dir)
{
        char rel[NAME_MAX * 2 + 2];
        snprintf(rel, sizeof(rel), "%s/%s", port, dir);
        int fd = openat(ports_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* hw_counters/ only where the driver has them */
        DIR *dir_stream = fdopendir(fd);
        if (!dir_stream) {
                close(fd);
                return -1;
        }
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(dir_stream));) {
                char file[NAME_MAX * 2 + 2];
                if (e->d_name[0] == '.')
                        continue;
                snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
                r = add_file(d, port, file);
        }
        closedir(dir_stream);
        return r;
}

static int list_device(int class_fd, const char *name, struct device *d)
{
        snprintf(d->ports, sizeof(d->ports), "%s/ports", name);
        int ports_fd = openat(class_fd, d->ports, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ports_fd < 0)
                return 0;
        DIR *ports = fdopendir(ports_fd);
        if (!ports) {
                close(ports_fd);
                return -1;
        }
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(ports));) {
                if (e->d_name[0] == '.')
                        continue;
                r = add_file(d, e->d_name, "state");
                if (r == 0)
                        r = add_file(d, e->d_name, "phys_state");
                if (r == 0)
                        r = add_file(d, e->d_name, "rate");
                if (r == 0)
                        r = add_dir(d, dirfd(ports), e->d_name, "counters");
                if (r == 0)
                        r = add_dir(d, dirfd(ports), e->d_name, "hw_counters");
        }
        closedir(ports);
        return r;
}

/* What a scrape does per file, relative to an open directory; a missing file is skipped. */
static void read_file_at(int dir_fd, const char *name)
{
        char buf[64];
        int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return;
        (void)!read(fd, buf, sizeof(buf));
        close(fd);
}

/* Attributes every PCI device has, read-only and without side effects on read. */
static const char *const pci_attributes[] = {
        "vendor",
        "device",
        "class",
        "subsystem_vendor",
        "subsystem_device",
        "revision",
        "numa_node",
        "enable",
        "irq",
        "local_cpulist",
        "dma_mask_bits",
        "msi_bus",
        "d3cold_allowed",
        "consistent_dma_mask_bits",
};

#define MAX_PCI_DEVICES 64

/* Opens /sys/bus/pci/devices and names up to MAX_PCI_DEVICES of its devices: the directory's
 * fd, or -1 when it cannot be read or holds none. */
static int pci_devices(char names[MAX_PCI_DEVICES][NAME_MAX + 1], size_t *ret_n)
{
        int devices_fd = open("/sys/bus/pci/devices", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *devices = devices_fd < 0 ? NULL : fdopendir(dup(devices_fd));
        if (!devices) {
                if (devices_fd >= 0)
                        close(devices_fd);
                return -1;
        }
        size_t n = 0;
        for (struct dirent *e; n < MAX_PCI_DEVICES && (e = readdir(devices));)
                if (e->d_name[0] != '.')
                        snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
        closedir(devices);
        if (n == 0) {
                close(devices_fd);
                return -1;
        }
        *ret_n = n;
        return devices_fd;
}

/* Median ms of `reads` opens, reads and closes of the real /sys PCI attributes, or < 0. */
static double real_sysfs_ms(size_t reads, size_t *ret_files)
{
        char names[MAX_PCI_DEVICES][NAME_MAX + 1];
        size_t n_devices = 0;
        int devices_fd = pci_devices(names, &n_devices);
        if (devices_fd < 0)
                return -1;
        size_t n_attrs = sizeof(pci_attributes) / sizeof(pci_attributes[0]);
        *ret_files = n_devices * n_attrs;
        double ms[RUNS];
        for (int run = 0; run <= RUNS; run++) {
                double t0 = now_ms();
                size_t done = 0;
                while (done < reads)
                        for (size_t d = 0; d < n_devices && done < reads; d++) {
                                int dev_fd = openat(devices_fd, names[d],
                                                    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                                if (dev_fd < 0) {
                                        close(devices_fd);
                                        return -1;
                                }
                                for (size_t a = 0; a < n_attrs && done < reads; a++, done++)
                                        read_file_at(dev_fd, pci_attributes[a]);
                                close(dev_fd);
                        }
                if (run > 0)
                        ms[run - 1] = now_ms() - t0;
        }
        close(devices_fd);
        qsort(ms, RUNS, sizeof(ms[0]), compare_double);
        return ms[RUNS / 2];
}

/* The kernel's slab in kB, from /proc/meminfo; -1 unreadable. */
static long slab_kb(void)
{
        FILE *f = fopen("/proc/meminfo", "re");
        if (!f)
                return -1;
        char line[128];
        long kb = -1;
        while (kb < 0 && fgets(line, sizeof(line), f))
                if (strncmp(line, "Slab:", 5) == 0)
                        kb = strtol(line + 5, NULL, 10);
        fclose(f);
        return kb;
}

/* Median ms of one pread() at offset 0 of each of `reads` real /sys PCI attribute files kept
 * open, each read once before; *ret_slab_kb the slab they held once read. < 0 when this
 * process may not hold that many files open. */
static double kept_open_ms(size_t reads, long *ret_slab_kb)
{
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) < 0 || limit.rlim_max < reads + 64)
                return -1;
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) < 0)
                return -1;
        char names[MAX_PCI_DEVICES][NAME_MAX + 1];
        size_t n_devices = 0;
        int devices_fd = pci_devices(names, &n_devices);
        int *fds = devices_fd < 0 ? NULL : calloc(reads, sizeof(*fds));
        if (!fds) {
                if (devices_fd >= 0)
                        close(devices_fd);
                return -1;
        }
        size_t n_attrs = sizeof(pci_attributes) / sizeof(pci_attributes[0]), opened = 0;
        char buf[64];
        long slab_before = slab_kb();
        while (opened < reads) {
                size_t before = opened;
                for (size_t d = 0; d < n_devices && opened < reads; d++)
                        for (size_t a = 0; a < n_attrs && opened < reads; a++) {
                                char rel[NAME_MAX * 2 + 2];
                                snprintf(rel, sizeof(rel), "%s/%s", names[d], pci_attributes[a]);
                                int fd = openat(devices_fd, rel, O_RDONLY | O_CLOEXEC);
                                if (fd >= 0 && pread(fd, buf, sizeof(buf), 0) >= 0)
                                        fds[opened++] = fd;
                                else if (fd >= 0)
                                        close(fd);
                        }
                if (opened == before)
                        break;
        }
        long slab_after = slab_kb();
        double ms[RUNS];
        for (int run = 0; run < RUNS && opened == reads; run++) {
                double t0 = now_ms();
                for (size_t i = 0; i < opened; i++)
                        (void)!pread(fds[i], buf, sizeof(buf), 0);
                ms[run] = now_ms() - t0;
        }
        for (size_t i = 0; i < opened; i++)
                close(fds[i]);
        free(fds);
        close(devices_fd);
        if (opened < reads || slab_before < 0 || slab_after < 0)
                return -1;
        *ret_slab_kb = slab_after - slab_before;
        qsort(ms, RUNS, sizeof(ms[0]), compare_double);
        return ms[RUNS / 2];
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: bench-scrape-floor SYSFS_ROOT\n");
                return 2;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/class/infiniband", argv[1]);
        int class_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *class_dir = class_fd < 0 ? NULL : fdopendir(dup(class_fd));
        if (!class_dir) {
                perror(path);
                return 1;
        }
        struct device *devices = NULL;
        size_t n = 0, n_files = 0;
        for (struct dirent *e; (e = readdir(class_dir));) {
                if (e->d_name[0] == '.')
                        continue;
                struct device *p = realloc(devices, (n + 1) * sizeof(*p));
                if (!p)
                        return 1;
                devices = p;
                devices[n] = (struct device){ 0 };
                if (list_device(class_fd, e->d_name, &devices[n]) < 0)
                        return 1;
                n_files += devices[n].n_files;
                n++;
        }
        closedir(class_dir);

        double ms[RUNS];
        for (int run = 0; run <= RUNS; run++) { /* run 0 warms the caches up */
                double t0 = now_ms();
                for (size_t i = 0; i < n; i++) {
                        int ports_fd =
                            openat(class_fd, devices[i].ports, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (ports_fd < 0)
                                continue;
                        for (size_t k = 0; k < devices[i].n_files; k++)
                                read_file_at(ports_fd, devices[i].files[k]);
                        close(ports_fd);
                }
                if (run > 0)
                        ms[run - 1] = now_ms() - t0;
        }
        qsort(ms, RUNS, sizeof(ms[0]), compare_double);
        printf("%zu RDMA devices, %zu files: median %.1f ms (min %.1f, max %.1f)\n", n, n_files,
               ms[RUNS / 2], ms[0], ms[RUNS - 1]);
        size_t real_files = 0;
        double real = real_sysfs_ms(n_files, &real_files);
        if (real >= 0)
                printf("real sysfs: %zu reads of %zu PCI attribute files: median %.1f ms\n",
                       n_files, real_files, real);
        long slab = 0;
        double kept = kept_open_ms(n_files, &slab);
        if (kept >= 0)
                printf("kept open: %zu reads at offset 0: median %.1f ms, slab held %ld kB\n",
                       n_files, kept, slab);
        for (size_t i = 0; i < n; i++) {
                for (size_t k = 0; k < devices[i].n_files; k++)
                        free(devices[i].files[k]);
                free(devices[i].files);
        }
        free(devices);
        close(class_fd);
        return 0;
}
