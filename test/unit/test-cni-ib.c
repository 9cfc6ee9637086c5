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
};

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
        const uint8_t addr[20] = { 0x00, 0x00, 0x10, 0x49, 0xfe, 0x80 };
        nla_put_string(m, IFLA_IFNAME, fx->vf_netdev);
        nla_put_u32(m, IFLA_MTU, 2044);
        nla_put(m, IFLA_ADDRESS, sizeof(addr), addr);
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
        nla_strlcpy(fx->vf_netdev, tb[IFLA_IFNAME], sizeof(fx->vf_netdev));
        nldouble_ack(d, req, 0);
}

static int send_fn(struct nl_sock *sk, struct nl_msg *msg)
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

/* What the kernel does with the VF on unbind and drivers_probe: unbind removes its driver
 * link and its netdev; the probe re-creates the netdev (named as the driver names it) and
 * the driver link. Polls the tree every millisecond; records what it did. */
static void *fake_kernel_run(void *arg)
{
        char path[512];
        while (!atomic_load(&fx->stop)) {
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
        *state = fx;
        return 0;
}

static int teardown(void **state)
{
        nldouble_done(&fx->d);
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
        r = cni_rdma_release(&rec, pod_ns, host_ns, "/proc/pod/ns/net", &e);
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
#undef T
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
