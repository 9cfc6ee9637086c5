/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ib-guids.h"
#include "util/array.h"

#define NVIDIA_VENDOR_ID 0x15b3

static const char *const action_kind_names[_ACTION_KIND_MAX] = {
        [ACTION_SET_NUM_VFS] = "set-num-vfs", [ACTION_SET_ESWITCH_MODE] = "set-eswitch-mode",
        [ACTION_SET_PF_MTU] = "set-pf-mtu",   [ACTION_PF_LINK_UP] = "pf-link-up",
        [ACTION_BIND_DRIVER] = "bind-driver", [ACTION_SET_VF_MTU] = "set-vf-mtu",
        [ACTION_RESET_PF] = "reset-pf",       [ACTION_RESTORE_PF_MTU] = "restore-pf-mtu",
        [ACTION_SET_VF_GUID] = "set-vf-guid",
};

const char *action_kind_to_string(enum action_kind k)
{
        return (unsigned)k < _ACTION_KIND_MAX ? action_kind_names[k] : "";
}

/* Drivers that leave the VF without a kernel netdev (upstream's DPDK driver list). */
static bool driver_is_userspace(const char *driver)
{
        return strcmp(driver, "vfio-pci") == 0 || strcmp(driver, "igb_uio") == 0 ||
               strcmp(driver, "uio_pci_generic") == 0;
}

struct builder {
        struct plan *plan;
        const struct desired_state *desired;
        size_t cap_actions;
};

static struct action *add_action(struct builder *b, enum action_kind kind, const struct pf_info *pf,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct action *add_action(struct builder *b, enum action_kind kind, const struct pf_info *pf,
                                 const char *fmt, ...)
{
        struct plan *p = b->plan;
        struct action *a;
        va_list ap;

        if (p->n_actions == b->cap_actions) {
                size_t cap = b->cap_actions ? b->cap_actions * 2 : 64;
                struct action *arr = reallocarray(p->actions, cap, sizeof(*arr));
                if (!arr)
                        return NULL;
                p->actions = arr;
                b->cap_actions = cap;
        }
        a = &p->actions[p->n_actions++];
        *a = (struct action){ .kind = kind, .vf_index = -1 };
        snprintf(a->pf, sizeof(a->pf), "%s", pf->pci_address);
        snprintf(a->pf_name, sizeof(a->pf_name), "%s",
                 pf_netdev_name(pf) ? pf_netdev_name(pf) : "");
        va_start(ap, fmt);
        vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
        va_end(ap);
        return a;
}

static int add_problem_va(struct plan *p, const char *pci, bool pf_failed, const char *fmt,
                          va_list ap) __attribute__((format(printf, 4, 0)));

static int add_problem_va(struct plan *p, const char *pci, bool pf_failed, const char *fmt,
                          va_list ap)
{
        if (GROW_ARRAY(p->problems, p->cap_problems, p->n_problems + 1) < 0)
                return -ENOMEM;
        struct plan_problem *problem = &p->problems[p->n_problems];
        *problem = (struct plan_problem){ .pf_failed = pf_failed };
        snprintf(problem->pf, sizeof(problem->pf), "%s", pci);
        vsnprintf(problem->message, sizeof(problem->message), fmt, ap);
        p->n_problems++;
        return 0;
}

static int add_problem(struct plan *p, const char *pci, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_problem(struct plan *p, const char *pci, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = add_problem_va(p, pci, false, fmt, ap);
        va_end(ap);
        return r;
}

/* A problem that leaves the PF alone until the user acts: reported as that PF's failure. */
static int add_failure(struct plan *p, const char *pci, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_failure(struct plan *p, const char *pci, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = add_problem_va(p, pci, true, fmt, ap);
        va_end(ap);
        return r;
}

static const struct netdev_info *pf_netdev(const struct pf_info *pf)
{
        return pf->n_netdevs > 0 ? &pf->netdevs[0] : NULL;
}

static int plan_pf_level(struct builder *b, const struct desired_interface *d,
                         const struct pf_info *pf, bool *ret_recreate)
{
        const struct netdev_info *nd = pf_netdev(pf);
        struct action *a;

        *ret_recreate = false;
        if (d->externally_managed) {
                if (pf->num_vfs < d->num_vfs)
                        return add_problem(b->plan, pf->pci_address,
                                           "externally managed PF has %d VFs, %d are needed",
                                           pf->num_vfs, d->num_vfs);
        } else if (pf->num_vfs != d->num_vfs) {
                a = add_action(b, ACTION_SET_NUM_VFS, pf, "PF has %d VFs, %d wanted", pf->num_vfs,
                               d->num_vfs);
                if (!a)
                        return -ENOMEM;
                a->value = d->num_vfs;
                *ret_recreate = true;
        }
        if (d->eswitch_mode != ESWITCH_MODE_UNSET && pf->eswitch_mode[0] &&
            strcmp(pf->eswitch_mode, eswitch_mode_to_string(d->eswitch_mode)) != 0) {
                a = add_action(b, ACTION_SET_ESWITCH_MODE, pf, "eswitch mode is %s, %s wanted",
                               pf->eswitch_mode, eswitch_mode_to_string(d->eswitch_mode));
                if (!a)
                        return -ENOMEM;
                snprintf(a->text, sizeof(a->text), "%s", eswitch_mode_to_string(d->eswitch_mode));
        }
        if (nd && d->mtu > 0 && nd->mtu < d->mtu && !d->externally_managed) {
                a = add_action(b, ACTION_SET_PF_MTU, pf, "PF MTU %d is below %d", nd->mtu, d->mtu);
                if (!a)
                        return -ENOMEM;
                a->value = d->mtu;
        }
        if (nd && !nd->admin_up &&
            !add_action(b, ACTION_PF_LINK_UP, pf, "PF is administratively down"))
                return -ENOMEM;
        return 0;
}

/* The VF as it will be when the per-VF steps run: NULL when it is being (re)created. */
static const struct vf_info *current_vf(const struct pf_info *pf, int index, bool recreate)
{
        return recreate ? NULL : pf_find_vf(pf, index);
}

static struct action *add_vf_action(struct builder *b, enum action_kind kind,
                                    const struct pf_info *pf, int index, const struct vf_info *vf,
                                    const char *reason)
{
        struct action *a = add_action(b, kind, pf, "VF %d: %s", index, reason);

        if (a) {
                a->vf_index = index;
                snprintf(a->vf_address, sizeof(a->vf_address), "%s", vf ? vf->pci_address : "");
        }
        return a;
}

/* Returns whether the VF gets a new driver (its netdev state is then unknown). */
static int plan_vf_bind(struct builder *b, const struct vf_group *g, const struct pf_info *pf,
                        int index, bool recreate, bool *ret_rebind)
{
        const struct vf_info *vf = current_vf(pf, index, recreate);
        const char *driver = vf ? vf->driver : NULL;
        bool want_vfio = g->device_type == DEVICE_TYPE_VFIO_PCI;
        char reason[256];
        struct action *a;

        *ret_rebind = false;
        if (want_vfio && driver && strcmp(driver, "vfio-pci") == 0)
                return 0;
        if (!want_vfio && (recreate || (driver && *driver && !driver_is_userspace(driver))))
                return 0; /* new VFs are probed by their kernel driver */
        if (!vf && !recreate)
                return 0; /* the VF does not exist and will not: nothing to bind */
        snprintf(reason, sizeof(reason), "driver %s, group %s wants %s",
                 driver ? (*driver ? driver : "none") : "(new VF)", g->resource_name,
                 want_vfio ? "vfio-pci" : "its kernel driver");
        a = add_vf_action(b, ACTION_BIND_DRIVER, pf, index, vf, reason);
        if (!a)
                return -ENOMEM;
        snprintf(a->text, sizeof(a->text), "%s", want_vfio ? "vfio-pci" : "");
        *ret_rebind = true;
        return 0;
}

static int plan_vf_mtu(struct builder *b, const struct vf_group *g, const struct pf_info *pf,
                       int index, bool recreate, bool rebound)
{
        const struct vf_info *vf = current_vf(pf, index, recreate);
        bool unknown = recreate || rebound;
        char reason[256];
        struct action *a;

        if (g->device_type != DEVICE_TYPE_NETDEVICE || g->mtu <= 0)
                return 0;
        if (!unknown) {
                if (!vf || vf->n_netdevs == 0 || vf->netdevs[0].mtu == g->mtu)
                        return 0;
                snprintf(reason, sizeof(reason), "MTU %d, group %s wants %d", vf->netdevs[0].mtu,
                         g->resource_name, g->mtu);
        } else
                snprintf(reason, sizeof(reason), "new driver or VF, group %s wants MTU %d",
                         g->resource_name, g->mtu);
        a = add_vf_action(b, ACTION_SET_VF_MTU, pf, index, vf, reason);
        if (!a)
                return -ENOMEM;
        a->value = g->mtu;
        return 0;
}

/* InfiniBand PFs: every VF of a group gets a valid node and port GUID (plan/ib-guids.h).
 * Only VFs whose GUIDs the kernel reported are judged (a new VF is, the round after it
 * appears). A VF with a kernel driver is re-bound by the executor for its RDMA device to take
 * the GUID: its netdev state is then unknown (*ret_rebound).
 * A GUID has one owner: a VF whose GUID a live CNI attachment set is its pod's (whatever the VF
 * shows: the attachment's DEL puts back what it found), and the pool's GUID that another VF's
 * pod carries is not set on this VF while that pod runs (a warning: two VFs with one GUID on
 * the fabric). Once the attachment ends its VF is judged as any other again. */
static int plan_vf_guid(struct builder *b, const struct pf_info *pf, int index, bool recreate,
                        bool *ret_rebound)
{
        const struct vf_info *vf = current_vf(pf, index, recreate);
        char error[256], want_text[IB_GUID_TEXT_MAX], have_text[IB_GUID_TEXT_MAX];
        uint64_t want;

        if (!vf || !vf->has_ib_guids)
                return 0;
        if (ib_guid_for_vf(b->desired->ib_guids, pf, index, &want, error, sizeof(error)) < 0)
                return add_failure(b->plan, pf->pci_address, "%s", error);
        if (ib_guid_attachment_of_vf(b->desired->ib_attachments, vf->pci_address) ||
            (vf->ib_node_guid == want && vf->ib_port_guid == want))
                return 0;
        ib_guid_format(want, want_text);
        const struct ib_guid_attachment *other =
            ib_guid_attachment_holding(b->desired->ib_attachments, want, vf->pci_address);
        if (other)
                return add_problem(b->plan, pf->pci_address,
                                   "VF %d (%s): its GUID %s is not set while the pod of the CNI "
                                   "attachment %s on VF %s carries it (a GUID has one owner)",
                                   index, vf->pci_address, want_text, other->name, other->vf_pci);
        ib_guid_format(vf->ib_node_guid, have_text);
        char reason[128];
        snprintf(reason, sizeof(reason), "InfiniBand GUID %s%s, %s wanted", have_text,
                 ib_guid_is_valid(vf->ib_node_guid) ? "" : " (invalid)", want_text);
        struct action *a = add_vf_action(b, ACTION_SET_VF_GUID, pf, index, vf, reason);
        if (!a)
                return -ENOMEM;
        a->guid = want;
        *ret_rebound = vf->driver[0] && strcmp(vf->driver, "vfio-pci") != 0;
        return 0;
}

static int plan_desired_pf(struct builder *b, const struct desired_interface *d,
                           const struct pf_info *pf)
{
        const struct netdev_info *nd = pf_netdev(pf);
        bool recreate, *rebound;
        int r;

        /* Upstream's NVIDIA plugin changes the port type and the VF limit in firmware and
         * reboots the node. This agent never changes firmware or reboots: it says what to do. */
        if (!d->externally_managed && d->link_type != LINK_TYPE_UNKNOWN && nd &&
            nd->link_type != LINK_TYPE_UNKNOWN && nd->link_type != d->link_type)
                return add_failure(
                    b->plan, pf->pci_address,
                    "linkType %s wanted but the port is %s; sriov-agent does not change firmware: "
                    "set the port type with the vendor's firmware tool%s%s%s and reboot the node; "
                    "PF left alone",
                    link_type_to_string(d->link_type), link_type_to_string(nd->link_type),
                    pf->vendor == NVIDIA_VENDOR_ID ? " (NVIDIA: mlxconfig -d " : "",
                    pf->vendor == NVIDIA_VENDOR_ID ? pf->pci_address : "",
                    pf->vendor == NVIDIA_VENDOR_ID
                        ? (d->link_type == LINK_TYPE_IB ? " set LINK_TYPE_P<port>=1)"
                                                        : " set LINK_TYPE_P<port>=2)")
                        : "");
        if (!d->externally_managed && d->num_vfs > pf->total_vfs && pf->vendor == NVIDIA_VENDOR_ID)
                return add_failure(
                    b->plan, pf->pci_address,
                    "%d VFs wanted but sriov_totalvfs is %d; sriov-agent does not change firmware: "
                    "raise the VF limit with the vendor's firmware tool (NVIDIA: mlxconfig -d %s "
                    "set SRIOV_EN=1 NUM_OF_VFS=%d) and reboot the node; PF left alone",
                    d->num_vfs, pf->total_vfs, pf->pci_address, d->num_vfs);
        if (!d->externally_managed && d->num_vfs > pf->total_vfs)
                return add_failure(b->plan, pf->pci_address,
                                   "%d VFs wanted but sriov_totalvfs is %d; PF left alone",
                                   d->num_vfs, pf->total_vfs);
        r = plan_pf_level(b, d, pf, &recreate);
        if (r < 0)
                return r;
        rebound = calloc((size_t)d->num_vfs + 1, sizeof(*rebound));
        if (!rebound)
                return -ENOMEM;
        const bool ib = d->link_type == LINK_TYPE_IB || (nd && nd->link_type == LINK_TYPE_IB);
        for (int i = 0; ib && r >= 0 && i < d->num_vfs; i++)
                if (desired_interface_group_of_vf(d, i))
                        r = plan_vf_guid(b, pf, i, recreate, &rebound[i]);
        for (int i = 0; r >= 0 && i < d->num_vfs; i++) {
                const struct vf_group *g = desired_interface_group_of_vf(d, i);
                bool rebind = false;
                if (g)
                        r = plan_vf_bind(b, g, pf, i, recreate, &rebind);
                rebound[i] = rebound[i] || rebind;
        }
        for (int i = 0; r >= 0 && i < d->num_vfs; i++) {
                const struct vf_group *g = desired_interface_group_of_vf(d, i);
                if (g)
                        r = plan_vf_mtu(b, g, pf, i, recreate, rebound[i]);
        }
        free(rebound);
        return r;
}

static int plan_reset_pf(struct builder *b, const struct applied_pf *prev, const struct pf_info *pf)
{
        const struct netdev_info *nd = pf_netdev(pf);
        struct action *a;

        if (prev->applied.externally_managed)
                return 0; /* its VFs were never ours to remove */
        /* Back to the VF count it had before we adopted it: VFs someone else made are theirs. */
        if (pf->num_vfs != prev->original_num_vfs) {
                if (prev->original_num_vfs > 0)
                        a = add_action(b, ACTION_RESET_PF, pf,
                                       "no policy selects this PF any more; restoring its "
                                       "original %d VFs (now %d)",
                                       prev->original_num_vfs, pf->num_vfs);
                else
                        a = add_action(b, ACTION_RESET_PF, pf,
                                       "no policy selects this PF any more; removing its %d VFs",
                                       pf->num_vfs);
                if (!a)
                        return -ENOMEM;
                a->value = prev->original_num_vfs;
        }
        if (prev->original_eswitch_mode[0] && pf->eswitch_mode[0] &&
            strcmp(prev->original_eswitch_mode, pf->eswitch_mode) != 0) {
                a = add_action(b, ACTION_SET_ESWITCH_MODE, pf, "restoring original eswitch mode %s",
                               prev->original_eswitch_mode);
                if (!a)
                        return -ENOMEM;
                snprintf(a->text, sizeof(a->text), "%s", prev->original_eswitch_mode);
        }
        if (nd && prev->original_mtu > 0 && nd->mtu != prev->original_mtu) {
                a = add_action(b, ACTION_RESTORE_PF_MTU, pf, "restoring original MTU %d (now %d)",
                               prev->original_mtu, nd->mtu);
                if (!a)
                        return -ENOMEM;
                a->value = prev->original_mtu;
        }
        return 0;
}

static int record_applied(struct plan *p, const struct desired_interface *d,
                          const struct pf_info *pf, const struct applied_pf *prev)
{
        const struct netdev_info *nd = pf_netdev(pf);
        struct applied_pf rec = { 0 };
        int r;

        snprintf(rec.pci_address, sizeof(rec.pci_address), "%s", d->pci_address);
        rec.original_mtu = prev ? prev->original_mtu : (nd && nd->mtu > 0 ? nd->mtu : 0);
        rec.original_num_vfs = prev ? prev->original_num_vfs : pf->num_vfs;
        snprintf(rec.original_eswitch_mode, sizeof(rec.original_eswitch_mode), "%s",
                 prev ? prev->original_eswitch_mode : pf->eswitch_mode);
        rec.applied = *d;
        rec.applied.groups = NULL;
        if (d->n_groups > 0) {
                rec.applied.groups = calloc(d->n_groups, sizeof(*d->groups));
                if (!rec.applied.groups)
                        return -ENOMEM;
                memcpy(rec.applied.groups, d->groups, d->n_groups * sizeof(*d->groups));
        }
        r = applied_state_take(&p->applied, &rec);
        if (r < 0)
                applied_pf_done(&rec);
        return r;
}

/* One PF to look at: desired, or previously applied and no longer desired. */
struct pf_job {
        const char *pci;
        const struct desired_interface *desired;
        const struct applied_pf *previous;
};

static int cmp_job(const void *a, const void *b)
{
        return strcmp(((const struct pf_job *)a)->pci, ((const struct pf_job *)b)->pci);
}

static int run_job(struct builder *b, const struct pf_job *job, const struct inventory *observed)
{
        const struct pf_info *pf = inventory_find_pf(observed, job->pci);
        struct applied_pf keep;
        int r;

        if (!pf && job->desired)
                return add_problem(b->plan, job->pci, "desired PF not found on this node");
        if (!pf) {
                /* Keep owning it: it may come back (driver reload) and still need a reset. */
                r = add_problem(b->plan, job->pci,
                                "previously configured PF not found; its "
                                "reset is postponed");
                if (r < 0 || applied_pf_copy(job->previous, &keep) < 0)
                        return -ENOMEM;
                r = applied_state_take(&b->plan->applied, &keep);
                if (r < 0)
                        applied_pf_done(&keep);
                return r;
        }
        if (!job->desired)
                return plan_reset_pf(b, job->previous, pf);
        r = plan_desired_pf(b, job->desired, pf);
        if (r < 0)
                return r;
        return record_applied(b->plan, job->desired, pf, job->previous);
}

int plan_build(const struct desired_state *desired, const struct inventory *observed,
               const struct applied_state *previous, struct plan *ret)
{
        struct builder b = { .plan = ret, .desired = desired };
        struct pf_job *jobs;
        size_t n_jobs = 0;
        int r = 0;

        *ret = (struct plan){ 0 };
        jobs = calloc(desired->n_interfaces + (previous ? previous->n_pfs : 0) + 1, sizeof(*jobs));
        if (!jobs)
                return -ENOMEM;
        for (size_t i = 0; i < desired->n_interfaces; i++) {
                const struct desired_interface *d = &desired->interfaces[i];
                jobs[n_jobs++] = (struct pf_job){
                        .pci = d->pci_address,
                        .desired = d,
                        .previous = applied_state_find(previous, d->pci_address),
                };
        }
        for (size_t i = 0; previous && i < previous->n_pfs; i++)
                if (!desired_find_interface(desired, previous->pfs[i].pci_address))
                        jobs[n_jobs++] = (struct pf_job){ .pci = previous->pfs[i].pci_address,
                                                          .previous = &previous->pfs[i] };
        if (n_jobs > 1)
                qsort(jobs, n_jobs, sizeof(*jobs), cmp_job);
        for (size_t i = 0; r >= 0 && i < n_jobs; i++)
                r = run_job(&b, &jobs[i], observed);
        free(jobs);
        if (r < 0)
                plan_done(ret);
        return r;
}

void plan_done(struct plan *p)
{
        free(p->actions);
        free(p->problems);
        applied_state_done(&p->applied);
        *p = (struct plan){ 0 };
}
