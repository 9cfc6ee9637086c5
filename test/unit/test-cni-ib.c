/* SPDX-License-Identifier: Apache-2.0 */
/* CNI type ib-sriov's GUID handling (agent/cni/ib.c): cni_ib_plan, cni_ib_set_guid and
 * cni_ib_restore_guid against the netlink double (netlink-double.h; here also answering the
 * PF's RTM_GETLINK as rtnl_getlink does) and a generated sysfs tree. The host layer's rtnetlink
 * sockets are the double's (host_netlink_open wrapped at link time, see tests.cmake) and the
 * PF's name resolves to the double's ifindex (if_nametoindex wrapped). GUID requests are checked
 * byte for byte against the uapi layout (struct ifla_vf_guid in IFLA_VF_INFO in
 * IFLA_VFINFO_LIST). The driver re-bind runs against a fake kernel thread that does to the tree
 * what unbind and drivers_probe do (the netdev re-created under the same or another name); the
 * rename back goes to the test's answers for the VF's netdev (RTM_GETLINK by name,
 * RTM_SETLINK with IFLA_IFNAME), so it is proven on the message level only. With the RDMA
 * subsystem in exclusive mode the same double answers as nldev (RDMA netlink sockets are its
 * too) and the fake kernel's re-bind re-registers the VF's RDMA device under a new index, as
 * ib_unregister_device / ib_register_device do: ADD's GUID step followed by the RDMA move
 * (agent/cni/rdma.c), in cmd_add's order. */
/* glibc's net/if.h before any linux/ header (linux/libc-compat.h then defers to it) */
#include <net/if.h>

#include <errno.h>
#include <ftw.h>
#include <linux/if_arp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/conf-ib.h"
#include "cni/conf.h"
#include "cni/state.h"
#include "host/netlink-request.h"
#include "host/vf-lookup.h"
#include "ib.h"
#include "netlink-double.h"
#include "netns-child.h"
#include "rdma.h"
#include "util/fileio.h"

#define PF_NAME "ibp59s0f0"
#define PF_PCI  "0000:3b:00.0"
#define VF0_PCI "0000:3b:00.1"
#define VF_PCI  "0000:3b:00.2" /* VF 1 */
#define GUID    0x0200000000aa000aULL

#define MAX_SETLINKS 8

struct fixture {
        struct nldouble d;
        bool no_vf_guids; /* the PF's RTM_NEWLINK lists its VFs without GUIDs (not InfiniBand) */
        unsigned n_getlinks;
        unsigned char setlink[MAX_SETLINKS][NLDOUBLE_MAX_REQUEST];
        size_t setlink_len[MAX_SETLINKS];
        unsigned n_setlinks;
        char root[64]; /* a generated sysfs tree */
        /* the VF's IPoIB netdev as rtnetlink knows it (ifindex VF_IFINDEX), and the fake
         * kernel re-binding its driver in the tree */
        char vf_netdev[IFNAMSIZ];
        char reprobe_name[IFNAMSIZ]; /* the name the driver gives the re-created netdev */
        pthread_t kernel;
        atomic_bool stop;
        char kernel_log[128];
        /* the VF's RDMA device (exclusive mode tests): under its auxiliary device in the tree
         * and in the double's nldev; a re-bind registers it anew as RDMA_REBOUND_* */
        bool rdma;
        char rdma_name[32];
        /* a second InfiniBand PF (ifindex PF2_IFINDEX), for the node-wide GUID check */
        struct nldouble pf2;
        bool has_pf2;
        char state[96]; /* the plugin's records (CNI state dir) */
        /* the VF's IPoIB hardware address (RTM_GETLINK by name): QPN, then the port's GID */
        uint8_t ipoib_addr[20];
        /* an RDMA device moving home re-creates the VF's IPoIB netdev under this name ("" no) */
        char ipoib_recreate[IFNAMSIZ];
        /* the uverbs minors: class/infiniband_verbs/uverbsN/ibdev in the tree; with
         * uverbs_alloc, a move frees the device's and takes the lowest free one again, as
         * rdma_dev_change_netns's disable_device / enable_device_and_get do through ib_uverbs's
         * remove_one / add_one (ida_alloc_max: lowest free) */
        bool uverbs_alloc;
        char uverbs_owner[8][32];
        /* moves in flight between freeing and re-taking their minor: the first to free waits
         * (bounded) for a second move to re-take first, the interleaving that swaps them */
        int n_between, n_retaken;
        pthread_cond_t retaken;
};

/* The double is one kernel: threads asking at once are served one request at a time. */
static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;

#define PF2_NAME    "ibp94s0f0"
#define PF2_PCI     "0000:5e:00.0"
#define PF2_VF0_PCI "0000:5e:00.1"
#define PF2_IFINDEX 8

#define RDMA_AUX           "bus/pci/devices/" VF_PCI "/mlx5_core.rdma.1"
#define RDMA_INDEX         4
#define RDMA_NAME          "mlx5_3"
#define RDMA_REBOUND_INDEX 9
#define RDMA_REBOUND_NAME  "mlx5_5"

#define VF_IFINDEX 12

static struct fixture *fx;

/* rtnl_getlink() for the PF: one RTM_NEWLINK, then the ACK asked for. */
static void answer_getlink(struct nldouble *d, const struct nlmsghdr *req)
{
        struct nl_msg *m;
        if (fx->no_vf_guids) {
                /* an Ethernet PF: rtnl_fill_vfinfo puts no GUIDs without ndo_get_vf_guid */
                m = nlmsg_alloc_size(4096);
                struct nlmsghdr *h = nlmsg_put(m, 0, 0, RTM_NEWLINK, sizeof(struct ifinfomsg), 0);
                *(struct ifinfomsg *)nlmsg_data(h) =
                    (struct ifinfomsg){ .ifi_type = ARPHRD_ETHER, .ifi_index = d->pf_ifindex };
                nla_put_string(m, IFLA_IFNAME, PF_NAME);
                nla_put_u32(m, IFLA_NUM_VF, (uint32_t)d->pf_num_vfs);
                struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
                for (int vf = 0; vf < d->pf_num_vfs; vf++) {
                        struct nlattr *info = nla_nest_start(m, IFLA_VF_INFO);
                        struct ifla_vf_mac mac = { .vf = (uint32_t)vf };
                        nla_put(m, IFLA_VF_MAC, sizeof(mac), &mac);
                        nla_nest_end(m, info);
                }
                nla_nest_end(m, list);
        } else {
                m = nldouble_newlink(d);
        }
        nlmsg_hdr(m)->nlmsg_seq = req->nlmsg_seq;
        nlmsg_hdr(m)->nlmsg_pid = req->nlmsg_pid;
        nldouble_queue(d, m);
        if (req->nlmsg_flags & NLM_F_ACK)
                nldouble_ack(d, req, 0);
}

/* RTM_GETLINK by name (IFLA_IFNAME): the VF's netdev, else ENODEV; true when answered. */
static bool answer_getlink_by_name(struct nldouble *d, struct nlmsghdr *req)
{
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_parse(req, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0 || !tb[IFLA_IFNAME])
                return false;
        char name[IFNAMSIZ];
        nla_strlcpy(name, tb[IFLA_IFNAME], sizeof(name));
        if (!fx->vf_netdev[0] || strcmp(name, fx->vf_netdev) != 0) {
                nldouble_ack(d, req, -ENODEV);
                return true;
        }
        struct nl_msg *m = nlmsg_alloc_size(4096);
        struct nlmsghdr *h =
            nlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq, RTM_NEWLINK, sizeof(struct ifinfomsg), 0);
        *(struct ifinfomsg *)nlmsg_data(h) =
            (struct ifinfomsg){ .ifi_type = ARPHRD_INFINIBAND, .ifi_index = VF_IFINDEX };
        nla_put_string(m, IFLA_IFNAME, fx->vf_netdev);
        nla_put_u32(m, IFLA_MTU, 2044);
        nla_put(m, IFLA_ADDRESS, sizeof(fx->ipoib_addr), fx->ipoib_addr);
        nldouble_queue(d, m);
        if (req->nlmsg_flags & NLM_F_ACK)
                nldouble_ack(d, req, 0);
        return true;
}

/* RTM_SETLINK of the VF's netdev: a rename (IFLA_IFNAME) is all this test expects. */
static void answer_vf_setlink(struct nldouble *d, struct nlmsghdr *req)
{
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_parse(req, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0 ||
            !tb[IFLA_IFNAME]) {
                nldouble_ack(d, req, -EINVAL);
                return;
        }
        /* the kernel renames its sysfs directory too */
        char from[512], to[512];
        snprintf(from, sizeof(from), "%s/bus/pci/devices/" VF_PCI "/net/%s", fx->root,
                 fx->vf_netdev);
        nla_strlcpy(fx->vf_netdev, tb[IFLA_IFNAME], sizeof(fx->vf_netdev));
        snprintf(to, sizeof(to), "%s/bus/pci/devices/" VF_PCI "/net/%s", fx->root, fx->vf_netdev);
        (void)rename(from, to);
        nldouble_ack(d, req, 0);
}

static int send_locked(struct nl_sock *sk, struct nl_msg *msg);
static void rdma_moving(struct nlmsghdr *req);
static void rdma_moved(struct nlmsghdr *req);

static int send_fn(struct nl_sock *sk, struct nl_msg *msg)
{
        struct nlmsghdr *req = nlmsg_hdr(msg);
        rdma_moving(req);
        pthread_mutex_lock(&kernel_lock);
        int r = send_locked(sk, msg);
        pthread_mutex_unlock(&kernel_lock);
        rdma_moved(req);
        return r;
}

static int send_locked(struct nl_sock *sk, struct nl_msg *msg)
{
        struct nlmsghdr *req = nlmsg_hdr(msg);
        if (req->nlmsg_type == RTM_GETLINK && answer_getlink_by_name(&fx->d, req))
                return (int)req->nlmsg_len;
        if (req->nlmsg_type == RTM_GETLINK && fx->has_pf2 &&
            ((const struct ifinfomsg *)nlmsg_data(req))->ifi_index == PF2_IFINDEX) {
                struct nl_msg *m = nldouble_newlink(&fx->pf2);
                nlmsg_hdr(m)->nlmsg_seq = req->nlmsg_seq;
                nlmsg_hdr(m)->nlmsg_pid = req->nlmsg_pid;
                nldouble_queue(&fx->d, m);
                if (req->nlmsg_flags & NLM_F_ACK)
                        nldouble_ack(&fx->d, req, 0);
                return (int)req->nlmsg_len;
        }
        if (req->nlmsg_type == RTM_GETLINK) {
                fx->n_getlinks++;
                answer_getlink(&fx->d, req);
                return (int)req->nlmsg_len;
        }
        if (req->nlmsg_type == RTM_SETLINK && fx->n_setlinks < MAX_SETLINKS) {
                size_t len =
                    req->nlmsg_len < NLDOUBLE_MAX_REQUEST ? req->nlmsg_len : NLDOUBLE_MAX_REQUEST;
                memcpy(fx->setlink[fx->n_setlinks], req, len);
                fx->setlink_len[fx->n_setlinks++] = len;
        }
        if (req->nlmsg_type == RTM_SETLINK &&
            ((const struct ifinfomsg *)nlmsg_data(req))->ifi_index == VF_IFINDEX) {
                answer_vf_setlink(&fx->d, req);
                return (int)req->nlmsg_len;
        }
        return nldouble_send(sk, msg);
}

/* The seams: every rtnetlink socket the host layer opens talks to the double. */
int __wrap_host_netlink_open(int protocol, size_t rcvbuf, struct nl_sock **ret);
int __wrap_host_netlink_open(int protocol, size_t rcvbuf, struct nl_sock **ret)
{
        if ((protocol != NETLINK_ROUTE && protocol != NETLINK_RDMA) || !fx)
                return -EPROTONOSUPPORT;
        struct nl_sock *sk = nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        struct nl_cb *cb = nl_socket_get_cb(sk);
        nl_cb_overwrite_send(cb, send_fn);
        nl_cb_overwrite_recv(cb, nldouble_recv);
        nl_cb_put(cb);
        *ret = sk;
        return 0;
}

unsigned __wrap_if_nametoindex(const char *name);
unsigned __wrap_if_nametoindex(const char *name)
{
        if (fx && strcmp(name, PF_NAME) == 0)
                return (unsigned)fx->d.pf_ifindex;
        if (fx && fx->has_pf2 && strcmp(name, PF2_NAME) == 0)
                return PF2_IFINDEX;
        errno = ENODEV;
        return 0;
}

static void mkdirs(const char *root, const char *rel)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(mkdir_p(path), 0);
}

static void symlinkf(const char *target, const char *root, const char *rel)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(symlink(target, path), 0);
}

static void put_file(const char *root, const char *rel, const char *text)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

/* Takes a write to a sysfs file of the tree: true when something was written (emptied). */
static bool take_write(const char *rel)
{
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", fx->root, rel);
        if (stat(path, &st) < 0 || st.st_size == 0)
                return false;
        return truncate(path, 0) == 0;
}

/* The VF's RDMA device registered (ib_register_device): infiniband/<name> under its auxiliary
 * device, and in nldev's list in the initial namespace. */
static void rdma_register(uint32_t index, const char *name)
{
        char rel[256];
        snprintf(rel, sizeof(rel), RDMA_AUX "/infiniband/%s", name);
        mkdirs(fx->root, rel);
        nldouble_add_dev(&fx->d, index, name, GUID, "ib", true);
        snprintf(fx->rdma_name, sizeof(fx->rdma_name), "%s", name);
}

/* ...and unregistered: both gone, wherever the device was. */
static void rdma_unregister(void)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/" RDMA_AUX "/infiniband/%s", fx->root, fx->rdma_name);
        (void)rmdir(path);
        for (size_t i = 0; i < fx->d.n_devs; i++)
                if (strcmp(fx->d.devs[i].name, fx->rdma_name) == 0)
                        fx->d.devs[i] = fx->d.devs[--fx->d.n_devs];
        fx->rdma_name[0] = '\0';
}

/* The uverbs minor of RDMA device name: class/infiniband_verbs/uverbsN with its ibdev. */
static void uverbs_give(int minor, const char *name)
{
        char rel[128];
        snprintf(rel, sizeof(rel), "class/infiniband_verbs/uverbs%d", minor);
        mkdirs(fx->root, rel);
        snprintf(rel, sizeof(rel), "class/infiniband_verbs/uverbs%d/ibdev", minor);
        char text[40];
        snprintf(text, sizeof(text), "%s\n", name);
        put_file(fx->root, rel, text);
        snprintf(fx->uverbs_owner[minor], sizeof(fx->uverbs_owner[minor]), "%s", name);
}

static void uverbs_free(const char *name)
{
        for (int i = 0; i < 8; i++) {
                if (strcmp(fx->uverbs_owner[i], name) != 0)
                        continue;
                char path[512];
                snprintf(path, sizeof(path), "%s/class/infiniband_verbs/uverbs%d/ibdev", fx->root,
                         i);
                (void)unlink(path);
                snprintf(path, sizeof(path), "%s/class/infiniband_verbs/uverbs%d", fx->root, i);
                (void)rmdir(path);
                fx->uverbs_owner[i][0] = '\0';
        }
}

/* ib_uverbs add_one: the lowest free minor */
static void uverbs_take_lowest(const char *name)
{
        for (int i = 0; i < 8; i++)
                if (!fx->uverbs_owner[i][0]) {
                        uverbs_give(i, name);
                        return;
                }
}

/* The device an RDMA_NLDEV_CMD_SET with a NET_NS_FD moves, whatever namespace it is in; NULL
 * for any other request. */
static struct nldouble_dev *moved_dev(struct nlmsghdr *req)
{
        if (req->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SET))
                return NULL;
        struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
        if (nlmsg_parse(req, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) < 0 ||
            !tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_NET_NS_FD])
                return NULL;
        uint32_t index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
        for (size_t i = 0; i < fx->d.n_devs; i++)
                if (fx->d.devs[i].index == index)
                        return &fx->d.devs[i];
        return NULL;
}

/* rdma_dev_change_netns, first half (disable_device): the device's uverbs minor freed. The
 * first move to get here waits (1 s at most) for another move to finish first. */
static void rdma_moving(struct nlmsghdr *req)
{
        if (!fx || !fx->uverbs_alloc)
                return;
        pthread_mutex_lock(&kernel_lock);
        struct nldouble_dev *v = moved_dev(req);
        if (v && v->can_disassociate) {
                uverbs_free(v->name);
                if (fx->n_between++ == 0) {
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_sec += 1;
                        while (fx->n_retaken == 0 &&
                               pthread_cond_timedwait(&fx->retaken, &kernel_lock, &until) == 0)
                                ;
                }
        }
        pthread_mutex_unlock(&kernel_lock);
}

/* ...and its second half (enable_device_and_get): the lowest free minor taken; an IPoIB
 * netdev re-created by ipoib's add_one under the kernel's next name when it came home. */
static void rdma_moved(struct nlmsghdr *req)
{
        if (!fx)
                return;
        pthread_mutex_lock(&kernel_lock);
        struct nldouble_dev *v = moved_dev(req);
        if (v && fx->uverbs_alloc && v->can_disassociate) {
                uverbs_take_lowest(v->name);
                fx->n_retaken++;
                pthread_cond_broadcast(&fx->retaken);
        }
        if (v && fx->ipoib_recreate[0] && v->netns == fx->d.init_netns && fx->vf_netdev[0]) {
                char path[512];
                snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/net/%s", fx->root,
                         fx->vf_netdev);
                (void)rmdir(path);
                snprintf(fx->vf_netdev, sizeof(fx->vf_netdev), "%s", fx->ipoib_recreate);
                snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/net/%s", fx->root,
                         fx->vf_netdev);
                (void)mkdir(path, 0755);
        }
        pthread_mutex_unlock(&kernel_lock);
}

/* What the kernel does with the VF on unbind and drivers_probe: unbind removes its driver
 * link and its netdev; the probe re-creates the netdev (named as the driver names it) and
 * the driver link. Polls the tree every millisecond; records what it did. */
static void *fake_kernel_run(void *arg)
{
        char path[512];
        while (!atomic_load(&fx->stop)) {
                pthread_mutex_lock(&kernel_lock);
                if (take_write("bus/pci/drivers/mlx5_core/unbind")) {
                        snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/net/%s",
                                 fx->root, fx->vf_netdev);
                        (void)rmdir(path);
                        snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/driver",
                                 fx->root);
                        (void)unlink(path);
                        fx->vf_netdev[0] = '\0';
                        if (fx->rdma) /* ib_unregister_device: gone from sysfs and nldev */
                                rdma_unregister();
                        strcat(fx->kernel_log, "unbind;");
                }
                if (take_write("bus/pci/drivers_probe")) {
                        if (fx->rdma) /* registered anew before IPoIB's netdev exists */
                                rdma_register(RDMA_REBOUND_INDEX, RDMA_REBOUND_NAME);
                        snprintf(fx->vf_netdev, sizeof(fx->vf_netdev), "%s", fx->reprobe_name);
                        snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/net/%s",
                                 fx->root, fx->vf_netdev);
                        (void)mkdir(path, 0755);
                        snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/driver",
                                 fx->root);
                        (void)symlink("../../drivers/mlx5_core", path);
                        strcat(fx->kernel_log, "probe;");
                }
                pthread_mutex_unlock(&kernel_lock);
                nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
        }
        return NULL;
}

static void fake_kernel_start(const char *reprobe_name)
{
        snprintf(fx->reprobe_name, sizeof(fx->reprobe_name), "%s", reprobe_name);
        atomic_store(&fx->stop, false);
        assert_int_equal(pthread_create(&fx->kernel, NULL, fake_kernel_run, NULL), 0);
}

static void fake_kernel_stop(void)
{
        atomic_store(&fx->stop, true);
        assert_int_equal(pthread_join(fx->kernel, NULL), 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int setup(void **state)
{
        fx = calloc(1, sizeof(*fx));
        nldouble_init(&fx->d);
        fx->d.pf_num_vfs = 2;
        fx->d.vf_guid[0] = (struct nldouble_guid){ 0x1111, 0x2222 };
        fx->d.vf_guid[1] = (struct nldouble_guid){ 0x0c42a10300b8c0deULL, 0x0c42a10300b8c0dfULL };
        /* a PF with two VFs, as the kernel lays it out under /sys/bus/pci/devices */
        snprintf(fx->root, sizeof(fx->root), "/tmp/test-cni-ib.XXXXXX");
        assert_non_null(mkdtemp(fx->root));
        mkdirs(fx->root, "bus/pci/devices/" PF_PCI "/net/" PF_NAME);
        mkdirs(fx->root, "bus/pci/devices/" VF0_PCI);
        mkdirs(fx->root, "bus/pci/devices/" VF_PCI);
        symlinkf("../" VF0_PCI, fx->root, "bus/pci/devices/" PF_PCI "/virtfn0");
        symlinkf("../" VF_PCI, fx->root, "bus/pci/devices/" PF_PCI "/virtfn1");
        symlinkf("../" PF_PCI, fx->root, "bus/pci/devices/" VF0_PCI "/physfn");
        symlinkf("../" PF_PCI, fx->root, "bus/pci/devices/" VF_PCI "/physfn");
        /* VF 1 on mlx5_core with its IPoIB netdev ib1 */
        snprintf(fx->vf_netdev, sizeof(fx->vf_netdev), "ib1");
        mkdirs(fx->root, "bus/pci/devices/" VF_PCI "/net/ib1");
        mkdirs(fx->root, "bus/pci/drivers/mlx5_core");
        symlinkf("../../drivers/mlx5_core", fx->root, "bus/pci/devices/" VF_PCI "/driver");
        put_file(fx->root, "bus/pci/devices/" VF_PCI "/driver_override", "(null)\n");
        put_file(fx->root, "bus/pci/drivers/mlx5_core/unbind", "");
        put_file(fx->root, "bus/pci/drivers_probe", "");
        snprintf(fx->state, sizeof(fx->state), "%s/cni-state", fx->root);
        mkdirs(fx->root, "cni-state/pci");
        const uint8_t addr[20] = { 0x00, 0x00, 0x10, 0x49, 0xfe, 0x80 };
        memcpy(fx->ipoib_addr, addr, sizeof(addr));
        pthread_cond_init(&fx->retaken, NULL);
        *state = fx;
        return 0;
}

static int teardown(void **state)
{
        nldouble_done(&fx->d);
        pthread_cond_destroy(&fx->retaken);
        (void)nftw(fx->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(fx);
        fx = NULL;
        return 0;
}

static struct vf_location vf1(void)
{
        struct vf_location loc = { .vf_index = 1 };
        snprintf(loc.pf_pci, sizeof(loc.pf_pci), "%s", PF_PCI);
        snprintf(loc.pf_ifname, sizeof(loc.pf_ifname), "%s", PF_NAME);
        return loc;
}

static void assert_says(const struct cni_error *e, const char *needle)
{
        if (!strstr(e->msg, needle))
                fail_msg("error \"%s\" does not say \"%s\"", e->msg, needle);
}

static int plan(const struct cni_ib_conf *ib, bool vfio, struct cni_cache *rec, struct cni_error *e)
{
        const struct vf_location loc = vf1();
        *rec = (struct cni_cache){ 0 };
        *e = (struct cni_error){ 0 };
        return cni_ib_plan(ib, &loc, VF_PCI, vfio, rec, e);
}

/* A VF whose port GUID is zero or all ones cannot be used without a GUID (upstream's
 * "VF GUID is not valid"): refused naming the VF, its index and its PF, nothing recorded. */
static void test_plan_refuses_invalid_guid_without_one_given(void **state)
{
        const uint64_t bad[] = { 0, UINT64_MAX };
        const char *text[] = { "00:00:00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff:ff:ff" };
        for (size_t i = 0; i < 2; i++) {
                fx->d.vf_guid[1].port = bad[i];
                fx->d.vf_guid[1].node = 0x0c42a10300b8c0deULL; /* only the port GUID counts */
                struct cni_ib_conf ib = { 0 };
                struct cni_cache rec;
                struct cni_error e;
                assert_int_equal(plan(&ib, false, &rec, &e), -EINVAL);
                assert_says(&e, "VF " VF_PCI " (VF 1 of " PF_NAME ")");
                assert_says(&e, text[i]);
                assert_says(&e, "not valid");
                assert_string_equal(rec.host_guid, "");
        }
        assert_int_equal(fx->n_setlinks, 0); /* nothing changed */
}

/* The same VF with a real GUID is accepted; nothing recorded (no GUID will be set). */
static void test_plan_accepts_valid_guid_without_one_given(void **state)
{
        struct cni_ib_conf ib = { 0 };
        struct cni_cache rec;
        struct cni_error e;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "");
        assert_int_equal(fx->n_getlinks, 1);
        assert_int_equal(fx->n_setlinks, 0);
}

/* With a GUID given, the VF's current port GUID (not its node GUID, not VF 0's) is recorded
 * for DEL to put back; an invalid current GUID is no reason to refuse then. */
static void test_plan_records_current_guid_when_one_given(void **state)
{
        struct cni_ib_conf ib = { .has_guid = true, .guid = GUID };
        struct cni_cache rec;
        struct cni_error e;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "0c:42:a1:03:00:b8:c0:df");

        fx->d.vf_guid[1].port = 0;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "00:00:00:00:00:00:00:00");
        /* vfio with a GUID: read too (the PF answers for its VFs whatever their driver) */
        fx->d.vf_guid[1].port = 0x0c42a10300b8c0dfULL;
        assert_int_equal(plan(&ib, true, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "0c:42:a1:03:00:b8:c0:df");
        assert_int_equal(fx->n_setlinks, 0);
}

/* A PF that lists its VFs without GUIDs is not InfiniBand: refused naming the VF and PF,
 * with and without a GUID given. */
static void test_plan_refuses_pf_without_vf_guids(void **state)
{
        fx->no_vf_guids = true;
        for (int given = 0; given < 2; given++) {
                struct cni_ib_conf ib = { .has_guid = given, .guid = GUID };
                struct cni_cache rec;
                struct cni_error e;
                assert_int_equal(plan(&ib, false, &rec, &e), -EOPNOTSUPP);
                assert_says(&e, "VF " VF_PCI " (VF 1 of " PF_NAME ")");
                assert_says(&e, "not an InfiniBand VF");
                assert_string_equal(rec.host_guid, "");
        }
}

/* A VF the PF does not list (past its VFs) is refused the same way. */
static void test_plan_refuses_vf_the_pf_does_not_list(void **state)
{
        fx->d.pf_num_vfs = 1;
        struct cni_ib_conf ib = { 0 };
        struct cni_cache rec;
        struct cni_error e;
        assert_int_equal(plan(&ib, false, &rec, &e), -EOPNOTSUPP);
        assert_says(&e, "VF " VF_PCI " (VF 1 of " PF_NAME ")");
}

/* ibKubernetesEnabled: ib-kubernetes must have marked the pod "configured" and given a GUID;
 * either missing is refused before the PF is asked anything. */
static void test_plan_ib_kubernetes(void **state)
{
        struct cni_cache rec;
        struct cni_error e;
        struct cni_ib_conf ib = { .ib_kubernetes_enabled = true, .has_guid = true, .guid = GUID };
        assert_int_equal(plan(&ib, false, &rec, &e), -EINVAL);
        assert_says(&e, "ibKubernetesEnabled");
        assert_says(&e, "\"configured\"");

        ib = (struct cni_ib_conf){ .ib_kubernetes_enabled = true, .ib_configured = true };
        assert_int_equal(plan(&ib, false, &rec, &e), -EINVAL);
        assert_says(&e, "ibKubernetesEnabled");
        assert_says(&e, "no GUID given");
        assert_int_equal(fx->n_getlinks, 0);

        /* both there: accepted, the current GUID recorded */
        ib.has_guid = true;
        ib.guid = GUID;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "0c:42:a1:03:00:b8:c0:df");
}

/* vfio-pci without a GUID: nothing to check (upstream cannot read it either), nothing asked. */
static void test_plan_vfio_without_guid(void **state)
{
        fx->d.vf_guid[1].port = 0;
        struct cni_ib_conf ib = { 0 };
        struct cni_cache rec;
        struct cni_error e;
        assert_int_equal(plan(&ib, true, &rec, &e), 0);
        assert_int_equal(fx->n_getlinks, 0);
}

/* One RTM_SETLINK for the PF (ifindex 7) with exactly
 * IFLA_VFINFO_LIST { IFLA_VF_INFO { type: struct ifla_vf_guid { vf, guid } } }. */
static void assert_guid_request(unsigned i, int type, uint32_t vf, uint64_t guid)
{
        assert_true(i < fx->n_setlinks);
        const unsigned char *b = fx->setlink[i];
        const struct nlmsghdr *h = (const void *)b;
        const size_t guid_attr = NLA_HDRLEN + sizeof(struct ifla_vf_guid); /* 4 + 16 */
        assert_int_equal(sizeof(struct ifla_vf_guid), 16);
        assert_int_equal(h->nlmsg_type, RTM_SETLINK);
        assert_true(h->nlmsg_flags & NLM_F_REQUEST);
        assert_int_equal(h->nlmsg_len, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifinfomsg)) +
                                           2 * NLA_HDRLEN + guid_attr);
        struct ifinfomsg ifi;
        memcpy(&ifi, b + NLMSG_HDRLEN, sizeof(ifi));
        assert_int_equal(ifi.ifi_family, AF_UNSPEC);
        assert_int_equal(ifi.ifi_index, 7);
        const unsigned char *a = b + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifinfomsg));
        struct nlattr list, info, g;
        memcpy(&list, a, sizeof(list));
        memcpy(&info, a + NLA_HDRLEN, sizeof(info));
        memcpy(&g, a + 2 * NLA_HDRLEN, sizeof(g));
        assert_int_equal(list.nla_type & NLA_TYPE_MASK, IFLA_VFINFO_LIST);
        assert_int_equal(list.nla_len, 2 * NLA_HDRLEN + guid_attr);
        assert_int_equal(info.nla_type & NLA_TYPE_MASK, IFLA_VF_INFO);
        assert_int_equal(info.nla_len, NLA_HDRLEN + guid_attr);
        assert_int_equal(g.nla_type, type);
        assert_int_equal(g.nla_len, guid_attr);
        uint32_t got_vf;
        uint64_t got_guid;
        const unsigned char *p = a + 3 * NLA_HDRLEN;
        memcpy(&got_vf, p + offsetof(struct ifla_vf_guid, vf), sizeof(got_vf));
        memcpy(&got_guid, p + offsetof(struct ifla_vf_guid, guid), sizeof(got_guid));
        assert_int_equal(offsetof(struct ifla_vf_guid, guid), 8);
        assert_int_equal(got_vf, vf);
        assert_true(got_guid == guid);
}

/* vfio-pci: the node then the port GUID set for VF 1 of the PF, and no re-bind (the tree has
 * no such VF: a re-bind would fail). */
static void test_set_guid_vfio(void **state)
{
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        assert_int_equal(cni_ib_set_guid("/nonexistent", VF_PCI, &loc, "ib0", true, GUID, &e), 0);
        assert_int_equal(fx->n_setlinks, 2);
        assert_guid_request(0, IFLA_VF_IB_NODE_GUID, 1, GUID);
        assert_guid_request(1, IFLA_VF_IB_PORT_GUID, 1, GUID);
        assert_true(fx->d.vf_guid[1].node == GUID);
        assert_true(fx->d.vf_guid[1].port == GUID);
        assert_true(fx->d.vf_guid[0].node == 0x1111 && fx->d.vf_guid[0].port == 0x2222);
}

/* Not vfio: after the GUIDs, the VF's driver is re-bound; where that fails (here: no such
 * device in the tree) the error says the GUID was set and the re-bind failed. */
static void test_set_guid_rebinds_when_not_vfio(void **state)
{
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        int r = cni_ib_set_guid("/nonexistent", VF_PCI, &loc, "", false, GUID, &e);
        assert_int_equal(r, -ENODEV);
        assert_says(&e, "VF " VF_PCI ": GUID 02:00:00:00:00:aa:00:0a set, but re-binding its "
                        "driver failed");
        assert_int_equal(fx->n_setlinks, 2);
        assert_true(fx->d.vf_guid[1].port == GUID);
}

/* Not vfio, the re-bind done: the driver re-creates the netdev under its old name, nothing
 * renamed; loc read again. */
static void test_set_guid_rebind_same_name(void **state)
{
        fake_kernel_start("ib1");
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        int r = cni_ib_set_guid(fx->root, VF_PCI, &loc, "ib1", false, GUID, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        assert_int_equal(fx->n_setlinks, 2); /* the two GUIDs, no rename */
        assert_guid_request(1, IFLA_VF_IB_PORT_GUID, 1, GUID);
        assert_string_equal(loc.vf_ifname, "ib1");
        assert_string_equal(loc.driver, "mlx5_core");
        assert_int_equal(loc.vf_index, 1);
}

/* The driver re-creates it as ib7 (the kernel's next free name): renamed back to ib1. */
static void test_set_guid_rebind_renames_back(void **state)
{
        fake_kernel_start("ib7");
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        int r = cni_ib_set_guid(fx->root, VF_PCI, &loc, "ib1", false, GUID, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        assert_int_equal(fx->n_setlinks, 3);
        const struct nlmsghdr *h = (const void *)fx->setlink[2];
        struct nlattr *tb[IFLA_MAX + 1];
        assert_int_equal(
            nlmsg_parse((struct nlmsghdr *)h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
        assert_int_equal(((const struct ifinfomsg *)nlmsg_data(h))->ifi_index, VF_IFINDEX);
        assert_non_null(tb[IFLA_IFNAME]);
        assert_string_equal(nla_data(tb[IFLA_IFNAME]), "ib1");
        assert_string_equal(fx->vf_netdev, "ib1");
        assert_string_equal(loc.vf_ifname, "ib1");
}

/* No netdev to name back (host_ifname ""): done after the re-bind. */
static void test_set_guid_rebind_without_netdev(void **state)
{
        fake_kernel_start("ib7");
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        int r = cni_ib_set_guid(fx->root, VF_PCI, &loc, "", false, GUID, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        assert_int_equal(fx->n_setlinks, 2);
}

/* A PF that takes no VF GUIDs (EOPNOTSUPP): the error names PF, VF, device and GUID. */
static void test_set_guid_refused_by_pf(void **state)
{
        fx->d.pf_type = ARPHRD_ETHER;
        struct vf_location loc = vf1();
        struct cni_error e = { 0 };
        assert_int_equal(cni_ib_set_guid("/nonexistent", VF_PCI, &loc, "", true, GUID, &e),
                         -EOPNOTSUPP);
        assert_says(&e, PF_NAME " VF 1 (" VF_PCI "): cannot set GUID 02:00:00:00:00:aa:00:0a");
        assert_int_equal(fx->n_setlinks, 1); /* the port GUID not tried after the node GUID */
}

static int restore(const char *host_guid, struct cni_error *e)
{
        struct cni_cache rec = { 0 };
        snprintf(rec.device_id, sizeof(rec.device_id), "%s", VF_PCI);
        snprintf(rec.host_guid, sizeof(rec.host_guid), "%s", host_guid);
        *e = (struct cni_error){ 0 };
        return cni_ib_restore_guid(fx->root, &rec, true, e);
}

/* DEL puts the recorded GUID back on the VF found in sysfs (VF 1 of the PF). */
static void test_restore_guid(void **state)
{
        struct cni_error e;
        assert_int_equal(restore("0c:42:a1:03:00:b8:c0:df", &e), 0);
        assert_int_equal(fx->n_setlinks, 2);
        assert_guid_request(0, IFLA_VF_IB_NODE_GUID, 1, 0x0c42a10300b8c0dfULL);
        assert_guid_request(1, IFLA_VF_IB_PORT_GUID, 1, 0x0c42a10300b8c0dfULL);
}

/* A recorded all-zero GUID cannot be set: all ones instead (upstream's ResetVFConfig). */
static void test_restore_zero_guid_becomes_all_ones(void **state)
{
        struct cni_error e;
        assert_int_equal(restore("00:00:00:00:00:00:00:00", &e), 0);
        assert_int_equal(fx->n_setlinks, 2);
        assert_guid_request(0, IFLA_VF_IB_NODE_GUID, 1, UINT64_MAX);
        assert_guid_request(1, IFLA_VF_IB_PORT_GUID, 1, UINT64_MAX);
        assert_true(fx->d.vf_guid[1].port == UINT64_MAX);
}

/* A garbled record is a clear error naming the VF and the text; nothing is sent. Nothing
 * recorded (ADD set no GUID): nothing to do. */
static void test_restore_garbled_or_no_guid(void **state)
{
        struct cni_error e;
        assert_int_equal(restore("0c:42:zz:03:00:b8:c0:df", &e), -EBADMSG);
        assert_says(&e, "VF " VF_PCI ": the recorded GUID \"0c:42:zz:03:00:b8:c0:df\" is not a "
                        "GUID");
        assert_int_equal(restore("0c:42:a1:03", &e), -EBADMSG);
        assert_int_equal(fx->n_setlinks, 0);
        assert_int_equal(restore("", &e), 0);
        assert_int_equal(fx->n_setlinks, 0);
        assert_int_equal(fx->n_getlinks, 0);
}

/* The VF gone from sysfs by DEL: an error naming it, nothing sent. */
static void test_restore_vf_gone(void **state)
{
        struct cni_cache rec = { 0 };
        snprintf(rec.device_id, sizeof(rec.device_id), "%s", "0000:3b:00.7");
        snprintf(rec.host_guid, sizeof(rec.host_guid), "%s", "0c:42:a1:03:00:b8:c0:df");
        struct cni_error e = { 0 };
        assert_int_equal(cni_ib_restore_guid(fx->root, &rec, true, &e), -ENODEV);
        assert_says(&e, "VF 0000:3b:00.7: cannot find its PF");
        assert_int_equal(fx->n_setlinks, 0);
}

/* An attachment record as ADD writes it (its pod's GUID in runtimeConfig.infinibandGUID, as
 * upstream ib-sriov-cni's), and its VF's allocation record naming netns (NULL: none). */
static void stage_record(const char *name, const char *pci, int vfid, const char *guid,
                         const char *netns)
{
        char rel[128], text[512];
        snprintf(rel, sizeof(rel), "cni-state/%s", name);
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"type\":\"ib-sriov\",\"deviceID\":\"%s\","
                 "\"VFID\":%d,\"Master\":\"" PF_NAME "\",\"HostIFGUID\":"
                 "\"0c:42:a1:03:00:b8:c0:df\",\"runtimeConfig\":{\"infinibandGUID\":\"%s\"}}",
                 pci, vfid, guid);
        put_file(fx->root, rel, text);
        if (netns) {
                snprintf(rel, sizeof(rel), "cni-state/pci/%s", pci);
                put_file(fx->root, rel, netns);
        }
}

static int check_unique(uint64_t guid, struct cni_error *e)
{
        const struct vf_location loc = vf1();
        struct cni_ib_conf ib = { .has_guid = true, .guid = guid };
        snprintf(ib.guid_from, sizeof(ib.guid_from), "runtimeConfig.infinibandGUID");
        *e = (struct cni_error){ 0 };
        return cni_ib_check_guid_unique(fx->root, fx->state, "self-net1", &ib, &loc, VF_PCI, e);
}

/* A pod asks for the GUID VF 0 of the same PF carries now (as its node GUID, as the PF reports
 * it): refused before anything is sent, naming the GUID's field, VF 0's PCI address, and the
 * attachment holding VF 0 (its record name: container and interface, and its namespace). */
static void test_guid_another_vf_carries_is_refused(void **state)
{
        fx->d.vf_guid[0] = (struct nldouble_guid){ GUID, 0x2222 };
        stage_record("podb-net1", VF0_PCI, 0, "02:00:00:00:00:aa:00:0a", "/run/netns/podB");
        struct cni_error e;
        assert_int_equal(check_unique(GUID, &e), -EADDRINUSE);
        assert_says(&e, "runtimeConfig.infinibandGUID 02:00:00:00:00:aa:00:0a is taken");
        assert_says(&e, "VF " VF0_PCI " (VF 0 of " PF_NAME ") carries it as its node GUID");
        assert_says(&e, "attached as \"podb-net1\" (CNI_CONTAINERID-CNI_IFNAME) in network "
                        "namespace /run/netns/podB");
        assert_says(&e, "VF " VF_PCI " not changed");
        assert_int_equal(fx->n_setlinks, 0);
        assert_true(fx->d.vf_guid[1].port == 0x0c42a10300b8c0dfULL); /* the pod's VF as it was */

        /* as its port GUID, and no attachment holds VF 0: still refused, VF 0 named */
        fx->d.vf_guid[0] = (struct nldouble_guid){ 0x1111, GUID };
        char path[256];
        snprintf(path, sizeof(path), "%s/pci/" VF0_PCI, fx->state);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(check_unique(GUID, &e), -EADDRINUSE);
        assert_says(&e, "VF " VF0_PCI " (VF 0 of " PF_NAME ") carries it as its port GUID; a "
                        "GUID must be unique");
        assert_int_equal(fx->n_setlinks, 0);
}

/* The pod's own VF carrying the GUID already (the pool's, or a retried ADD) is no conflict;
 * nor is a GUID nobody has. */
static void test_guid_own_vf_or_free_is_accepted(void **state)
{
        struct cni_error e;
        fx->d.vf_guid[1] = (struct nldouble_guid){ GUID, GUID };
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);
        fx->d.vf_guid[1] = (struct nldouble_guid){ 0x3333, 0x4444 };
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);
        /* nor is a record of the pod's own VF (an earlier, dead attachment of it) */
        stage_record("old-net1", VF_PCI, 1, "02:00:00:00:00:aa:00:0a", "/proc/self/ns/net");
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);
}

/* A VF of another PF of the node carries it: every PF with VFs is asked, not only the pod's. */
static void test_guid_a_vf_of_another_pf_carries_is_refused(void **state)
{
        mkdirs(fx->root, "bus/pci/devices/" PF2_PCI "/net/" PF2_NAME);
        mkdirs(fx->root, "bus/pci/devices/" PF2_VF0_PCI);
        symlinkf("../" PF2_VF0_PCI, fx->root, "bus/pci/devices/" PF2_PCI "/virtfn0");
        symlinkf("../" PF2_PCI, fx->root, "bus/pci/devices/" PF2_VF0_PCI "/physfn");
        fx->pf2 = fx->d;
        fx->pf2.pf_ifindex = PF2_IFINDEX;
        snprintf(fx->pf2.pf_name, sizeof(fx->pf2.pf_name), PF2_NAME);
        fx->pf2.pf_num_vfs = 1;
        fx->pf2.vf_guid[0] = (struct nldouble_guid){ GUID, GUID };
        fx->has_pf2 = true;
        struct cni_error e;
        assert_int_equal(check_unique(GUID, &e), -EADDRINUSE);
        assert_says(&e, "VF " PF2_VF0_PCI " (VF 0 of " PF2_NAME ") carries it as its node and "
                        "port GUID");
        assert_int_equal(fx->n_setlinks, 0);
        /* another GUID is free there */
        if (check_unique(GUID + 1, &e) < 0)
                fail_msg("%s", e.msg);
}

/* Another ADD recorded the GUID for VF 0 and has not set it yet (the kernel shows VF 0's old
 * one): its record holds it while its pod's namespace lives, and is named. Not once that
 * namespace is gone, nor when a newer record of VF 0 (a later pod's) names another GUID. */
static void test_guid_held_by_another_record_is_refused(void **state)
{
        stage_record("podc-net1", VF0_PCI, 0, "02:00:00:00:00:AA:00:0A", "/proc/self/ns/net");
        struct cni_error e;
        assert_int_equal(check_unique(GUID, &e), -EADDRINUSE);
        assert_says(&e, "runtimeConfig.infinibandGUID 02:00:00:00:00:aa:00:0a is taken: the "
                        "attachment \"podc-net1\" (CNI_CONTAINERID-CNI_IFNAME) in network "
                        "namespace /proc/self/ns/net holds it for VF " VF0_PCI " (VF 0 of " PF_NAME
                        ")");
        assert_int_equal(fx->n_setlinks, 0);

        /* the holder's namespace is gone: no pod has that identity any more */
        stage_record("podc-net1", VF0_PCI, 0, "02:00:00:00:00:aa:00:0a", "/run/netns/gone");
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);

        /* alive again, but a later attachment of VF 0 (newer record) has another GUID */
        stage_record("podc-net1", VF0_PCI, 0, "02:00:00:00:00:aa:00:0a", "/proc/self/ns/net");
        char path[256];
        snprintf(path, sizeof(path), "%s/podc-net1", fx->state);
        struct timespec old_time[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
        assert_int_equal(utimensat(AT_FDCWD, path, old_time, 0), 0);
        stage_record("podd-net1", VF0_PCI, 0, "02:00:00:00:00:bb:00:01", "/proc/self/ns/net");
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);
        /* the attachment's own record (a retried ADD) is not another's */
        stage_record("self-net1", VF0_PCI, 0, "02:00:00:00:00:aa:00:0a", "/proc/self/ns/net");
        if (check_unique(GUID, &e) < 0)
                fail_msg("%s", e.msg);
}

/* cni_ib_plan with a GUID puts it in the record (what the check above reads back). */
static void test_plan_records_the_pod_guid(void **state)
{
        struct cni_ib_conf ib = { .has_guid = true, .guid = GUID };
        struct cni_cache rec;
        struct cni_error e;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.guid, "02:00:00:00:00:aa:00:0a");
        ib = (struct cni_ib_conf){ 0 };
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.guid, "");
}

/* The DEV_INDEX of the last nldev request, which must be RDMA_NLDEV_CMD_SET. */
static uint32_t last_set_index(void)
{
        struct nlmsghdr *h = (struct nlmsghdr *)fx->d.request;
        assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SET));
        struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
        assert_int_equal(nlmsg_parse(h, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL), 0);
        assert_non_null(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
        return nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
}

static const struct nldouble_dev *rdma_dev(uint32_t index)
{
        for (size_t i = 0; i < fx->d.n_devs; i++)
                if (fx->d.devs[i].index == index)
                        return &fx->d.devs[i];
        return NULL;
}

/* ib-sriov ADD with a GUID in exclusive RDMA mode, in cmd_add's order: the VF's RDMA device
 * planned (mlx5_3, index 4), the GUID set and the VF re-bound, which re-registers the device
 * (mlx5_5, index 9; index 4 is no more), the device found again from the VF's PCI function,
 * moved. The move asks for index 9 and the record (what DEL reads) names mlx5_5 / 9. Then DEL:
 * moved back by the record's index, before the GUID's restore re-binds the VF again. */
static void test_add_guid_then_rdma_move_uses_the_rebound_device(void **state)
{
        pid_t child = -1;
        int pod_ns = netns_child_open(&child);
        if (pod_ns < 0) {
                netns_child_end(child, pod_ns);
                print_message("skipped: needs root to create a network namespace\n");
                skip();
        }
        int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        fx->d.netns_mode = 0; /* exclusive */
        fx->rdma = true;
        rdma_register(RDMA_INDEX, RDMA_NAME);

        struct cni_cache rec = { 0 };
        snprintf(rec.device_id, sizeof(rec.device_id), "%s", VF_PCI);
        struct cni_error e = { 0 };
        struct vf_location loc = vf1();
        snprintf(loc.vf_ifname, sizeof(loc.vf_ifname), "ib1");
        snprintf(loc.driver, sizeof(loc.driver), "mlx5_core");
        assert_int_equal(cni_rdma_plan(fx->root, VF_PCI, "ib1", "mlx5_core", true, &rec, &e), 0);
        assert_true(rec.rdma_moved);
        assert_int_equal(rec.rdma_index, RDMA_INDEX);
        assert_string_equal(rec.rdma_name, RDMA_NAME);

        fake_kernel_start("ib1");
        int r = cni_ib_set_guid(fx->root, VF_PCI, &loc, "ib1", false, GUID, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        assert_null(rdma_dev(RDMA_INDEX));

        r = cni_rdma_find_again(fx->root, loc.vf_ifname, loc.driver, &rec, &e);
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_int_equal(r, 1); /* changed: cmd_add saves the record before the move */
        assert_int_equal(rec.rdma_index, RDMA_REBOUND_INDEX);
        assert_string_equal(rec.rdma_name, RDMA_REBOUND_NAME);
        assert_string_equal(rec.rdma_driver, "mlx5_core");

        r = cni_rdma_move(&rec, pod_ns, "/proc/pod/ns/net", &e);
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_int_equal(last_set_index(), RDMA_REBOUND_INDEX);
        assert_true(rdma_dev(RDMA_REBOUND_INDEX)->netns == nldouble_netns_ino(pod_ns));

        /* DEL: back to the host by the recorded index, then the GUID put back (re-bind) */
        r = cni_rdma_release(fx->root, &rec, pod_ns, host_ns, "/proc/pod/ns/net", &e);
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_int_equal(last_set_index(), RDMA_REBOUND_INDEX);
        assert_true(rdma_dev(RDMA_REBOUND_INDEX)->netns == fx->d.init_netns);
        snprintf(rec.host_guid, sizeof(rec.host_guid), "0c:42:a1:03:00:b8:c0:df");
        snprintf(rec.orig.host_ifname, sizeof(rec.orig.host_ifname), "ib1");
        fx->kernel_log[0] = '\0';
        fake_kernel_start("ib1");
        r = cni_ib_restore_guid(fx->root, &rec, false, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        assert_true(fx->d.vf_guid[1].port == 0x0c42a10300b8c0dfULL);
        close(host_ns);
        netns_child_end(child, pod_ns);
}

/* Item 5: the VF's GUID where the kernel keeps it. mlx5 reports through the PF's VF info only a
 * GUID set over netlink since the driver loaded (0 otherwise); the IPoIB netdev's 20-byte
 * address ends with the port GUID the VF really has. With the netdev in the host, ADD records
 * that one (HostIFGUID, what DEL puts back) and, without a GUID given, accepts the VF. */
static void test_plan_reads_the_guid_from_the_ipoib_address(void **state)
{
        fx->d.vf_guid[1] = (struct nldouble_guid){ 0, 0 }; /* mlx5 after a driver reload */
        const uint8_t guid[8] = { 0x0c, 0x42, 0xa1, 0x03, 0x00, 0xb8, 0xc0, 0xe5 };
        memcpy(fx->ipoib_addr + 12, guid, sizeof(guid));
        struct vf_location loc = vf1();
        snprintf(loc.vf_ifname, sizeof(loc.vf_ifname), "ib1");
        struct cni_ib_conf ib = { .has_guid = true, .guid = GUID };
        struct cni_cache rec = { 0 };
        struct cni_error e = { 0 };
        if (cni_ib_plan(&ib, &loc, VF_PCI, false, &rec, &e) < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(rec.host_guid, "0c:42:a1:03:00:b8:c0:e5");
        ib = (struct cni_ib_conf){ 0 };
        rec = (struct cni_cache){ 0 };
        if (cni_ib_plan(&ib, &loc, VF_PCI, false, &rec, &e) < 0)
                fail_msg("a VF with a GUID in its IPoIB address refused: %s", e.msg);
        /* no IPoIB netdev in the host (vfio-pci, or in a pod): the VF info it is */
        struct vf_location bare = vf1();
        assert_true(cni_ib_current_guid(&bare, 0x1234) == 0x1234);
        assert_int_equal(fx->n_setlinks, 0);
}

/* Item 4: a pod died with its namespace before its DEL; its VF carries the pod's GUID. The next
 * ADD for the VF reclaims it: the dead attachment's original GUID goes back first (a re-bind,
 * as its DEL would), so the next pod records the VF's own GUID as the original and nobody runs
 * with the dead pod's. */
static void test_reclaim_puts_the_dead_pods_original_guid_back(void **state)
{
        const uint64_t dead_pods = 0x0200000000aa0001ULL, original = 0x0c42a10300b8c0dfULL;
        fx->d.vf_guid[1] = (struct nldouble_guid){ dead_pods, dead_pods };
        struct cni_cache stale = { .vfid = 1 };
        snprintf(stale.device_id, sizeof(stale.device_id), VF_PCI);
        snprintf(stale.host_guid, sizeof(stale.host_guid), "0c:42:a1:03:00:b8:c0:df");
        snprintf(stale.guid, sizeof(stale.guid), "02:00:00:00:00:aa:00:01");
        snprintf(stale.orig.host_ifname, sizeof(stale.orig.host_ifname), "ib1");
        struct cni_error e = { 0 };
        fake_kernel_start("ib1");
        int r = cni_ib_reclaim_guid(fx->root, &stale, false, &e);
        fake_kernel_stop();
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_true(fx->d.vf_guid[1].node == original && fx->d.vf_guid[1].port == original);
        assert_string_equal(fx->kernel_log, "unbind;probe;");
        /* the next pod's ADD records the VF's own GUID, not the dead pod's */
        struct cni_ib_conf ib = { .has_guid = true, .guid = GUID };
        struct cni_cache rec;
        assert_int_equal(plan(&ib, false, &rec, &e), 0);
        assert_string_equal(rec.host_guid, "0c:42:a1:03:00:b8:c0:df");
        /* a stale record of a sriov attachment (no GUID set): nothing to put back */
        struct cni_cache plain = stale;
        plain.host_guid[0] = '\0';
        unsigned before = fx->n_setlinks;
        assert_int_equal(cni_ib_reclaim_guid(fx->root, &plain, false, &e), 0);
        assert_int_equal(fx->n_setlinks, before);
}

/* Item 4: when the GUID cannot be put back, the ADD is refused (try later), naming the VF and
 * both GUIDs, rather than recording the dead pod's GUID as the VF's own. */
static void test_reclaim_that_fails_refuses_the_add(void **state)
{
        fx->d.pf_type = ARPHRD_ETHER; /* the PF refuses VF GUIDs */
        struct cni_cache stale = { .vfid = 1 };
        snprintf(stale.device_id, sizeof(stale.device_id), VF_PCI);
        snprintf(stale.host_guid, sizeof(stale.host_guid), "0c:42:a1:03:00:b8:c0:df");
        snprintf(stale.guid, sizeof(stale.guid), "02:00:00:00:00:aa:00:01");
        struct cni_error e = { 0 };
        assert_int_equal(cni_ib_reclaim_guid(fx->root, &stale, true, &e), -EOPNOTSUPP);
        assert_int_equal(e.code, CNI_ERR_TRY_LATER);
        assert_says(&e, "VF " VF_PCI ": its last holder's namespace is gone and its GUID "
                        "02:00:00:00:00:aa:00:01 could not be put back to "
                        "0c:42:a1:03:00:b8:c0:df");
}

static int pod_namespace(pid_t *child)
{
        int ns = netns_child_open(child);
        if (ns < 0) {
                netns_child_end(*child, ns);
                print_message("skipped: needs root to create a network namespace\n");
        }
        return ns;
}

/* Item 6: exclusive mode, a pod given no GUID. DEL moves the VF's RDMA device home, which
 * re-creates its IPoIB netdev in the host under the kernel's next name (ib7); with no GUID to
 * restore (whose re-bind would name it back) the VF kept ib7. Now the move back names it ib1. */
static void test_rdma_release_gives_the_recreated_ipoib_netdev_its_name(void **state)
{
        pid_t child = -1;
        int pod_ns = pod_namespace(&child);
        if (pod_ns < 0)
                skip();
        int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        fx->d.netns_mode = 0;
        fx->rdma = true;
        rdma_register(RDMA_INDEX, RDMA_NAME);
        struct cni_cache rec = { .rdma_moved = true, .rdma_index = RDMA_INDEX };
        snprintf(rec.device_id, sizeof(rec.device_id), VF_PCI);
        snprintf(rec.rdma_name, sizeof(rec.rdma_name), RDMA_NAME);
        snprintf(rec.orig.host_ifname, sizeof(rec.orig.host_ifname), "ib1");
        struct cni_error e = { 0 };
        if (cni_rdma_move(&rec, pod_ns, "/proc/pod/ns/net", &e) < 0)
                fail_msg("%s", e.msg);
        snprintf(fx->ipoib_recreate, sizeof(fx->ipoib_recreate), "ib7");
        int r = cni_rdma_release(fx->root, &rec, pod_ns, host_ns, "/proc/pod/ns/net", &e);
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_true(rdma_dev(RDMA_INDEX)->netns == fx->d.init_netns);
        assert_string_equal(fx->vf_netdev, "ib1");
        char path[512];
        snprintf(path, sizeof(path), "%s/bus/pci/devices/" VF_PCI "/net/ib1", fx->root);
        assert_int_equal(access(path, F_OK), 0);
        close(host_ns);
        netns_child_end(child, pod_ns);
}

static void *register_later(void *arg)
{
        (void)arg;
        /* after the plugin's first look: the re-bind under way registers it again */
        nanosleep(&(struct timespec){ .tv_nsec = 300 * 1000 * 1000 }, NULL);
        pthread_mutex_lock(&kernel_lock);
        rdma_register(RDMA_INDEX, RDMA_NAME);
        pthread_mutex_unlock(&kernel_lock);
        return NULL;
}

/* Item 6: the VF's function shows its RDMA auxiliary device (mlx5_core.rdma.1) but the RDMA
 * device under it is briefly absent (a driver re-bind under way). ADD's plan waits for it and
 * moves it, instead of taking one look, finding nothing and attaching the VF without its RDMA
 * device. */
static void test_plan_waits_for_an_rdma_device_briefly_absent(void **state)
{
        fx->d.netns_mode = 0;
        mkdirs(fx->root, RDMA_AUX);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, register_later, NULL), 0);
        struct cni_cache rec = { 0 };
        snprintf(rec.device_id, sizeof(rec.device_id), VF_PCI);
        struct cni_error e = { 0 };
        int r = cni_rdma_plan(fx->root, VF_PCI, "ib1", "mlx5_core", false, &rec, &e);
        assert_int_equal(pthread_join(t, NULL), 0);
        if (r < 0)
                fail_msg("%s", e.msg);
        assert_true(rec.rdma_moved);
        assert_int_equal(rec.rdma_index, RDMA_INDEX);
        assert_string_equal(rec.rdma_name, RDMA_NAME);
}

/* ...and when it never comes, the ADD is refused naming the VF, not attached without it. A VF
 * without an RDMA auxiliary device has no RDMA device: attached as before, at once. */
static void test_plan_refuses_when_the_rdma_device_never_comes(void **state)
{
        fx->d.netns_mode = 0;
        struct cni_cache rec = { 0 };
        struct cni_error e = { 0 };
        assert_int_equal(cni_rdma_plan(fx->root, VF_PCI, "ib1", "mlx5_core", false, &rec, &e), 0);
        assert_false(rec.rdma_moved);
        mkdirs(fx->root, RDMA_AUX);
        assert_int_equal(cni_rdma_plan(fx->root, VF_PCI, "ib1", "mlx5_core", false, &rec, &e),
                         -ENOENT);
        assert_says(&e, "VF " VF_PCI ": cannot find its RDMA device in the host's namespace: its "
                        "function has an RDMA auxiliary device, but no RDMA device appeared");
        assert_false(rec.rdma_moved);
}

struct mover {
        struct cni_cache rec;
        struct host_rdma_char_devices want;
        int pod_ns, r;
        struct cni_error e;
};

/* One ADD's locked part, as cmd_add runs it: the node's lock, the move, the check against what
 * the kubelet handed the pod, the lock released. */
static void *add_move(void *arg)
{
        struct mover *m = arg;
        int lock = cni_move_lock(fx->state, 60 * 1000);
        if (lock < 0) {
                m->r = lock;
                return NULL;
        }
        m->r = cni_rdma_move(&m->rec, m->pod_ns, "/proc/pod/ns/net", &m->e);
        if (m->r >= 0)
                m->r = cni_rdma_check_devices(fx->root, &m->rec, &m->want, "the kubelet", &m->e);
        close(lock);
        return NULL;
}

static void mover_init(struct mover *m, const char *pci, uint32_t index, const char *name,
                       const char *uverbs)
{
        *m = (struct mover){ .rec = { .rdma_moved = true, .rdma_index = index } };
        snprintf(m->rec.device_id, sizeof(m->rec.device_id), "%s", pci);
        snprintf(m->rec.rdma_name, sizeof(m->rec.rdma_name), "%s", name);
        snprintf(m->want.uverbs, sizeof(m->want.uverbs), "%s", uverbs);
}

/* Item 1: two pods' ADDs move their VFs' RDMA devices at once. Each move frees the device's
 * uverbs minor and takes the lowest free one again; the first to free (mlx5_3, uverbs1) is the
 * slower, so without a node-wide lock the second (mlx5_4, uverbs2) takes uverbs1 and mlx5_3
 * gets uverbs2: each container would open the other pod's device (the permutation of
 * sriov-network-operator issue 668). Under the node's lock the moves come one after the other
 * and each device keeps the uverbs the kubelet handed its pod. */
static void test_concurrent_moves_keep_each_pods_uverbs(void **state)
{
        pid_t child_a = -1, child_b = -1;
        int ns_a = pod_namespace(&child_a);
        if (ns_a < 0)
                skip();
        int ns_b = pod_namespace(&child_b);
        assert_true(ns_b >= 0);
        fx->d.netns_mode = 0;
        nldouble_add_dev(&fx->d, 1, "mlx5_0", 0x1111, "ib", true); /* the PF's, stays */
        nldouble_add_dev(&fx->d, 4, "mlx5_3", 0x2222, "ib", true);
        nldouble_add_dev(&fx->d, 5, "mlx5_4", 0x3333, "ib", true);
        uverbs_give(0, "mlx5_0");
        uverbs_give(1, "mlx5_3");
        uverbs_give(2, "mlx5_4");
        fx->uverbs_alloc = true;
        struct mover a, b;
        mover_init(&a, VF_PCI, 4, "mlx5_3", "/dev/infiniband/uverbs1");
        mover_init(&b, VF0_PCI, 5, "mlx5_4", "/dev/infiniband/uverbs2");
        a.pod_ns = ns_a;
        b.pod_ns = ns_b;
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, add_move, &a), 0);
        /* B's ADD comes while A's move is under way (A has freed its minor) */
        for (int i = 0; i < 6000; i++) {
                pthread_mutex_lock(&kernel_lock);
                int between = fx->n_between;
                pthread_mutex_unlock(&kernel_lock);
                if (between > 0)
                        break;
                nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
        }
        assert_int_equal(pthread_create(&tb, NULL, add_move, &b), 0);
        assert_int_equal(pthread_join(ta, NULL), 0);
        assert_int_equal(pthread_join(tb, NULL), 0);
        if (a.r < 0)
                fail_msg("A: %s", a.e.msg);
        if (b.r < 0)
                fail_msg("B: %s", b.e.msg);
        assert_string_equal(fx->uverbs_owner[1], "mlx5_3");
        assert_string_equal(fx->uverbs_owner[2], "mlx5_4");
        assert_string_equal(fx->uverbs_owner[0], "mlx5_0");
        netns_child_end(child_b, ns_b);
        netns_child_end(child_a, ns_a);
}

/* Item 1: serialised or not, a move re-takes the lowest free minor: with uverbs0 free (its
 * device gone since the kubelet's allocation), mlx5_3 handed uverbs1 comes back as uverbs0. The
 * ADD fails naming the device, both paths and the source, instead of a container that cannot
 * open its device (EPERM in exclusive mode). */
static void test_a_renumbered_device_fails_the_add(void **state)
{
        pid_t child = -1;
        int pod_ns = pod_namespace(&child);
        if (pod_ns < 0)
                skip();
        fx->d.netns_mode = 0;
        nldouble_add_dev(&fx->d, 4, "mlx5_3", 0x2222, "ib", true);
        uverbs_give(1, "mlx5_3");
        fx->uverbs_alloc = true;
        struct mover a;
        mover_init(&a, VF_PCI, 4, "mlx5_3", "/dev/infiniband/uverbs1");
        a.pod_ns = pod_ns;
        add_move(&a);
        assert_int_equal(a.r, -EXDEV);
        assert_says(&a.e, "VF " VF_PCI ": its RDMA device mlx5_3 owns /dev/infiniband/uverbs0 "
                          "now, but the kubelet gave the pod /dev/infiniband/uverbs1");
        /* a pod handed no RDMA char devices (a pool without isRdma): nothing to compare */
        struct host_rdma_char_devices none = { .uverbs = "" };
        assert_int_equal(cni_rdma_check_devices(fx->root, &a.rec, &none, "x", &a.e), 0);
        netns_child_end(child, pod_ns);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
                T(test_plan_refuses_invalid_guid_without_one_given),
                T(test_plan_accepts_valid_guid_without_one_given),
                T(test_plan_records_current_guid_when_one_given),
                T(test_plan_refuses_pf_without_vf_guids),
                T(test_plan_refuses_vf_the_pf_does_not_list),
                T(test_plan_ib_kubernetes),
                T(test_plan_vfio_without_guid),
                T(test_set_guid_vfio),
                T(test_set_guid_rebinds_when_not_vfio),
                T(test_set_guid_rebind_same_name),
                T(test_set_guid_rebind_renames_back),
                T(test_set_guid_rebind_without_netdev),
                T(test_set_guid_refused_by_pf),
                T(test_restore_guid),
                T(test_restore_zero_guid_becomes_all_ones),
                T(test_restore_garbled_or_no_guid),
                T(test_restore_vf_gone),
                T(test_add_guid_then_rdma_move_uses_the_rebound_device),
                T(test_guid_another_vf_carries_is_refused),
                T(test_guid_own_vf_or_free_is_accepted),
                T(test_guid_a_vf_of_another_pf_carries_is_refused),
                T(test_guid_held_by_another_record_is_refused),
                T(test_plan_records_the_pod_guid),
                T(test_plan_reads_the_guid_from_the_ipoib_address),
                T(test_reclaim_puts_the_dead_pods_original_guid_back),
                T(test_reclaim_that_fails_refuses_the_add),
                T(test_rdma_release_gives_the_recreated_ipoib_netdev_its_name),
                T(test_plan_waits_for_an_rdma_device_briefly_absent),
                T(test_plan_refuses_when_the_rdma_device_never_comes),
                T(test_concurrent_moves_keep_each_pods_uverbs),
                T(test_a_renumbered_device_fails_the_add),
#undef T
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
