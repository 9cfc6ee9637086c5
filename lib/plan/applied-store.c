#include "plan/applied-store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"

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
        json_t *obj;
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
        json_decref(obj);
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

int applied_state_load_dir(const char *dir, struct applied_state *ret, char **error)
{
        struct applied_state s = { 0 };
        struct dirent **names = NULL;
        int n, r = 0;

        *error = NULL;
        *ret = s;
        n = scandir(dir, &names, NULL, alphasort);
        if (n < 0)
                return errno == ENOENT ? 0 : negative_errno();
        for (int i = 0; i < n; i++) {
                const char *fname = names[i]->d_name;
                size_t len = strlen(fname);
                struct applied_pf pf;

                if (r >= 0 && len > 5 && strcmp(fname + len - 5, ".json") == 0 && fname[0] != '.') {
                        r = load_record(dir, fname, &pf, error);
                        if (r >= 0)
                                r = applied_state_take(&s, &pf);
                }
                free(names[i]);
        }
        free(names);
        if (r < 0) {
                applied_state_done(&s);
                return r;
        }
        if (s.n_pfs > 1)
                qsort(s.pfs, s.n_pfs, sizeof(*s.pfs), cmp_pf);
        *ret = s;
        return 0;
}
