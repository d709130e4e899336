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
/* A single query counts "at most as near" level by level (see rank_group_counts()) in a
 * stratum of at least this many points, depth first in a smaller one: on a stirred release
 * (k = 3, sim data; most counts at the cap) level by level took 13.3 -> 7.8 s at 1e6 (strata
 * of 250,000) and 2.3 -> 2.6 s at 1e5 (strata of 25,000). */
#define RANK_QUEUE_MIN (4 * RANK_LE_CAP)

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

/* ---- the queries ---------------------------------------------------------------------- */

/* A single query on a plain tree: rank_counts(), and with nn2 rank_nn2_counts(), fewer steps per
 * point than rank_group_counts(); the same counts. */

/* The number of points p of tree t with |q - p|^2 <= r2, counted up to stop_at (a count of
 * stop_at means "stop_at or more"), as kd_count_within(); with groups g (g->t.n > 0), the
 * same number summed over the groups of tied points. Depth first (st), or with a queue
 * (room for every node) level by level, as rank_group_counts() counts: the same number. */
static ptrdiff_t rank_count(const kd_tree *t, const rank_groups *g, const double *q, double r2,
                            ptrdiff_t stop_at, kd_item *st, kd_item *queue)
{
    const int grouped = g && g->t.n > 0;
    if (!grouped && !queue) return kd_count_within(t, q, r2, stop_at, st);
    const kd_tree *gt = grouped ? &g->t : t;
    const int d = gt->d;
    const double stop = (double) stop_at;
    double count = 0.0;
    if (queue) st = queue;
    int sp = 0, head = 0;
    st[sp].node = 0; st[sp].bd = kd_box_d2(gt, 0, q); sp++;
    while (sp > head && count < stop) {
        kd_item it = queue ? st[head++] : st[--sp];
        const kd_node *nd = gt->nodes + it.node;
        if (it.bd > r2) continue;
        if (kd_box_far_d2(gt, it.node, q) <= r2) {
            count += grouped ? g->nw[it.node] : (double) (nd->end - nd->begin);
            continue;
        }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++)
                if (kd_point_d2(q, gt->pts + p * d, d) <= r2) count += grouped ? g->w[p] : 1.0;
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
                        ptrdiff_t cap, int lazy, double *lt, double *le, kd_item *stack, kd_item *queue)
{
    const double ds = kd_point_d2(q, self, t->d);
    /* squared distances are doubles: d2 < ds exactly when d2 <= the next double below ds;
     * "at most as near" level by level when it may stop at RANK_LE_CAP over a large tree
     * (RANK_QUEUE_MIN) */
    *lt = ds > 0.0 && cap > 0 ? (double) rank_count(t, g, q, nextafter(ds, 0.0), cap, stack, NULL) : 0.0;
    if (lazy && *lt >= (double) cap) return;
    *le = (double) rank_count(t, g, q, ds, lazy ? PTRDIFF_MAX : RANK_LE_CAP, stack,
                                 lazy || t->n < RANK_QUEUE_MIN ? NULL : queue);
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


/* The tree a stratum's queries search: its own, or the tree of its groups of tied points
 * (rank_groups), where a position stands for w[p] points and a node for nw[node]. */
typedef struct {
    const kd_tree *t;
    const double *w, *nw; /* NULL: one point per position */
} rank_tree;

/* The number of points a node of the tree stands for. */
static inline double node_weight(const rank_tree *rt, int node)
{
    const kd_node *nd = rt->t->nodes + node;
    return rt->nw ? rt->nw[node] : (double) (nd->end - nd->begin);
}

/* A query of a group: its tree position (its own point) and the squared distance from the
 * group's query point to it. */
typedef struct {
    double ds;
    ptrdiff_t p;
} rank_member;

static int rank_member_cmp(const void *a_, const void *b_)
{
    const rank_member *a = (const rank_member *) a_, *b = (const rank_member *) b_;
    if (a->ds != b->ds) return a->ds < b->ds ? -1 : 1;
    return a->p < b->p ? -1 : a->p > b->p;
}

/* Per-thread scratch of a group of up to `room` queries. */
typedef struct {
    rank_member *mem;
    double *r_lt, *r_le; /* per query, ascending: the squared radii of its two counts */
    double *b_lt, *b_le; /* per query: the points counted for it and not for the one before */
    kd_item *stack;
    kd_item *queue;      /* room for every node of the largest tree */
} rank_scratch;

/* The first i < a with r[i] >= x, or a (none; x NaN). r is ascending, so for the few
 * queries of a group it is the number of i < a with !(r[i] >= x), counted without a branch
 * (a binary search mispredicts about every other step). */
static inline ptrdiff_t rank_slot(const double *r, ptrdiff_t a, double x)
{
    if (a <= 16) {
        ptrdiff_t j = 0;
        for (ptrdiff_t i = 0; i < a; i++) j += !(r[i] >= x);
        return j;
    }
    ptrdiff_t lo = 0, hi = a;
    while (lo < hi) {
        const ptrdiff_t mid = lo + (hi - lo) / 2;
        if (r[mid] >= x) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/* The state of a group's descent: queries 0..a_lt (0..a_le) are still counting, tot_* is
 * the count of the last of them so far, radius the largest squared radius still counted. */
typedef struct {
    ptrdiff_t a_lt, a_le;
    double tot_lt, tot_le, radius;
} rank_state;

/* Let the queries whose count reached its cap leave (the largest first: a count is at
 * least that of every query before it), and shrink the radius to those left. */
static inline void rank_settle(rank_state *z, const rank_scratch *sc, double lt_cap, double le_cap, int lazy)
{
    while (z->a_lt > 0 && z->tot_lt >= lt_cap) z->tot_lt -= sc->b_lt[--z->a_lt];
    /* lazy: "at most as near" only while "nearer" is below its cap */
    while (z->a_le > 0 && (lazy ? z->a_le > z->a_lt : z->tot_le >= le_cap)) z->tot_le -= sc->b_le[--z->a_le];
    z->radius = z->a_le > 0 ? sc->r_le[z->a_le - 1] : -1.0;
    if (z->a_lt > 0 && sc->r_lt[z->a_lt - 1] > z->radius) z->radius = sc->r_lt[z->a_lt - 1];
}

/* Count a tree position (or a whole node) of weight w at squared distance bounds lo..hi
 * (a point: lo = hi) for the queries whose radii hold it, when they are the same for
 * every distance between lo and hi; returns 0 (nothing counted) when they are not. */
static inline int rank_add(rank_state *z, const rank_scratch *sc, double lo, double hi, double w)
{
    const ptrdiff_t j_lt = rank_slot(sc->r_lt, z->a_lt, lo), j_le = rank_slot(sc->r_le, z->a_le, lo);
    if (hi != lo && (j_lt != rank_slot(sc->r_lt, z->a_lt, hi) || j_le != rank_slot(sc->r_le, z->a_le, hi)))
        return 0;
    if (j_lt < z->a_lt) { sc->b_lt[j_lt] += w; z->tot_lt += w; }
    if (j_le < z->a_le) { sc->b_le[j_le] += w; z->tot_le += w; }
    return 1;
}

/* The counts of g queries that share the query point q, in one descent of the tree (a
 * group of tied query points, as a shared-centroid release makes them, visits the tree
 * once). The queries are sc->mem[0..g), sorted by the
 * squared distance ds from q to their own point (-1 for NaN). For each, into sc->b_lt[i]
 * and sc->b_le[i]:
 *   lt = the number of tree points p with |q - p|^2 < ds, up to `cap` (a count of cap
 *        means "cap or more"; 0 when ds is 0 or NaN);
 *   le = the number with |q - p|^2 <= ds (its own point included), up to RANK_LE_CAP, or
 *        with `lazy` exactly but only while lt < cap (otherwise not counted: -1).
 * Each count is a radius (r_le = ds, r_lt = the double below ds), and a point is counted
 * for the first query whose radius holds it: the count of query i is the sum of those of
 * queries 0..i. A query whose count reaches its cap leaves the descent.
 * With nn2, *d1 and *d2 receive the squared distances to the nearest and second-nearest
 * tree points (INFINITY when the tree holds fewer): a node is opened when it may hold a
 * point to count or one nearer than the second nearest so far.
 * Every distance is kd_point_d2()'s sum (a box's lie between kd_box_d2() and
 * kd_box_far_d2()), compared with the radii a query alone compares it with, so the counts
 * are those of a count within each radius, bit for bit. */
static void rank_group_counts(const rank_tree *rt, const double *q, ptrdiff_t g, ptrdiff_t cap, int lazy,
                              int nn2, const rank_scratch *sc, double *d1, double *d2)
{
    const kd_tree *t = rt->t;
    const int d = t->d;
    const double lt_cap = (double) cap, le_cap = lazy ? INFINITY : (double) RANK_LE_CAP;
    for (ptrdiff_t i = 0; i < g; i++) {
        const double ds = sc->mem[i].ds;
        /* strictly closer than ds: at most the double below it; none for 0 (or NaN) */
        sc->r_lt[i] = ds > 0.0 ? nextafter(ds, 0.0) : -1.0;
        sc->r_le[i] = ds;
        sc->b_lt[i] = sc->b_le[i] = 0.0;
    }
    rank_state z = {g, g, 0.0, 0.0, -1.0};
    rank_settle(&z, sc, lt_cap, le_cap, lazy);
    double b1 = INFINITY, b2 = INFINITY;
    /* Depth first (with nn2 the nearer child first: it lowers b2 soonest), or when the
     * counts "at most as near" may stop at RANK_LE_CAP (not lazy, no nn2), level by level (a
     * queue: st[head..sp)): the boxes wholly within a radius are counted large before any is
     * opened, so that a count that reaches its cap (over a ball of many times the cap) stops
     * before the ball's boundary is resolved leaf by leaf. (A lazy count stops when "nearer"
     * reaches its small cap, which depth first finds sooner.) The order does not change a
     * count: each point is counted once, for the queries whose radii hold it. */
    const int level = !nn2 && !lazy;
    kd_item *st = level ? sc->queue : sc->stack;
    int sp = 0, head = 0;
    st[sp].node = 0; st[sp].bd = kd_box_d2(t, 0, q); sp++;
    while (sp > head) {
        const kd_item it = level ? st[head++] : st[--sp];
        const kd_node *nd = t->nodes + it.node;
        const int count_here = it.bd <= z.radius, near_here = nn2 && it.bd < b2;
        if (!count_here && !near_here) {
            if (!nn2 && z.radius < 0.0) break; /* every query done */
            continue;
        }
        /* a box whose points all count for the same queries counts at once (without nn2
         * a child is tested before it is pushed, so only the root is tested here: a box that
         * failed the test and would pass it now, after queries left, counts the same points
         * for the same queries opened) */
        if (!near_here && (nn2 || it.node == 0) &&
            rank_add(&z, sc, it.bd, kd_box_far_d2(t, it.node, q), node_weight(rt, it.node))) {
            rank_settle(&z, sc, lt_cap, le_cap, lazy);
            continue;
        }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++) {
                const double dd = kd_point_d2(q, t->pts + p * d, d);
                const double w = rt->w ? rt->w[p] : 1.0;
                if (dd <= z.radius) rank_add(&z, sc, dd, dd, w);
                if (nn2 && dd < b2) {
                    if (dd < b1) { b2 = b1; b1 = dd; } else b2 = dd;
                    if (w >= 2.0 && dd < b2) b2 = dd; /* a second point at dd */
                }
            }
            rank_settle(&z, sc, lt_cap, le_cap, lazy);
            continue;
        }
        const double bl = kd_box_d2(t, nd->left, q), br = kd_box_d2(t, nd->right, q);
        if (!nn2) {
            /* a child that counts at once is counted before any is opened: a count that
             * reaches its cap stops sooner */
            const int l_open = bl <= z.radius && !rank_add(&z, sc, bl, kd_box_far_d2(t, nd->left, q),
                                                           node_weight(rt, nd->left));
            const int r_open = br <= z.radius && !rank_add(&z, sc, br, kd_box_far_d2(t, nd->right, q),
                                                           node_weight(rt, nd->right));
            rank_settle(&z, sc, lt_cap, le_cap, lazy);
            if (r_open) { st[sp].node = nd->right; st[sp].bd = br; sp++; }
            if (l_open) { st[sp].node = nd->left; st[sp].bd = bl; sp++; }
            continue;
        }
        /* the nearer child on top: it lowers b2 first */
        st[sp].node = bl <= br ? nd->right : nd->left; st[sp].bd = bl <= br ? br : bl; sp++;
        st[sp].node = bl <= br ? nd->left : nd->right; st[sp].bd = bl <= br ? bl : br; sp++;
    }
    /* the counts of the queries: the running sums, or the caps of those that left */
    double c_lt = 0.0, c_le = 0.0;
    for (ptrdiff_t i = 0; i < g; i++) {
        c_lt += sc->b_lt[i];
        c_le += sc->b_le[i];
        sc->b_lt[i] = i < z.a_lt ? c_lt : lt_cap;
        sc->b_le[i] = i < z.a_le ? c_le : lazy ? -1.0 : le_cap;
    }
    *d1 = b1;
    *d2 = b2;
}

/* Lexicographic order of query points (pointed to by index into qpts, d coordinates),
 * -0 equal to 0; points with a NaN compare by index (never equal to another). */
typedef struct {
    const double *qpts;
    int d;
} rank_qorder;

static int rank_qless(const rank_qorder *o, ptrdiff_t a, ptrdiff_t b)
{
    const double *x = o->qpts + a * o->d, *y = o->qpts + b * o->d;
    for (int j = 0; j < o->d; j++) {
        if (x[j] < y[j]) return 1;
        if (x[j] > y[j]) return 0;
        if (x[j] != y[j]) return a < b; /* a NaN */
    }
    return a < b;
}

/* Sort idx[0..m) by rank_qless(): insertion for the few queries of a leaf, else a heap
 * sort (no recursion, O(m log m), for a leaf that many queries fall in). */
static void rank_qsort(const rank_qorder *o, ptrdiff_t *idx, ptrdiff_t m)
{
    if (m <= 32) {
        for (ptrdiff_t i = 1; i < m; i++) {
            const ptrdiff_t v = idx[i];
            ptrdiff_t j = i;
            while (j > 0 && rank_qless(o, v, idx[j - 1])) { idx[j] = idx[j - 1]; j--; }
            idx[j] = v;
        }
        return;
    }
    for (ptrdiff_t start = m / 2 - 1, end = m; ; ) {
        ptrdiff_t root;
        if (start >= 0) root = start--;
        else {
            if (--end <= 0) break;
            const ptrdiff_t t = idx[0]; idx[0] = idx[end]; idx[end] = t;
            root = 0;
        }
        for (;;) {
            ptrdiff_t c = 2 * root + 1;
            if (c >= end) break;
            if (c + 1 < end && rank_qless(o, idx[c], idx[c + 1])) c++;
            if (!rank_qless(o, idx[root], idx[c])) break;
            const ptrdiff_t t = idx[root]; idx[root] = idx[c]; idx[c] = t;
            root = c;
        }
    }
}

void rank_query(const kd_tree *trees, const rank_groups *groups, ptrdiff_t n_strata, const int *off,
                ptrdiff_t n, int d, const double *xq, const int *want, ptrdiff_t cap, int lazy, int nn2,
                int nt, double *o, const kernel_host *host)
{
    ptrdiff_t max_ns = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) if (trees[s].n > max_ns) max_ns = trees[s].n;
    /* per stratum: the queried positions (ord) and their query points (qpts) in the order
     * of the leaf each query point falls in; idx: the queries of each leaf with equal
     * points next to each other, group i at idx[gstart[i]..gstart[i + 1]) */
    ptrdiff_t *key = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    ptrdiff_t *ord = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    ptrdiff_t *idx = (ptrdiff_t *) host->alloc(max_ns, sizeof(ptrdiff_t));
    ptrdiff_t *gstart = (ptrdiff_t *) host->alloc(max_ns + 1, sizeof(ptrdiff_t));
    ptrdiff_t *count = (ptrdiff_t *) host->alloc(max_ns + 1, sizeof(ptrdiff_t));
    double *qpts = (double *) host->alloc((size_t) max_ns * d, sizeof(double));
    double *buf = (double *) host->alloc((size_t) d, sizeof(double));
    /* the answers by index position (off[s] + p), written to o in row order at the end */
    const int width = nn2 ? 4 : 2;
    double *res = (double *) host->alloc((size_t) (n > 0 ? n : 1) * width, sizeof(double));
    ptrdiff_t *at = (ptrdiff_t *) host->alloc(n > 0 ? n : 1, sizeof(ptrdiff_t));
    rank_scratch *sc = (rank_scratch *) host->alloc(nt, sizeof(rank_scratch));
    int max_nodes = 1;
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *ts = groups && groups[s].t.n > 0 ? &groups[s].t : &trees[s];
        if (ts->n_nodes > max_nodes) max_nodes = ts->n_nodes;
    }
    for (int i = 0; i < nt; i++) {
        sc[i].stack = (kd_item *) host->alloc(KD_STACK_MAX, sizeof(kd_item));
        sc[i].queue = (kd_item *) host->alloc(max_nodes, sizeof(kd_item));
    }
    ptrdiff_t room = 0;
    ptrdiff_t done = 0;
    const rank_qorder qo = {qpts, d};
    for (ptrdiff_t s = 0; s < n_strata; s++) {
        const kd_tree *t = &trees[s];
        const ptrdiff_t ns = t->n;
        const rank_tree rt = groups && groups[s].t.n > 0 ? (rank_tree) {&groups[s].t, groups[s].w, groups[s].nw}
                                                         : (rank_tree) {t, NULL, NULL};
        /* the queries in the order of the leaf their query point falls in (kd_query_leaf()),
         * whether it lies near its own point (the attack) or not (the control) */
        const ptrdiff_t nl = rt.t->n;
        for (ptrdiff_t i = 0; i <= nl; i++) count[i] = 0;
        ptrdiff_t nq = 0;
        for (ptrdiff_t p = 0; p < ns; p++) {
            const ptrdiff_t r = t->row[p];
            if (want[r] != 1) continue;
            at[r] = off[s] + p;
            for (int j = 0; j < d; j++) buf[j] = xq[r + (size_t) j * n];
            key[p] = rt.t->nodes[kd_query_leaf(rt.t, buf)].begin;
            count[key[p] + 1]++;
            nq++;
        }
        if (nq == 0) continue;
        for (ptrdiff_t i = 0; i < nl; i++) count[i + 1] += count[i];
        for (ptrdiff_t p = 0; p < ns; p++) {
            const ptrdiff_t r = t->row[p];
            if (want[r] != 1) continue;
            const ptrdiff_t e = count[key[p]]++;
            ord[e] = p;
            idx[e] = e;
            for (int j = 0; j < d; j++) qpts[e * d + j] = xq[r + (size_t) j * n];
        }
        /* equal query points fall in the same leaf: within each leaf, sorted, they are runs
         * (a point with a NaN is never equal to another) */
        ptrdiff_t ng = 0, gmax = 0;
        for (ptrdiff_t b = 0; b < nq;) {
            ptrdiff_t e = b;
            while (e < nq && key[ord[e]] == key[ord[b]]) e++;
            rank_qsort(&qo, idx + b, e - b);
            for (ptrdiff_t i = b; i < e; i++) {
                const double *x = qpts + idx[i] * d, *y = qpts + idx[i > b ? i - 1 : i] * d;
                int same = i > b;
                for (int j = 0; j < d && same; j++) same = x[j] == y[j];
                if (!same) {
                    if (ng > 0 && i - gstart[ng - 1] > gmax) gmax = i - gstart[ng - 1];
                    gstart[ng++] = i;
                }
            }
            b = e;
        }
        if (nq - gstart[ng - 1] > gmax) gmax = nq - gstart[ng - 1];
        gstart[ng] = nq;
        if (gmax > room) {
            room = gmax > 2 * room ? gmax : 2 * room;
            for (int i = 0; i < nt; i++) {
                sc[i].mem = (rank_member *) host->alloc(room, sizeof(rank_member));
                sc[i].r_lt = (double *) host->alloc((size_t) room * 4, sizeof(double));
                sc[i].r_le = sc[i].r_lt + room;
                sc[i].b_lt = sc[i].r_le + room;
                sc[i].b_le = sc[i].b_lt + room;
            }
        }
        const int nts = threads_for(nt, (double) nq);
        for (ptrdiff_t from = 0; from < ng;) {
            /* about RANK_CHUNK queries per region */
            ptrdiff_t to = from;
            while (to < ng && gstart[to] - gstart[from] < RANK_CHUNK) to++;
            const ptrdiff_t nq_chunk = gstart[to] - gstart[from];
#ifdef _OPENMP
#pragma omp parallel for num_threads(nts) schedule(dynamic, 64)
#endif
            for (ptrdiff_t i = from; i < to; i++) {
                const rank_scratch *w = &sc[THREAD_ID];
                const ptrdiff_t b = gstart[i], g = gstart[i + 1] - b;
                const double *q = qpts + idx[b] * d;
                for (ptrdiff_t m = 0; m < g; m++) {
                    const ptrdiff_t p = ord[idx[b + m]];
                    w->mem[m].p = p;
                    const double ds = kd_point_d2(q, t->pts + (size_t) p * d, d);
                    w->mem[m].ds = isnan(ds) ? -1.0 : ds;
                }
                double d1, d2;
                if (g == 1 && !(nn2 && rt.w)) {
                    const double *self = t->pts + (size_t) w->mem[0].p * d;
                    w->b_le[0] = -1.0; /* not counted unless the kernel counts it */
                    if (nn2) rank_nn2_counts(t, q, self, cap, w->b_lt, w->b_le, &d1, &d2, w->stack);
                    else rank_counts(t, groups ? &groups[s] : NULL, q, self, cap, lazy, w->b_lt, w->b_le, w->stack,
                                     w->queue);
                } else {
                    if (g > 1) qsort(w->mem, (size_t) g, sizeof(rank_member), rank_member_cmp);
                    rank_group_counts(&rt, q, g, cap, lazy, nn2, w, &d1, &d2);
                }
                for (ptrdiff_t m = 0; m < g; m++) {
                    double *a = res + (size_t) (off[s] + w->mem[m].p) * width;
                    a[0] = w->b_lt[m];
                    a[1] = w->b_le[m];
                    if (nn2) {
                        a[2] = sqrt(d1);
                        a[3] = sqrt(d2);
                    }
                }
            }
            done += nq_chunk;
            host_pause(host, done);
            from = to;
        }
    }
    for (ptrdiff_t r = 0; r < n; r++) {
        if (want[r] != 1) continue;
        const double *a = res + (size_t) at[r] * width;
        o[r] = a[0];
        if (a[1] >= 0.0) o[r + n] = a[1]; /* else not counted: left as it was */
        if (nn2) {
            o[r + 2 * n] = a[2];
            o[r + 3 * n] = a[3];
        }
    }
}
