/* SPDX-License-Identifier: Apache-2.0 */
/* What the CNI plugin's RDMA device move adds to an ADD (and the move back to a DEL) in
 * exclusive RDMA mode, beyond the kernel's own time: the requests of lib/host (mode query,
 * the VF's device found from its function and the device list, the move) against the netlink
 * double of the unit tests, whose time answering stands for the kernel's. The pod's namespace
 * is a real second one when run as root (else the process's own). Prints medians and p99 over
 * N rounds (default 2000): bench-rdma-move [N] */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../test/unit/netlink-double.h"
#include "../test/unit/netns-child.h"
#include "host/rdma-netlink.h"
#include "host/rdma-netns.h"
#include "util/log.h"

static uint64_t now_usec(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000ULL + (uint64_t)t.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

static void report(const char *what, uint64_t *total, uint64_t *over, int n)
{
        qsort(total, (size_t)n, sizeof(*total), cmp_u64);
        qsort(over, (size_t)n, sizeof(*over), cmp_u64);
        const size_t mid = (size_t)n / 2, p99 = (size_t)n * 99 / 100;
        const uint64_t total_mid = total[mid], over_mid = over[mid], over_p99 = over[p99];
        printf("rdma-move: %s: median %.3f ms in total, overhead beyond the double median %.3f "
               "ms, p99 %.3f ms\n",
               what, (double)total_mid / 1e3, (double)over_mid / 1e3, (double)over_p99 / 1e3);
}

int main(int argc, char **argv)
{
        long n_arg = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
        int n = n_arg > 1000000 ? 1000000 : (int)n_arg;
        if (n < 10)
                n = 10;
        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        char root[] = "/tmp/bench-rdma-move.XXXXXX";
        if (!mkdtemp(root))
                return 1;
        char path[256];
        static const char *const dirs[] = { "bus",
                                            "bus/pci",
                                            "bus/pci/devices",
                                            "bus/pci/devices/0000:3b:02.1",
                                            "bus/pci/devices/0000:3b:02.1/infiniband",
                                            "bus/pci/devices/0000:3b:02.1/infiniband/mlx5_3" };
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
                (void)mkdir(path, 0755);
        }
        struct nldouble d;
        nldouble_init(&d);
        d.netns_mode = 0;
        for (uint32_t i = 1; i <= 8; i++) { /* a node with 8 RDMA devices, the VF's the 4th */
                char name[16];
                snprintf(name, sizeof(name), "mlx5_%u", i - 1);
                nldouble_add_dev(&d, i, name, 0x0c42a10300b8c000ULL + i, "roce", true);
        }
        struct nl_sock *sk = nldouble_socket();
        pid_t child = 0;
        int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int pod_ns = netns_child_open(&child);
        const bool real_ns = pod_ns >= 0;
        if (!real_ns)
                pod_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        uint64_t *add = calloc((size_t)n, sizeof(uint64_t)), *add_o = calloc((size_t)n, 8);
        uint64_t *del = calloc((size_t)n, sizeof(uint64_t)), *del_o = calloc((size_t)n, 8);
        int rc = 0;
        for (int i = 0; i < n && rc == 0; i++) {
                enum host_rdma_netns_mode mode;
                struct host_rdma_vf_device dev;
                uint64_t busy0 = d.busy_usec, t0 = now_usec();
                if (host_rdma_get_netns_mode(sk, &mode) < 0 ||
                    host_rdma_find_vf_device(sk, root, "0000:3b:02.1", "ens1f0v1", "mlx5_core",
                                             &dev) < 0 ||
                    host_rdma_move_to_netns(sk, dev.index, dev.name, pod_ns) < 0)
                        rc = 1;
                uint64_t t1 = now_usec(), busy1 = d.busy_usec;
                add[i] = t1 - t0;
                add_o[i] = add[i] - (busy1 - busy0);
                if (rc == 0 &&
                    host_rdma_return_device(sk, sk, pod_ns, host_ns, dev.index, dev.name) < 0)
                        rc = 1;
                del[i] = now_usec() - t1;
                del_o[i] = del[i] - (d.busy_usec - busy1);
        }
        if (rc == 0) {
                printf("rdma-move: %d rounds, pod namespace %s, 8 RDMA devices\n", n,
                       real_ns ? "a second network namespace" : "the process's own (not root)");
                report("ADD (mode, device of the VF, move in)", add, add_o, n);
                report("DEL (into the pod's namespace, move back)", del, del_o, n);
        } else {
                fprintf(stderr, "bench-rdma-move: a request failed\n");
        }
        netns_child_end(child, -1);
        nl_socket_free(sk);
        nldouble_done(&d);
        for (int i = (int)(sizeof(dirs) / sizeof(dirs[0])) - 1; i >= 0; i--) {
                snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
                rmdir(path);
        }
        rmdir(root);
        free(add);
        free(add_o);
        free(del);
        free(del_o);
        return rc;
}
