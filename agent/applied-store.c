/* SPDX-License-Identifier: Apache-2.0 */
#include "applied-store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/array.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define APPLIED_RECORD_MAX_SIZE (1024 * 1024)

int applied_record_filename(const char *pci, char *buf, size_t size)
{
        if (!pci_address_is_valid(pci))
                return -EINVAL;
        return path_printf(buf, size, "%s.json", pci);
}

static int cmp_pf(const void *a, const void *b)
{
        return strcmp(((const struct applied_pf *)a)->pci_address,
                      ((const struct applied_pf *)b)->pci_address);
}

static int load_record(const char *dir, const char *fname, struct applied_pf *ret, char **error)
{
        _cleanup_free_ char *data = NULL, *why = NULL;
        char path[4096], expected[64];
        json_error_t jerr;
        json_auto_t *obj = NULL;
        size_t size;
        int r;

        r = path_printf(path, sizeof(path), "%s/%s", dir, fname);
        if (r < 0)
                return r;
        r = read_full_file(path, APPLIED_RECORD_MAX_SIZE, &data, &size);
        if (r < 0)
                return asprintf(error, "%s: cannot read: %s", path, strerror(-r)) < 0 ? -ENOMEM : r;
        obj = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj)
                return asprintf(error, "%s: not JSON: line %d: %s", path, jerr.line, jerr.text) < 0
                           ? -ENOMEM
                           : -EINVAL;
        r = applied_pf_from_json(obj, ret, &why);
        if (r < 0)
                return asprintf(error, "%s: %s", path, why ? why : "out of memory") < 0 ? -ENOMEM
                                                                                        : r;
        applied_record_filename(ret->pci_address, expected, sizeof(expected));
        if (strcmp(expected, fname) != 0) {
                applied_pf_done(ret);
                return asprintf(error, "%s: record is for PF %s", path, expected) < 0 ? -ENOMEM
                                                                                      : -EINVAL;
        }
        return 0;
}

/* "<pci>.json" with a valid PCI address: a record. Anything else is not ours to read. */
static bool is_record_name(const char *fname, char *pci, size_t size)
{
        size_t len = strlen(fname);

        if (len <= 5 || strcmp(fname + len - 5, ".json") != 0 || len - 5 >= size)
                return false;
        memcpy(pci, fname, len - 5);
        pci[len - 5] = '\0';
        return pci_address_is_valid(pci);
}

static int add_bad(struct applied_state *s, const char *pci, const char *message)
{
        if (GROW_ARRAY(s->bad, s->cap_bad, s->n_bad + 1) < 0)
                return -ENOMEM;
        struct applied_bad_record *bad = &s->bad[s->n_bad++];
        *bad = (struct applied_bad_record){ 0 };
        snprintf(bad->pci_address, sizeof(bad->pci_address), "%s", pci);
        snprintf(bad->message, sizeof(bad->message), "%s", message);
        return 0;
}

int applied_state_load_dir(const char *dir, struct applied_state *ret, char **error)
{
        _cleanup_(applied_state_done) struct applied_state s = { 0 };
        struct dirent **names = NULL;
        int n, r = 0;

        *error = NULL;
        *ret = (struct applied_state){ 0 };
        n = scandir(dir, &names, NULL, alphasort);
        if (n < 0) {
                if (errno == ENOENT)
                        return 0;
                r = negative_errno();
                return asprintf(error, "%s: cannot list: %s", dir, strerror(-r)) < 0 ? -ENOMEM : r;
        }
        for (int i = 0; i < n; i++) {
                const char *fname = names[i]->d_name;
                _cleanup_free_ char *why = NULL;
                char pci[PCI_ADDR_MAX];
                struct applied_pf pf;

                if (r >= 0 && fname[0] != '.' && is_record_name(fname, pci, sizeof(pci))) {
                        int k = load_record(dir, fname, &pf, &why);
                        if (k >= 0)
                                r = applied_state_take(&s, &pf);
                        else if (k == -ENOMEM && !why)
                                r = k;
                        else /* this PF only: it is frozen, the others go on */
                                r = add_bad(&s, pci, why ? why : strerror(-k));
                }
                free(names[i]);
        }
        free(names);
        if (r < 0)
                return r;
        if (s.n_pfs > 1)
                qsort(s.pfs, s.n_pfs, sizeof(*s.pfs), cmp_pf);
        *ret = s;
        s = (struct applied_state){ 0 };
        return 0;
}

/* Writes one PF's record, unless the file already says exactly that. */
int applied_record_save(const char *state_dir, const struct applied_pf *pf)
{
        char name[64], path[4096];
        _cleanup_free_ char *text = NULL;
        json_auto_t *obj = NULL;
        int r = applied_record_filename(pf->pci_address, name, sizeof(name));
        if (r >= 0)
                r = path_printf(path, sizeof(path), "%s/%s", state_dir, name);
        if (r >= 0)
                r = applied_pf_to_json(pf, &obj);
        if (r < 0)
                return log_pf(LOG_ERR, r, pf->pci_address, "cannot record applied state");
        text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!text)
                return -ENOMEM;
        /* Every converged reconcile re-states ownership; only a change is written. */
        _cleanup_free_ char *old_text = NULL;
        if (read_full_file(path, 1024 * 1024, &old_text, NULL) >= 0 && strcmp(old_text, text) == 0)
                return 0;
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0)
                return log_pf(LOG_ERR, r, pf->pci_address, "cannot write %s", path);
        log_pf(LOG_DEBUG, 0, pf->pci_address, "recorded the applied state in %s", path);
        return 0;
}

void applied_record_remove(const char *state_dir, const char *pci)
{
        char name[64], path[4096];
        if (applied_record_filename(pci, name, sizeof(name)) < 0 ||
            path_printf(path, sizeof(path), "%s/%s", state_dir, name) < 0)
                return;
        if (unlink(path) < 0) {
                if (errno != ENOENT)
                        log_pf(LOG_WARNING, errno, pci, "cannot remove %s", path);
        } else
                log_pf(LOG_INFO, 0, pci, "PF released: no policy selects it any more");
}
