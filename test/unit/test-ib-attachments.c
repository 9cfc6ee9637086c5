/* SPDX-License-Identifier: Apache-2.0 */
/* Which GUIDs the agent takes as pods' (agent/ib-attachments.c): read from the ib-sriov CNI
 * plugin's records in a temporary state directory, in the records' own format (upstream
 * ib-sriov-cni's runtimeConfig.infinibandGUID) and allocation files (cni_pci_save), as the
 * plugin leaves them during an attachment, after its DEL, and after a later ADD of the VF. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/state.h"
#include "ib-attachments.h"
#include "plan/ib-guids.h"
#include "util/fileio.h"

static int setup(void **state)
{
        char *dir = strdup("/tmp/sriov-test-ib-att-XXXXXX");
        assert_non_null(mkdtemp(dir));
        *state = dir;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        assert_int_equal(nftw(*state, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(*state);
        return 0;
}

/* An attachment record of VF pci, with the pod's GUID (NULL: none), written at time sec. */
static void record(const char *dir, const char *name, const char *pci, const char *guid, time_t sec)
{
        char path[PATH_MAX], text[512];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        snprintf(text, sizeof(text),
                 "{\"cniVersion\":\"1.0.0\",\"name\":\"ib\",\"type\":\"ib-sriov\","
                 "\"deviceID\":\"%s\",\"Master\":\"ibp59s0f0\",\"VFID\":0%s%s%s}",
                 pci, guid ? ",\"runtimeConfig\":{\"infinibandGUID\":\"" : "", guid ? guid : "",
                 guid ? "\"}" : "");
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0600), 0);
        const struct timespec t[2] = { { .tv_sec = sec }, { .tv_sec = sec } };
        assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static uint64_t guid_of(const struct ib_guid_attachments *set, const char *pci)
{
        const struct ib_guid_attachment *a = ib_guid_attachment_of_vf(set, pci);
        return a ? a->guid : 0;
}

static void test_pods_guids_from_the_records(void **state)
{
        const char *dir = *state;
        struct ib_guid_attachments set = { 0 };
        char missing[PATH_MAX];

        /* no directory: the plugin never ran here */
        snprintf(missing, sizeof(missing), "%s/none", dir);
        assert_int_equal(ib_attachments_read(missing, &set), 0);
        assert_int_equal(set.n_items, 0);

        /* VF 02.0: attached with a GUID, held */
        record(dir, "c0-net1", "0000:3b:02.0", "02:aa:00:00:00:00:00:01", 2000);
        assert_int_equal(cni_pci_save(dir, "0000:3b:02.0", "/var/run/netns/pod0"), 0);
        /* VF 02.1: an older attachment gave a GUID, the newer one none (its VF now) */
        record(dir, "c1-old-net1", "0000:3b:02.1", "02:aa:00:00:00:00:00:02", 1000);
        record(dir, "c1-new-net1", "0000:3b:02.1", NULL, 2000);
        assert_int_equal(cni_pci_save(dir, "0000:3b:02.1", "/var/run/netns/pod1"), 0);
        /* VF 02.2: a record with a GUID whose VF is not allocated (DEL released it first) */
        record(dir, "c2-net1", "0000:3b:02.2", "02:aa:00:00:00:00:00:03", 2000);
        /* VF 02.3: the newer attachment gave a GUID, an older one none */
        record(dir, "c3-old-net1", "0000:3b:02.3", NULL, 1000);
        record(dir, "c3-new-net1", "0000:3b:02.3", "02:aa:00:00:00:00:00:04", 2000);
        assert_int_equal(cni_pci_save(dir, "0000:3b:02.3", "/var/run/netns/pod3"), 0);
        /* VF 02.4: a GUID no attachment can set (all zeros) */
        record(dir, "c4-net1", "0000:3b:02.4", "00:00:00:00:00:00:00:00", 2000);
        assert_int_equal(cni_pci_save(dir, "0000:3b:02.4", "/var/run/netns/pod4"), 0);
        /* not records: one being written, one that is not JSON */
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/.c5-net1.0123456789abcdef.tmp", dir);
        assert_int_equal(write_file_atomic(path, "{}", 2, 0600), 0);
        snprintf(path, sizeof(path), "%s/c6-net1", dir);
        assert_int_equal(write_file_atomic(path, "{", 1, 0600), 0);

        assert_int_equal(ib_attachments_read(dir, &set), 0);
        assert_int_equal(set.n_items, 2);
        assert_true(guid_of(&set, "0000:3b:02.0") == 0x02aa000000000001ULL);
        assert_string_equal(ib_guid_attachment_of_vf(&set, "0000:3b:02.0")->name, "c0-net1");
        assert_true(guid_of(&set, "0000:3b:02.1") == 0);
        assert_true(guid_of(&set, "0000:3b:02.2") == 0);
        assert_true(guid_of(&set, "0000:3b:02.3") == 0x02aa000000000004ULL);
        assert_true(guid_of(&set, "0000:3b:02.4") == 0);

        /* the DEL of VF 02.0: GUID put back, allocation released, record removed */
        assert_int_equal(cni_pci_release(dir, "0000:3b:02.0"), 0);
        assert_int_equal(cni_cache_remove(dir, "c0-net1"), 0);
        assert_int_equal(ib_attachments_read(dir, &set), 0);
        assert_int_equal(set.n_items, 1);
        assert_true(guid_of(&set, "0000:3b:02.0") == 0);

        /* a state directory that cannot be read: an error, not "no pods" */
        assert_int_equal(ib_attachments_read(path, &set), -ENOTDIR);
        assert_int_equal(set.n_items, 0);
        ib_guid_attachments_done(&set);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pods_guids_from_the_records, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
