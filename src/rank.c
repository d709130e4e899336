/* Kernels of the rank index; see rank.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "rank.h"
#include "threads.h"

/* Queries between two pauses, and of one parallel region: each query counts at most
 * RANK_LE_CAP points, so a chunk is bounded work (well under a second) however far the
 * query points lie. Regions of a few hundred queries made two threads cost up to 19 times
 * the CPU of one on a loaded machine (each region ends at a barrier that waits for a
 * descheduled thread), so a chunk is as large as the pause allows, as in adaptive.c. */
#define RANK_CHUNK ((ptrdiff_t) 1 << 13)
/* The count "at most as close" stops here: it only feeds 1 / count (the re-identification
 * probability, then at most 2^-14 = 6.1e-5 above its exact value: an upper bound) and the
 * tie share of a top-m link (at most m / (RANK_LE_CAP - m) then). Uncapped, a release far
 * from its originals (stirred, shuffled) makes every query count a large share of its
 * stratum: quadratic time. */
#define RANK_LE_CAP ((ptrdiff_t) 1 << 14)

/* The number of points p of tree t with |q - p|^2 <= r2, counted up to stop_at (a count of
 * stop_at means "stop_at or more"), as kd_count_within(); with groups g (g->t.n > 0), the
 * same number summed over the groups of tied points. */
static ptrdiff_t rank_count(const kd_tree *t, const rank_groups *g, const double *q, double r2,
                            ptrdiff_t stop_at, kd_item *st)
{
    if (!g || g->t.n == 0) return kd_count_within(t, q, r2, stop_at, st);
    const kd_tree *gt = &g->t;
    const int d = gt->d;
    const double stop = (double) stop_at;
    double count = 0.0;
    int sp = 0;
    st[sp].node = 0; st[sp].bd = kd_box_d2(gt, 0, q); sp++;
    while (sp > 0 && count < stop) {
        kd_item it = st[--sp];
        const kd_node *nd = gt->nodes + it.node;
        if (it.bd > r2) continue;
        if (kd_box_far_d2(gt, it.node, q) <= r2) { count += g->nw[it.node]; continue; }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++)
                if (kd_point_d2(q, gt->pts + p * d, d) <= r2) count += g->w[p];
            continue;
        }
        st[sp].node = nd->left;  st[sp].bd = kd_box_d2(gt, nd->left, q);  sp++;
        st[sp].node = nd->right; st[sp].bd = kd_box_d2(gt, nd->right, q); sp++;
    }
    return count < stop ? (ptrdiff_t) count : stop_at;
}

/* For the query point q whose own point `self` is a point of tree t (with its groups g):
 * *lt = number of tree points strictly closer than self, counted up to `cap` (a count of
 *       `cap` means "cap or more");
 * *le = number of tree points p with |q - p|^2 <= |q - self|^2 (self included, so >= 1),
 *       counted up to RANK_LE_CAP; with `lazy`, counted exactly but only while *lt < cap
 *       (a top-m share with m <= cap needs it only then; otherwise *le is left as it was).
 * Both distances are summed by kd_point_d2() in the same order, so self is counted in *le
 * and never in *lt, and equal distances are equal bit for bit. */
static void rank_counts(const kd_tree *t, const rank_groups *g, const double *q, const double *self,
                        ptrdiff_t cap, int lazy, double *lt, double *le, kd_item *stack)
{
    const double ds = kd_point_d2(q, self, t->d);
    /* squared distances are doubles: d2 < ds exactly when d2 <= the next double below ds */
    *lt = ds > 0.0 && cap > 0 ? (double) rank_count(t, g, q, nextafter(ds, 0.0), cap, stack) : 0.0;
    if (lazy && *lt >= (double) cap) return;
    *le = (double) rank_count(t, g, q, ds, lazy ? PTRDIFF_MAX : RANK_LE_CAP, stack);
}

const char *rank_build(const double *x, ptrdiff_t n, int d, const int *ord, const int *off,
                       ptrdiff_t n_strata, double *pts, ptrdiff_t *row, ptrdiff_t *leaf_of,
                       kd_node *nodes, double *box, int *meta, const kernel_host *host)
{
    ptrdiff_t *rows = (ptrdiff_t *) host->alloc(n, sizeof(ptrdiff_t));
    for (ptrdiff_t i = 0; i < n; i++) {
        if (ord[i] < 1 || ord[i] > n) return "row out of range";
        rows[i] = ord[i] - 1;
    }
    size_t node_off = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const ptrdiff_t b = off[s], ns = (ptrdiff_t) off[s + 1] - off[s];
        kd_tree t;
        kd_init(&t, ns, d, RANK_LEAF_SIZE, pts + (size_t) b * d, row + b, leaf_of + b,
                nodes + node_off, box + node_off * 2 * d);
        t.interrupted = host->interrupted; /* a large stratum's build polls (serial) */
        if (ns > 0) kd_build(&t, x, n, rows + b);
        meta[3 * s] = (int) node_off;
        meta[3 * s + 1] = t.n_nodes;
        meta[3 * s + 2] = t.depth;
        node_off += kd_max_nodes(ns, RANK_LEAF_SIZE);
        if (s % 64 == 63) host_pause(host, off[s + 1]);
    }
    return NULL;
}

/* Points a and b (d coordinates) equal: every coordinate equal (a NaN never is). */
static int same_point(const double *a, const double *b, int d)
{
    for (int j = 0; j < d; j++) if (!(a[j] == b[j])) return 0;
    return 1;
}

/* Lexicographic order of points, NaN after every number and points with a NaN in the
 * order of their positions (so never equal): a total order for qsort(). */
typedef struct {
    const double *p;
    ptrdiff_t pos;
    int d;
} rank_key;

static int rank_key_cmp(const void *a_, const void *b_)
{
    const rank_key *a = (const rank_key *) a_, *b = (const rank_key *) b_;
    for (int j = 0; j < a->d; j++) {
        const double x = a->p[j], y = b->p[j];
        if (x < y) return -1;
        if (x > y) return 1;
        const int nx = isnan(x), ny = isnan(y);
        if (nx != ny) return nx - ny;
        if (nx) return a->pos < b->pos ? -1 : 1;
    }
    return 0;
}

void rank_distinct(const kd_tree *trees, ptrdiff_t n_strata, ptrdiff_t n, ptrdiff_t *rep, double *mult,
                   int *goff, const kernel_host *host)
{
    rank_key *keys = (rank_key *) host->alloc(n > 0 ? n : 1, sizeof(rank_key));
    ptrdiff_t ng = 0;
    goff[0] = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const ptrdiff_t ns = t->n;
        const int d = t->d;
        /* identical points mostly lie next to each other in tree order: a cheap test of
         * whether grouping pays */
        ptrdiff_t tied = 0;
        for (ptrdiff_t p = 1; p < ns; p++) tied += same_point(t->pts + p * d, t->pts + (p - 1) * d, d);
        if (ns > 1 && tied >= ns / RANK_GROUP_SHARE) {
            for (ptrdiff_t p = 0; p < ns; p++) {
                keys[p].p = t->pts + p * d;
                keys[p].pos = p;
                keys[p].d = d;
            }
            qsort(keys, (size_t) ns, sizeof(rank_key), rank_key_cmp);
            for (ptrdiff_t p = 0; p < ns; p++) {
                if (p > 0 && rank_key_cmp(&keys[p], &keys[p - 1]) == 0) {
                    mult[ng - 1] += 1.0;
                } else {
                    rep[ng] = keys[p].pos;
                    mult[ng++] = 1.0;
                }
            }
        }
        goff[s + 1] = (int) ng;
        host_pause(host, 0);
    }
}

void rank_build_groups(const kd_tree *trees, ptrdiff_t n_strata, const ptrdiff_t *rep, const double *mult,
                       const int *goff, double *pts, ptrdiff_t *row, ptrdiff_t *leaf_of, kd_node *nodes,
                       double *box, double *w, double *nw, int *meta, const kernel_host *host)
{
    size_t node_off = 0;
    ptrdiff_t max_ns = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (trees[s].n > max_ns) max_ns = trees[s].n;
    ptrdiff_t *rows = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    double *mult_at = (double *) host->alloc(max_ns, sizeof(double));
    double *cum = (double *) host->alloc(max_ns + 1, sizeof(double));
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const int d = t->d;
        const ptrdiff_t b = goff[s], ng = (ptrdiff_t) goff[s + 1] - goff[s];
        meta[3 * s] = (int) node_off;
        meta[3 * s + 1] = 0;
        meta[3 * s + 2] = 0;
        if (ng == 0) continue;
        /* the tree's points are point-major: point p's coordinate j is pts[p * d + j], the
         * column-major layout of kd_build() with row p * d and leading dimension 1 */
        for (ptrdiff_t i = 0; i < ng; i++) {
            rows[i] = rep[b + i] * d;
            mult_at[rep[b + i]] = mult[b + i];
        }
        kd_tree g;
        kd_init(&g, ng, d, RANK_LEAF_SIZE, pts + (size_t) b * d, row + b, leaf_of + b, nodes + node_off,
                box + node_off * 2 * d);
        g.interrupted = host->interrupted;
        kd_build(&g, t->pts, 1, rows);
        cum[0] = 0.0;
        for (ptrdiff_t p = 0; p < ng; p++) {
            w[b + p] = mult_at[g.row[p] / d];
            cum[p + 1] = cum[p] + w[b + p];
        }
        for (int k = 0; k < g.n_nodes; k++) nw[node_off + k] = cum[g.nodes[k].end] - cum[g.nodes[k].begin];
        meta[3 * s + 1] = g.n_nodes;
        meta[3 * s + 2] = g.depth;
        node_off += kd_max_nodes(ng, RANK_LEAF_SIZE);
        host_pause(host, 0);
    }
}

void rank_query(const kd_tree *trees, const rank_groups *groups, ptrdiff_t n_strata, const int *off,
                ptrdiff_t n, int d, const double *xq, const int *want, ptrdiff_t cap, int lazy, int nt,
                double *o, const kernel_host *host)
{
    kd_item *stacks = (kd_item *) host->alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) host->alloc((size_t) nt * d, sizeof(double));
    ptrdiff_t since_check = 0;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const rank_groups *g = groups ? &groups[s] : NULL;
        const ptrdiff_t b = off[s], ns = t->n;
        const int nts = threads_for(nt, (double) ns);
        for (ptrdiff_t from = 0; from < ns; from += RANK_CHUNK) {
            const ptrdiff_t to = from + RANK_CHUNK < ns ? from + RANK_CHUNK : ns;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t p = from; p < to; p++) {
                /* in tree order: a query point lies near its own tree point, so consecutive
                 * queries visit the same part of the tree */
                ptrdiff_t r = t->row[p];
                if (want[r] != 1) continue;
                int tid = THREAD_ID;
                double *q = buf + (size_t) tid * d;
                for (int j = 0; j < d; j++) q[j] = xq[r + (size_t) j * n];
                rank_counts(t, g, q, t->pts + (size_t) p * d, cap, lazy, o + r, o + r + n,
                            stacks + (size_t) tid * KD_STACK_MAX);
            }
            since_check += to - from;
            if (since_check >= RANK_CHUNK) {
                host_pause(host, b + to);
                since_check = 0;
            }
        }
    }
}

/* rank_counts() with lazy counting and nn2_query() (nn2.c) for the same query in one
 * descent of tree t: *lt and *le as rank_counts() gives them (*le left as it was once *lt
 * reaches cap), *d1 and *d2 the squared distances to the nearest and second-nearest tree
 * points (INFINITY when the tree holds fewer). A node is pruned when it can hold neither a
 * point to count (within the own distance, while counting) nor a point nearer than the
 * second nearest found so far; the counts and the two distances are those of the separate
 * searches, bit for bit (the same kd_point_d2() sums). */
static void rank_nn2_counts(const kd_tree *t, const double *q, const double *self, ptrdiff_t cap,
                            double *lt, double *le, double *d1, double *d2, kd_item *st)
{
    const int d = t->d;
    const double ds = kd_point_d2(q, self, d);
    /* strictly closer than self: at most the next double below ds (none when ds = 0) */
    const double r_lt = ds > 0.0 ? nextafter(ds, 0.0) : -1.0;
    ptrdiff_t n_lt = 0, n_le = 0;
    int counting = cap > 0;
    double b1 = INFINITY, b2 = INFINITY;
    int sp = 0;
    st[sp].node = 0; st[sp].bd = kd_box_d2(t, 0, q); sp++;
    while (sp > 0) {
        const kd_item it = st[--sp];
        const kd_node *nd = t->nodes + it.node;
        const int count_here = counting && it.bd <= ds;
        if (!count_here && it.bd >= b2) continue;
        if (count_here && it.bd >= b2) {
            /* nothing nearer than b2 here: a box wholly within the radius counts at once */
            const double far = kd_box_far_d2(t, it.node, q);
            if (far <= ds) {
                n_le += nd->end - nd->begin;
                if (far <= r_lt) {
                    n_lt += nd->end - nd->begin;
                } else {
                    /* the points nearer than ds are still to be told from those at ds */
                    for (ptrdiff_t p = nd->begin; p < nd->end; p++)
                        if (kd_point_d2(q, t->pts + p * d, d) <= r_lt) n_lt++;
                }
                if (n_lt >= cap) counting = 0;
                continue;
            }
        }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                const double dd = kd_point_d2(q, t->pts + p * d, d);
                if (count_here) {
                    if (dd <= r_lt) n_lt++;
                    if (dd <= ds) n_le++;
                }
                if (dd < b2) {
                    if (dd < b1) { b2 = b1; b1 = dd; } else b2 = dd;
                }
            }
            if (n_lt >= cap) counting = 0;
            continue;
        }
        const double bl = kd_box_d2(t, nd->left, q), br = kd_box_d2(t, nd->right, q);
        /* the nearer child on top: it lowers b2 first */
        st[sp].node = bl <= br ? nd->right : nd->left; st[sp].bd = bl <= br ? br : bl; sp++;
        st[sp].node = bl <= br ? nd->left : nd->right; st[sp].bd = bl <= br ? bl : br; sp++;
    }
    *lt = (double) (n_lt < cap ? n_lt : cap);
    if (n_lt < cap) *le = (double) n_le;
    *d1 = b1;
    *d2 = b2;
}

/* Queries of rank_nn2_query() between two pauses: its counts are lazy (a query far from its
 * own point stops counting at cap), so a query costs about one nearest-neighbour search. */
#define RANK_NN2_CHUNK ((ptrdiff_t) 1 << 13)

void rank_nn2_query(const kd_tree *trees, ptrdiff_t n_strata, const int *off, ptrdiff_t n, int d,
                    const double *xq, const int *want, ptrdiff_t cap, int nt, double *o,
                    const kernel_host *host)
{
    kd_item *stacks = (kd_item *) host->alloc((size_t) nt * KD_STACK_MAX, sizeof(kd_item));
    double *buf = (double *) host->alloc((size_t) d, sizeof(double));
    ptrdiff_t max_ns = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (trees[s].n > max_ns) max_ns = trees[s].n;
    ptrdiff_t *key = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    ptrdiff_t *ord = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    ptrdiff_t *count = (ptrdiff_t *) host->alloc(max_ns + 1, sizeof(ptrdiff_t));
    /* the query points in the order the queries run, and the answers by index position
     * (off[s] + p), written to o in row order at the end (at[r]: row r's position): the
     * search reads and writes no row at random */
    double *qpts = (double *) host->alloc((size_t) max_ns * d, sizeof(double));
    double *res = (double *) host->alloc((size_t) (n > 0 ? n : 1) * 4, sizeof(double));
    ptrdiff_t *at = (ptrdiff_t *) host->alloc(n > 0 ? n : 1, sizeof(ptrdiff_t));
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const ptrdiff_t ns = t->n;
        /* the queried positions in the order of the leaf their query point falls in
         * (kd_query_leaf()), whether it lies near its own point (the attack) or not (the
         * control) */
        ptrdiff_t nw = 0;
        for (ptrdiff_t i = 0; i <= ns; i++) count[i] = 0;
        for (ptrdiff_t p = 0; p < ns; p++) {
            const ptrdiff_t r = t->row[p];
            if (want[r] != 1) continue;
            at[r] = off[s] + p;
            for (int j = 0; j < d; j++) buf[j] = xq[r + (size_t) j * n];
            key[p] = t->nodes[kd_query_leaf(t, buf)].begin;
            count[key[p] + 1]++;
            nw++;
        }
        for (ptrdiff_t i = 0; i < ns; i++) count[i + 1] += count[i];
        for (ptrdiff_t p = 0; p < ns; p++) {
            const ptrdiff_t r = t->row[p];
            if (want[r] != 1) continue;
            const ptrdiff_t e = count[key[p]]++;
            ord[e] = p;
            for (int j = 0; j < d; j++) qpts[e * d + j] = xq[r + (size_t) j * n];
        }
        const int nts = threads_for(nt, (double) nw);
        for (ptrdiff_t from = 0; from < nw; from += RANK_NN2_CHUNK) {
            const ptrdiff_t to = from + RANK_NN2_CHUNK < nw ? from + RANK_NN2_CHUNK : nw;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t e = from; e < to; e++) {
                const ptrdiff_t p = ord[e];
                double *a = res + (size_t) (off[s] + p) * 4;
                double d1, d2;
                rank_nn2_counts(t, qpts + e * d, t->pts + (size_t) p * d, cap, a, a + 1, &d1, &d2,
                                stacks + (size_t) THREAD_ID * KD_STACK_MAX);
                a[2] = sqrt(d1);
                a[3] = sqrt(d2);
            }
            host_pause(host, off[s] + to);
        }
    }
    for (ptrdiff_t r = 0; r < n; r++) {
        if (want[r] != 1) continue;
        const double *a = res + (size_t) at[r] * 4;
        o[r] = a[0];
        if (a[0] < (double) cap) o[r + n] = a[1]; /* else left as it was (rank_nn2_counts()) */
        o[r + 2 * n] = a[2];
        o[r + 3 * n] = a[3];
    }
}
