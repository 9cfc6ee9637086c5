/* SPDX-License-Identifier: Apache-2.0 */
#include "nad/decide.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "util/macro.h"

static json_t *meta(json_t *o)
{
        return json_object_get(o, "metadata");
}

static const char *meta_str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(meta(o), key));
}

static const char *annotation(json_t *o, const char *key)
{
        return json_string_value(json_object_get(json_object_get(meta(o), "annotations"), key));
}

static const char *label(json_t *o, const char *key)
{
        return json_string_value(json_object_get(json_object_get(meta(o), "labels"), key));
}

static bool streq(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

enum nad_ownership nad_ownership(json_t *nad, const char *owner)
{
        const char *o = annotation(nad, NAD_ANNOTATION_OWNER);
        if (!o)
                return NAD_NO_OWNER;
        if (!streq(o, owner))
                return NAD_OTHER_OWNER;
        return streq(label(nad, NAD_LABEL_RENDERED_BY), NAD_LABEL_RENDERED_BY_VALUE)
                   ? NAD_OURS
                   : NAD_OURS_UNLABELED;
}

void nad_action_clear(struct nad_action *a)
{
        free(a->namespace_);
        free(a->name);
        free(a->message);
        json_decref(a->body);
        json_decref(a->event);
        *a = (struct nad_action){ .type = NAD_ACTION_NONE };
}

static int say(struct nad_action *a, int level, bool outcome, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int say(struct nad_action *a, int level, bool outcome, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        free(a->message);
        a->message = NULL;
        int k = vasprintf(&a->message, fmt, ap);
        va_end(ap);
        if (k < 0) {
                a->message = NULL;
                return -ENOMEM;
        }
        a->level = level;
        a->outcome = outcome;
        return 0;
}

/* An action on the NAD ns/name; body is stolen (NULL allowed: READ, or no memory). */
static int on_nad(struct nad_action *a, enum nad_action_type type, const char *ns, const char *name,
                  json_t *body)
{
        a->type = type;
        a->namespace_ = strdup(ns);
        a->name = strdup(name);
        a->body = body;
        if (!a->namespace_ || !a->name || (type != NAD_ACTION_READ && !body))
                return -ENOMEM;
        return 0;
}

static bool has_finalizer(json_t *network)
{
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(meta(network), "finalizers"), i, f)
        {
                if (streq(json_string_value(f), NAD_NETWORK_FINALIZER))
                        return true;
        }
        return false;
}

/* A merge patch of the network's metadata (stolen), guarded by its resourceVersion. */
static int patch_network(struct nad_action *a, json_t *network, json_t *metadata_patch)
{
        if (!metadata_patch)
                return -ENOMEM;
        json_object_set_new(metadata_patch, "resourceVersion",
                            json_string(meta_str(network, "resourceVersion")));
        a->type = NAD_ACTION_NETWORK_PATCH;
        /* "o" steals metadata_patch also when json_pack fails. */
        a->body = json_pack("{s:o}", "metadata", metadata_patch);
        return a->body ? 0 : -ENOMEM;
}

static int set_finalizer(struct nad_action *a, json_t *network, bool on)
{
        json_t *list = json_array();
        size_t i;
        json_t *f;
        if (!list)
                return -ENOMEM;
        json_array_foreach(json_object_get(meta(network), "finalizers"), i, f)
        {
                if (!streq(json_string_value(f), NAD_NETWORK_FINALIZER))
                        json_array_append(list, f);
        }
        if (on)
                json_array_append_new(list, json_string(NAD_NETWORK_FINALIZER));
        return patch_network(a, network, json_pack("{s:o}", "finalizers", list));
}

/* The Ready condition: a status write (and an Event) only when it changes; the outcome is
 * logged either way (the caller logs changes only). */
static int condition(struct nad_action *a, const struct nad_decide_input *in, const char *key,
                     bool ready, const char *reason, const char *message)
{
        json_t *network = in->network;
        if (say(a, ready ? LOG_INFO : LOG_WARNING, true, "%s: %s", key, message) < 0)
                return -ENOMEM;
        json_t *conds = json_object_get(json_object_get(network, "status"), "conditions");
        json_t *cur = NULL, *c;
        size_t i;
        json_array_foreach(conds, i, c)
        {
                if (streq(json_string_value(json_object_get(c, "type")), "Ready"))
                        cur = c;
        }
        const char *want_status = ready ? "True" : "False";
        const json_int_t generation =
            json_integer_value(json_object_get(meta(network), "generation"));
        const char *cur_status = json_string_value(json_object_get(cur, "status"));
        const bool same_state = streq(cur_status, want_status) &&
                                streq(json_string_value(json_object_get(cur, "reason")), reason) &&
                                streq(json_string_value(json_object_get(cur, "message")), message);
        if (same_state &&
            json_integer_value(json_object_get(cur, "observedGeneration")) == generation)
                return 0;
        const char *transition = streq(cur_status, want_status)
                                     ? json_string_value(json_object_get(cur, "lastTransitionTime"))
                                     : NULL;
        json_t *cond =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", "Ready", "status", want_status,
                      "reason", reason, "message", message, "lastTransitionTime",
                      transition ? transition : in->now, "observedGeneration", generation);
        json_t *list = json_array();
        if (!cond || !list) {
                json_decref(cond);
                json_decref(list);
                return -ENOMEM;
        }
        json_array_foreach(conds, i, c)
        {
                if (c != cur)
                        json_array_append(list, c);
        }
        json_array_append_new(list, cond);
        a->type = NAD_ACTION_NETWORK_STATUS;
        a->body = json_pack("{s:{s:s?}, s:{s:o}}", "metadata", "resourceVersion",
                            meta_str(network, "resourceVersion"), "status", "conditions", list);
        if (!a->body)
                return -ENOMEM;
        /* upstream: one Event per transition, ReadyAdded / ReadyChanged, the message as note;
         * a False condition is a Warning here so `kubectl get events` flags it. */
        if (!same_state) {
                a->event =
                    json_pack("{s:s, s:s, s:s}", "type", ready ? "Normal" : "Warning", "reason",
                              cur ? "ReadyChanged" : "ReadyAdded", "message", message);
                if (!a->event)
                        return -ENOMEM;
        }
        return 0;
}

static int unreadable(struct nad_action *a, const struct nad_decide_input *in, const char *key,
                      const char *ns, const char *name, const char *error)
{
        _cleanup_free_ char *msg = NULL;
        if (asprintf(&msg,
                     "cannot read NetworkAttachmentDefinition %s/%s (%s); it is not written "
                     "until it can be read",
                     ns, name, error ? error : "unknown error") < 0)
                return -ENOMEM;
        return condition(a, in, key, false, NAD_REASON_UNREADABLE, msg);
}

/* Ours to write: spec, annotations and ownerReferences as rendered, our label (a NAD's other
 * labels are its users' and kept). */
static bool nad_matches(json_t *have, json_t *want)
{
        json_t *hm = meta(have), *wm = meta(want);
        json_t *href = json_object_get(hm, "ownerReferences"),
               *wref = json_object_get(wm, "ownerReferences");
        return json_equal(json_object_get(have, "spec"), json_object_get(want, "spec")) &&
               json_equal(json_object_get(hm, "annotations"), json_object_get(wm, "annotations")) &&
               ((!href && !wref) || (href && wref && json_equal(href, wref))) &&
               streq(label(have, NAD_LABEL_RENDERED_BY), NAD_LABEL_RENDERED_BY_VALUE);
}

static json_t *with_label(json_t *labels)
{
        json_t *l = labels ? json_deep_copy(labels) : json_object();
        if (l && json_object_set_new(l, NAD_LABEL_RENDERED_BY,
                                     json_string(NAD_LABEL_RENDERED_BY_VALUE)) < 0) {
                json_decref(l);
                return NULL;
        }
        return l;
}

/* The old NAD of a network at ns/name goes when it is ours. Returns 1 when an action was set
 * (a read, a delete or a report), 0 to go on. */
static int remove_if_ours(struct nad_action *a, const struct nad_decide_input *in, const char *key,
                          const char *owner, const char *ns, const char *name, const char *why)
{
        const struct nad_view v = in->lookup(ns, name, in->userdata);
        int k;
        switch (v.seen) {
        case NAD_SEEN_UNKNOWN:
                k = on_nad(a, NAD_ACTION_READ, ns, name, NULL);
                return k < 0 ? k : 1;
        case NAD_SEEN_UNREADABLE:
                k = unreadable(a, in, key, ns, name, v.error);
                return k < 0 ? k : 1;
        case NAD_SEEN_ABSENT:
                return 0;
        case NAD_SEEN_PRESENT:
                break;
        }
        const enum nad_ownership o = nad_ownership(v.object, owner);
        if (o != NAD_OURS && o != NAD_OURS_UNLABELED)
                return 0; /* not ours: never deleted */
        json_t *body =
            json_pack("{s:s, s:s, s:{s:s?}}", "kind", "DeleteOptions", "apiVersion", "v1",
                      "preconditions", "resourceVersion", meta_str(v.object, "resourceVersion"));
        if ((k = on_nad(a, NAD_ACTION_DELETE, ns, name, body)) < 0 ||
            (k = say(a, LOG_INFO, false, "%s: %s; deleting its NetworkAttachmentDefinition %s/%s",
                     key, why, ns, name)) < 0)
                return k;
        return 1;
}

static int decide(const struct nad_decide_input *in, struct nad_action *a)
{
        json_t *network = in->network;
        const char *name = meta_str(network, "name"), *ns = meta_str(network, "namespace");
        const char *target = nad_target_namespace(network);
        const char *last = annotation(network, NAD_NETWORK_LAST_NS);
        _cleanup_free_ char *owner = nad_owner_ref(in->kind, network);
        _cleanup_free_ char *key = NULL;
        int k;
        if (!name || !ns || !target || !owner)
                return 0;
        if (asprintf(&key, "%s %s/%s", nad_network_kind_name(in->kind), ns, name) < 0)
                return -ENOMEM;

        if (json_object_get(meta(network), "deletionTimestamp")) {
                if (!has_finalizer(network))
                        return 0;
                /* The NAD goes first (where it is now and where it was), then the finalizer. */
                if ((k = remove_if_ours(a, in, key, owner, target, name, "deleted")) != 0)
                        return k < 0 ? k : 0;
                if (last && *last && !streq(last, target) &&
                    (k = remove_if_ours(a, in, key, owner, last, name, "deleted")) != 0)
                        return k < 0 ? k : 0;
                return set_finalizer(a, network, false);
        }
        if (!has_finalizer(network))
                return set_finalizer(a, network, true);

        json_auto_t *want = NULL;
        _cleanup_free_ char *error = NULL;
        k = nad_render(in->kind, network, in->resource_prefix, &want, &error);
        if (k == -EINVAL) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "invalid, no NetworkAttachmentDefinition rendered: %s",
                             error ? error : "") < 0)
                        return -ENOMEM;
                return condition(a, in, key, false, NAD_REASON_INVALID, msg);
        }
        if (k < 0)
                return k;
        json_t *labels = with_label(json_object_get(meta(want), "labels"));
        if (!labels || json_object_set_new(meta(want), "labels", labels) < 0)
                return -ENOMEM;

        /* Moved to another namespace: the NAD in the old one goes (when it is ours). */
        if (last && *last && !streq(last, target)) {
                _cleanup_free_ char *why = NULL;
                if (asprintf(&why, "networkNamespace is now %s", target) < 0)
                        return -ENOMEM;
                if ((k = remove_if_ours(a, in, key, owner, last, name, why)) != 0)
                        return k < 0 ? k : 0;
        }

        if (!in->namespace_exists(target, in->userdata)) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "target namespace \"%s\" does not exist", target) < 0)
                        return -ENOMEM;
                return condition(a, in, key, false, NAD_REASON_NS_MISSING, msg);
        }

        const struct nad_view v = in->lookup(target, name, in->userdata);
        switch (v.seen) {
        case NAD_SEEN_UNKNOWN:
                return on_nad(a, NAD_ACTION_READ, target, name, NULL);
        case NAD_SEEN_UNREADABLE:
                return unreadable(a, in, key, target, name, v.error);
        case NAD_SEEN_ABSENT:
                if ((k = on_nad(a, NAD_ACTION_CREATE, target, name, json_incref(want))) < 0)
                        return k;
                return say(a, LOG_INFO, false, "%s: creating NetworkAttachmentDefinition %s/%s",
                           key, target, name);
        case NAD_SEEN_PRESENT:
                break;
        }
        json_t *have = v.object;
        _cleanup_free_ char *msg = NULL;
        switch (nad_ownership(have, owner)) {
        case NAD_OTHER_OWNER:
                if (asprintf(&msg,
                             "NetworkAttachmentDefinition '%s/%s' already exists and is owned by "
                             "%s",
                             target, name, annotation(have, NAD_ANNOTATION_OWNER)) < 0)
                        return -ENOMEM;
                return condition(a, in, key, false, NAD_REASON_INVALID, msg);
        case NAD_NO_OWNER:
                /* Upstream adopts it (and overwrites whatever another tool or a tenant put
                 * there); here the owner hands it over by annotating it. */
                if (asprintf(&msg,
                             "NetworkAttachmentDefinition '%s/%s' already exists and was not "
                             "rendered from this network (no " NAD_ANNOTATION_OWNER
                             " annotation); it is left alone: delete it, or annotate "
                             "it " NAD_ANNOTATION_OWNER "=%s to hand it over",
                             target, name, owner) < 0)
                        return -ENOMEM;
                return condition(a, in, key, false, NAD_REASON_INVALID, msg);
        case NAD_OURS_UNLABELED: {
                /* Rendered by an earlier version, which did not label: the label only, so its
                 * spec and annotations are not rewritten; the watch then shows it whole. */
                json_t *body = json_pack("{s:{s:{s:s}, s:s?}}", "metadata", "labels",
                                         NAD_LABEL_RENDERED_BY, NAD_LABEL_RENDERED_BY_VALUE,
                                         "resourceVersion", meta_str(have, "resourceVersion"));
                if ((k = on_nad(a, NAD_ACTION_LABEL, target, name, body)) < 0)
                        return k;
                return say(a, LOG_NOTICE, false,
                           "%s: NetworkAttachmentDefinition %s/%s was rendered without the "
                           "label " NAD_LABEL_SELECTOR "; adding it (nothing else changes)",
                           key, target, name);
        }
        case NAD_OURS:
                break;
        }
        if (!nad_matches(have, want)) {
                json_t *body = json_deep_copy(have);
                json_t *bm = meta(body), *wm = meta(want);
                if (!body || !bm) {
                        json_decref(body);
                        return -ENOMEM;
                }
                json_object_set(bm, "annotations", json_object_get(wm, "annotations"));
                json_object_set_new(bm, "labels", with_label(json_object_get(bm, "labels")));
                if (json_object_get(wm, "ownerReferences"))
                        json_object_set(bm, "ownerReferences",
                                        json_object_get(wm, "ownerReferences"));
                else
                        json_object_del(bm, "ownerReferences");
                json_object_set(body, "spec", json_object_get(want, "spec"));
                if ((k = on_nad(a, NAD_ACTION_UPDATE, target, name, body)) < 0)
                        return k;
                return say(a, LOG_INFO, false,
                           "%s: NetworkAttachmentDefinition %s/%s differs from the network; "
                           "updating it",
                           key, target, name);
        }
        if (!streq(last, target))
                return patch_network(
                    a, network, json_pack("{s:{s:s}}", "annotations", NAD_NETWORK_LAST_NS, target));
        return condition(a, in, key, true, NAD_REASON_READY,
                         "NetworkAttachmentDefinition is provisioned and ready");
}

int nad_decide(const struct nad_decide_input *in, struct nad_action *out)
{
        *out = (struct nad_action){ .type = NAD_ACTION_NONE };
        int k = decide(in, out);
        if (k < 0)
                nad_action_clear(out);
        return k;
}
