/* Mondrian equivalence classes; see mondrian.h. */
#include <math.h>
#include <stdlib.h>
#include "mondrian.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Quickselect with a median-of-three pivot and three-way partitioning (ties gather in the
 * middle, so runs of equal values cost one pass). After 64 rounds without finishing it
 * sorts what is left, which bounds the worst case by O(n log n). */
double mdr_select(double *v, ptrdiff_t n, ptrdiff_t r)
{
    ptrdiff_t lo = 0, hi = n; /* the answer is in v[lo, hi) */
    for (int round = 0; hi - lo > 1; round++) {
        if (round >= 64) {
            qsort(v + lo, (size_t) (hi - lo), sizeof(double), cmp_double);
            return v[r];
        }
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1], pivot;
        if (a < b) pivot = b < c ? b : (a < c ? c : a);
        else pivot = a < c ? a : (b < c ? c : b);
        /* v[lo, lt) < pivot, v[lt, i) == pivot, v[gt, hi) > pivot */
        ptrdiff_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            double t = v[i];
            if (t < pivot) { v[i] = v[lt]; v[lt] = t; lt++; i++; }
            else if (t > pivot) { gt--; v[i] = v[gt]; v[gt] = t; }
            else i++;
        }
        if (r < lt) hi = lt;
        else if (r >= gt) lo = gt;
        else return pivot;
    }
    return v[r];
}

void mdr_rows_range(const double *xj, const ptrdiff_t *rows, ptrdiff_t b, ptrdiff_t e,
                    double *lo, double *hi)
{
    double l = xj[rows[b]], h = l;
    for (ptrdiff_t i = b + 1; i < e; i++) {
        double t = xj[rows[i]];
        if (t < l) l = t;
        if (t > h) h = t;
    }
    *lo = l; *hi = h;
}

ptrdiff_t mondrian_partition(const double *x, ptrdiff_t ldx, int d, const double *inv_range,
                             ptrdiff_t *rows, ptrdiff_t n, ptrdiff_t k, double *vals,
                             ptrdiff_t *tmp, mdr_range *stack, ptrdiff_t *ends, int *order,
                             double *width, const kernel_host *host)
{
    ptrdiff_t n_classes = 0, top = 0, work = 0;
    stack[top].begin = 0; stack[top].end = n; top++;
    while (top > 0) {
        top--;
        const ptrdiff_t b = stack[top].begin, e = stack[top].end, m = e - b;
        /* about 2^20 records handled between two polls (a large stratum takes seconds) */
        work += m;
        if (host && host->interrupted && work >= ((ptrdiff_t) 1 << 20)) {
            host->interrupted();
            work = 0;
        }
        int cut = 0;
        if (m >= 2 * k) {
            /* normalised widths, then columns by decreasing width (stable: ties by index) */
            for (int j = 0; j < d; j++) {
                double lo, hi;
                mdr_rows_range(x + (size_t) j * ldx, rows, b, e, &lo, &hi);
                width[j] = (hi - lo) * inv_range[j];
                int pos = j;
                while (pos > 0 && width[order[pos - 1]] < width[j]) { order[pos] = order[pos - 1]; pos--; }
                order[pos] = j;
            }
            for (int o = 0; o < d && !cut; o++) {
                const int j = order[o];
                if (!(width[j] > 0)) break;
                const double *xj = x + (size_t) j * ldx;
                for (ptrdiff_t i = 0; i < m; i++) vals[i] = xj[rows[b + i]];
                const double med = mdr_select(vals, m, (m - 1) / 2);
                /* cut A: x <= med; cut B: x < upper median, which is cut A unless the
                 * upper median equals med, and then x < med (see mondrian.h) */
                ptrdiff_t na = 0, nb = 0;
                for (ptrdiff_t i = b; i < e; i++) {
                    const double t = xj[rows[i]];
                    na += t <= med;
                    nb += t < med;
                }
                if (na <= m / 2) nb = na;
                const int ok_a = na >= k && m - na >= k, ok_b = nb >= k && m - nb >= k;
                if (!ok_a && !ok_b) continue;
                const ptrdiff_t da = 2 * na - m, db = 2 * nb - m;
                const int use_b = !ok_a || (ok_b && (db < 0 ? -db : db) < (da < 0 ? -da : da));
                const ptrdiff_t nl = use_b ? nb : na;
                ptrdiff_t l = 0, r = nl;
                for (ptrdiff_t i = b; i < e; i++) {
                    const double t = xj[rows[i]];
                    if (use_b ? t < med : t <= med) tmp[l++] = rows[i];
                    else tmp[r++] = rows[i];
                }
                for (ptrdiff_t i = 0; i < m; i++) rows[b + i] = tmp[i];
                /* right pushed first so the left part is finished first */
                stack[top].begin = b + nl; stack[top].end = e; top++;
                stack[top].begin = b; stack[top].end = b + nl; top++;
                cut = 1;
            }
        }
        if (!cut) ends[n_classes++] = e;
    }
    return n_classes;
}

/* Strata between two pauses, unless a stratum is this large. */
#define MDR_CHUNK ((ptrdiff_t) 1 << 20)

ptrdiff_t mondrian_strata(const double *x, ptrdiff_t n, int d, const double *inv_range,
                          ptrdiff_t *rows, const ptrdiff_t *off, ptrdiff_t n_strata,
                          ptrdiff_t k, ptrdiff_t *ends, const kernel_host *host)
{
    ptrdiff_t max_ns = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (off[s + 1] - off[s] > max_ns) max_ns = off[s + 1] - off[s];
    double *vals = (double *) host->alloc(max_ns, sizeof(double));
    ptrdiff_t *tmp = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    mdr_range *stack = (mdr_range *) host->alloc(max_ns / k + 2, sizeof(mdr_range));
    ptrdiff_t *ends_s = (ptrdiff_t *) host->alloc(max_ns / k + 1, sizeof(ptrdiff_t));
    int *ord = (int *) host->alloc(d > 0 ? d : 1, sizeof(int));
    double *width = (double *) host->alloc(d > 0 ? d : 1, sizeof(double));
    ptrdiff_t n_classes = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        ptrdiff_t ns = off[s + 1] - off[s];
        if (ns <= 0) continue;
        ptrdiff_t c = d > 0 ? mondrian_partition(x, n, d, inv_range, rows + off[s], ns, k, vals, tmp,
                                                 stack, ends_s, ord, width, host)
                            : (ends_s[0] = ns, 1);
        for (ptrdiff_t i = 0; i < c; i++) ends[n_classes++] = off[s] + ends_s[i];
        if ((s & 1023) == 0 || ns >= MDR_CHUNK) host_pause(host, off[s + 1]);
    }
    return n_classes;
}

void mondrian_boxes(const double *x, ptrdiff_t n, int d, const ptrdiff_t *rows,
                    const ptrdiff_t *ends, ptrdiff_t n_classes, int *cls, int *size,
                    double *lo, double *hi)
{
    ptrdiff_t b = 0;
    for (ptrdiff_t c = 0; c < n_classes; c++) {
        ptrdiff_t e = ends[c];
        size[c] = (int) (e - b);
        for (ptrdiff_t i = b; i < e; i++) cls[rows[i]] = (int) (c + 1);
        for (int j = 0; j < d; j++) {
            mdr_rows_range(x + (size_t) j * n, rows, b, e, lo + c + j * n_classes,
                           hi + c + j * n_classes);
        }
        b = e;
    }
}
