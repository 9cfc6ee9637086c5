/* SPDX-License-Identifier: Apache-2.0 */
/* `sriov-agent debug ...`: hidden entry points to the host layer, one kernel operation per
 * call, for the VM-lab scenarios and for diagnosing a node by hand. Not in --help.
 *
 *   debug set-numvfs [--sysfs-root R] [--timeout SEC] PF_PCI N
 *   debug bind [--sysfs-root R] VF_PCI vfio-pci|default
 *   debug set-mtu IFNAME MTU
 *   debug link-up IFNAME
 *   debug vf-set PF_IFNAME VF_INDEX [mac M] [trust on|off] [spoofchk on|off] [vlan N]
 *                [link-state auto|enable|disable]
 *   debug vf-list PF_IFNAME
 *   debug devlink PF_PCI
 *   debug rdma-mode [exclusive|shared]
 *   debug rdma-move RDMA_DEV NETNS_FILE
 *
 * Success prints "ok: ..." lines and exits 0; a failure prints the error on stderr and exits 1.
 * vf-set prints one "ATTR: ok|not supported|error: ..." line per attribute and exits 0 when the
 * only failures are "not supported"; devlink treats "not supported" the same way. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/ether.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "host/devlink.h"
#include "host/driver-bind.h"
#include "host/netlink-link.h"
#include "host/rdma-netlink.h"
#include "host/sriov-numvfs.h"
#include "util/macro.h"
#include "util/parse.h"

struct debug_args {
        const char *sysfs_root;
        int timeout_ms;
        int argc; /* positional arguments after the debug verb */
        char **argv;
};

static int fail(const char *verb, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const char *verb, int error, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "sriov-agent debug %s: ", verb);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        if (error)
                fprintf(stderr, ": %s", strerror(abs(error)));
        fputc('\n', stderr);
        return 1;
}

static int usage_error(const char *verb, const char *usage)
{
        return fail(verb, 0, "usage: sriov-agent debug %s %s", verb, usage);
}

static int debug_set_numvfs(const struct debug_args *a)
{
        const char *usage = "[--sysfs-root R] [--timeout SEC] PF_PCI N";
        int n;
        if (a->argc != 2)
                return usage_error("set-numvfs", usage);
        if (parse_int(a->argv[1], &n) < 0 || n < 0)
                return fail("set-numvfs", 0, "invalid VF count '%s'", a->argv[1]);
        struct numvfs_options o = { .sysfs_root = a->sysfs_root, .timeout_ms = a->timeout_ms };
        int r = host_set_num_vfs(&o, a->argv[0], n);
        if (r < 0) {
                const char *hint = host_numvfs_error_hint(r);
                return fail("set-numvfs", r, "cannot set %d VFs on %s%s%s%s", n, a->argv[0],
                            hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
        }
        printf("ok: %s has %d VFs\n", a->argv[0], n);
        return 0;
}

static int debug_bind(const struct debug_args *a)
{
        if (a->argc != 2)
                return usage_error("bind", "[--sysfs-root R] VF_PCI vfio-pci|default");
        const char *target = a->argv[1];
        if (strcmp(target, "default") == 0)
                target = NULL;
        else if (strcmp(target, "vfio-pci") != 0)
                return fail("bind", 0, "unknown target '%s': use vfio-pci or default", target);
        struct bind_options o = { .sysfs_root = a->sysfs_root };
        int r = host_bind_vf_driver(&o, a->argv[0], target);
        if (r < 0)
                return fail("bind", r, "cannot bind %s to %s", a->argv[0],
                            target ? target : "its default driver");
        char drv[64] = "";
        (void)host_vf_current_driver(a->sysfs_root, a->argv[0], drv, sizeof(drv));
        printf("ok: %s bound to %s\n", a->argv[0], drv[0] ? drv : "(none)");
        return 0;
}

static int debug_set_mtu(const struct debug_args *a)
{
        int mtu;
        if (a->argc != 2)
                return usage_error("set-mtu", "IFNAME MTU");
        if (parse_int(a->argv[1], &mtu) < 0 || mtu <= 0)
                return fail("set-mtu", 0, "invalid MTU '%s'", a->argv[1]);
        int r = host_netlink_set_mtu(a->argv[0], mtu);
        if (r < 0)
                return fail("set-mtu", r, "cannot set MTU %d on %s", mtu, a->argv[0]);
        printf("ok: %s mtu %d\n", a->argv[0], mtu);
        return 0;
}

static int debug_link_up(const struct debug_args *a)
{
        if (a->argc != 1)
                return usage_error("link-up", "IFNAME");
        int r = host_netlink_set_up(a->argv[0]);
        if (r < 0)
                return fail("link-up", r, "cannot set %s up", a->argv[0]);
        printf("ok: %s up\n", a->argv[0]);
        return 0;
}

/* "KEY VALUE" pairs after PF_IFNAME VF_INDEX into settings. */
static int parse_vf_settings(int argc, char **argv, struct vf_settings *s)
{
        for (int i = 0; i < argc; i += 2) {
                const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
                if (!value)
                        return fail("vf-set", 0, "'%s' needs a value", key);
                if (strcmp(key, "mac") == 0) {
                        struct ether_addr e;
                        if (!ether_aton_r(value, &e))
                                return fail("vf-set", 0, "invalid MAC address '%s'", value);
                        memcpy(s->mac, e.ether_addr_octet, sizeof(s->mac));
                        s->set_mac = true;
                } else if (strcmp(key, "trust") == 0) {
                        if (parse_on_off(value, &s->trust) < 0)
                                return fail("vf-set", 0, "trust must be on or off");
                } else if (strcmp(key, "spoofchk") == 0) {
                        if (parse_on_off(value, &s->spoofchk) < 0)
                                return fail("vf-set", 0, "spoofchk must be on or off");
                } else if (strcmp(key, "vlan") == 0) {
                        if (parse_int(value, &s->vlan) < 0 || s->vlan < 0 || s->vlan > 4094)
                                return fail("vf-set", 0,
                                            "invalid VLAN '%s' (0 for none, or 1..4094)", value);
                } else if (strcmp(key, "link-state") == 0) {
                        s->link_state = host_vf_link_state_from_string(value);
                        if (s->link_state < 0)
                                return fail("vf-set", 0,
                                            "link-state must be auto, enable or disable");
                } else
                        return fail("vf-set", 0, "unknown attribute '%s'", key);
        }
        return 0;
}

static int debug_vf_set(const struct debug_args *a)
{
        const char *usage = "PF_IFNAME VF_INDEX [mac M] [trust on|off] [spoofchk on|off] "
                            "[vlan N] [link-state auto|enable|disable]";
        int vf;
        if (a->argc < 2)
                return usage_error("vf-set", usage);
        if (parse_int(a->argv[1], &vf) < 0 || vf < 0)
                return fail("vf-set", 0, "invalid VF index '%s'", a->argv[1]);
        struct vf_settings s = VF_SETTINGS_INIT;
        if (parse_vf_settings(a->argc - 2, a->argv + 2, &s) != 0)
                return 1;

        struct vf_set_result res = { 0 };
        int r = host_netlink_set_vf(a->argv[0], vf, &s, &res);
        bool any = false;
        for (enum vf_attr at = 0; at < _VF_ATTR_MAX; at++) {
                if (!res.attempted[at])
                        continue;
                any = true;
                if (res.error[at] == 0)
                        printf("%s: ok\n", host_vf_attr_to_string(at));
                else if (host_netlink_error_is_not_supported(res.error[at]))
                        printf("%s: not supported\n", host_vf_attr_to_string(at));
                else
                        printf("%s: error: %s\n", host_vf_attr_to_string(at),
                               strerror(-res.error[at]));
        }
        if (r < 0)
                return fail("vf-set", r, "cannot configure VF %d of %s", vf, a->argv[0]);
        if (!any)
                return usage_error("vf-set", usage);
        printf("ok: %s vf %d configured\n", a->argv[0], vf);
        return 0;
}

static const char *on_off_unknown(int v)
{
        return v == 1 ? "on" : v == 0 ? "off" : "unknown";
}

static int debug_vf_list(const struct debug_args *a)
{
        if (a->argc != 1)
                return usage_error("vf-list", "PF_IFNAME");
        _cleanup_free_ struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        int r = host_netlink_get_vf_list(a->argv[0], &vfs, &n);
        if (r < 0)
                return fail("vf-list", r, "cannot read the VFs of %s", a->argv[0]);
        for (size_t i = 0; i < n; i++)
                printf("vf %d mac %s vlan %d trust %s spoofchk %s link-state %s\n", vfs[i].vf,
                       vfs[i].mac, vfs[i].vlan, on_off_unknown(vfs[i].trust),
                       on_off_unknown(vfs[i].spoofchk),
                       host_vf_link_state_to_string(vfs[i].link_state));
        printf("ok: %s has %zu VFs\n", a->argv[0], n);
        return 0;
}

static int debug_devlink(const struct debug_args *a)
{
        if (a->argc != 1)
                return usage_error("devlink", "PF_PCI");
        int failed = 0;
        char mode[32];
        int r = host_devlink_get_eswitch_mode(a->argv[0], mode, sizeof(mode));
        if (r == 0)
                printf("eswitch-mode: %s\n", mode);
        else if (r == -EOPNOTSUPP)
                printf("eswitch-mode: not supported\n");
        else
                failed = fail("devlink", r, "cannot read the eswitch mode of %s", a->argv[0]);

        bool rdma;
        r = host_devlink_get_enable_rdma(a->argv[0], &rdma);
        if (r == 0)
                printf("enable_rdma: %s\n", rdma ? "true" : "false");
        else if (r == -EOPNOTSUPP)
                printf("enable_rdma: not supported\n");
        else
                failed = fail("devlink", r, "cannot read enable_rdma of %s", a->argv[0]);
        if (failed)
                return 1;
        printf("ok: devlink %s\n", a->argv[0]);
        return 0;
}

/* The mode as the kernel has it; with an argument, sets it: "busy" when the kernel refuses
 * because other network namespaces exist (what the agent then writes for the next boot). */
static int debug_rdma_mode(const struct debug_args *a)
{
        if (a->argc > 1)
                return usage_error("rdma-mode", "[exclusive|shared]");
        enum host_rdma_netns_mode mode;
        int r;
        if (a->argc == 1) {
                int want = host_rdma_netns_mode_from_string(a->argv[0]);
                if (want < 0)
                        return usage_error("rdma-mode", "[exclusive|shared]");
                r = host_rdma_set_netns_mode(NULL, (enum host_rdma_netns_mode)want);
                if (r == -EBUSY)
                        return fail("rdma-mode", r, "busy: other network namespaces exist");
                if (r < 0)
                        return fail("rdma-mode", r, "cannot set the mode");
        }
        r = host_rdma_get_netns_mode(NULL, &mode);
        if (r < 0)
                return fail("rdma-mode", r, "cannot read the mode");
        printf("ok: rdma-mode %s\n", host_rdma_netns_mode_to_string(mode));
        return 0;
}

/* Moves an RDMA device into the network namespace of a file (/proc/PID/ns/net,
 * /run/netns/NAME), as the CNI plugin's ADD would. */
static int debug_rdma_move(const struct debug_args *a)
{
        if (a->argc != 2)
                return usage_error("rdma-move", "RDMA_DEV NETNS_FILE");
        uint32_t index;
        int r = host_rdma_device_index(NULL, a->argv[0], &index);
        if (r < 0)
                return fail("rdma-move", r, "no RDMA device %s in this namespace", a->argv[0]);
        _cleanup_close_ int fd = open(a->argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fail("rdma-move", -errno, "cannot open %s", a->argv[1]);
        r = host_rdma_move_to_netns(NULL, index, a->argv[0], fd);
        if (r < 0)
                return fail("rdma-move", r, "cannot move %s into %s", a->argv[0], a->argv[1]);
        printf("ok: %s moved into %s\n", a->argv[0], a->argv[1]);
        return 0;
}

static const struct {
        const char *verb;
        int (*run)(const struct debug_args *a);
} debug_verbs[] = {
        { "set-numvfs", debug_set_numvfs }, { "bind", debug_bind },
        { "set-mtu", debug_set_mtu },       { "link-up", debug_link_up },
        { "vf-set", debug_vf_set },         { "vf-list", debug_vf_list },
        { "devlink", debug_devlink },       { "rdma-mode", debug_rdma_mode },
        { "rdma-move", debug_rdma_move },
};

static void debug_help(FILE *f)
{
        fputs("Usage: sriov-agent debug VERB ARGS   (one host operation, for tests and diagnosis)\n"
              "  set-numvfs [--sysfs-root R] [--timeout SEC] PF_PCI N\n"
              "  bind [--sysfs-root R] VF_PCI vfio-pci|default\n"
              "  set-mtu IFNAME MTU\n"
              "  link-up IFNAME\n"
              "  vf-set PF_IFNAME VF_INDEX [mac M] [trust on|off] [spoofchk on|off] [vlan N]\n"
              "         [link-state auto|enable|disable]\n"
              "  vf-list PF_IFNAME\n"
              "  devlink PF_PCI\n"
              "  rdma-mode [exclusive|shared]\n"
              "  rdma-move RDMA_DEV NETNS_FILE\n",
              f);
}

int cmd_debug(int argc, char **argv)
{
        static const struct option options[] = {
                { "sysfs-root", required_argument, NULL, 'r' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        if (argc < 2) {
                debug_help(stderr);
                return 1;
        }
        const char *verb = argv[1];
        struct debug_args a = { 0 };
        int c, seconds;

        /* Options may sit anywhere after the verb; "+" is not used so they permute. */
        optind = 2;
        opterr = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'r':
                        a.sysfs_root = optarg;
                        break;
                case 't':
                        if (parse_int(optarg, &seconds) < 0 || seconds <= 0 || seconds > 24 * 3600)
                                return fail(verb, 0, "invalid --timeout '%s' (seconds)", optarg);
                        a.timeout_ms = seconds * 1000;
                        break;
                case 'h':
                        debug_help(stdout);
                        return 0;
                default:
                        return 1;
                }
        }
        a.argc = argc - optind;
        a.argv = argv + optind;
        for (size_t i = 0; i < ELEMENTSOF(debug_verbs); i++)
                if (strcmp(verb, debug_verbs[i].verb) == 0)
                        return debug_verbs[i].run(&a);
        if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
                debug_help(stdout);
                return 0;
        }
        debug_help(stderr);
        return fail(verb, 0, "unknown debug verb");
}
