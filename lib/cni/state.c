/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cni/conf-ib.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

/* What a record may be when read: ours are a few KiB; upstream's carry the stdin's "prevResult"
 * and "capabilities" too, so up to about the runtime's 1 MiB configuration and some. */
#define CACHE_READ_MAX (2 * 1024 * 1024)

static int mkdir_one(const char *path)
{
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* dir itself may be several levels deep (/var/lib/cni/sriov). */
static int mkdir_parents(const char *dir)
{
        char buf[PATH_MAX];
        int r = path_printf(buf, sizeof(buf), "%s", dir);
        if (r < 0)
                return r;
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                r = mkdir_one(buf);
                *p = '/';
                if (r < 0)
                        return r;
        }
        return mkdir_one(buf);
}

int cni_cache_name(const char *container_id, const char *ifname, char *buf, size_t size)
{
        if (!container_id || !*container_id || !ifname || !ifname_is_valid(ifname))
                return -EINVAL;
        int r = path_printf(buf, size, "%s-%s", container_id, ifname);
        if (r < 0)
                return r;
        return filename_is_valid(buf) ? 0 : -EINVAL;
}

static json_t *int_or_null(bool set, long v)
{
        return set ? json_integer(v) : json_null();
}

int cni_cache_write(const char *dir, const char *name, const struct cni_conf *conf,
                    const struct cni_cache *rec)
{
        char path[PATH_MAX];
        int r = path_printf(path, sizeof(path), "%s/%s", dir, name);
        if (r < 0)
                return r;
        r = mkdir_parents(dir);
        if (r < 0)
                return r;

        /* Exactly the fields upstream's json.Marshal of its NetConf writes (types.NetConf and
         * SriovNetConf), each in its Go type, and only those: Go's decoder matches keys
         * case-insensitively, so a stray stdin key such as "mtu":"9000" copied in would make
         * upstream's DEL fail to decode the record and restore nothing. Every value is bounded
         * by the configuration's own limits, so the record stays a few KiB however large the
         * stdin was (a near-1 MiB configuration made the record unreadable for every DEL). */
        json_auto_t *o = json_object();
        const struct cni_vf_orig *s = &rec->orig;
        json_auto_t *orig =
            json_pack("{s:s, s:b, s:b, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:i}", "HostIFName",
                      s->host_ifname, "SpoofChk", s->spoofchk, "Trust", s->trust, "AdminMAC",
                      s->admin_mac, "EffectiveMAC", s->effective_mac, "Vlan", s->vlan, "VlanQoS",
                      s->qos, "VlanProto", s->vlan_proto, "MinTxRate", s->min_tx_rate, "MaxTxRate",
                      s->max_tx_rate, "LinkState", (json_int_t)s->link_state, "MTU", s->mtu);
        json_auto_t *ipam =
            conf->ipam_type[0] ? json_pack("{s:s}", "type", conf->ipam_type) : json_object();
        if (!o || !orig || !ipam)
                return -ENOMEM;
        json_object_set_new(o, "cniVersion", json_string(conf->cni_version));
        if (conf->name[0]) /* `json:"name,omitempty"` */
                json_object_set_new(o, "name", json_string(conf->name));
        json_object_set_new(o, "type", json_string(rec->type[0] ? rec->type : "sriov"));
        json_object_set_new(o, "ipam", TAKE_PTR(ipam));
        json_object_set_new(o, "dns", json_object()); /* a struct: never omitted */
        json_object_set_new(o, "OrigVfState", TAKE_PTR(orig));
        json_object_set_new(o, "Master", json_string(rec->master));
        json_object_set_new(o, "MAC", json_string(rec->mac));
        json_object_set_new(o, "MTU", int_or_null(rec->has_mtu, rec->mtu));
        json_object_set_new(o, "VFID", json_integer(rec->vfid));
        json_object_set_new(o, "deviceID", json_string(rec->device_id));
        json_object_set_new(o, "vlan", int_or_null(conf->has_vlan, conf->vlan));
        json_object_set_new(o, "vlanQoS", int_or_null(conf->has_vlan, conf->qos));
        json_object_set_new(o, "vlanProto",
                            conf->has_vlan
                                ? json_string(conf->vlan_proto == 0x88a8 ? "802.1ad" : "802.1q")
                                : json_null());
        json_object_set_new(o, "min_tx_rate", int_or_null(conf->has_min_tx, conf->min_tx_rate));
        json_object_set_new(o, "max_tx_rate", int_or_null(conf->has_max_tx, conf->max_tx_rate));
        /* `omitempty` strings: present only when the configuration set them (DEL restores
         * exactly those) */
        static const char *const link_states[] = { "auto", "enable", "disable" };
        if (conf->spoofchk >= 0)
                json_object_set_new(o, "spoofchk", json_string(conf->spoofchk ? "on" : "off"));
        if (conf->trust >= 0)
                json_object_set_new(o, "trust", json_string(conf->trust ? "on" : "off"));
        if (conf->link_state >= 0 && (size_t)conf->link_state < ELEMENTSOF(link_states))
                json_object_set_new(o, "link_state", json_string(link_states[conf->link_state]));
        /* a struct: never omitted. The pod's GUID where upstream ib-sriov-cni's record has it
         * (its RuntimeConf, `json:"infinibandGUID,omitempty"`) */
        json_t *runtime =
            rec->guid[0] ? json_pack("{s:s}", "infinibandGUID", rec->guid) : json_object();
        if (!runtime)
                return -ENOMEM;
        json_object_set_new(o, "runtimeConfig", runtime);
        /* upstream ib-sriov-cni's fields (sriov-cni's decoder ignores them) */
        if (rec->rdma_moved) {
                json_t *rdma =
                    json_pack("{s:s, s:s, s:s, s:I}", "deviceID", rec->device_id,
                              "SandboxRdmaDevName", rec->rdma_name, "ContainerRdmaDevName",
                              rec->rdma_name, "rdmaDevIndex", (json_int_t)rec->rdma_index);
                if (!rdma)
                        return -ENOMEM;
                json_object_set_new(o, "RdmaNetState", rdma);
        }
        if (rec->host_guid[0])
                json_object_set_new(o, "HostIFGUID", json_string(rec->host_guid));

        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}

static int read_str(json_t *o, const char *key, char *buf, size_t size, struct cni_error *e)
{
        json_t *v = json_object_get(o, key);
        buf[0] = '\0';
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v) || json_string_length(v) >= size)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "cached field \"%s\" is invalid",
                                key);
        strcpy(buf, json_string_value(v));
        return 0;
}

/* *set = whether present and not null */
static int read_int(json_t *o, const char *key, bool *set, long *ret, struct cni_error *e)
{
        json_t *v = json_object_get(o, key);
        bool present = v && !json_is_null(v);
        if (set)
                *set = present;
        *ret = 0;
        if (!present)
                return 0;
        if (!json_is_integer(v))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "cached field \"%s\" is invalid",
                                key);
        *ret = (long)json_integer_value(v);
        return 0;
}

static int read_bool(json_t *o, const char *key, bool *ret, struct cni_error *e)
{
        json_t *v = json_object_get(o, key);
        *ret = false;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "cached field \"%s\" is invalid",
                                key);
        *ret = json_is_true(v);
        return 0;
}

static int onoff(const char *s)
{
        return strcmp(s, "on") == 0 ? 1 : s[0] ? 0 : -1;
}

int cni_cache_read(const char *dir, const char *name, struct cni_cache *ret, struct cni_error *e)
{
        char path[PATH_MAX];
        int r = path_printf(path, sizeof(path), "%s/%s", dir, name);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = NULL;
        size_t size;
        r = read_full_file(path, CACHE_READ_MAX, &text, &size);
        if (r == -EFBIG)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "cached record %s is larger than %d bytes", path, CACHE_READ_MAX);
        if (r < 0)
                return r;
        return cni_cache_parse(path, text, size, ret, e);
}

int cni_cache_parse(const char *path, const char *text, size_t size, struct cni_cache *ret,
                    struct cni_error *e)
{
        int r;
        json_error_t jerr;
        json_auto_t *o = json_loadb(text, size, 0, &jerr);
        if (!json_is_object(o))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG, "cached record %s is not JSON: %s",
                                path, jerr.text);

        struct cni_cache c = { .spoofchk = -1, .trust = -1, .link_state = -1 };
        long v, w;
        bool set, set2;
        char buf[32];
        if ((r = read_str(o, "deviceID", c.device_id, sizeof(c.device_id), e)) < 0 ||
            (r = read_str(o, "Master", c.master, sizeof(c.master), e)) < 0 ||
            (r = read_str(o, "MAC", c.mac, sizeof(c.mac), e)) < 0 ||
            (r = read_int(o, "VFID", NULL, &v, e)) < 0)
                return r;
        c.vfid = (int)v;
        if ((r = read_int(o, "MTU", &c.has_mtu, &v, e)) < 0)
                return r;
        c.mtu = (int)v;
        if ((r = read_int(o, "vlan", &c.has_vlan, &v, e)) < 0 ||
            (r = read_int(o, "min_tx_rate", &set, &v, e)) < 0 ||
            (r = read_int(o, "max_tx_rate", &set2, &w, e)) < 0)
                return r;
        c.has_rate = set || set2;
        if ((r = read_str(o, "spoofchk", buf, sizeof(buf), e)) < 0)
                return r;
        c.spoofchk = onoff(buf);
        if ((r = read_str(o, "trust", buf, sizeof(buf), e)) < 0)
                return r;
        c.trust = onoff(buf);
        if ((r = read_str(o, "link_state", buf, sizeof(buf), e)) < 0)
                return r;
        c.link_state = strcmp(buf, "auto") == 0      ? 0
                       : strcmp(buf, "enable") == 0  ? 1
                       : strcmp(buf, "disable") == 0 ? 2
                                                     : -1;
        json_t *ipam = json_object_get(o, "ipam");
        if (json_is_object(ipam) &&
            (r = read_str(ipam, "type", c.ipam_type, sizeof(c.ipam_type), e)) < 0)
                return r;

        if ((r = read_str(o, "type", c.type, sizeof(c.type), e)) < 0 ||
            (r = read_str(o, "HostIFGUID", c.host_guid, sizeof(c.host_guid), e)) < 0)
                return r;
        json_t *runtime = json_object_get(o, "runtimeConfig");
        if (json_is_object(runtime) &&
            (r = read_str(runtime, "infinibandGUID", c.guid, sizeof(c.guid), e)) < 0)
                return r;
        json_t *rdma = json_object_get(o, "RdmaNetState");
        if (rdma && !json_is_null(rdma)) {
                if (!json_is_object(rdma))
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "cached field \"RdmaNetState\" is invalid");
                bool has_index;
                if ((r = read_str(rdma, "ContainerRdmaDevName", c.rdma_name, sizeof(c.rdma_name),
                                  e)) < 0 ||
                    (r = read_int(rdma, "rdmaDevIndex", &has_index, &v, e)) < 0)
                        return r;
                if (has_index && (v < 0 || v > UINT32_MAX))
                        return cni_fail(
                            e, CNI_ERR_GENERIC, -EBADMSG,
                            "cached field \"RdmaNetState.rdmaDevIndex\" is out of range");
                c.rdma_index = has_index ? (uint32_t)v : 0;
                c.rdma_moved = c.rdma_name[0] || c.rdma_index;
                if (c.rdma_name[0] && !filename_is_valid(c.rdma_name))
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "cached field \"RdmaNetState.ContainerRdmaDevName\" is "
                                        "not a device name");
        }

        json_t *s = json_object_get(o, "OrigVfState");
        if (s && !json_is_null(s)) {
                if (!json_is_object(s))
                        return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                        "cached field \"OrigVfState\" is invalid");
                struct cni_vf_orig *g = &c.orig;
                if ((r = read_str(s, "HostIFName", g->host_ifname, sizeof(g->host_ifname), e)) <
                        0 ||
                    (r = read_bool(s, "SpoofChk", &g->spoofchk, e)) < 0 ||
                    (r = read_bool(s, "Trust", &g->trust, e)) < 0 ||
                    (r = read_str(s, "AdminMAC", g->admin_mac, sizeof(g->admin_mac), e)) < 0 ||
                    (r = read_str(s, "EffectiveMAC", g->effective_mac, sizeof(g->effective_mac),
                                  e)) < 0)
                        return r;
                static const char *const ints[] = { "Vlan",      "VlanQoS",   "VlanProto",
                                                    "MinTxRate", "MaxTxRate", "LinkState",
                                                    "MTU" };
                long vals[ELEMENTSOF(ints)];
                for (size_t i = 0; i < ELEMENTSOF(ints); i++)
                        if ((r = read_int(s, ints[i], NULL, &vals[i], e)) < 0)
                                return r;
                g->vlan = (int)vals[0];
                g->qos = (int)vals[1];
                g->vlan_proto = (int)vals[2];
                g->min_tx_rate = (int)vals[3];
                g->max_tx_rate = (int)vals[4];
                g->link_state = (uint32_t)vals[5];
                g->mtu = (int)vals[6];
        }
        if (!pci_address_is_valid(c.device_id) || c.vfid < 0 || c.vfid > 0xffff ||
            (c.master[0] && !ifname_is_valid(c.master)) ||
            (c.orig.host_ifname[0] && !ifname_is_valid(c.orig.host_ifname)))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "cached record %s names an invalid device or interface", path);
        *ret = c;
        return 0;
}

int cni_cache_find_latest(const char *dir, const char *pci, char *name, size_t size,
                          struct cni_cache *ret)
{
        DIR *d = opendir(dir);
        if (!d)
                return negative_errno();
        struct timespec newest = { 0 };
        int found = -ENOENT;
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.' ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                struct cni_cache c;
                struct cni_error e = { 0 };
                if (cni_cache_read(dir, de->d_name, &c, &e) < 0 || strcmp(c.device_id, pci) != 0)
                        continue;
                if (found == 0 &&
                    (st.st_mtim.tv_sec < newest.tv_sec ||
                     (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec <= newest.tv_nsec)))
                        continue;
                if (snprintf(name, size, "%s", de->d_name) >= (int)size)
                        continue;
                newest = st.st_mtim;
                *ret = c;
                found = 0;
        }
        closedir(d);
        return found;
}

int cni_cache_find_guid(const char *dir, const char *self, uint64_t guid, const char *skip_pci,
                        bool (*holds)(const char *name, const struct cni_cache *rec,
                                      const char *holder, void *userdata),
                        void *userdata, char *name, size_t name_size, struct cni_cache *ret,
                        char *holder, size_t holder_size)
{
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        int found = 0;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.' || (self && strcmp(de->d_name, self) == 0) ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                struct cni_cache c = { 0 };
                struct cni_error e = { 0 };
                uint64_t g;
                if (cni_cache_read(dir, de->d_name, &c, &e) < 0 || !c.guid[0] ||
                    cni_guid_parse(c.guid, &g) < 0 || g != guid ||
                    strcasecmp(c.device_id, skip_pci) == 0)
                        continue;
                /* the VF's newest record only: an older one's attachment lost the VF to a
                 * later ADD (its namespace ended) and only waits for its late DEL */
                char latest[NAME_MAX + 1];
                struct cni_cache newest;
                char netns[4096];
                if (cni_cache_find_latest(dir, c.device_id, latest, sizeof(latest), &newest) < 0 ||
                    strcmp(latest, de->d_name) != 0 ||
                    cni_pci_holder(dir, c.device_id, netns, sizeof(netns)) < 0 ||
                    !holds(de->d_name, &c, netns, userdata))
                        continue;
                if (snprintf(name, name_size, "%s", de->d_name) >= (int)name_size ||
                    snprintf(holder, holder_size, "%s", netns) >= (int)holder_size) {
                        found = -ENOBUFS;
                        break;
                }
                *ret = c;
                found = 1;
        }
        closedir(d);
        return found;
}

int cni_cache_remove(const char *dir, const char *name)
{
        char path[PATH_MAX];
        int r = path_printf(path, sizeof(path), "%s/%s", dir, name);
        /* with the leftovers of an ADD killed while writing it (the runtime never runs two calls
         * of one attachment at once, so no live writer's) */
        return r < 0 ? r : unlink_file_and_temps(path);
}

static int pci_path(const char *dir, const char *pci, char *buf, size_t size)
{
        if (!pci_address_is_valid(pci))
                return -EINVAL;
        return path_printf(buf, size, "%s/pci/%s", dir, pci);
}

/* <dir>/pci/vf_lock/<name>.lock, flock(2)ed within timeout_ms */
static int take_lock(const char *dir, const char *name, int timeout_ms)
{
        char path[PATH_MAX];
        int r = path_printf(path, sizeof(path), "%s/pci/vf_lock", dir);
        if (r < 0)
                return r;
        if ((r = mkdir_parents(path)) < 0)
                return r;
        if ((r = path_printf(path, sizeof(path), "%s/pci/vf_lock/%s.lock", dir, name)) < 0)
                return r;
        int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        /* poll rather than block: the wait is bounded as upstream's (60 s) */
        for (int waited = 0;; waited += 10) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return fd;
                if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= timeout_ms) {
                        r = errno == EWOULDBLOCK || errno == EINTR ? -ETIMEDOUT : negative_errno();
                        close(fd);
                        return r;
                }
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
}

int cni_pci_lock(const char *dir, const char *pci, int timeout_ms)
{
        if (!pci_address_is_valid(pci))
                return -EINVAL;
        return take_lock(dir, pci, timeout_ms);
}

int cni_guid_lock(const char *dir, int timeout_ms)
{
        /* not a PCI address, so no VF's lock can be this file */
        return take_lock(dir, "ib-guids", timeout_ms);
}

int cni_move_lock(const char *dir, int timeout_ms)
{
        return take_lock(dir, CNI_MOVE_LOCK_NAME, timeout_ms);
}

int cni_pci_holder(const char *dir, const char *pci, char *buf, size_t size)
{
        char path[PATH_MAX];
        int r = pci_path(dir, pci, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_free_ char *text = NULL;
        size_t n;
        r = read_full_file(path, 4096, &text, &n);
        if (r < 0)
                return r;
        if (n >= size)
                return -ENOBUFS;
        memcpy(buf, text, n);
        buf[n] = '\0';
        return 0;
}

int cni_pci_save(const char *dir, const char *pci, const char *netns)
{
        char path[PATH_MAX];
        int r = path_printf(path, sizeof(path), "%s/pci", dir);
        if (r < 0 || (r = mkdir_parents(path)) < 0 ||
            (r = pci_path(dir, pci, path, sizeof(path))) < 0)
                return r;
        return write_file_atomic(path, netns, strlen(netns), 0600);
}

int cni_pci_release(const char *dir, const char *pci)
{
        char path[PATH_MAX];
        int r = pci_path(dir, pci, path, sizeof(path));
        /* the caller holds the VF's lock, which every writer of the file holds */
        return r < 0 ? r : unlink_file_and_temps(path);
}

static int count_files(int at, const char *name, bool skip_pci, size_t *ret)
{
        *ret = 0;
        int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        size_t seen = 0;
        int r = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (++seen > CNI_STATE_COUNT_MAX) {
                        r = -E2BIG;
                        break;
                }
                if (e->d_name[0] == '.' || (skip_pci && strcmp(e->d_name, "pci") == 0))
                        continue;
                bool regular = e->d_type == DT_REG;
                if (e->d_type == DT_UNKNOWN) {
                        struct stat st;
                        regular = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                  S_ISREG(st.st_mode);
                }
                if (regular)
                        (*ret)++;
        }
        closedir(d);
        return r;
}

int cni_state_count(const char *dir, size_t *attachments, size_t *held)
{
        *attachments = *held = 0;
        int r = count_files(AT_FDCWD, dir, true, attachments);
        if (r < 0)
                return r;
        char pci[PATH_MAX];
        int n = snprintf(pci, sizeof(pci), "%s/pci", dir);
        if (n < 0 || (size_t)n >= sizeof(pci))
                return -ENAMETOOLONG;
        return count_files(AT_FDCWD, pci, false, held);
}
