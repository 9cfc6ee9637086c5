/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/cni/state: the sriov CNI plugin's records in upstream sriov-cni's formats
 * (pkg/utils/utils.go SaveNetConf/ReadScratchNetConf, pkg/utils/pci_allocator.go and its
 * pci_allocator_test.go: save, IsAllocated, delete; lock under pci/vf_lock/<pci>.lock). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/conf.h"
#include "cni/state.h"
#include "util/fileio.h"

static int setup(void **state)
{
        char *dir = strdup("/tmp/sriov-test-cni-XXXXXX");
        assert_non_null(mkdtemp(dir));
        *state = dir;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int teardown(void **state)
{
        assert_int_equal(nftw(*state, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(*state);
        return 0;
}

/* The configuration json, parsed as the plugin's stdin (cni_conf_done() it). */
static void parse_conf(const char *json, struct cni_conf *conf)
{
        struct cni_error e = { 0 };
        assert_int_equal(cni_conf_parse(json, strlen(json), NULL, conf, &e), 0);
}

static void test_cache_name(void **state)
{
        char buf[64];
        assert_int_equal(cni_cache_name("ctr1", "net1", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "ctr1-net1");
        assert_int_equal(cni_cache_name("../x", "net1", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(cni_cache_name("ctr1", "a/b", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(cni_cache_name("", "net1", buf, sizeof(buf)), -EINVAL);
}

static void test_cache_round_trip(void **state)
{
        char dir[256], path[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.200s/var/lib/cni/sriov", (char *)*state);
        const char *json = "{\"cniVersion\":\"1.0.0\",\"name\":\"highnet\",\"type\":\"sriov\","
                           "\"deviceID\":\"0000:01:10.0\",\"vlan\":100,\"spoofchk\":\"on\","
                           "\"max_tx_rate\":100,\"ipam\":{\"type\":\"host-local\"},"
                           "\"runtimeConfig\":{\"mac\":\"02:00:00:00:00:01\"}}";
        struct cni_conf conf;
        parse_conf(json, &conf);
        struct cni_error e = { 0 };
        struct cni_cache rec = {
                .device_id = "0000:01:10.0",
                .master = "eth0",
                .vfid = 2,
                .mac = "02:00:00:00:00:01",
                .has_mtu = true,
                .mtu = 1500,
                .orig = { .host_ifname = "eth1",
                          .spoofchk = true,
                          .admin_mac = "00:00:00:00:00:00",
                          .effective_mac = "52:54:00:12:34:56",
                          .vlan_proto = 0x8100,
                          .mtu = 1500 },
        };
        assert_int_equal(cni_cache_write(dir, "ctr1-net1", &conf, &rec), 0);
        cni_conf_done(&conf);

        snprintf(path, sizeof(path), "%s/ctr1-net1", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);

        /* upstream's field names and shapes: nil pointers as null, OrigVfState by Go names */
        json_error_t jerr;
        json_t *o = json_load_file(path, 0, &jerr);
        assert_non_null(o);
        json_t *orig = json_object_get(o, "OrigVfState");
        assert_string_equal(json_string_value(json_object_get(orig, "HostIFName")), "eth1");
        assert_true(json_is_true(json_object_get(orig, "SpoofChk")));
        assert_string_equal(json_string_value(json_object_get(orig, "EffectiveMAC")),
                            "52:54:00:12:34:56");
        assert_int_equal(json_integer_value(json_object_get(orig, "VlanProto")), 0x8100);
        assert_string_equal(json_string_value(json_object_get(o, "Master")), "eth0");
        assert_int_equal(json_integer_value(json_object_get(o, "VFID")), 2);
        assert_int_equal(json_integer_value(json_object_get(o, "vlan")), 100);
        assert_int_equal(json_integer_value(json_object_get(o, "vlanQoS")), 0);
        assert_string_equal(json_string_value(json_object_get(o, "vlanProto")), "802.1q");
        assert_true(json_is_null(json_object_get(o, "min_tx_rate")));
        assert_int_equal(json_integer_value(json_object_get(o, "max_tx_rate")), 100);
        assert_string_equal(json_string_value(json_object_get(o, "name")), "highnet");
        json_decref(o);

        struct cni_cache back;
        assert_int_equal(cni_cache_read(dir, "ctr1-net1", &back, &e), 0);
        assert_string_equal(back.device_id, "0000:01:10.0");
        assert_string_equal(back.master, "eth0");
        assert_int_equal(back.vfid, 2);
        assert_string_equal(back.orig.host_ifname, "eth1");
        assert_string_equal(back.orig.effective_mac, "52:54:00:12:34:56");
        assert_int_equal(back.orig.mtu, 1500);
        assert_true(back.has_vlan);
        assert_int_equal(back.spoofchk, 1);
        assert_int_equal(back.trust, -1);
        assert_true(back.has_rate);
        assert_int_equal(back.link_state, -1);
        assert_string_equal(back.ipam_type, "host-local");

        assert_int_equal(cni_cache_remove(dir, "ctr1-net1"), 0);
        assert_int_equal(cni_cache_read(dir, "ctr1-net1", &back, &e), -ENOENT);
        assert_int_equal(cni_cache_remove(dir, "ctr1-net1"), 0);
}

/* A record as upstream sriov-cni writes it (json.Marshal of its NetConf), so DEL restores
 * VFs of pods that were set up by upstream's plugin. */
static void test_cache_reads_upstream_record(void **state)
{
        const char *dir = *state;
        char path[PATH_MAX];
        const char *upstream =
            "{\"cniVersion\":\"0.4.0\",\"name\":\"sriov-net\",\"type\":\"sriov\","
            "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"10.56.217.0/24\"},\"dns\":{},"
            "\"OrigVfState\":{\"HostIFName\":\"enp175s0f1v3\",\"SpoofChk\":true,\"Trust\":false,"
            "\"AdminMAC\":\"00:00:00:00:00:00\",\"EffectiveMAC\":\"4a:0e:5c:c3:b9:1e\",\"Vlan\":0,"
            "\"VlanQoS\":0,\"VlanProto\":33024,\"MinTxRate\":0,\"MaxTxRate\":0,\"LinkState\":0,"
            "\"MTU\":1500},\"Master\":\"enp175s0f1\",\"MAC\":\"\",\"MTU\":1500,\"vlan\":null,"
            "\"vlanQoS\":null,\"vlanProto\":null,\"deviceID\":\"0000:af:06.3\",\"VFID\":3,"
            "\"min_tx_rate\":null,\"max_tx_rate\":null,\"trust\":\"on\",\"link_state\":\"enable\","
            "\"runtimeConfig\":{}}";
        snprintf(path, sizeof(path), "%s/abc-net1", dir);
        assert_int_equal(write_file_atomic(path, upstream, strlen(upstream), 0600), 0);
        struct cni_cache c;
        struct cni_error e = { 0 };
        assert_int_equal(cni_cache_read(dir, "abc-net1", &c, &e), 0);
        assert_string_equal(c.device_id, "0000:af:06.3");
        assert_string_equal(c.master, "enp175s0f1");
        assert_int_equal(c.vfid, 3);
        assert_string_equal(c.orig.host_ifname, "enp175s0f1v3");
        assert_string_equal(c.orig.admin_mac, "00:00:00:00:00:00");
        assert_int_equal(c.orig.vlan_proto, 0x8100);
        assert_true(c.orig.spoofchk);
        assert_false(c.orig.trust);
        assert_false(c.has_vlan);
        assert_false(c.has_rate);
        assert_int_equal(c.spoofchk, -1);
        assert_int_equal(c.trust, 1);
        assert_int_equal(c.link_state, 1);
        assert_string_equal(c.ipam_type, "host-local");
        assert_string_equal(c.mac, "");

        /* a record naming a path as its device is refused, not used */
        const char *evil = "{\"deviceID\":\"../../x\",\"Master\":\"eth0\"}";
        assert_int_equal(write_file_atomic(path, evil, strlen(evil), 0600), 0);
        assert_int_equal(cni_cache_read(dir, "abc-net1", &c, &e), -EBADMSG);
        assert_non_null(strstr(e.msg, "invalid device"));
        assert_int_equal(write_file_atomic(path, "{", 1, 0600), 0);
        assert_int_equal(cni_cache_read(dir, "abc-net1", &c, &e), -EBADMSG);
}

/* The record holds upstream's NetConf fields only, in their Go types, and stays small: stdin
 * keys copied in made upstream's decoder fail ("mtu":"9000" lands on its MTU *int, Go matching
 * keys case-insensitively), and a near-1 MiB configuration made a record that no DEL could
 * read back ("File too large"). */
static void test_cache_record_upstream_fields_only(void **state)
{
        const char *dir = *state;
        char path[PATH_MAX];
        size_t pad_len = 900 * 1024;
        char *pad = malloc(pad_len + 1);
        assert_non_null(pad);
        memset(pad, 'x', pad_len);
        pad[pad_len] = '\0';
        json_t *in = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:{s:s, s:s}, s:s}",
                               "cniVersion", "1.0.0", "name", "big", "type", "sriov", "deviceID",
                               "0000:01:10.0", "mtu", "9000", "Vlan", 7, "padding", pad, "ipam",
                               "type", "host-local", "subnet", "10.0.0.0/24", "trust", "on");
        free(pad);
        assert_non_null(in);
        char *json = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        assert_non_null(json);
        struct cni_conf conf;
        parse_conf(json, &conf);
        struct cni_error e = { 0 };
        free(json);
        struct cni_cache rec = { .device_id = "0000:01:10.0", .master = "eth0", .vfid = 0 };
        assert_int_equal(cni_cache_write(dir, "big-net1", &conf, &rec), 0);
        cni_conf_done(&conf);

        snprintf(path, sizeof(path), "%s/big-net1", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size < 4096);
        json_t *o = json_load_file(path, 0, NULL);
        assert_non_null(o);
        static const char *const upstream_keys[] = {
                "cniVersion",  "name",     "type",    "ipam",       "dns",
                "OrigVfState", "Master",   "MAC",     "MTU",        "VFID",
                "deviceID",    "vlan",     "vlanQoS", "vlanProto",  "min_tx_rate",
                "max_tx_rate", "spoofchk", "trust",   "link_state", "runtimeConfig",
        };
        const char *key;
        json_t *value;
        json_object_foreach(o, key, value)
        {
                bool known = false;
                for (size_t i = 0; i < sizeof(upstream_keys) / sizeof(upstream_keys[0]); i++)
                        known |= strcmp(key, upstream_keys[i]) == 0;
                if (!known)
                        fail_msg("record has key \"%s\", which upstream's NetConf lacks", key);
        }
        /* ipam as upstream's types.IPAM: the type only; "trust" as the configuration set it */
        assert_int_equal(json_object_size(json_object_get(o, "ipam")), 1);
        assert_string_equal(json_string_value(json_object_get(o, "trust")), "on");
        assert_true(json_is_null(json_object_get(o, "MTU")));
        json_decref(o);

        struct cni_cache back;
        assert_int_equal(cni_cache_read(dir, "big-net1", &back, &e), 0);
        assert_int_equal(back.trust, 1);
        assert_string_equal(back.ipam_type, "host-local");
}

/* The RDMA device moved into the pod and the GUID ADD replaced: what DEL puts back, in upstream
 * ib-sriov-cni's fields (RdmaNetState, HostIFGUID); only when ADD did either. */
static void test_cache_rdma_and_guid(void **state)
{
        const char *dir = *state;
        const char *json = "{\"cniVersion\":\"1.0.0\",\"name\":\"ib\",\"deviceID\":\"0000:"
                           "3b:02.1\"}";
        struct cni_conf conf;
        parse_conf(json, &conf);
        struct cni_error e = { 0 };
        struct cni_cache rec = { .device_id = "0000:3b:02.1",
                                 .master = "ibp59s0f0",
                                 .vfid = 1,
                                 .type = "ib-sriov",
                                 .rdma_moved = true,
                                 .rdma_index = 4,
                                 .rdma_name = "mlx5_3",
                                 .host_guid = "ff:ff:ff:ff:ff:ff:ff:ff",
                                 .guid = "02:00:00:00:00:aa:00:0a" };
        assert_int_equal(cni_cache_write(dir, "c-net1", &conf, &rec), 0);
        struct cni_cache back;
        assert_int_equal(cni_cache_read(dir, "c-net1", &back, &e), 0);
        /* the pod's GUID where upstream ib-sriov-cni's record has it (another ADD's GUID
         * check reads it back) */
        assert_string_equal(back.guid, "02:00:00:00:00:aa:00:0a");
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/c-net1", dir);
        json_t *o = json_load_file(path, 0, NULL);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "runtimeConfig"),
                                                              "infinibandGUID")),
                            "02:00:00:00:00:aa:00:0a");
        json_decref(o);
        assert_true(back.rdma_moved);
        assert_int_equal(back.rdma_index, 4);
        assert_string_equal(back.rdma_name, "mlx5_3");
        assert_string_equal(back.host_guid, "ff:ff:ff:ff:ff:ff:ff:ff");
        assert_string_equal(back.type, "ib-sriov");
        /* an sriov record of a VF without RDMA isolation carries neither */
        struct cni_cache plain = { .device_id = "0000:3b:02.1", .master = "eth0", .vfid = 1 };
        assert_int_equal(cni_cache_write(dir, "c-net2", &conf, &plain), 0);
        assert_int_equal(cni_cache_read(dir, "c-net2", &back, &e), 0);
        assert_false(back.rdma_moved);
        assert_string_equal(back.host_guid, "");
        assert_string_equal(back.guid, "");
        /* upstream ib-sriov-cni's record: the device by name, no index */
        const char *up = "{\"deviceID\":\"0000:3b:02.1\",\"Master\":\"ib0\",\"VFID\":1,"
                         "\"RdmaNetState\":{\"deviceID\":\"0000:3b:02.1\",\"SandboxRdmaDevName\":"
                         "\"mlx5_3\",\"ContainerRdmaDevName\":\"mlx5_3\"}}";
        assert_int_equal(cni_cache_parse("up", up, strlen(up), &back, &e), 0);
        assert_true(back.rdma_moved);
        assert_int_equal(back.rdma_index, 0);
        assert_string_equal(back.rdma_name, "mlx5_3");
        const char *bad = "{\"deviceID\":\"0000:3b:02.1\",\"VFID\":1,\"RdmaNetState\":{"
                          "\"ContainerRdmaDevName\":\"../x\"}}";
        assert_int_equal(cni_cache_parse("bad", bad, strlen(bad), &back, &e), -EBADMSG);
        assert_non_null(strstr(e.msg, "ContainerRdmaDevName"));
        cni_conf_done(&conf);
}

/* The record of the attachment that held a VF last: what an ADD finding that holder's
 * namespace gone puts back before taking the VF (the late DEL leaves it alone then). */
static void test_cache_find_latest(void **state)
{
        const char *dir = *state;
        char path[PATH_MAX], name[NAME_MAX + 1];
        const char *older = "{\"deviceID\":\"0000:01:10.0\",\"VFID\":0,"
                            "\"OrigVfState\":{\"HostIFName\":\"old0\"}}";
        const char *newer = "{\"deviceID\":\"0000:01:10.0\",\"VFID\":0,"
                            "\"OrigVfState\":{\"HostIFName\":\"new0\"}}";
        const char *other = "{\"deviceID\":\"0000:01:10.2\",\"VFID\":1}";
        struct cni_cache c;
        assert_int_equal(cni_cache_find_latest(dir, "0000:01:10.0", name, sizeof(name), &c),
                         -ENOENT);
        snprintf(path, sizeof(path), "%s/b-net1", dir);
        assert_int_equal(write_file_atomic(path, older, strlen(older), 0600), 0);
        struct timespec old_time[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
        assert_int_equal(utimensat(AT_FDCWD, path, old_time, 0), 0);
        snprintf(path, sizeof(path), "%s/a-net1", dir);
        assert_int_equal(write_file_atomic(path, newer, strlen(newer), 0600), 0);
        snprintf(path, sizeof(path), "%s/c-net1", dir);
        assert_int_equal(write_file_atomic(path, other, strlen(other), 0600), 0);
        snprintf(path, sizeof(path), "%s/d-net1", dir);
        assert_int_equal(write_file_atomic(path, "{", 1, 0600), 0); /* unreadable: skipped */
        assert_int_equal(cni_cache_find_latest(dir, "0000:01:10.0", name, sizeof(name), &c), 0);
        assert_string_equal(name, "a-net1");
        assert_string_equal(c.orig.host_ifname, "new0");
        assert_int_equal(cni_cache_find_latest(dir, "0000:01:10.2", name, sizeof(name), &c), 0);
        assert_string_equal(name, "c-net1");
}

static void test_pci_allocation(void **state)
{
        const char *dir = *state;
        const char *pci = "0000:01:10.2";
        char buf[256], path[PATH_MAX];
        assert_int_equal(cni_pci_holder(dir, pci, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cni_pci_save(dir, pci, "/var/run/netns/podA"), 0);
        assert_int_equal(cni_pci_holder(dir, pci, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/var/run/netns/podA"); /* no newline, as upstream */
        snprintf(path, sizeof(path), "%s/pci/%s", dir, pci);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(cni_pci_release(dir, pci), 0);
        assert_int_equal(cni_pci_holder(dir, pci, buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cni_pci_release(dir, pci), 0);
        assert_int_equal(cni_pci_save(dir, "../../etc/x", "/x"), -EINVAL);
}

static void test_pci_lock(void **state)
{
        const char *dir = *state;
        const char *pci = "0000:01:10.4";
        char path[PATH_MAX];
        int fd = cni_pci_lock(dir, pci, 1000);
        assert_true(fd >= 0);
        snprintf(path, sizeof(path), "%s/pci/vf_lock/%s.lock", dir, pci);
        assert_int_equal(access(path, F_OK), 0);
        /* held: a second taker times out */
        assert_int_equal(cni_pci_lock(dir, pci, 50), -ETIMEDOUT);
        /* another VF's lock is independent */
        int other = cni_pci_lock(dir, "0000:01:10.6", 50);
        assert_true(other >= 0);
        close(other);
        close(fd);
        fd = cni_pci_lock(dir, pci, 50);
        assert_true(fd >= 0);
        close(fd);
}

/* An ADD killed between creating a record's temporary file and renaming it (the runtime's
 * SIGKILL on a timeout) leaves ".<name>.<16 hex>.tmp"; removing the record, or releasing the VF,
 * takes those along, and nothing else: not another attachment's record or temporary file. Found
 * by the lab's churn scenario, whose killed ADDs left one behind. */
static void touch(const char *dir, const char *name)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        close(fd);
}

static bool exists(const char *dir, const char *name)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

static void test_killed_writer_leftovers_removed(void **state)
{
        const char *dir = *state;
        const char *json = "{\"cniVersion\":\"1.0.0\",\"name\":\"churn\",\"type\":\"sriov\","
                           "\"deviceID\":\"0000:01:10.2\"}";
        struct cni_conf conf;
        parse_conf(json, &conf);
        struct cni_cache rec = { .device_id = "0000:01:10.2",
                                 .vfid = 1,
                                 .spoofchk = -1,
                                 .trust = -1,
                                 .link_state = -1 };
        assert_int_equal(cni_cache_write(dir, "c3-2-net1", &conf, &rec), 0);
        cni_conf_done(&conf);
        touch(dir, ".c3-2-net1.02037a154e181f48.tmp");
        touch(dir, ".c3-2-net1.ffffffffffffffff.tmp");
        touch(dir, ".c3-2-net10.0000000000000000.tmp"); /* another attachment's (ifname net10) */
        touch(dir, ".c3-2-net1.notahexnumber00.tmp");   /* not a name write_file_atomic makes */
        touch(dir, "c3-2-net1.0000000000000000.tmp");
        assert_int_equal(cni_cache_remove(dir, "c3-2-net1"), 0);
        assert_false(exists(dir, "c3-2-net1"));
        assert_false(exists(dir, ".c3-2-net1.02037a154e181f48.tmp"));
        assert_false(exists(dir, ".c3-2-net1.ffffffffffffffff.tmp"));
        assert_true(exists(dir, ".c3-2-net10.0000000000000000.tmp"));
        assert_true(exists(dir, ".c3-2-net1.notahexnumber00.tmp"));
        assert_true(exists(dir, "c3-2-net1.0000000000000000.tmp"));

        /* the record itself already gone (killed before its rename): the leftover still goes */
        touch(dir, ".c4-0-net1.0123456789abcdef.tmp");
        assert_int_equal(cni_cache_remove(dir, "c4-0-net1"), 0);
        assert_false(exists(dir, ".c4-0-net1.0123456789abcdef.tmp"));

        /* the allocation file of a VF, under pci/ */
        char pci_dir[256];
        snprintf(pci_dir, sizeof(pci_dir), "%.200s/pci", dir);
        assert_int_equal(cni_pci_save(dir, "0000:01:10.2", "/var/run/netns/p3-2"), 0);
        touch(pci_dir, ".0000:01:10.2.00000000deadbeef.tmp");
        touch(pci_dir, ".0000:01:10.4.00000000deadbeef.tmp"); /* another VF's, whose lock we lack */
        assert_int_equal(cni_pci_release(dir, "0000:01:10.2"), 0);
        assert_false(exists(pci_dir, "0000:01:10.2"));
        assert_false(exists(pci_dir, ".0000:01:10.2.00000000deadbeef.tmp"));
        assert_true(exists(pci_dir, ".0000:01:10.4.00000000deadbeef.tmp"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cache_name),
                cmocka_unit_test_setup_teardown(test_cache_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_reads_upstream_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_record_upstream_fields_only, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_cache_rdma_and_guid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_find_latest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pci_allocation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pci_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(test_killed_writer_leftovers_removed, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
