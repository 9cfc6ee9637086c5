/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for selection and merging (policy_build_desired_state): nodeSelector, nicSelector
 * on in-memory inventories, upstream merge rules, node-side conflict resolution, node-dependent
 * checks and the per-policy statuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake-inventory.h"
#include "model/desired-json.h"
#include "policy/policy-merge.h"
#include "policy/policy-select.h"
#include "policy/policy.h"

#define PF_A "0000:3b:00.0" /* ens1f0 ConnectX-6 */
#define PF_B "0000:3b:00.1" /* ens1f1 ConnectX-6 */
#define PF_C "0000:5e:00.0" /* eno1 E810 */
#define PF_D "0000:af:00.0" /* mlxbig, ConnectX-7 with 256 VFs */
#define PF_E "0000:d8:00.0" /* exts: externally managed candidate with 8 VFs, MTU 9000 */

static void make_node(struct inventory *inv)
{
        *inv = (struct inventory){ 0 };
        fake_add_pf(inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, NULL);
        fake_add_pf(inv, PF_B, "ens1f1", 0x15b3, 0x101b, 16, 0, 1500, NULL);
        fake_add_pf(inv, PF_C, "eno1", 0x8086, 0x159b, 64, 0, 1500, NULL);
        fake_add_pf(inv, PF_D, "mlxbig", 0x15b3, 0x1021, 256, 0, 1500, NULL);
        fake_add_pf(inv, PF_E, "exts", 0x8086, 0x1592, 64, 8, 9000, "iavf");
        /* udev's predictable name as an alternative name of ens1f1 */
        snprintf(inv->pfs[1].alt_names[0], sizeof(inv->pfs[1].alt_names[0]), "enp59s0f1np1");
        inv->pfs[1].n_alt_names = 1;
}

static const struct string_pair node_labels[] = {
        { .key = "highnet-node", .value = "true" },
        { .key = "kubernetes.io/os", .value = "linux" },
};

/* One policy document; `extra` are further spec lines (2-space indented). */
static void add_doc(char *buf, size_t size, const char *name, int prio, const char *res,
                    int num_vfs, const char *nic, const char *extra)
{
        size_t len = strlen(buf);
        snprintf(buf + len, size - len,
                 "---\napiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                 "metadata: {name: %s, namespace: sriov-network-operator}\n"
                 "spec:\n  resourceName: %s\n  nodeSelector: {highnet-node: \"true\"}\n"
                 "  priority: %d\n  numVfs: %d\n  nicSelector: %s\n%s",
                 name, res, prio, num_vfs, nic, extra ? extra : "");
}

struct result {
        struct policy_list list;
        struct inventory inv;
        struct desired_state desired;
        struct policy_report report;
};

static void run(struct result *res, const char *yaml)
{
        *res = (struct result){ 0 };
        make_node(&res->inv);
        assert_int_equal(policy_list_add_buffer(&res->list, "t.yaml", yaml, strlen(yaml)), 0);
        assert_int_equal(policy_build_desired_state(res->list.items, res->list.n_items, node_labels,
                                                    2, &res->inv, &res->desired, &res->report),
                         0);
        assert_int_equal(res->report.n_results, res->list.n_items);
}

static void done(struct result *res)
{
        policy_list_done(&res->list);
        inventory_done(&res->inv);
        desired_state_done(&res->desired);
        policy_report_done(&res->report);
}

static const struct policy_result *status_of(const struct result *res, const char *name)
{
        for (size_t i = 0; i < res->report.n_results; i++)
                if (res->report.results[i].name && strcmp(res->report.results[i].name, name) == 0)
                        return &res->report.results[i];
        fail_msg("no result for %s", name);
        return NULL;
}

static void expect_status(const struct result *res, const char *name, enum policy_status st,
                          const char *reason_part)
{
        const struct policy_result *r = status_of(res, name);
        if (r->status != st || (reason_part && !strstr(r->reason, reason_part)))
                fail_msg("%s: status %s (want %s), reason \"%s\" (want \"%s\")", name,
                         policy_status_to_string(r->status), policy_status_to_string(st), r->reason,
                         reason_part ? reason_part : "");
}

static const struct desired_interface *iface(const struct result *res, const char *pci)
{
        const struct desired_interface *d = desired_find_interface(&res->desired, pci);
        if (!d)
                fail_msg("no desired interface %s", pci);
        return d;
}

static const struct vf_group *group(const struct desired_interface *d, const char *resource)
{
        for (size_t i = 0; i < d->n_groups; i++)
                if (strcmp(d->groups[i].resource_name, resource) == 0)
                        return &d->groups[i];
        return NULL;
}

static void test_seed_policy(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "highnet-sriov-policy", 90, "sriov_highnet", 8,
                "{vendor: \"15b3\", pfNames: [ens1f0]}",
                "  mtu: 1500\n  deviceType: netdevice\n  isRdma: true\n");
        run(&res, y);
        assert_int_equal(res.desired.n_interfaces, 1);
        const struct desired_interface *d = iface(&res, PF_A);
        assert_string_equal(d->name, "ens1f0");
        assert_int_equal(d->num_vfs, 8);
        assert_int_equal(d->mtu, 1500);
        assert_int_equal(d->n_groups, 1);
        assert_string_equal(d->groups[0].resource_name, "sriov_highnet");
        assert_string_equal(d->groups[0].policy_name, "highnet-sriov-policy");
        assert_int_equal(d->groups[0].vf_start, 0);
        assert_int_equal(d->groups[0].vf_end, 7);
        assert_int_equal(d->groups[0].device_type, DEVICE_TYPE_NETDEVICE);
        assert_true(d->groups[0].is_rdma);
        assert_int_equal(d->groups[0].mtu, 1500);
        expect_status(&res, "highnet-sriov-policy", POLICY_STATUS_APPLIED,
                      "PF 0000:3b:00.0 (ens1f0) VFs 0-7 as sriov_highnet");
        assert_false(policy_report_has_errors(&res.report));
        done(&res);
}

static void test_node_selector(void **state)
{
        static const struct {
                const char *selector;
                bool selected;
        } cases[] = {
                { "{}", true },
                { "{highnet-node: \"true\"}", true },
                { "{highnet-node: \"true\", kubernetes.io/os: linux}", true },
                { "{highnet-node: \"false\"}", false },
                { "{highnet-node: \"TRUE\"}", false },
                { "{other: \"true\"}", false },
                { "{highnet-node: \"true\", other: x}", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char y[2048];
                struct result res;
                snprintf(y, sizeof(y),
                         "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                         "metadata: {name: ns}\nspec: {resourceName: r, numVfs: 2, nodeSelector: "
                         "%s, nicSelector: {pfNames: [ens1f0]}}\n",
                         cases[i].selector);
                run(&res, y);
                if (cases[i].selected)
                        expect_status(&res, "ns", POLICY_STATUS_APPLIED, NULL);
                else
                        expect_status(&res, "ns", POLICY_STATUS_NOT_SELECTED,
                                      "does not match this node's labels");
                assert_int_equal(res.desired.n_interfaces, cases[i].selected ? 1 : 0);
                done(&res);
        }
}

static void test_nic_selector(void **state)
{
        static const struct {
                const char *nic;
                const char *pfs; /* selected PFs, space separated, in PCI order */
        } cases[] = {
                { "{vendor: \"15B3\"}", PF_A " " PF_B " " PF_D },
                { "{vendor: \"15b3\"}", PF_A " " PF_B " " PF_D },
                { "{vendor: \"8086\"}", PF_C " " PF_E },
                { "{deviceID: \"159B\"}", PF_C },
                { "{vendor: \"15b3\", deviceID: \"101b\"}", PF_A " " PF_B },
                { "{rootDevices: [\"0000:3B:00.1\"]}", PF_B },
                { "{rootDevices: [\"0000:3b:00.1\", \"" PF_C "\"]}", PF_B " " PF_C },
                { "{pfNames: [ens1f0]}", PF_A },
                { "{pfNames: [ens1f0, eno1]}", PF_A " " PF_C },
                { "{pfNames: [\"ens1f1#0-1\"]}", PF_B },
                /* upstream TestValidatePolicyForNodeStateWithPfNameMatchingAlternativeName,
                 * ...WithPfNameAndVfRangeMatchingAlternativeName */
                { "{pfNames: [enp59s0f1np1]}", PF_B },
                { "{pfNames: [\"enp59s0f1np1#0-1\"]}", PF_B },
                { "{pfNames: [enp59s0f0np0]}", "" },
                { "{vendor: \"8086\", pfNames: [ens1f0]}", "" },
                { "{vendor: \"15b3\", rootDevices: [\"" PF_C "\"]}", "" },
                { "{pfNames: [nope]}", "" },
                { "{deviceID: \"1017\"}", "" }, /* a supported model this node lacks */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char y[2048] = "", got[256] = "";
                struct result res;
                add_doc(y, sizeof(y), "sel", 50, "r", 2, cases[i].nic, NULL);
                run(&res, y);
                for (size_t k = 0; k < res.desired.n_interfaces; k++)
                        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "",
                                 res.desired.interfaces[k].pci_address);
                if (strcmp(got, cases[i].pfs) != 0)
                        fail_msg("case %zu %s: selected \"%s\", want \"%s\"", i, cases[i].nic, got,
                                 cases[i].pfs);
                if (!cases[i].pfs[0])
                        expect_status(&res, "sel", POLICY_STATUS_NOT_SELECTED,
                                      "nicSelector matches no PF on this node");
                done(&res);
        }
}

static void test_pf_name_range_group(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "ranged", 10, "ranged_res", 8, "{pfNames: [\"ens1f0#2-5\"]}", NULL);
        run(&res, y);
        const struct desired_interface *d = iface(&res, PF_A);
        assert_int_equal(d->num_vfs, 8);
        assert_int_equal(d->groups[0].vf_start, 2);
        assert_int_equal(d->groups[0].vf_end, 5);
        done(&res);
}

/* Two ranges on one PF, different priorities: both groups carried, PF values the maximum. */
static void test_merge_carried_groups(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "low", 50, "res_low", 8, "{pfNames: [\"ens1f0#4-7\"]}",
                "  mtu: 9000\n");
        add_doc(y, sizeof(y), "high", 10, "res_high", 6, "{pfNames: [\"ens1f0#0-3\"]}",
                "  mtu: 1500\n  deviceType: vfio-pci\n");
        run(&res, y);
        const struct desired_interface *d = iface(&res, PF_A);
        assert_int_equal(d->n_groups, 2);
        /* the later (higher-priority) policy's group comes first, as upstream builds it */
        assert_string_equal(d->groups[0].resource_name, "res_high");
        assert_int_equal(d->groups[0].device_type, DEVICE_TYPE_VFIO_PCI);
        assert_string_equal(d->groups[1].resource_name, "res_low");
        assert_int_equal(d->groups[1].vf_start, 4);
        assert_int_equal(d->num_vfs, 8);
        assert_int_equal(d->mtu, 9000);
        expect_status(&res, "low", POLICY_STATUS_APPLIED, "VFs 4-7 as res_low");
        expect_status(&res, "high", POLICY_STATUS_APPLIED, "VFs 0-3 as res_high");
        done(&res);
}

/* Same resourceName, different priorities, nothing carried: the higher-priority policy's PF
 * values replace the lower one's (no maximum). */
static void test_merge_same_resource_replaces(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "low", 50, "shared", 8, "{vendor: \"15b3\", deviceID: \"101b\"}",
                "  mtu: 9000\n  linkType: eth\n");
        add_doc(y, sizeof(y), "high", 10, "shared", 4, "{pfNames: [ens1f0]}", "  mtu: 1500\n");
        run(&res, y);
        const struct desired_interface *a = iface(&res, PF_A), *b = iface(&res, PF_B);
        assert_int_equal(a->n_groups, 1);
        assert_string_equal(a->groups[0].policy_name, "high");
        assert_int_equal(a->num_vfs, 4);
        assert_int_equal(a->mtu, 1500);
        assert_int_equal(a->link_type, LINK_TYPE_UNKNOWN); /* replaced by high's (unset) */
        assert_int_equal(b->n_groups, 1);
        assert_string_equal(b->groups[0].policy_name, "low");
        assert_int_equal(b->num_vfs, 8);
        assert_int_equal(b->mtu, 9000);
        assert_int_equal(b->link_type, LINK_TYPE_ETH);
        expect_status(&res, "low", POLICY_STATUS_APPLIED,
                      "PF 0000:3b:00.0: its VF group was "
                      "replaced by a higher-priority");
        done(&res);
}

/* Same resourceName, equal priorities: the later name wins the group, PF values the maximum. */
static void test_merge_equal_priority_maximum(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "pb", 10, "shared", 8, "{pfNames: [ens1f0]}", "  mtu: 1500\n");
        add_doc(y, sizeof(y), "pa", 10, "shared", 4, "{rootDevices: [\"" PF_A "\"]}",
                "  mtu: 9000\n");
        run(&res, y);
        const struct desired_interface *a = iface(&res, PF_A);
        assert_int_equal(a->n_groups, 1);
        assert_string_equal(a->groups[0].policy_name, "pb"); /* applied after pa */
        assert_int_equal(a->groups[0].vf_end, 7);
        assert_int_equal(a->num_vfs, 8);
        assert_int_equal(a->mtu, 9000);
        expect_status(&res, "pa", POLICY_STATUS_NOT_SELECTED, "replaced by a higher-priority");
        done(&res);
}

/* Overlap through vendor selection (not a webhook conflict): the lower-priority group is
 * dropped on the overlapping PF only. */
static void test_merge_overlap_drops_lower(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "wide", 60, "wide_res", 8, "{vendor: \"15b3\", deviceID: \"101b\"}",
                NULL);
        add_doc(y, sizeof(y), "narrow", 5, "narrow_res", 8, "{pfNames: [\"ens1f0#0-3\"]}",
                "  eSwitchMode: legacy\n  externallyManaged: false\n");
        run(&res, y);
        const struct desired_interface *a = iface(&res, PF_A), *b = iface(&res, PF_B);
        assert_int_equal(a->n_groups, 1);
        assert_non_null(group(a, "narrow_res"));
        assert_null(group(a, "wide_res"));
        assert_int_equal(a->eswitch_mode, ESWITCH_MODE_LEGACY);
        assert_int_equal(b->n_groups, 1);
        assert_non_null(group(b, "wide_res"));
        expect_status(&res, "wide", POLICY_STATUS_APPLIED, "PF 0000:3b:00.1 (ens1f1) VFs 0-7");
        done(&res);
}

static void test_merge_deterministic(void **state)
{
        char y1[8192] = "", y2[8192] = "";
        struct result r1, r2;
        json_t *j1, *j2;

        add_doc(y1, sizeof(y1), "one", 30, "r1", 8, "{pfNames: [\"ens1f0#0-3\"]}", NULL);
        add_doc(y1, sizeof(y1), "two", 30, "r2", 8, "{pfNames: [\"ens1f0#4-7\"]}", NULL);
        add_doc(y1, sizeof(y1), "three", 20, "r3", 4, "{vendor: \"8086\"}", NULL);
        add_doc(y2, sizeof(y2), "three", 20, "r3", 4, "{vendor: \"8086\"}", NULL);
        add_doc(y2, sizeof(y2), "two", 30, "r2", 8, "{pfNames: [\"ens1f0#4-7\"]}", NULL);
        add_doc(y2, sizeof(y2), "one", 30, "r1", 8, "{pfNames: [\"ens1f0#0-3\"]}", NULL);
        run(&r1, y1);
        run(&r2, y2);
        assert_int_equal(desired_state_to_json(&r1.desired, &j1), 0);
        assert_int_equal(desired_state_to_json(&r2.desired, &j2), 0);
        assert_true(json_equal(j1, j2));
        json_decref(j1);
        json_decref(j2);
        done(&r1);
        done(&r2);
}

static void test_conflicts(void **state)
{
        static const struct {
                const char *win_nic, *win_extra, *lose_nic, *lose_extra;
                int win_prio, lose_prio;
                const char *win_res, *lose_res;
                const char *why; /* NULL: no conflict */
        } cases[] = {
                { "{pfNames: [ens1f0]}", NULL, "{pfNames: [ens1f0]}", NULL, 10, 20, "ra", "rb",
                  "pfNames VF ranges overlap on the same PF" },
                { "{pfNames: [\"ens1f0#0-3\"]}", NULL, "{pfNames: [\"ens1f0#2-5\"]}", NULL, 10, 20,
                  "ra", "rb", "pfNames VF ranges overlap" },
                { "{pfNames: [\"ens1f0#0-3\"]}", NULL, "{pfNames: [\"ens1f0#4-7\"]}", NULL, 10, 20,
                  "ra", "rb", NULL },
                { "{pfNames: [ens1f0]}", NULL, "{pfNames: [\"ens1f0#0-3\"]}", NULL, 10, 20, "ra",
                  "rb", NULL }, /* upstream: -1..-1 does not overlap 0..3 */
                { "{rootDevices: [\"" PF_B "\"]}", NULL, "{rootDevices: [\"" PF_B "\"]}", NULL, 10,
                  20, "ra", "rb", "the same rootDevice is selected twice" },
                { "{pfNames: [\"exts#0-1\"]}", "  externallyManaged: true\n",
                  "{pfNames: [\"exts#2-3\"]}", NULL, 10, 20, "ra", "rb",
                  "externallyManaged differs on the same PF" },
                { "{pfNames: [ens1f0]}", "  excludeTopology: true\n", "{pfNames: [ens1f1]}", NULL,
                  10, 20, "same", "same", "excludeTopology differs for the same resourceName" },
                { "{pfNames: [ens1f0]}", NULL, "{pfNames: [ens1f0]}", NULL, 10, 10, "ra", "rb",
                  "pfNames VF ranges overlap" }, /* equal priority: name order */
                { "{vendor: \"15b3\"}", NULL, "{vendor: \"15b3\"}", NULL, 10, 20, "ra", "rb",
                  NULL }, /* vendor-only: priority decides in the merge */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char y[4096] = "";
                struct result res;
                /* the loser first in the input, to show input order does not matter */
                add_doc(y, sizeof(y), "bbb-loser", cases[i].lose_prio, cases[i].lose_res, 8,
                        cases[i].lose_nic, cases[i].lose_extra);
                add_doc(y, sizeof(y), "aaa-winner", cases[i].win_prio, cases[i].win_res, 8,
                        cases[i].win_nic, cases[i].win_extra);
                run(&res, y);
                expect_status(&res, "aaa-winner", POLICY_STATUS_APPLIED, NULL);
                if (cases[i].why) {
                        expect_status(&res, "bbb-loser", POLICY_STATUS_CONFLICT, cases[i].why);
                        expect_status(&res, "bbb-loser", POLICY_STATUS_CONFLICT,
                                      "conflicts with policy aaa-winner");
                        assert_true(policy_report_has_errors(&res.report));
                        for (size_t k = 0; k < res.desired.n_interfaces; k++)
                                for (size_t g = 0; g < res.desired.interfaces[k].n_groups; g++)
                                        assert_string_not_equal(
                                            res.desired.interfaces[k].groups[g].policy_name,
                                            "bbb-loser");
                } else
                        assert_int_not_equal(status_of(&res, "bbb-loser")->status,
                                             POLICY_STATUS_CONFLICT);
                done(&res);
        }
}

static void test_node_checks(void **state)
{
        static const struct {
                const char *nic, *extra;
                int num_vfs;
                enum policy_status status;
                const char *why;
        } cases[] = {
                { "{pfNames: [eno1]}", NULL, 65, POLICY_STATUS_INVALID,
                  "PF 0000:5e:00.0 (eno1): field spec.numVfs: numVfs 65 exceeds the PF's "
                  "sriov_totalvfs 64" },
                /* NVIDIA: a firmware limit, reported by the plan as the PF's failure. */
                { "{pfNames: [ens1f0]}", NULL, 17, POLICY_STATUS_APPLIED, NULL },
                { "{pfNames: [mlxbig]}", NULL, 129, POLICY_STATUS_INVALID,
                  "numVfs 129 exceeds 128, the maximum for Mellanox NICs" },
                { "{pfNames: [mlxbig]}", NULL, 128, POLICY_STATUS_APPLIED, NULL },
                { "{pfNames: [eno1]}", NULL, 64, POLICY_STATUS_APPLIED, NULL },
                { "{pfNames: [ens1f0]}", NULL, 0, POLICY_STATUS_INVALID,
                  "numVfs 0 is not allowed on a selected PF" },
                { "{pfNames: [exts]}", "  externallyManaged: true\n", 9, POLICY_STATUS_INVALID,
                  "externally managed PF has 8 VFs, policy needs 9" },
                { "{pfNames: [exts]}", "  externallyManaged: true\n  mtu: 9100\n", 4,
                  POLICY_STATUS_INVALID, "externally managed PF has MTU 9000, policy wants 9100" },
                { "{pfNames: [exts]}", "  externallyManaged: true\n  linkType: ib\n", 4,
                  POLICY_STATUS_INVALID, "field spec.linkType: externally managed PF has link" },
                { "{pfNames: [exts]}", "  externallyManaged: true\n", 4, POLICY_STATUS_APPLIED,
                  NULL },
                { "{netFilter: \"openstack/NetworkID:0c1a\"}", NULL, 1, POLICY_STATUS_NOT_SELECTED,
                  "unsupported on this node: nicSelector.netFilter" },
                { "{pfNames: [ens1f0]}", "  bridge: {ovs: {}}\n", 2, POLICY_STATUS_NOT_SELECTED,
                  "unsupported on this node: spec.bridge" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char y[4096] = "";
                struct result res;
                add_doc(y, sizeof(y), "chk", 40, "r", cases[i].num_vfs, cases[i].nic,
                        cases[i].extra);
                run(&res, y);
                expect_status(&res, "chk", cases[i].status, cases[i].why);
                if (cases[i].status != POLICY_STATUS_APPLIED)
                        assert_int_equal(res.desired.n_interfaces, 0);
                done(&res);
        }
}

static void test_switchdev_without_eswitch(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "sw", 40, "r", 2, "{pfNames: [ens1f0]}",
                "  eSwitchMode: switchdev\n");
        *(&res) = (struct result){ 0 };
        make_node(&res.inv);
        res.inv.pfs[0].eswitch_mode[0] = '\0'; /* no devlink eswitch */
        assert_int_equal(policy_list_add_buffer(&res.list, "t.yaml", y, strlen(y)), 0);
        assert_int_equal(policy_build_desired_state(res.list.items, res.list.n_items, node_labels,
                                                    2, &res.inv, &res.desired, &res.report),
                         0);
        expect_status(&res, "sw", POLICY_STATUS_NOT_SELECTED, "eSwitchMode switchdev requested");
        done(&res);
}

static void test_mixed_valid_and_invalid(void **state)
{
        char y[8192] = "";
        struct result res;

        add_doc(y, sizeof(y), "good", 40, "good_res", 4, "{pfNames: [ens1f1]}", NULL);
        add_doc(y, sizeof(y), "bad", 40, "bad-", 4, "{pfNames: [ens1f0]}", NULL);
        add_doc(y, sizeof(y), "default", 40, "dflt", 4, "{pfNames: [eno1]}", NULL);
        strcat(y, "---\n[broken\n");
        run(&res, y);
        assert_int_equal(res.report.n_results, 1); /* a syntax error makes the file invalid */
        assert_null(res.report.results[0].name);
        assert_int_equal(res.report.results[0].status, POLICY_STATUS_INVALID);
        assert_non_null(strstr(res.report.results[0].reason, "t.yaml: not valid YAML/JSON"));
        done(&res);

        y[strlen(y) - strlen("---\n[broken\n")] = '\0';
        run(&res, y);
        expect_status(&res, "good", POLICY_STATUS_APPLIED, NULL);
        expect_status(&res, "bad", POLICY_STATUS_INVALID,
                      "t.yaml document 2: policy bad: field spec.resourceName");
        expect_status(&res, "default", POLICY_STATUS_NOT_SELECTED, "deprecated");
        assert_true(policy_report_has_errors(&res.report));
        assert_int_equal(res.desired.n_interfaces, 1);
        assert_string_equal(res.desired.interfaces[0].pci_address, PF_B);
        done(&res);
}

static void test_duplicate_names(void **state)
{
        char y[4096] = "";
        struct result res;

        add_doc(y, sizeof(y), "twice", 40, "first", 2, "{pfNames: [ens1f0]}", NULL);
        add_doc(y, sizeof(y), "twice", 10, "second", 2, "{pfNames: [ens1f1]}", NULL);
        run(&res, y);
        assert_int_equal(res.report.results[0].status, POLICY_STATUS_APPLIED);
        assert_int_equal(res.report.results[1].status, POLICY_STATUS_INVALID);
        assert_non_null(strstr(res.report.results[1].reason,
                               "t.yaml document 2: policy twice: field metadata.name: duplicate "
                               "of the policy in t.yaml document 1"));
        assert_int_equal(res.desired.n_interfaces, 1);
        done(&res);
}

static void test_policy_selects_pf_api(void **state)
{
        struct inventory inv;
        struct policy_list list = { 0 };
        struct pf_selection sel;
        const char *y = "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                        "metadata: {name: x}\nspec: {numVfs: 8, nicSelector: {pfNames: "
                        "[\"ens1f1#1-2\", \"ens1f0\"]}}\n";

        make_node(&inv);
        assert_int_equal(policy_list_add_buffer(&list, "x", y, strlen(y)), 0);
        assert_true(policy_selects_pf(&list.items[0], &inv.pfs[1], &sel));
        assert_int_equal(sel.vf_start, 1);
        assert_int_equal(sel.vf_end, 2);
        assert_non_null(sel.by_pf_name);
        assert_true(policy_selects_pf(&list.items[0], &inv.pfs[0], &sel));
        assert_int_equal(sel.vf_start, 0);
        assert_int_equal(sel.vf_end, 7);
        assert_false(policy_selects_pf(&list.items[0], &inv.pfs[2], &sel));
        policy_list_done(&list);
        inventory_done(&inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seed_policy),
                cmocka_unit_test(test_node_selector),
                cmocka_unit_test(test_nic_selector),
                cmocka_unit_test(test_pf_name_range_group),
                cmocka_unit_test(test_merge_carried_groups),
                cmocka_unit_test(test_merge_same_resource_replaces),
                cmocka_unit_test(test_merge_equal_priority_maximum),
                cmocka_unit_test(test_merge_overlap_drops_lower),
                cmocka_unit_test(test_merge_deterministic),
                cmocka_unit_test(test_conflicts),
                cmocka_unit_test(test_node_checks),
                cmocka_unit_test(test_switchdev_without_eswitch),
                cmocka_unit_test(test_mixed_valid_and_invalid),
                cmocka_unit_test(test_duplicate_names),
                cmocka_unit_test(test_policy_selects_pf_api),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
