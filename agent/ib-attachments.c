/* SPDX-License-Identifier: Apache-2.0 */
#include "ib-attachments.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cni/state.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"

/* The newest attachment record of one VF while the CNI state directory is read. */
struct newest_record {
        char pci[PCI_ADDR_MAX];
        struct timespec mtime;
        uint64_t guid; /* 0: the record names none */
        char name[IB_ATTACHMENT_NAME_MAX];
};

int ib_attachments_read(const char *dir, struct ib_guid_attachments *ret)
{
        _cleanup_free_ struct newest_record *seen = NULL;
        size_t n_seen = 0, cap_seen = 0;
        int r = 0;

        ib_guid_attachments_done(ret);
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : log_error_errno(-errno, "cannot read %s", dir);
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                struct stat st;
                struct cni_cache c = { 0 };
                struct cni_error e = { 0 };
                if (de->d_name[0] == '.' ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode) || cni_cache_read(dir, de->d_name, &c, &e) < 0 ||
                    !c.device_id[0] || strlen(c.device_id) >= PCI_ADDR_MAX)
                        continue;
                size_t k = 0;
                while (k < n_seen && strcasecmp(seen[k].pci, c.device_id) != 0)
                        k++;
                if (k < n_seen && (st.st_mtim.tv_sec < seen[k].mtime.tv_sec ||
                                   (st.st_mtim.tv_sec == seen[k].mtime.tv_sec &&
                                    st.st_mtim.tv_nsec <= seen[k].mtime.tv_nsec)))
                        continue; /* an older attachment of the VF: another took it since */
                if (k == n_seen) {
                        if (GROW_ARRAY(seen, cap_seen, n_seen + 1) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        n_seen++;
                }
                /* k < n_seen: seen is allocated */
                struct newest_record *n = &seen[k];
                /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
                *n = (struct newest_record){ .mtime = st.st_mtim };
                memcpy(n->pci, c.device_id, strlen(c.device_id) + 1); /* bounded above */
                snprintf(n->name, sizeof(n->name), "%.*s", (int)sizeof(n->name) - 1, de->d_name);
                if (c.guid[0] && ib_guid_parse(c.guid, &n->guid) < 0)
                        n->guid = 0;
        }
        closedir(d);
        for (size_t i = 0; r >= 0 && i < n_seen; i++) {
                char holder[PATH_MAX];
                if (!ib_guid_is_valid(seen[i].guid) ||
                    cni_pci_holder(dir, seen[i].pci, holder, sizeof(holder)) < 0)
                        continue;
                char text[IB_GUID_TEXT_MAX];
                ib_guid_format(seen[i].guid, text);
                log_debug("VF %s: GUID %s is the pod's of the CNI attachment %s (held by %s)",
                          seen[i].pci, text, seen[i].name, holder);
                r = ib_guid_attachments_add(ret, seen[i].pci, seen[i].guid, seen[i].name);
        }
        return r;
}
