/* SPDX-License-Identifier: Apache-2.0 */
#include "rdma-boot.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/rdma-netlink.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

#define MODPROBE_CONF_MAX (256 << 10) /* a modprobe.d file; the real ones are a few lines */

/* kstrtobool() as the kernel's bool parameters use it: 1 true, 0 false, -1 not a bool. */
static int kernel_bool(const char *v)
{
        switch (v[0]) {
        case 'y':
        case 'Y':
        case 't':
        case 'T':
        case '1':
                return 1;
        case 'n':
        case 'N':
        case 'f':
        case 'F':
        case '0':
                return 0;
        case 'o':
        case 'O':
                if (v[1] == 'n' || v[1] == 'N')
                        return 1;
                if (v[1] == 'f' || v[1] == 'F')
                        return 0;
                break;
        default:
                break;
        }
        return -1;
}

/* Module and parameter names compare with '-' and '_' alike, as kmod and the kernel do. */
static bool name_is(const char *s, size_t len, const char *want)
{
        if (strlen(want) != len)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i] == '-' ? '_' : s[i];
                if (c != want[i])
                        return false;
        }
        return true;
}

/* One file's text: updates *mode when one of its lines sets netns_mode for ib_core. */
static void parse_conf(const char *path, char *text, int *mode, bool *found)
{
        /* kmod joins a line ending in a backslash with the next */
        for (char *p = text; (p = strstr(p, "\\\n")); p += 2)
                p[0] = p[1] = ' ';
        char *save_line = NULL;
        for (char *line = strtok_r(text, "\n", &save_line); line;
             line = strtok_r(NULL, "\n", &save_line)) {
                char *save = NULL;
                const char *cmd = strtok_r(line, " \t\r", &save);
                if (!cmd || cmd[0] == '#' || strcmp(cmd, "options") != 0)
                        continue;
                const char *module = strtok_r(NULL, " \t\r", &save);
                if (!module || !name_is(module, strlen(module), "ib_core"))
                        continue;
                for (char *opt = strtok_r(NULL, " \t\r", &save); opt;
                     opt = strtok_r(NULL, " \t\r", &save)) {
                        char *eq = strchr(opt, '=');
                        if (!name_is(opt, eq ? (size_t)(eq - opt) : strlen(opt), "netns_mode"))
                                continue;
                        char *v = eq ? eq + 1 : NULL;
                        if (v && v[0] == '"') { /* kmod passes quoted values on unquoted */
                                v++;
                                char *end = strchr(v, '"');
                                if (end)
                                        *end = '\0';
                        }
                        int b = v ? kernel_bool(v) : 1; /* a bool without value is true */
                        if (b < 0) {
                                /* the kernel refuses it (and ib_core with it): not a mode */
                                log_warning("%s: \"netns_mode=%s\" for ib_core is not a "
                                            "boolean; ignored here, the kernel refuses it",
                                            path, v);
                                continue;
                        }
                        *mode = b ? HOST_RDMA_NETNS_SHARED : HOST_RDMA_NETNS_EXCLUSIVE;
                        *found = true;
                }
        }
}

static int conf_filter(const struct dirent *de)
{
        size_t len = strlen(de->d_name);
        return de->d_name[0] != '.' && len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0;
}

/* kmod orders the files by name, byte-wise. */
static int by_name(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

int rdma_next_boot_read(const char *dir, const char *skip, struct rdma_next_boot *ret)
{
        struct dirent **list = NULL;
        int r = 0;

        *ret = (struct rdma_next_boot){ .mode = HOST_RDMA_NETNS_SHARED };
        int n = scandir(dir, &list, conf_filter, by_name);
        if (n < 0)
                return errno == ENOENT ? 0 : -errno;
        for (int i = 0; i < n; i++) {
                char path[PATH_MAX];
                struct stat st;
                _cleanup_free_ char *text = NULL;
                size_t size = 0;
                bool found = false;

                if (r < 0 || (skip && strcmp(list[i]->d_name, skip) == 0) ||
                    snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name) >=
                        (int)sizeof(path) ||
                    stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        goto next; /* kmod reads regular files (and links to them) only */
                r = read_full_file(path, MODPROBE_CONF_MAX, &text, &size);
                if (r < 0)
                        goto next;
                parse_conf(path, text, &ret->mode, &found);
                if (found)
                        snprintf(ret->source, sizeof(ret->source), "%s", path);
        next:
                free(list[i]);
        }
        free(list);
        return r;
}

int rdma_next_boot_make(const char *dir, int wanted, struct rdma_next_boot *ret)
{
        const char *name = host_rdma_netns_mode_to_string(wanted);
        struct rdma_next_boot without;
        char path[PATH_MAX];

        if (!name || !dir || !*dir)
                return log_error_errno(-EINVAL, "RDMA mode: no modprobe.d directory or mode");
        if (snprintf(path, sizeof(path), "%s/%s", dir, HOST_RDMA_MODPROBE_FILE) >=
            (int)sizeof(path))
                return log_error_errno(-ENAMETOOLONG, "modprobe.d directory %s: name too long",
                                       dir);
        int r = rdma_next_boot_read(dir, HOST_RDMA_MODPROBE_FILE, &without);
        if (r < 0)
                return log_error_errno(r, "cannot read %s: which RDMA mode the next boot loads",
                                       dir);
        if (without.mode == wanted) {
                /* our file would only repeat what the node loads anyway (or contradict it) */
                if (unlink(path) == 0)
                        log_notice("removed %s: ib_core starts in RDMA mode %s from the next "
                                   "boot without it",
                                   path, name);
                else if (errno != ENOENT)
                        return log_error_errno(-errno,
                                               "cannot remove %s (RDMA mode %s for the "
                                               "next boot)",
                                               path, name);
        } else {
                r = host_rdma_write_modprobe_option(dir, wanted, NULL, 0);
                if (r < 0)
                        return r;
        }
        r = rdma_next_boot_read(dir, NULL, ret);
        if (r < 0)
                return log_error_errno(r, "cannot read %s: which RDMA mode the next boot loads",
                                       dir);
        if (ret->mode != wanted)
                log_warning("RDMA mode %s for the next boot: %s sets ib_core's netns_mode after "
                            "%s; the next boot loads %s",
                            name, ret->source, path, host_rdma_netns_mode_to_string(ret->mode));
        return 0;
}

void rdma_mode_bring_about(struct nl_sock *sk, int wanted, bool persist, const char *dir,
                           struct rdma_mode_outcome *ret)
{
        enum host_rdma_netns_mode now;

        *ret = (struct rdma_mode_outcome){ .live = -1 };
        int r = host_rdma_get_netns_mode(sk, &now);
        if (r < 0)
                ret->live_error = r;
        else
                ret->live = (int)now;
        if (wanted >= 0 && ret->live >= 0 && ret->live != wanted) {
                r = host_rdma_set_netns_mode(sk, (enum host_rdma_netns_mode)wanted);
                /* read back: what the NodeState reports is what the kernel has */
                if (r >= 0 && (r = host_rdma_get_netns_mode(sk, &now)) >= 0) {
                        ret->changed = (int)now != ret->live;
                        ret->live = (int)now;
                }
                if (r < 0)
                        ret->live_error = r;
        }
        /* the next boot, whatever the live switch did: a mode set live is lost at the next
         * boot unless the modprobe configuration says it too */
        r = wanted >= 0 && persist ? rdma_next_boot_make(dir, wanted, &ret->next_boot)
                                   : rdma_next_boot_read(dir, NULL, &ret->next_boot);
        ret->have_next_boot = r >= 0;
        ret->next_boot_error = r < 0 ? r : 0;
}

void rdma_mode_reboot_message(int wanted, const struct rdma_mode_outcome *o, char *buf, size_t size)
{
        const char *want = host_rdma_netns_mode_to_string(wanted);

        buf[0] = '\0';
        if (!want || o->live < 0 || o->live == wanted)
                return;
        const char *keeps = host_rdma_netns_mode_to_string(o->live) ?: "?";
        const char *why = o->live_error == -EBUSY ? " while other network namespaces exist" : "";
        if (!o->have_next_boot)
                snprintf(buf, size,
                         "RDMA network namespace mode %s needs a reboot: the kernel keeps %s%s; "
                         "what the next boot loads is unknown (%s) (the agent never reboots the "
                         "node)",
                         want, keeps, why, strerror(-o->next_boot_error));
        else if (o->next_boot.mode != wanted)
                snprintf(buf, size,
                         "RDMA network namespace mode %s cannot be brought about: the kernel "
                         "keeps %s%s, and the next boot loads %s too (%s sets ib_core's "
                         "netns_mode)",
                         want, keeps, why, host_rdma_netns_mode_to_string(o->next_boot.mode) ?: "?",
                         o->next_boot.source[0] ? o->next_boot.source : "the kernel's default");
        else
                snprintf(buf, size,
                         "RDMA network namespace mode %s needs a reboot: the kernel keeps %s%s; "
                         "the next boot loads %s (%s) (the agent never reboots the node)",
                         want, keeps, why, want,
                         o->next_boot.source[0] ? o->next_boot.source
                                                : "the kernel's default, no modprobe option");
}

json_t *rdma_mode_status_json(int live, int next_boot, const char *next_boot_source, int wanted)
{
        const char *live_s = host_rdma_netns_mode_to_string(live);
        const char *next_s = host_rdma_netns_mode_to_string(next_boot);
        if (!next_s || (!live_s && wanted < 0))
                return NULL;
        return json_pack(
            "{s:s*, s:s, s:s, s:s*}", "live", live_s, "nextBoot", next_s, "nextBootFrom",
            next_boot_source && next_boot_source[0] ? next_boot_source : "the kernel's default",
            "wanted", host_rdma_netns_mode_to_string(wanted));
}
