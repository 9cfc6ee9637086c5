/* SPDX-License-Identifier: Apache-2.0 */
/* What the CNI plugin does with a VF's RDMA device in exclusive RDMA mode (lib/host/rdma-netns
 * with host_rdma_move_to_netns), against the netlink double (netlink-double.h) and a generated
 * sysfs tree: the device found from the VF's PCI function (or the Soft-RoCE device over its
 * netdev), moved into a real second network namespace (needs root; skipped otherwise) by ADD,
 * moved back by DEL from inside that namespace, DEL finding it back home already, and the
 * driver's EOPNOTSUPP leaving it where it was. Requests are checked byte for byte against the
 * uapi layout. Proven on the message level only: emulated hardware has no movable device. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/rdma-netlink.h"
#include "host/rdma-netns.h"
#include "netlink-double.h"
#include "netns-child.h"
#include "util/fileio.h"
#include "util/log.h"

struct fixture {
        struct nldouble d;
        struct nl_sock *sk;
        char root[64];
        pid_t child;
        int pod_ns, host_ns;
};

static void mkdirs(const char *root, const char *rel)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(mkdir_p(path), 0);
}

static void write_text(const char *root, const char *rel, const char *text)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        nldouble_init(&f->d);
        f->d.netns_mode = 0; /* exclusive */
        f->sk = nldouble_socket();
        snprintf(f->root, sizeof(f->root), "/tmp/test-rdma-netns.XXXXXX");
        assert_non_null(mkdtemp(f->root));
        /* a ConnectX VF with its device under the function, an igb VF with rxe0 over its netdev */
        mkdirs(f->root, "bus/pci/devices/0000:3b:02.1/infiniband/mlx5_3");
        mkdirs(f->root, "bus/pci/devices/0000:01:10.0/net/enp1s0v0");
        mkdirs(f->root, "class/infiniband/rxe0");
        write_text(f->root, "class/infiniband/rxe0/parent", "enp1s0v0\n");
        nldouble_add_dev(&f->d, 4, "mlx5_3", 0x0c42a10300b8c0deULL, "ib", true);
        nldouble_add_dev(&f->d, 7, "rxe0", 0x5054fffe123456ULL, "roce", false);
        f->host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        f->pod_ns = netns_child_open(&f->child);
        *state = f;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        (void)setns(f->host_ns, CLONE_NEWNET);
        if (f->pod_ns >= 0)
                close(f->pod_ns);
        close(f->host_ns);
        netns_child_end(f->child, -1);
        (void)nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        nl_socket_free(f->sk);
        nldouble_done(&f->d);
        free(f);
        return 0;
}

#define NEED_NETNS(f)                                                                              \
        do {                                                                                       \
                if ((f)->pod_ns < 0) {                                                             \
                        print_message("skipped: needs root to create a network namespace\n");      \
                        skip();                                                                    \
                }                                                                                  \
        } while (0)

/* The last request as the kernel reads it: RDMA_NLDEV_CMD_SET, DEV_INDEX u32, NET_NS_FD u32. */
static void assert_set_request(const struct nldouble *d, uint32_t index, int fd)
{
        const struct nlmsghdr *h = (const struct nlmsghdr *)d->request;
        assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SET));
        assert_int_equal(h->nlmsg_flags & (NLM_F_REQUEST | NLM_F_DUMP), NLM_F_REQUEST);
        assert_int_equal(h->nlmsg_len, NLMSG_HDRLEN + 2 * NLA_ALIGN(NLA_HDRLEN + 4));
        const unsigned char *p = d->request + NLMSG_HDRLEN;
        const struct nlattr *a = (const struct nlattr *)p;
        assert_int_equal(a->nla_len, NLA_HDRLEN + 4);
        assert_int_equal(a->nla_type, RDMA_NLDEV_ATTR_DEV_INDEX);
        uint32_t v;
        memcpy(&v, p + NLA_HDRLEN, 4);
        assert_int_equal(v, index);
        a = (const struct nlattr *)(p + NLA_ALIGN(NLA_HDRLEN + 4));
        assert_int_equal(a->nla_len, NLA_HDRLEN + 4);
        assert_int_equal(a->nla_type, RDMA_NLDEV_NET_NS_FD);
        memcpy(&v, p + NLA_ALIGN(NLA_HDRLEN + 4) + NLA_HDRLEN, 4);
        assert_int_equal(v, (uint32_t)fd);
}

static void test_the_vfs_device_is_found_from_its_function_or_netdev(void **state)
{
        struct fixture *f = *state;
        struct host_rdma_vf_device dev;
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:3b:02.1", "ib0", "mlx5_core", &dev), 0);
        assert_string_equal(dev.name, "mlx5_3");
        assert_int_equal(dev.index, 4);
        assert_string_equal(dev.driver, "mlx5_core");
        /* Soft-RoCE belongs to no function: found by its parent netdev, named as rxe */
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:01:10.0", "enp1s0v0", "igbvf", &dev), 0);
        assert_string_equal(dev.name, "rxe0");
        assert_int_equal(dev.index, 7);
        assert_string_equal(dev.driver, "rxe");
        /* a VF without an RDMA device: nothing to move */
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:01:10.0", "enp1s0v1", "igbvf", &dev),
            -ENOENT);
}

static void test_add_moves_it_in_and_del_moves_it_back(void **state)
{
        struct fixture *f = *state;
        NEED_NETNS(f);
        struct host_rdma_vf_device dev;
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:3b:02.1", "ib0", "mlx5_core", &dev), 0);
        /* ADD */
        assert_int_equal(host_rdma_move_to_netns(f->sk, dev.index, dev.name, f->pod_ns), 0);
        assert_set_request(&f->d, 4, f->pod_ns);
        assert_true(f->d.devs[0].netns == nldouble_netns_ino(f->pod_ns));
        /* the node no longer sees it: a second pod cannot find it either */
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:3b:02.1", "ib0", "mlx5_core", &dev),
            -ENOENT);
        /* DEL: asked from inside the pod's namespace, into the host's; back in the host's */
        assert_int_equal(host_rdma_return_device(f->sk, f->sk, f->pod_ns, f->host_ns, 4, "mlx5_3"),
                         0);
        assert_set_request(&f->d, 4, f->host_ns);
        assert_true(f->d.devs[0].netns == f->d.init_netns);
        assert_true(nldouble_caller_netns() == f->d.init_netns);
        /* an upstream record names the device only: found by name */
        assert_int_equal(host_rdma_move_to_netns(f->sk, 4, "mlx5_3", f->pod_ns), 0);
        assert_int_equal(host_rdma_return_device(f->sk, f->sk, f->pod_ns, f->host_ns, 0, "mlx5_3"),
                         0);
        assert_true(f->d.devs[0].netns == f->d.init_netns);
}

static void test_del_finds_it_back_home_already(void **state)
{
        struct fixture *f = *state;
        NEED_NETNS(f);
        /* the pod's namespace died: the kernel returned the device; DEL moves nothing */
        unsigned before = f->d.n_requests;
        assert_int_equal(host_rdma_return_device(f->sk, f->sk, f->pod_ns, f->host_ns, 4, "mlx5_3"),
                         1);
        assert_int_equal(f->d.n_requests, before + 2); /* a dump in each namespace, no SET */
        const struct nlmsghdr *h = (const struct nlmsghdr *)f->d.request;
        assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
        assert_true(f->d.devs[0].netns == f->d.init_netns);
        assert_true(nldouble_caller_netns() == f->d.init_netns);
        /* in neither (its VF destroyed meanwhile) */
        f->d.n_devs = 0;
        assert_int_equal(host_rdma_return_device(f->sk, f->sk, f->pod_ns, f->host_ns, 4, "mlx5_3"),
                         -ENODEV);
}

static void test_a_driver_that_cannot_move_leaves_the_device_home(void **state)
{
        struct fixture *f = *state;
        NEED_NETNS(f);
        struct host_rdma_vf_device dev;
        assert_int_equal(
            host_rdma_find_vf_device(f->sk, f->root, "0000:01:10.0", "enp1s0v0", "igbvf", &dev), 0);
        assert_int_equal(host_rdma_move_to_netns(f->sk, dev.index, dev.name, f->pod_ns),
                         -EOPNOTSUPP);
        assert_set_request(&f->d, 7, f->pod_ns);
        assert_true(f->d.devs[1].netns == f->d.init_netns);
        /* ADD's undo then finds it home: nothing to move back */
        assert_int_equal(
            host_rdma_return_device(f->sk, f->sk, f->pod_ns, f->host_ns, dev.index, dev.name), 1);
        /* shared mode: the kernel refuses every move, even mlx5's (the plugin moves nothing) */
        f->d.netns_mode = 1;
        assert_int_equal(host_rdma_move_to_netns(f->sk, 4, "mlx5_3", f->pod_ns), -EOPNOTSUPP);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(
                    test_the_vfs_device_is_found_from_its_function_or_netdev, setup, teardown),
                cmocka_unit_test_setup_teardown(test_add_moves_it_in_and_del_moves_it_back, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_del_finds_it_back_home_already, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(
                    test_a_driver_that_cannot_move_leaves_the_device_home, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
