/* SPDX-License-Identifier: Apache-2.0 */
/* `sriov`: the CNI plugin that hands a VF to a pod (CNI type "sriov", compatible with
 * upstream k8snetworkplumbingwg/sriov-cni: same configuration, same records on the node).
 *
 * A separate small executable (libnl + jansson only) because the runtime starts it for every
 * pod network attachment. Commands: ADD, DEL, CHECK, VERSION, and STATUS/GC (1.1.0) accepted.
 * Everything ADD changes is undone when a later step fails; DEL restores what ADD changed.
 *
 * Environment besides the CNI_* variables: SRIOV_CNI_STATE_DIR (default /var/lib/cni/sriov),
 * SRIOV_CNI_SYSFS_ROOT (default /sys), SRIOV_CNI_AGENT_STATE_DIR (the agent's records, default
 * /var/lib/sriov-agent), SRIOV_CNI_ANY_VF_FILE (default /etc/sriov-agent/cni-allow-any-vf),
 * SRIOV_CNI_PODRESOURCES_SOCKET (default /var/lib/kubelet/pod-resources/kubelet.sock) and
 * SRIOV_CNI_KUBELET_CHECKPOINT (the kubelet's device manager checkpoint, default under
 * /var/lib/kubelet/device-plugins) for tests; SRIOV_CNI_TIMINGS=1 prints a line with the wall
 * time spent in total, in the IPAM plugin and in netlink requests, and the plugin's peak RSS (the
 * IPAM child not included) to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "alloc-specs.h"
#include "cni/conf-ib.h"
#include "cni/conf.h"
#include "cni/ipam.h"
#include "cni/podres.h"
#include "cni/pool.h"
#include "cni/result.h"
#include "cni/state.h"
#include "host/iface-ip.h"
#include "host/netlink-netns.h"
#include "host/vf-lookup.h"
#include "ib.h"
#include "rdma.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"

#include "podres.h"

#define LOCK_TIMEOUT_MS (60 * 1000)
#define STDIN_MAX       (1024 * 1024)
/* An IPAM plugin runs while the VF's lock is held: one that hangs must not hold it forever */
#define IPAM_TIMEOUT_MS (60 * 1000)

struct timings {
        bool enabled;
        double start, ipam, netlink;
};

struct plugin {
        const char *command, *container_id, *netns, *ifname, *args, *cni_path;
        const char *state_dir, *sysfs_root;
        const char *agent_state_dir, *any_vf_file, *podres_socket, *kubelet_checkpoint;
        char *stdin_data;
        size_t stdin_len;
        struct cni_conf conf;
        bool ib; /* started as ib-sriov (argv[0]): InfiniBand GUIDs, rdmaIsolation */
        struct cni_ib_conf ib_conf;
        struct cni_error err;
        int host_ns; /* the plugin's own (host) network namespace */
        struct timings t;
};

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wraps a netlink call to account its time. */
#define NL(p, call)                                                                                \
        ({                                                                                         \
                double t0_ = now_ms();                                                             \
                int r_ = (call);                                                                   \
                (p)->t.netlink += now_ms() - t0_;                                                  \
                r_;                                                                                \
        })

static int fail(struct plugin *p, int code, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct plugin *p, int code, int err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        /* clang-analyzer does not see va_start() initialise ap (as in lib/cni/error.c) */
        // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
        vsnprintf(p->err.msg, sizeof(p->err.msg), fmt, ap);
        va_end(ap);
        p->err.code = code;
        return err < 0 ? err : -EINVAL;
}

static int read_stdin(struct plugin *p)
{
        /* STDIN_MAX - 2: the bound the configuration always had (at most 1 MiB - 2 bytes) */
        int r = read_full_fd(STDIN_FILENO, STDIN_MAX - 2, &p->stdin_data, &p->stdin_len);
        if (r == -EFBIG)
                return fail(p, CNI_ERR_DECODE, r, "network configuration larger than %d bytes",
                            STDIN_MAX);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(p, CNI_ERR_DECODE, r, "cannot read stdin: %s", strerror(-r));
        return 0;
}

static int enter_ns(struct plugin *p, int fd, const char *what)
{
        int r = host_netns_enter(fd);
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "cannot enter the %s network namespace: %s",
                            what, strerror(-r));
        return 0;
}

/* Best effort: with these the kernel announces address changes itself (as upstream). */
static void enable_notify(const char *ifname)
{
        char path[128];
        snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/arp_notify", ifname);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void)!write(fd, "1", 1);
                close(fd);
        }
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/ndisc_notify", ifname);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void)!write(fd, "1", 1);
                close(fd);
        }
        /* IPv6 addresses usable while DAD runs, as upstream's SetupVF (kernels without
         * CONFIG_IPV6_OPTIMISTIC_DAD have no such file: addresses then settle normally) */
        (void)host_ipv6_conf_set(ifname, "optimistic_dad", "1");
}

/* The node-wide lock around re-binds and RDMA moves (cni_move_lock): taken only around those
 * steps, so that an ADD waits for no other ADD's IPAM or netdev set-up. */
static int take_move_lock(struct plugin *p, const char *pci)
{
        int fd = cni_move_lock(p->state_dir, LOCK_TIMEOUT_MS);
        if (fd < 0)
                return fail(p, CNI_ERR_TRY_LATER, fd,
                            "VF %s: cannot take the node's lock for driver re-binds and RDMA "
                            "device moves in %s: %s",
                            pci, p->state_dir, strerror(-fd));
        return fd;
}

/* ---- restoring (DEL, and ADD's undo) ---- */

/* Puts back on the PF what the configuration set, the admin MAC always, as upstream's
 * ResetVFConfig. pf is the PF's netdev now (found through the VF's physfn: the one recorded
 * may have been renamed since). With best_effort every step is tried; else the first error
 * stops. */
static int reset_pf_side(struct plugin *p, const struct cni_cache *c, const char *pf,
                         bool best_effort)
{
        const struct cni_vf_orig *o = &c->orig;
        int first = 0, r;
#define STEP(call, ...)                                                                            \
        do {                                                                                       \
                r = NL(p, call);                                                                   \
                if (r < 0 && first == 0) {                                                         \
                        first = fail(p, CNI_ERR_GENERIC, r, __VA_ARGS__);                          \
                        if (!best_effort)                                                          \
                                return first;                                                      \
                }                                                                                  \
        } while (0)
        if (c->has_vlan)
                STEP(
                    host_vf_set_vlan_proto(pf, c->vfid, o->vlan, o->qos,
                                           (uint16_t)(o->vlan_proto ? o->vlan_proto : ETH_P_8021Q)),
                    "%s VF %d: cannot restore vlan %d qos %d: %s", pf, c->vfid, o->vlan, o->qos,
                    strerror(-r));
        if (c->spoofchk >= 0)
                STEP(host_vf_set_spoofchk(pf, c->vfid, o->spoofchk),
                     "%s VF %d: cannot restore spoofchk: %s", pf, c->vfid, strerror(-r));
        /* Only when it differs: rewriting an unchanged one is not harmless (igb clears the VF's
         * MAC filter when given the all-zero "no administrative MAC") */
        uint8_t mac[6];
        struct host_vf_state now;
        bool mac_differs = host_vf_get_state(pf, c->vfid, &now) < 0 ||
                           cni_parse_mac(o->admin_mac, mac) < 0 || memcmp(now.mac, mac, 6) != 0;
        if (o->admin_mac[0] && mac_differs && cni_parse_mac(o->admin_mac, mac) == 0)
                STEP(host_vf_set_mac(pf, c->vfid, mac),
                     "%s VF %d: cannot restore the administrative MAC %s: %s", pf, c->vfid,
                     o->admin_mac, strerror(-r));
        if (c->trust >= 0)
                STEP(host_vf_set_trust(pf, c->vfid, o->trust), "%s VF %d: cannot restore trust: %s",
                     pf, c->vfid, strerror(-r));
        if (c->has_rate)
                STEP(host_vf_set_rate(pf, c->vfid, (uint32_t)o->min_tx_rate,
                                      (uint32_t)o->max_tx_rate),
                     "%s VF %d: cannot restore tx rates %d/%d: %s", pf, c->vfid, o->min_tx_rate,
                     o->max_tx_rate, strerror(-r));
        if (c->link_state >= 0)
                STEP(host_vf_set_link_state(pf, c->vfid, (int)o->link_state),
                     "%s VF %d: cannot restore link state: %s", pf, c->vfid, strerror(-r));
#undef STEP
        return first;
}

/* Why the kernel refused to move the VF's netdev (named ifname where it is) into target_ns as
 * new_name. EEXIST means a name is taken there, but not necessarily new_name: one of the VF's
 * altnames may be (the kernel then moves nothing), or new_name may be one of the VF's own
 * altnames. Back in the calling thread's namespace on return; only on this failure path. */
static void move_refused_why(struct plugin *p, int err, int target_ns, const char *ifname,
                             const char *new_name, char *buf, size_t size)
{
        char name[HOST_ALTNAME_SIZE];
        if (err != -EEXIST) {
                snprintf(buf, size, "%s", strerror(-err));
                return;
        }
        switch (NL(p, host_link_move_conflict(ifname, target_ns, new_name, name))) {
        case HOST_MOVE_TAKEN_ALTNAME:
                snprintf(buf, size, "its altname %s is taken there", name);
                break;
        case HOST_MOVE_TAKEN_NAME:
                snprintf(buf, size, "%s is taken there", name);
                break;
        case HOST_MOVE_OWN_ALTNAME:
                snprintf(buf, size,
                         "%s is one of its own altnames (a link cannot take one as its name)",
                         name);
                break;
        default: /* gone meanwhile, or not readable */
                snprintf(buf, size, "%s or one of its altnames is taken there", new_name);
        }
}

/* Gives the VF's netdev (down, ifname where the thread is) its MAC back. A VF driver that
 * refuses a MAC its PF set administratively (igbvf with trust off: DEL restores the PF side
 * first, as upstream) takes the PF's when reset, i.e. when brought up: then it is brought up
 * and down again. 0 when the netdev ends with the MAC, or with the PF's administrative MAC
 * (all a VF without trust can have); the link is down on return. */
static int restore_vf_mac(struct plugin *p, const char *ifname, const struct cni_cache *c,
                          const uint8_t mac[6], struct host_link *l)
{
        int r = NL(p, host_link_set_mac(l->ifindex, mac));
        if (r >= 0)
                return 0;
        uint8_t admin[6];
        bool has_admin = cni_parse_mac(c->orig.admin_mac, admin) == 0 &&
                         memcmp(admin, (uint8_t[6]){ 0 }, 6) != 0;
        if (NL(p, host_link_set_updown(l->ifindex, true)) < 0 ||
            NL(p, host_link_set_updown(l->ifindex, false)) < 0 ||
            NL(p, host_link_get(ifname, l)) < 0)
                return r;
        return memcmp(l->mac, mac, 6) == 0 || (has_admin && memcmp(l->mac, admin, 6) == 0) ? 0 : r;
}

/* The netdev as ADD found it: down, its MAC and MTU back, moved back to the host under its
 * old name. Called from the host namespace; pod_ns is the pod's. */
static int release_netdev(struct plugin *p, int pod_ns, const char *ifname,
                          const struct cni_cache *c)
{
        int r = enter_ns(p, pod_ns, "pod's");
        if (r < 0)
                return r;
        /* by its device, not its name: the pod may have renamed the VF and given its name to
         * a link of its own (a veth, whose other end the host would get under the VF's name);
         * ifname, the name it should have, is only tried first */
        struct host_link l;
        r = NL(p, host_link_find_by_bus(c->device_id, ifname, &l));
        if (r < 0) {
                (void)host_netns_enter(p->host_ns);
                if (r == -ENODEV && host_vf_has_netdev(p->sysfs_root, c->device_id))
                        return 0; /* already back in the host (an earlier, interrupted DEL) */
                return fail(p, CNI_ERR_GENERIC, r,
                            "VF %s: no interface in %s is that device (looked for %s, then every "
                            "link's bus address): %s",
                            c->device_id, p->netns, ifname, strerror(-r));
        }
        char found[IFNAMSIZ];
        snprintf(found, sizeof(found), "%s", l.name);
        ifname = found;
        uint8_t mac[6];
        const char *step = "take it down";
        r = NL(p, host_link_set_updown(l.ifindex, false));
        /* read again: a VF driver may have taken the restored administrative MAC on down */
        if (r >= 0)
                r = NL(p, host_link_get(ifname, &l));
        if (r >= 0 && c->orig.effective_mac[0] && cni_parse_mac(c->orig.effective_mac, mac) == 0 &&
            memcmp(mac, l.mac, 6) != 0) {
                step = "restore its MAC";
                r = restore_vf_mac(p, ifname, c, mac, &l);
        }
        if (r >= 0 && c->orig.mtu > 0 && c->orig.mtu != l.mtu) {
                step = "restore its MTU";
                r = NL(p, host_link_set_mtu_index(l.ifindex, c->orig.mtu));
        }
        /* an altname equal to the host name (added while in the pod: systemd-udevd before v254
         * adds a renamed link's previous name) would make the kernel refuse the name below with
         * EEXIST after moving it, leaving the VF in the host under the pod's name */
        int ra = NL(p, host_link_drop_altname(l.ifindex, c->orig.host_ifname));
        if (r >= 0 && ra < 0) {
                step = "remove its altname equal to its host name";
                r = ra;
        }
        /* back to the host even when MAC or MTU could not be restored: a VF stuck in a pod's
         * namespace is lost to every other pod; the first error is still reported */
        int rm = NL(p, host_link_move(l.ifindex, p->host_ns, c->orig.host_ifname));
        char why[HOST_ALTNAME_SIZE + 96] = "";
        if (r >= 0 && rm < 0) {
                step = "move it back to the host";
                r = rm;
                move_refused_why(p, rm, p->host_ns, ifname, c->orig.host_ifname, why, sizeof(why));
        }
        int r2 = enter_ns(p, p->host_ns, "host");
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "VF %s: %s in %s: cannot %s (as %s): %s",
                            c->device_id, ifname, p->netns, step, c->orig.host_ifname,
                            why[0] ? why : strerror(-r));
        return r2;
}

/* After the pod's namespace vanished the kernel returned the netdev to the host under its pod
 * name: give it back its own name, MAC and MTU. Best effort (the pod is gone either way). */
static void rename_returned_netdev(struct plugin *p, const struct cni_cache *c)
{
        struct vf_location loc;
        struct host_link l;
        uint8_t mac[6];
        if (!c->orig.host_ifname[0] || host_vf_locate(p->sysfs_root, c->device_id, &loc) < 0 ||
            !loc.vf_ifname[0] || host_link_get(loc.vf_ifname, &l) < 0)
                return;
        (void)host_link_set_updown(l.ifindex, false);
        if (c->orig.effective_mac[0] && cni_parse_mac(c->orig.effective_mac, mac) == 0 &&
            memcmp(mac, l.mac, 6) != 0)
                (void)restore_vf_mac(p, loc.vf_ifname, c, mac, &l);
        if (c->orig.mtu > 0)
                (void)host_link_set_mtu_index(l.ifindex, c->orig.mtu);
        if (strcmp(l.name, c->orig.host_ifname) != 0) {
                (void)host_link_drop_altname(l.ifindex, c->orig.host_ifname);
                (void)host_link_rename(l.ifindex, c->orig.host_ifname);
        }
}

/* ---- ADD ---- */

static int ipam_run(struct plugin *p, const char *command, const char *type, char **out,
                    size_t *out_len)
{
        double t0 = now_ms();
        _cleanup_free_ char *dummy = NULL;
        size_t dummy_len;
        int r =
            cni_ipam_exec(type, command, p->cni_path, p->stdin_data, p->stdin_len, IPAM_TIMEOUT_MS,
                          out ? out : &dummy, out_len ? out_len : &dummy_len, &p->err);
        p->t.ipam += now_ms() - t0;
        return r;
}

static int apply_ipam(struct plugin *p, int pod_ns, const char *ifname,
                      const struct cni_ipam_result *res, const uint8_t mac[6])
{
        int r = enter_ns(p, pod_ns, "pod's");
        if (r < 0)
                return r;
        struct host_ip_addr ips[CNI_MAX_IPS];
        struct host_ip_route routes[CNI_MAX_ROUTES];
        for (size_t i = 0; i < res->n_ips; i++) {
                const struct cni_ip *ip = &res->ips[i];
                ips[i] = (struct host_ip_addr){ .family = ip->family,
                                                .prefix = ip->prefix,
                                                .has_gw = ip->has_gw };
                memcpy(ips[i].addr, ip->addr, sizeof(ips[i].addr));
                memcpy(ips[i].gw, ip->gw, sizeof(ips[i].gw));
        }
        for (size_t i = 0; i < res->n_routes; i++) {
                const struct cni_route *rt = &res->routes[i];
                routes[i] = (struct host_ip_route){ .family = rt->family,
                                                    .dst_len = rt->dst_len,
                                                    .has_gw = rt->has_gw,
                                                    .priority = rt->priority,
                                                    .has_table = rt->has_table,
                                                    .table = rt->table,
                                                    .has_scope = rt->has_scope,
                                                    .scope = rt->scope };
                memcpy(routes[i].dst, rt->dst, sizeof(routes[i].dst));
                memcpy(routes[i].gw, rt->gw, sizeof(routes[i].gw));
        }
        /* as upstream's ipam.ConfigureIface (see host/iface-ip.h) */
        struct host_ip_failure why;
        r = NL(p, host_iface_configure_ip(ifname, ips, res->n_ips, routes, res->n_routes,
                                          HOST_DAD_SETTLE_MS, &why));
        if (r < 0 && (strcmp(why.step, "add address") == 0 || strcmp(why.step, "add route") == 0))
                fail(p, CNI_ERR_GENERIC, r, "%s: cannot %s %zu of the IPAM result: %s", ifname,
                     why.step, why.index, strerror(-r));
        else if (r < 0)
                fail(p, CNI_ERR_GENERIC, r, "%s: cannot %s: %s", ifname, why.step, strerror(-r));
        struct host_link l;
        if (r >= 0)
                r = NL(p, host_link_get(ifname, &l));
        if (r >= 0 && l.hwaddr_len == 6) {
                /* wait briefly for carrier (upstream waits 200 ms), then announce
                 * (Ethernet only: the frames are built for a 6-byte address) */
                for (int i = 0; i < 20 && !(l.flags & IFF_RUNNING); i++) {
                        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
                        if (host_link_get(ifname, &l) < 0)
                                break;
                }
                for (size_t i = 0; i < res->n_ips; i++) {
                        const struct cni_ip *ip = &res->ips[i];
                        if (ip->family == AF_INET)
                                (void)host_send_gratuitous_arp(l.ifindex, mac, ip->addr);
                        else
                                (void)host_send_unsolicited_na(l.ifindex, mac, ip->addr);
                }
        }
        int r2 = enter_ns(p, p->host_ns, "host");
        return r < 0 ? r : r2;
}

/* CNI_NETNS as a pod's namespace: opened without blocking, a network namespace, and not the
 * plugin's own (as libcni's skel refuses it): a VF "given" to the host's namespace would be
 * a VF taken from every pool without any pod holding it. */
static int open_pod_ns(struct plugin *p)
{
        int fd = host_netns_open(p->netns);
        if (fd < 0)
                return fail(p, CNI_ERR_GENERIC, fd, "failed to open netns \"%s\": %s", p->netns,
                            fd == -EINVAL ? "not a network namespace" : strerror(-fd));
        if (host_netns_same(fd, p->host_ns)) {
                close(fd);
                return fail(p, CNI_ERR_INVALID_ENV, -EINVAL,
                            "CNI_NETNS \"%s\" is the plugin's own network namespace, not a "
                            "pod's",
                            p->netns);
        }
        return fd;
}

/* The VF's PF and index, with a message for each way it can fail. */
static int locate_vf(struct plugin *p, const char *pci, struct vf_location *loc)
{
        int r = host_vf_locate(p->sysfs_root, pci, loc);
        switch (r) {
        case 0:
                return 0;
        case -ENODEV:
                return fail(p, CNI_ERR_INVALID_CONFIG, r, "deviceID %s: no such PCI device", pci);
        case -ENOTTY:
                return fail(p, CNI_ERR_INVALID_CONFIG, r,
                            "deviceID %s is not a VF (no physfn link): give a VF's PCI address",
                            pci);
        case -ENOLINK:
                return fail(p, CNI_ERR_GENERIC, r, "deviceID %s: its PF %s has no netdev", pci,
                            loc->pf_pci);
        default:
                return fail(p, CNI_ERR_GENERIC, r,
                            "deviceID %s: cannot find its PF and VF index: %s", pci, strerror(-r));
        }
}

/* The VF must be in a pool the node's sriov-agent manages and, where CNI_ARGS names the pod and
 * the kubelet answers, allocated to that pod; unless the node allows any VF. */
static int check_pool(struct plugin *p, const struct vf_location *loc, const char *pci)
{
        if (access(p->any_vf_file, F_OK) == 0)
                return 0;
        char resource[256];
        int r = cni_pool_lookup(p->agent_state_dir, loc->pf_pci, loc->vf_index, resource,
                                sizeof(resource), &p->err);
        if (r < 0) {
                /* the lookup names the VF by index; say which deviceID and how to relax it */
                char why[sizeof(p->err.msg)];
                snprintf(why, sizeof(why), "%s", p->err.msg);
                return fail(p, p->err.code, r,
                            "deviceID %s refused: %s; a NetworkAttachmentDefinition may only "
                            "name a VF of the sriov-agent's pools (to allow any VF on this "
                            "node: create %s)",
                            pci, why, p->any_vf_file);
        }
        r = cni_podres_check(p->podres_socket, CNI_PODRES_TIMEOUT_MS, p->agent_state_dir, p->args,
                             pci, resource, &p->err);
        if (r < 0 && p->err.code == CNI_ERR_INVALID_CONFIG) {
                char why[sizeof(p->err.msg)];
                snprintf(why, sizeof(why), "%s", p->err.msg);
                return fail(p, p->err.code, r, "%s (to allow any VF on this node: create %s)", why,
                            p->any_vf_file);
        }
        return r;
}

static int check_allocation(struct plugin *p, const char *pci)
{
        char holder[4096];
        int r = cni_pci_holder(p->state_dir, pci, holder, sizeof(holder));
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "VF %s: cannot read its allocation record: %s",
                            pci, strerror(-r));
        int fd = host_netns_open(holder);
        if (fd >= 0) {
                close(fd);
                return fail(p, CNI_ERR_GENERIC, -EBUSY,
                            "pci address %s is already allocated (to the pod network namespace "
                            "%s)",
                            pci, holder);
        }
        /* The holder's namespace is gone and its DEL has not come (a crash, a reboot): the VF
         * is free (as upstream), but still carries that attachment's settings, and the kernel
         * returned its netdev under the pod's name. Put back what that attachment's DEL would
         * (its record, the newest for this VF, says what), so that this ADD records the VF's
         * real originals; the late DEL then finds the VF no longer its own and only removes
         * its record. */
        char name[NAME_MAX + 1];
        struct cni_cache stale;
        if (cni_cache_find_latest(p->state_dir, pci, name, sizeof(name), &stale) == 0) {
                struct vf_location loc;
                if (host_vf_locate(p->sysfs_root, pci, &loc) == 0 && loc.vf_index == stale.vfid) {
                        /* not back from the namespace yet (its teardown takes a moment):
                         * releasing now would let it come back later under the pod's
                         * interface name with nobody left to give it its own */
                        if (stale.orig.host_ifname[0] && !host_vf_has_netdev(p->sysfs_root, pci))
                                return fail(p, CNI_ERR_TRY_LATER, -EAGAIN,
                                            "VF %s: its holder's namespace %s is gone, but its "
                                            "netdev has not come back to the host yet",
                                            pci, holder);
                        (void)reset_pf_side(p, &stale, loc.pf_ifname, true);
                        p->err = (struct cni_error){ .code = 0 };
                        if (stale.orig.host_ifname[0])
                                rename_returned_netdev(p, &stale);
                        /* its GUID too (ib-sriov): else this ADD would record the dead pod's
                         * GUID as the VF's own, or run with it beside whoever gets it next */
                        if (stale.host_guid[0]) {
                                _cleanup_close_ int lock = take_move_lock(p, pci);
                                if (lock < 0)
                                        return lock;
                                if ((r = cni_ib_reclaim_guid(p->sysfs_root, &stale,
                                                             strcmp(loc.driver, "vfio-pci") == 0,
                                                             &p->err)) < 0)
                                        return r;
                        }
                }
        }
        return cni_pci_release(p->state_dir, pci);
}

/* The attachment's record name (CNI_CONTAINERID-CNI_IFNAME), shared by ADD and DEL. */
static int attachment_name(struct plugin *p, char name[static NAME_MAX + 1])
{
        int r = cni_cache_name(p->container_id, p->ifname, name, NAME_MAX + 1);
        if (r < 0)
                return fail(p, CNI_ERR_INVALID_ENV, r,
                            "CNI_CONTAINERID \"%s\" / CNI_IFNAME \"%s\" are not usable names",
                            p->container_id, p->ifname);
        return 0;
}

static int cmd_add(struct plugin *p)
{
        struct cni_conf *conf = &p->conf;
        char name[NAME_MAX + 1];
        int r = attachment_name(p, name);
        if (r < 0)
                return r;

        /* before the lock: refused requests must not wait for it, nor leave lock files */
        struct vf_location loc;
        if ((r = locate_vf(p, conf->device_id, &loc)) < 0 ||
            (r = check_pool(p, &loc, conf->device_id)) < 0)
                return r;
        _cleanup_close_ int pod_ns = open_pod_ns(p);
        if (pod_ns < 0)
                return pod_ns;
        _cleanup_close_ int lock = cni_pci_lock(p->state_dir, conf->device_id, LOCK_TIMEOUT_MS);
        if (lock < 0)
                return fail(p, CNI_ERR_TRY_LATER, lock, "VF %s: cannot take its lock in %s: %s",
                            conf->device_id, p->state_dir, strerror(-lock));
        /* everything about the VF read again under its lock: a DEL finishing meanwhile, or
         * another VF coming back from a pod, may have changed its netdev's name or driver */
        struct vf_location checked = loc;
        if ((r = locate_vf(p, conf->device_id, &loc)) < 0)
                return r;
        if (strcmp(loc.pf_pci, checked.pf_pci) != 0 || loc.vf_index != checked.vf_index)
                return fail(p, CNI_ERR_TRY_LATER, -EAGAIN,
                            "deviceID %s changed while waiting for its lock (VF %d of %s, now "
                            "VF %d of %s)",
                            conf->device_id, checked.vf_index, checked.pf_pci, loc.vf_index,
                            loc.pf_pci);
        if ((r = check_allocation(p, conf->device_id)) < 0 ||
            (r = locate_vf(p, conf->device_id, &loc)) < 0) /* a stale holder's VF renamed */
                return r;
        /* after the allocation check: a VF a pod holds has no netdev in the host either */
        bool dpdk = !loc.vf_ifname[0];
        if (dpdk && !host_driver_is_userspace(loc.driver))
                return fail(p, CNI_ERR_GENERIC, -ENODEV,
                            "VF %s has no netdev and its driver \"%s\" is not a DPDK one "
                            "(vfio-pci, uio_pci_generic, igb_uio)",
                            conf->device_id, loc.driver);

        if (!dpdk) {
                /* the kernel would move the netdev first and fail the rename after */
                struct host_link taken;
                if ((r = enter_ns(p, pod_ns, "pod's")) < 0)
                        return r;
                int t = host_link_get(p->ifname, &taken);
                if ((r = enter_ns(p, p->host_ns, "host")) < 0)
                        return r;
                if (t == 0)
                        return fail(p, CNI_ERR_GENERIC, -EEXIST,
                                    "interface %s already exists in %s: cannot give VF %s that "
                                    "name",
                                    p->ifname, p->netns, conf->device_id);
        }

        /* the VF as it is now: what DEL puts back */
        struct cni_cache rec = {
                .vfid = loc.vf_index,
                .has_vlan = conf->has_vlan,
                .spoofchk = conf->spoofchk,
                .trust = conf->trust,
                .has_rate = conf->has_min_tx || conf->has_max_tx,
                .link_state = conf->link_state,
        };
        snprintf(rec.device_id, sizeof(rec.device_id), "%s", conf->device_id);
        snprintf(rec.master, sizeof(rec.master), "%s", loc.pf_ifname);
        snprintf(rec.ipam_type, sizeof(rec.ipam_type), "%s", conf->ipam_type);
        snprintf(rec.orig.host_ifname, sizeof(rec.orig.host_ifname), "%s", loc.vf_ifname);
        if (conf->has_mac)
                snprintf(rec.mac, sizeof(rec.mac), "%s", conf->mac_str);
        struct host_vf_state vs;
        r = NL(p, host_vf_get_state(loc.pf_ifname, loc.vf_index, &vs));
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "%s VF %d (%s): cannot read its state: %s",
                            loc.pf_ifname, loc.vf_index, conf->device_id, strerror(-r));
        cni_format_mac(vs.mac, rec.orig.admin_mac);
        rec.orig.spoofchk = vs.spoofchk == 1;
        rec.orig.trust = vs.trust == 1;
        rec.orig.vlan = vs.vlan;
        rec.orig.qos = vs.qos;
        rec.orig.vlan_proto = vs.vlan_proto;
        rec.orig.min_tx_rate = (int)vs.min_tx_rate;
        rec.orig.max_tx_rate = (int)vs.max_tx_rate;
        rec.orig.link_state = vs.link_state >= 0 ? (uint32_t)vs.link_state : 0;
        struct host_link vf_link = { .ifindex = 0 };
        if (!dpdk) {
                r = NL(p, host_link_get(loc.vf_ifname, &vf_link));
                if (r < 0)
                        return fail(p, CNI_ERR_GENERIC, r, "VF %s: cannot read its netdev %s: %s",
                                    conf->device_id, loc.vf_ifname, strerror(-r));
                rec.orig.mtu = vf_link.mtu;
                cni_format_mac(vf_link.mac, rec.orig.effective_mac);
                rec.mtu = vf_link.mtu;
                rec.has_mtu = true;
        }

        /* ib-sriov's GUID and the RDMA device to move: known, and recorded, before any change */
        const bool vfio = dpdk && strcmp(loc.driver, "vfio-pci") == 0;
        snprintf(rec.type, sizeof(rec.type), "%s", p->ib ? "ib-sriov" : "sriov");
        /* a GUID is checked free and recorded under the node's GUID lock: two ADDs asking for
         * one GUID for two VFs hold two different VF locks */
        _cleanup_close_ int guid_lock = -1;
        if (p->ib && p->ib_conf.has_guid &&
            (guid_lock = cni_guid_lock(p->state_dir, LOCK_TIMEOUT_MS)) < 0)
                return fail(p, CNI_ERR_TRY_LATER, guid_lock,
                            "VF %s: cannot take the node's GUID lock in %s: %s", conf->device_id,
                            p->state_dir, strerror(-guid_lock));
        if (p->ib &&
            ((r = cni_ib_plan(&p->ib_conf, &loc, conf->device_id, vfio, &rec, &p->err)) < 0 ||
             (r = cni_ib_check_guid_unique(p->sysfs_root, p->state_dir, name, &p->ib_conf, &loc,
                                           conf->device_id, &p->err)) < 0))
                return r;
        if (!dpdk && (r = cni_rdma_plan(p->sysfs_root, conf->device_id, loc.vf_ifname, loc.driver,
                                        p->ib && p->ib_conf.rdma_isolation, &rec, &p->err)) < 0)
                return r;

        /* The records before the first change: an ADD killed half-way (the runtime's timeout,
         * a node shutting down) leaves a record DEL can restore from, instead of a VF moved or
         * tagged with nothing to say so. */
        r = cni_cache_write(p->state_dir, name, conf, &rec);
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "cannot save the attachment record %s/%s: %s",
                            p->state_dir, name, strerror(-r));
        r = cni_pci_save(p->state_dir, conf->device_id, p->netns);
        if (r < 0) {
                (void)cni_cache_remove(p->state_dir, name);
                return fail(p, CNI_ERR_GENERIC, r, "cannot save the allocation record of VF %s: %s",
                            conf->device_id, strerror(-r));
        }
        /* the record names the GUID now: another ADD's check sees it; the lock goes at once,
         * not when cmd_add returns (closep leaves -1 for the cleanup) */
        closep(&guid_lock);

        /* what the kubelet handed the pod for the VF's RDMA device (its device plugin's
         * Allocate answer, else the agent's DRA driver's CDI device), read before the lock */
        struct host_rdma_char_devices handed = { .uverbs = "" };
        char handed_by[512] = "";
        if ((p->ib && p->ib_conf.has_guid) || rec.rdma_moved) {
                r = cni_alloc_rdma_devices(p->kubelet_checkpoint, p->args, conf->device_id, &handed,
                                           handed_by, sizeof(handed_by));
                if (r == 0)
                        r = cni_dra_rdma_devices(p->agent_state_dir, conf->device_id, &handed,
                                                 handed_by, sizeof(handed_by));
                if (r < 0)
                        return fail(p, CNI_ERR_GENERIC, r, "out of memory");
        }

        /* from here on, every failure undoes what was done */
        bool moved = false, ipam_added = false, guid_set = false, rdma_in_pod = false;
        int move_lock = -1;
        struct cni_ipam_result ipam = { .n_ips = 0 };
        bool have_ipam = false;
        const char *pf = loc.pf_ifname;
        int vf = loc.vf_index;
        /* what the undo restores: the settings applied so far (restoring one the driver refused,
         * say link_state on igb, fails again and would make the undo look incomplete) */
        struct cni_cache applied = rec;
        applied.has_vlan = applied.has_rate = false;
        applied.spoofchk = applied.trust = applied.link_state = -1;
        if (conf->has_vlan && (r = NL(p, host_vf_set_vlan_proto(pf, vf, conf->vlan, conf->qos,
                                                                conf->vlan_proto))) < 0) {
                fail(p, CNI_ERR_GENERIC, r, "%s VF %d: failed to set vlan %d qos %d proto %s: %s",
                     pf, vf, conf->vlan, conf->qos,
                     conf->vlan_proto == ETH_P_8021AD ? "802.1ad" : "802.1q", strerror(-r));
                goto undo;
        }
        applied.has_vlan = rec.has_vlan;
        if (conf->has_mac && (r = NL(p, host_vf_set_mac(pf, vf, conf->mac))) < 0) {
                fail(p, CNI_ERR_GENERIC, r, "%s VF %d: failed to set MAC address %s: %s", pf, vf,
                     conf->mac_str, strerror(-r));
                goto undo;
        }
        if (rec.has_rate &&
            (r = NL(p, host_vf_set_rate(pf, vf, conf->min_tx_rate, conf->max_tx_rate))) < 0) {
                fail(p, CNI_ERR_GENERIC, r,
                     "%s VF %d: failed to set min_tx_rate %u / max_tx_rate %u Mbps: %s", pf, vf,
                     conf->min_tx_rate, conf->max_tx_rate, strerror(-r));
                goto undo;
        }
        applied.has_rate = rec.has_rate;
        if (conf->spoofchk >= 0 &&
            (r = NL(p, host_vf_set_spoofchk(pf, vf, conf->spoofchk == 1))) < 0) {
                fail(p, CNI_ERR_GENERIC, r, "%s VF %d: failed to set spoofchk %s: %s", pf, vf,
                     conf->spoofchk ? "on" : "off", strerror(-r));
                goto undo;
        }
        applied.spoofchk = rec.spoofchk;
        if (conf->trust >= 0 && (r = NL(p, host_vf_set_trust(pf, vf, conf->trust == 1))) < 0) {
                fail(p, CNI_ERR_GENERIC, r, "%s VF %d: failed to set trust %s: %s", pf, vf,
                     conf->trust ? "on" : "off", strerror(-r));
                goto undo;
        }
        applied.trust = rec.trust;
        if (conf->link_state >= 0 &&
            (r = NL(p, host_vf_set_link_state(pf, vf, conf->link_state))) < 0) {
                fail(p, CNI_ERR_GENERIC, r, "%s VF %d: failed to set link_state %d: %s", pf, vf,
                     conf->link_state, strerror(-r));
                goto undo;
        }
        applied.link_state = rec.link_state;
        /* the GUID first (its re-bind re-creates the netdev and the RDMA device), then the RDMA
         * device (moving an IPoIB VF's re-creates its netdev in the host), then the netdev.
         * The re-bind and the move both give the RDMA device the lowest free uverbs/umad/issm
         * numbers again: under the node's lock (no other re-bind or move in between), then
         * checked against what the kubelet handed the pod */
        if ((p->ib && p->ib_conf.has_guid) || rec.rdma_moved) {
                move_lock = take_move_lock(p, conf->device_id);
                if ((r = move_lock) < 0)
                        goto undo;
        }
        if (p->ib && p->ib_conf.has_guid) {
                guid_set = true;
                if ((r = cni_ib_set_guid(p->sysfs_root, conf->device_id, &loc, rec.orig.host_ifname,
                                         vfio, p->ib_conf.guid, &p->err)) < 0)
                        goto undo;
        }
        /* the re-bind (not on vfio-pci, which has no RDMA device to move) re-registered the RDMA
         * device under a new index: the one planned is gone. Found again from the VF's PCI
         * function, and recorded before it moves, as DEL moves back what the record names. */
        if (rec.rdma_moved && guid_set && !vfio) {
                r = cni_rdma_find_again(p->sysfs_root, loc.vf_ifname, loc.driver, &rec, &p->err);
                if (r < 0)
                        goto undo;
                if (r > 0 && (r = cni_cache_write(p->state_dir, name, conf, &rec)) < 0) {
                        fail(p, CNI_ERR_GENERIC, r,
                             "VF %s: cannot save its RDMA device %s (index %u) in the attachment "
                             "record %s/%s: %s",
                             conf->device_id, rec.rdma_name, rec.rdma_index, p->state_dir, name,
                             strerror(-r));
                        goto undo;
                }
        }
        if (rec.rdma_moved) {
                if ((r = cni_rdma_move(&rec, pod_ns, p->netns, &p->err)) < 0)
                        goto undo;
                rdma_in_pod = true;
        }
        if (move_lock >= 0) {
                r = cni_rdma_check_devices(p->sysfs_root, &rec, &handed, handed_by, &p->err);
                if (r < 0)
                        goto undo;
                closep(&move_lock);
        }
        if (!dpdk && (guid_set || rdma_in_pod) &&
            ((r = locate_vf(p, conf->device_id, &loc)) < 0 ||
             (r = NL(p, host_link_get(loc.vf_ifname, &vf_link))) < 0)) {
                if (!p->err.msg[0])
                        fail(p, CNI_ERR_GENERIC, r, "VF %s: its netdev %s is gone: %s",
                             conf->device_id, loc.vf_ifname, strerror(-r));
                goto undo;
        }

        uint8_t result_mac[6] = { 0 };
        char mac_str[CNI_HWADDR_STR_MAX] = "";
        if (!dpdk) {
                r = NL(p, host_link_move(vf_link.ifindex, pod_ns, p->ifname));
                if (r < 0) {
                        /* moved, but not renamed (the name appeared meanwhile): undo finds it
                         * under its old name */
                        struct host_link still;
                        moved = host_link_get(loc.vf_ifname, &still) == -ENODEV;
                        char why[HOST_ALTNAME_SIZE + 96];
                        move_refused_why(p, r, pod_ns, loc.vf_ifname, p->ifname, why, sizeof(why));
                        fail(p, CNI_ERR_GENERIC, r, "failed to move %s into %s as %s: %s",
                             loc.vf_ifname, p->netns, p->ifname, why);
                        goto undo;
                }
                moved = true;
                if ((r = enter_ns(p, pod_ns, "pod's")) < 0)
                        goto undo;
                struct host_link l;
                char step_buf[64];
                const char *step = "find it";
                r = NL(p, host_link_get(p->ifname, &l));
                if (r >= 0) {
                        /* as upstream's SetupVF: the renamed VF must not keep its host name as
                         * an altname (systemd-udevd before v254 adds a renamed link's previous
                         * name): the pod would see it under that name too, and DEL could not
                         * give the name back (EEXIST). None there is nothing to do; failing to
                         * remove one fails the ADD, as upstream ("error removing VF altname") */
                        snprintf(step_buf, sizeof(step_buf), "remove its altname %s",
                                 loc.vf_ifname);
                        step = step_buf;
                        r = NL(p, host_link_drop_altname(l.ifindex, loc.vf_ifname));
                }
                /* The MAC before the link goes up, as upstream: the kernel derives the pod's
                 * IPv6 link-local address from the MAC the link has when it comes up. */
                if (r >= 0 && conf->has_mac && memcmp(l.mac, conf->mac, 6) != 0)
                        (void)NL(p, host_link_set_mac(l.ifindex, conf->mac));
                if (r >= 0) {
                        enable_notify(p->ifname);
                        step = "bring it up";
                        r = NL(p, host_link_set_updown(l.ifindex, true));
                }
                if (r >= 0)
                        r = NL(p, host_link_get(p->ifname, &l));
                if (r >= 0 && conf->has_mac && memcmp(l.mac, conf->mac, 6) != 0) {
                        /* Some VF drivers take the administrative MAC only when reset (igbvf,
                         * on open) and refuse setting it themselves while it is
                         * administratively set and trust is off; for those a down/up cycle
                         * brings it in, and brings the link up again with the link-local
                         * address of the new MAC. */
                        step = "set its MAC";
                        (void)NL(p, host_link_set_mac(l.ifindex, conf->mac));
                        r = NL(p, host_link_set_updown(l.ifindex, false));
                        if (r >= 0)
                                r = NL(p, host_link_set_updown(l.ifindex, true));
                        if (r >= 0)
                                r = NL(p, host_link_get(p->ifname, &l));
                        if (r >= 0 && memcmp(l.mac, conf->mac, 6) != 0)
                                r = -EADDRNOTAVAIL;
                }
                if (r >= 0) {
                        memcpy(result_mac, l.mac, 6);
                        /* all of it, as upstream reports it: 20 bytes on an IPoIB VF */
                        cni_format_hwaddr(l.hwaddr, (size_t)l.hwaddr_len, mac_str);
                }
                int r2 = enter_ns(p, p->host_ns, "host");
                if (r < 0) {
                        fail(p, CNI_ERR_GENERIC, r, "%s in %s: cannot %s: %s", p->ifname, p->netns,
                             step, strerror(-r));
                        goto undo;
                }
                if ((r = r2) < 0)
                        goto undo;
        } else {
                if (conf->has_mac)
                        snprintf(mac_str, sizeof(mac_str), "%s", conf->mac_str);
                else if (memcmp(vs.mac, (uint8_t[6]){ 0 }, 6) != 0)
                        cni_format_mac(vs.mac, mac_str);
                /* a VF without a netdev has no MTU of its own: upstream reports (and records)
                 * its PF's, which is what the VF's traffic is bounded by */
                struct host_link pf_link;
                if ((r = NL(p, host_link_get(pf, &pf_link))) < 0) {
                        fail(p, CNI_ERR_GENERIC, r, "VF %s: cannot read its PF %s: %s",
                             conf->device_id, pf, strerror(-r));
                        goto undo;
                }
                rec.mtu = pf_link.mtu;
                rec.has_mtu = true;
        }

        if (conf->ipam_type[0]) {
                _cleanup_free_ char *out = NULL;
                size_t out_len = 0;
                r = ipam_run(p, "ADD", conf->ipam_type, &out, &out_len);
                if (r < 0)
                        goto undo;
                ipam_added = true;
                r = cni_ipam_result_parse(out, out_len, &ipam, &p->err);
                if (r < 0)
                        goto undo;
                have_ipam = true;
                if (!dpdk && (r = apply_ipam(p, pod_ns, p->ifname, &ipam, result_mac)) < 0)
                        goto undo;
        }

        {
                /* own scope: no goto crosses this cleanup variable */
                const struct cni_iface iface = {
                        .name = p->ifname,
                        .mac = mac_str,
                        .mtu = rec.has_mtu ? rec.mtu : 0,
                        .sandbox = p->netns,
                };
                _cleanup_free_ char *text =
                    cni_result_format(conf->cni_version, &iface, have_ipam ? &ipam : NULL);
                cni_ipam_result_done(&ipam);
                if (!text)
                        return fail(p, CNI_ERR_GENERIC, -ENOMEM, "out of memory");
                puts(text);
                return 0;
        }

undo:;
        /* keep the first error's message: undo steps may fail too */
        struct cni_error first = p->err;
        cni_ipam_result_done(&ipam);
        if (ipam_added)
                (void)ipam_run(p, "DEL", conf->ipam_type, NULL, NULL);
        (void)host_netns_enter(p->host_ns);
        /* the PF side first, as DEL does: a VF driver may refuse to take its old MAC back
         * while an administrative one is still set (igbvf with trust off) */
        int undone = reset_pf_side(p, &applied, loc.pf_ifname, true);
        if (moved && undone >= 0)
                undone = release_netdev(p, pod_ns, p->ifname, &rec);
        else if (moved)
                (void)release_netdev(p, pod_ns, p->ifname, &rec);
        /* as DEL: the RDMA device back by its index before the GUID's re-bind renews it; under
         * the node's lock (still held when the failure came while it was) */
        if ((rdma_in_pod || guid_set) && move_lock < 0)
                move_lock = take_move_lock(p, conf->device_id);
        if (rdma_in_pod &&
            cni_rdma_release(p->sysfs_root, &rec, pod_ns, p->host_ns, p->netns, &p->err) < 0)
                undone = -EIO;
        if (guid_set && cni_ib_restore_guid(p->sysfs_root, &rec, vfio, &p->err) < 0)
                undone = -EIO;
        closep(&move_lock);
        /* the records go only with a complete undo: else the runtime's DEL finishes it */
        if (undone >= 0) {
                (void)cni_pci_release(p->state_dir, conf->device_id);
                (void)cni_cache_remove(p->state_dir, name);
        }
        p->err = first;
        return r < 0 ? r : -EIO;
}

/* ---- DEL ---- */

static bool wait_netdev_home(struct plugin *p, const char *pci)
{
        for (int i = 0; i < 100; i++) {
                if (host_vf_has_netdev(p->sysfs_root, pci))
                        return true;
                nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
        return false;
}

/* Whether the VF's allocation record names this attachment: only then may DEL touch the VF
 * (PF side, netdev, allocation record). Another pod may hold the VF by now: this pod's
 * namespace vanished (a reboot, a crash), the next ADD found its holder dead and took the VF,
 * and this DEL comes late; restoring this pod's originals would strip the next owner's VLAN.
 * Without CNI_NETNS (the runtime lost it) the record names this attachment when no live pod
 * holds the VF. 1 yes, 0 no (holder in *holder, "" when none), or a negative errno. */
static int del_owns_vf(struct plugin *p, const char *pci, char *holder, size_t size)
{
        int r = cni_pci_holder(p->state_dir, pci, holder, size);
        if (r == -ENOENT) {
                holder[0] = '\0';
                return 0; /* released already (an earlier DEL, or an ADD that found it free) */
        }
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "VF %s: cannot read its allocation record: %s",
                            pci, strerror(-r));
        if (p->netns)
                return strcmp(holder, p->netns) == 0;
        int fd = host_netns_open(holder);
        if (fd >= 0)
                close(fd);
        return fd < 0;
}

/* A name for a VF netdev returned to the host when its record, and so its name, is lost:
 * "vf" and the hex digits of its PCI address (0000:3b:02.1 -> vf00003b021). */
static void fallback_host_name(const char *pci, char out[IFNAMSIZ])
{
        size_t n = 0;
        out[n++] = 'v';
        out[n++] = 'f';
        for (const char *c = pci; *c && n < IFNAMSIZ - 1; c++)
                if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))
                        out[n++] = *c;
        out[n] = '\0';
}

/* CNI_NETNS must be a network namespace, or gone (-ENOENT: the kernel returned the VF to the
 * host when the namespace ended). A path that is there but is no network namespace (a plain
 * file left where a bind mount was, a directory, a runtime's wrong path) says nothing about
 * where the VF is. Taken for "another attachment's namespace" (its path is not the holder's),
 * such a DEL removed the record and reported success while the VF stayed in the live pod; the
 * DEL with the pod's real namespace then had no record to release it by. So, as for a PF
 * without netdev: fail, and keep the records (and the IPAM allocation) for a DEL that can. */
static int del_check_netns(struct plugin *p, const struct cni_cache *c)
{
        if (!p->netns)
                return 0; /* the runtime lost it: the holder's record decides (del_owns_vf) */
        int fd = host_netns_open(p->netns);
        if (fd >= 0) {
                close(fd);
                return 0;
        }
        if (fd == -ENOENT)
                return 0;
        return fail(p, CNI_ERR_INVALID_ENV, fd,
                    "CNI_NETNS \"%s\" %s%s: cannot tell where VF %s is, not released; its "
                    "records are kept for a DEL with the pod's network namespace",
                    p->netns, fd == -EINVAL ? "is not a network namespace" : "cannot be opened: ",
                    fd == -EINVAL ? "" : strerror(-fd), c->device_id);
}

static int cmd_del(struct plugin *p)
{
        char name[NAME_MAX + 1];
        int r = attachment_name(p, name);
        if (r < 0)
                return r;
        struct cni_cache c;
        r = cni_cache_read(p->state_dir, name, &c, &p->err);
        if (r == -ENOENT) {
                /* never added, or already deleted; an ADD killed while writing the record left
                 * its temporary file */
                (void)cni_cache_remove(p->state_dir, name);
                return 0;
        }
        /* A record that cannot be parsed must not keep the pod Terminating with its VF: what
         * can be restored is found from the configuration's deviceID and the pod's link. */
        bool unreadable = false;
        char unreadable_why[sizeof(p->err.msg)] = "";
        if (r == -EBADMSG) {
                snprintf(unreadable_why, sizeof(unreadable_why), "%s", p->err.msg);
                p->err = (struct cni_error){ .code = 0 };
                if (!pci_address_is_valid(p->conf.device_id)) {
                        fprintf(stderr,
                                "sriov: %s; the configuration names no deviceID either: nothing "
                                "to restore, record removed\n",
                                unreadable_why);
                        if (p->conf.ipam_type[0] &&
                            (r = ipam_run(p, "DEL", p->conf.ipam_type, NULL, NULL)) < 0)
                                return r;
                        return cni_cache_remove(p->state_dir, name);
                }
                unreadable = true;
                c = (struct cni_cache){ .spoofchk = -1, .trust = -1, .link_state = -1 };
                snprintf(c.device_id, sizeof(c.device_id), "%s", p->conf.device_id);
                snprintf(c.ipam_type, sizeof(c.ipam_type), "%s", p->conf.ipam_type);
                fallback_host_name(c.device_id, c.orig.host_ifname);
        } else if (r < 0) {
                return p->err.msg[0] ? r
                                     : fail(p, CNI_ERR_GENERIC, r, "cannot read %s/%s: %s",
                                            p->state_dir, name, strerror(-r));
        }
        if ((r = del_check_netns(p, &c)) < 0)
                return r;

        _cleanup_close_ int lock = cni_pci_lock(p->state_dir, c.device_id, LOCK_TIMEOUT_MS);
        if (lock < 0)
                return fail(p, CNI_ERR_TRY_LATER, lock, "VF %s: cannot take its lock in %s: %s",
                            c.device_id, p->state_dir, strerror(-lock));

        if (c.ipam_type[0] && (r = ipam_run(p, "DEL", c.ipam_type, NULL, NULL)) < 0)
                return r;

        char holder[4096];
        int owns = del_owns_vf(p, c.device_id, holder, sizeof(holder));
        if (owns < 0)
                return owns;
        if (!owns) {
                fprintf(stderr,
                        "sriov: VF %s %s: not restoring it, only this attachment's record "
                        "removed\n",
                        c.device_id,
                        holder[0] ? "is allocated to another attachment" : "is not allocated");
                if ((r = cni_cache_remove(p->state_dir, name)) < 0)
                        return fail(p, CNI_ERR_GENERIC, r, "cannot remove %s/%s: %s", p->state_dir,
                                    name, strerror(-r));
                /* under the VF's lock: what an ADD killed while allocating it left */
                if (!holder[0])
                        (void)cni_pci_release(p->state_dir, c.device_id);
                return 0;
        }

        /* Only "no such device" means the VF is gone (VFs destroyed while the pod ran: nothing
         * to restore); any other error (its PF's netdev missing during a firmware reset, sysfs
         * unreadable) fails the DEL, so that it is retried, and keeps the records. */
        struct vf_location loc;
        r = host_vf_locate(p->sysfs_root, c.device_id, &loc);
        bool vf_gone = r == -ENODEV || r == -ENOTTY || r == -ENOENT ||
                       (r == 0 && !unreadable && loc.vf_index != c.vfid);
        if (r < 0 && !vf_gone)
                return fail(p, CNI_ERR_TRY_LATER, r,
                            "VF %s: cannot find its PF and VF index (%s%s): not released yet",
                            c.device_id, r == -ENOLINK ? "its PF has no netdev: " : "",
                            strerror(-r));

        /* DPDK VFs (no netdev) were never moved; unknown for an unreadable record: by driver */
        bool netdev = unreadable ? !vf_gone && !host_driver_is_userspace(loc.driver)
                                 : c.orig.host_ifname[0] != '\0';
        if (!vf_gone) {
                _cleanup_close_ int pod_ns = p->netns && netdev ? host_netns_open(p->netns) : -1;
                if (p->netns && netdev && pod_ns < 0 && pod_ns != -ENOENT)
                        return fail(
                            p, CNI_ERR_GENERIC, pod_ns, "failed to open netns \"%s\": %s", p->netns,
                            pod_ns == -EINVAL ? "not a network namespace" : strerror(-pod_ns));
                /* the PF side needs no namespace: restored also without CNI_NETNS */
                if (!unreadable && (r = reset_pf_side(p, &c, loc.pf_ifname, false)) < 0)
                        return r;
                if (netdev && pod_ns >= 0 && (r = release_netdev(p, pod_ns, p->ifname, &c)) < 0)
                        return r;
                /* a pod namespace already gone returned the RDMA device to the host itself.
                 * Moved back before the GUID is restored below: that re-bind re-registers the
                 * device under a new index, and the record names the one in the pod. */
                _cleanup_close_ int move_lock = -1;
                if (c.rdma_moved && pod_ns >= 0) {
                        if ((move_lock = take_move_lock(p, c.device_id)) < 0)
                                return move_lock;
                        if ((r = cni_rdma_release(p->sysfs_root, &c, pod_ns, p->host_ns, p->netns,
                                                  &p->err)) < 0)
                                return r;
                        closep(&move_lock);
                }
                if (netdev && pod_ns < 0) {
                        /* the kernel returns the netdev to the host when the namespace ends,
                         * which takes a moment after its path is gone (or never comes, while
                         * something still holds the namespace): wait for it, else retry */
                        if (!wait_netdev_home(p, c.device_id))
                                return fail(p, CNI_ERR_TRY_LATER, -EAGAIN,
                                            "VF %s: its netdev has not come back to the host "
                                            "from the pod's namespace %s yet",
                                            c.device_id, p->netns ? p->netns : holder);
                        rename_returned_netdev(p, &c);
                }
                if (c.host_guid[0]) {
                        if ((move_lock = take_move_lock(p, c.device_id)) < 0)
                                return move_lock;
                        if ((r = cni_ib_restore_guid(p->sysfs_root, &c,
                                                     strcmp(loc.driver, "vfio-pci") == 0,
                                                     &p->err)) < 0)
                                return r;
                }
        }
        if (unreadable)
                fprintf(stderr,
                        "sriov: %s; VF %s restored from the configuration's deviceID: its "
                        "netdev is back in the host as %s, its PF-side settings (VLAN, MAC, "
                        "spoofchk, trust, rates, link state) were not restored\n",
                        unreadable_why, c.device_id, c.orig.host_ifname);
        if ((r = cni_pci_release(p->state_dir, c.device_id)) < 0 ||
            (r = cni_cache_remove(p->state_dir, name)) < 0)
                return fail(p, CNI_ERR_GENERIC, r, "cannot remove the records of VF %s in %s: %s",
                            c.device_id, p->state_dir, strerror(-r));
        return 0;
}

/* ---- CHECK ---- */

static int cmd_check(struct plugin *p)
{
        char name[NAME_MAX + 1], holder[4096];
        int r = cni_cache_name(p->container_id, p->ifname, name, sizeof(name));
        if (r < 0)
                return fail(p, CNI_ERR_INVALID_ENV, r, "CNI_CONTAINERID / CNI_IFNAME unusable");
        struct cni_cache c;
        r = cni_cache_read(p->state_dir, name, &c, &p->err);
        if (r < 0)
                return p->err.msg[0] ? r
                                     : fail(p, CNI_ERR_GENERIC, r, "no attachment %s: %s/%s: %s",
                                            name, p->state_dir, name, strerror(-r));
        if (cni_pci_holder(p->state_dir, c.device_id, holder, sizeof(holder)) < 0 ||
            strcmp(holder, p->netns) != 0)
                return fail(p, CNI_ERR_GENERIC, -ESTALE, "VF %s is not recorded as allocated to %s",
                            c.device_id, p->netns);
        if (!c.orig.host_ifname[0])
                return 0; /* DPDK: nothing in the pod's namespace */
        _cleanup_close_ int pod_ns = open_pod_ns(p);
        if (pod_ns < 0)
                return pod_ns;
        if ((r = enter_ns(p, pod_ns, "pod's")) < 0)
                return r;
        struct host_link l;
        r = host_link_get(p->ifname, &l);
        (void)host_netns_enter(p->host_ns);
        if (r < 0)
                return fail(p, CNI_ERR_GENERIC, r, "VF %s: no interface %s in %s", c.device_id,
                            p->ifname, p->netns);
        char mac[18];
        cni_format_mac(l.mac, mac);
        if (c.mac[0] && strcasecmp(mac, c.mac) != 0)
                return fail(p, CNI_ERR_GENERIC, -ESTALE, "%s in %s has MAC %s, expected %s",
                            p->ifname, p->netns, mac, c.mac);
        if (!(l.flags & IFF_UP))
                return fail(p, CNI_ERR_GENERIC, -ENETDOWN, "%s in %s is down", p->ifname, p->netns);
        return 0;
}

/* ---- dispatch ---- */

static const char *env(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

static int require_env(struct plugin *p, bool netns_required)
{
        char missing[128] = "";
        if (!p->container_id)
                strcat(missing, " CNI_CONTAINERID");
        if (netns_required && !p->netns)
                strcat(missing, " CNI_NETNS");
        if (!p->ifname)
                strcat(missing, " CNI_IFNAME");
        if (missing[0])
                return fail(p, CNI_ERR_INVALID_ENV, -EINVAL, "required env variables [%s ] missing",
                            missing);
        if (!ifname_is_valid(p->ifname))
                return fail(p, CNI_ERR_INVALID_ENV, -EINVAL,
                            "CNI_IFNAME \"%s\" is not a valid "
                            "interface name",
                            p->ifname);
        return 0;
}

/* libcni's rule for a network name (ValidateNetworkName): IPAM plugins make directories of it
 * (host-local: /var/lib/cni/networks/<name>), so "../x" must not reach them. */
static bool network_name_is_valid(const char *name)
{
        if (!((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
              (*name >= '0' && *name <= '9')))
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
               strlen(name);
}

static int run(struct plugin *p)
{
        if (!p->command) {
                fprintf(stderr, "CNI %s plugin %s (sriov-agent)\n", p->ib ? "ib-sriov" : "sriov",
                        SRIOV_AGENT_VERSION);
                return 0;
        }
        int r = read_stdin(p);
        if (r < 0)
                return r;
        if (strcmp(p->command, "VERSION") == 0) {
                _cleanup_free_ char *v = cni_version_format(NULL);
                if (!v)
                        return -ENOMEM;
                puts(v);
                return 0;
        }
        bool add = strcmp(p->command, "ADD") == 0, del = strcmp(p->command, "DEL") == 0,
             check = strcmp(p->command, "CHECK") == 0;
        bool status = strcmp(p->command, "STATUS") == 0, gc = strcmp(p->command, "GC") == 0;
        if (!add && !del && !check && !status && !gc)
                return fail(p, CNI_ERR_INVALID_ENV, -EINVAL, "unknown CNI_COMMAND \"%s\"",
                            p->command);
        if (status || gc) {
                /* 1.1.0: nothing to report (ready whenever the binary runs); GC: records are
                 * released by DEL and by ADD finding the holder's namespace gone */
                return 0;
        }
        if (del && p->stdin_len == 0) {
                /* DEL needs nothing from stdin but the IPAM config, which it takes from the
                 * cache record's type; an empty stdin is still passed along */
        } else if ((r = cni_conf_parse(p->stdin_data, p->stdin_len, p->args, &p->conf, &p->err)) <
                   0) {
                /* DEL restores from the record: a configuration ADD would refuse (a field
                 * changed since, no deviceID) must not keep the runtime retrying forever */
                if (!del || p->err.code == CNI_ERR_DECODE)
                        return r;
                p->err = (struct cni_error){ .code = 0 };
        }
        if (p->ib && (add || check) &&
            (r = cni_ib_conf_parse(p->stdin_data, p->stdin_len, p->args, &p->ib_conf, &p->err)) < 0)
                return r;
        if (p->conf.root && !cni_version_supported(p->conf.cni_version))
                return fail(p, CNI_ERR_INCOMPATIBLE_VERSION, -EPROTONOSUPPORT,
                            "incompatible CNI versions: config is \"%s\", plugin supports "
                            "0.1.0 to 1.1.0",
                            p->conf.cni_version);
        if ((add || check) && p->conf.name[0] && !network_name_is_valid(p->conf.name))
                return fail(p, CNI_ERR_INVALID_CONFIG, -EINVAL,
                            "field \"name\" is \"%s\": a network name has letters, digits, "
                            "'_', '.' and '-' only, and starts with a letter or digit",
                            p->conf.name);
        if (check && cni_version_compare(p->conf.cni_version, "0.4.0") < 0)
                return fail(p, CNI_ERR_INCOMPATIBLE_VERSION, -EPROTONOSUPPORT,
                            "config version \"%s\" does not allow CHECK", p->conf.cni_version);
        if ((r = require_env(p, add || check)) < 0)
                return r;
        p->host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (p->host_ns < 0)
                return fail(p, CNI_ERR_GENERIC, negative_errno(),
                            "cannot open the host network namespace: %m");
        return add ? cmd_add(p) : del ? cmd_del(p) : cmd_check(p);
}

int main(int argc, char **argv)
{
        (void)argc;
        const char *base = argv[0] ? strrchr(argv[0], '/') : NULL;
        base = base ? base + 1 : argv[0] ? argv[0] : "";
        struct plugin p = {
                .command = env("CNI_COMMAND"),
                .container_id = env("CNI_CONTAINERID"),
                .netns = env("CNI_NETNS"),
                .ifname = env("CNI_IFNAME"),
                .args = env("CNI_ARGS"),
                .cni_path = env("CNI_PATH"),
                .state_dir = env("SRIOV_CNI_STATE_DIR") ?: CNI_STATE_DIR_DEFAULT,
                .sysfs_root = env("SRIOV_CNI_SYSFS_ROOT"),
                .agent_state_dir = env("SRIOV_CNI_AGENT_STATE_DIR") ?: CNI_AGENT_STATE_DIR_DEFAULT,
                .any_vf_file = env("SRIOV_CNI_ANY_VF_FILE") ?: CNI_ANY_VF_FILE_DEFAULT,
                .podres_socket = env("SRIOV_CNI_PODRESOURCES_SOCKET") ?: CNI_PODRES_SOCKET_DEFAULT,
                .kubelet_checkpoint =
                    env("SRIOV_CNI_KUBELET_CHECKPOINT") ?: CNI_KUBELET_CHECKPOINT_DEFAULT,
                .host_ns = -1,
                .ib = strcmp(base, "ib-sriov") == 0,
                .t = { .enabled = env("SRIOV_CNI_TIMINGS") != NULL, .start = now_ms() },
        };
        int r = run(&p);
        if (r < 0) {
                if (!p.err.msg[0])
                        fail(&p, CNI_ERR_GENERIC, r, "%s", strerror(-r));
                _cleanup_free_ char *e = cni_error_format(p.conf.cni_version, &p.err);
                if (e)
                        puts(e);
        }
        if (p.t.enabled) {
                struct rusage ru = { .ru_maxrss = 0 };
                (void)getrusage(RUSAGE_SELF, &ru);
                fprintf(stderr,
                        "sriov-cni timings: command=%s total_ms=%.2f ipam_ms=%.2f "
                        "netlink_ms=%.2f maxrss_kb=%ld\n",
                        p.command ? p.command : "-", now_ms() - p.t.start, p.t.ipam, p.t.netlink,
                        ru.ru_maxrss);
        }
        cni_conf_done(&p.conf);
        free(p.stdin_data);
        if (p.host_ns >= 0)
                close(p.host_ns);
        fflush(stdout);
        return r < 0 ? 1 : 0;
}
