/* Exact k-nearest neighbours on a kd-tree (see kdtree.h for the contract).
 *
 * Why these choices:
 * - Points are copied point-major in tree order, so a leaf is one contiguous block and
 *   queries issued in tree order walk memory almost sequentially.
 * - Nodes keep tight bounding boxes; the squared box distance is a lower bound of every
 *   point distance in floating point too, because rounding is monotone and both use the
 *   same expression (q - p)^2 summed in the same dimension order.
 * - Pruning uses the full total order (distance, then coordinates): a node whose bound
 *   equals the current worst distance is still visited unless its lower box corner is
 *   lexicographically no smaller than the worst point. That keeps the result exact under
 *   ties and makes duplicates cheap (a block of identical points is pruned at once). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kdtree.h"

size_t kd_max_nodes(ptrdiff_t n, int leaf_size)
{
    if (n <= leaf_size) return 1;
    /* a split node has more than leaf_size points, so each leaf keeps at least half */
    ptrdiff_t min_leaf = (leaf_size + 1) / 2;
    return (size_t) (2 * (n / min_leaf + 1));
}

void kd_init(kd_tree *t, ptrdiff_t n, int d, int leaf_size, double *pts, ptrdiff_t *row,
             ptrdiff_t *leaf_of, kd_node *nodes, double *box)
{
    t->n = n; t->d = d; t->leaf_size = leaf_size < 1 ? 1 : leaf_size;
    t->pts = pts; t->row = row; t->leaf_of = leaf_of; t->nodes = nodes; t->box = box;
    t->n_nodes = 0; t->depth = 0;
    t->interrupted = NULL; t->aborted = 0; t->since_poll = 0;
    t->soa = NULL; t->soa_ld = 0; t->cbox = NULL; t->build = 0;
}

void kd_reuse(kd_tree *t, ptrdiff_t n)
{
    double *soa = t->soa, *cbox = t->cbox;
    ptrdiff_t soa_ld = t->soa_ld;
    unsigned long build = t->build;
    kd_init(t, n, t->d, t->leaf_size, t->pts, t->row, t->leaf_of, t->nodes, t->box);
    t->soa = soa; t->soa_ld = soa_ld; t->cbox = cbox; t->build = build;
}

/* Account for `work` points of building work; ask about an interrupt every 2^20. */
static inline void poll(kd_tree *t, ptrdiff_t work)
{
    if (!t->interrupted) return;
    t->since_poll += work;
    if (t->since_poll >= ((ptrdiff_t) 1 << 20)) {
        t->since_poll = 0;
        if (t->interrupted()) t->aborted = 1;
    }
}

static inline void swap_points(kd_tree *t, ptrdiff_t a, ptrdiff_t b)
{
    const int d = t->d;
    double *pa = t->pts + a * d, *pb = t->pts + b * d;
    for (int j = 0; j < d; j++) { double tmp = pa[j]; pa[j] = pb[j]; pb[j] = tmp; }
    ptrdiff_t r = t->row[a]; t->row[a] = t->row[b]; t->row[b] = r;
}

/* Rearrange [left, right] so that position m holds the value it would hold if sorted on
 * coordinate `dim`, smaller-or-equal values before it and greater-or-equal after: Floyd
 * and Rivest's selection (CACM Algorithm 489). It first selects inside a sample around m,
 * so the partition that follows has a pivot next to the median: about 1.5 n comparisons
 * for a median instead of quickselect's 2.75 n (measured: the build got a third faster).
 * Its Hoare-style scans stop at keys equal to the pivot and swap them evenly, so runs of
 * equal values (imputed medians, a rounded variable) stay linear. */
#define PART_BLOCK 64
static void select_nth(kd_tree *t, ptrdiff_t left, ptrdiff_t right, ptrdiff_t m, int dim)
{
    const int d = t->d;
#define KEY(i) (t->pts[(i) * d + dim])
    while (right > left) {
        if (right - left > 600) {
            double n = (double) (right - left + 1), i = (double) (m - left + 1);
            double z = log(n), s = 0.5 * exp(2.0 * z / 3.0);
            double sd = 0.5 * sqrt(z * s * (n - s) / n) * (i < n / 2 ? -1.0 : 1.0);
            ptrdiff_t l2 = (ptrdiff_t) (m - i * s / n + sd), r2 = (ptrdiff_t) (m + (n - i) * s / n + sd);
            select_nth(t, l2 > left ? l2 : left, r2 < right ? r2 : right, m, dim);
        }
        poll(t, right - left + 1);
        if (t->aborted) return;
        const double pivot = KEY(m);
        swap_points(t, left, m);
        /* Invariant: keys in (left, i) are <= pivot, keys in (j, right] >= pivot. Blocks
         * of PART_BLOCK keys from both ends first (Edelkamp and Weiss's BlockQuicksort):
         * the offsets of the keys on the wrong side are collected without a branch per key
         * (a scan's stops are coin tosses to a predictor: they were most of the build's
         * time), then swapped in pairs. Keys equal to the pivot count as wrong on both
         * sides, so runs of ties are split evenly, as Hoare's scans split them. */
        ptrdiff_t i = left + 1, j = right;
        unsigned char off_l[PART_BLOCK], off_r[PART_BLOCK];
        int num_l = 0, num_r = 0, start_l = 0, start_r = 0;
        while (j - i + 1 > 2 * PART_BLOCK) {
            if (num_l == 0) {
                start_l = 0;
                for (int c = 0; c < PART_BLOCK; c++) { off_l[num_l] = (unsigned char) c; num_l += !(KEY(i + c) < pivot); }
            }
            if (num_r == 0) {
                start_r = 0;
                for (int c = 0; c < PART_BLOCK; c++) { off_r[num_r] = (unsigned char) c; num_r += !(KEY(j - c) > pivot); }
            }
            const int num = num_l < num_r ? num_l : num_r;
            for (int c = 0; c < num; c++) swap_points(t, i + off_l[start_l + c], j - off_r[start_r + c]);
            num_l -= num; num_r -= num; start_l += num; start_r += num;
            if (num_l == 0) i += PART_BLOCK;
            if (num_r == 0) j -= PART_BLOCK;
        }
        /* the rest, at most 3 blocks (a block half done is simply scanned again) */
        for (;;) {
            while (i <= j && KEY(i) < pivot) i++;
            while (i <= j && KEY(j) > pivot) j--;
            if (i >= j) break;
            swap_points(t, i, j);
            i++; j--;
        }
        /* keys in (left, i) are <= pivot and from i on >= pivot: the pivot goes to i - 1 */
        j = i - 1;
        swap_points(t, left, j);
        /* now position j holds the pivot, in its sorted place */
        if (j <= m) left = j + 1;
        if (m <= j) right = j - 1;
    }
#undef KEY
}

static int build_node(kd_tree *t, ptrdiff_t begin, ptrdiff_t end, int depth)
{
    const int d = t->d;
    int id = t->n_nodes++;
    kd_node *nd = t->nodes + id;
    double *lo = t->box + (size_t) id * 2 * d, *hi = lo + d;
    nd->begin = begin; nd->end = end; nd->left = nd->right = -1;
    if (depth > t->depth) t->depth = depth;

    for (int j = 0; j < d; j++) lo[j] = hi[j] = t->pts[begin * d + j];
    int j0 = 0;
#ifdef __SSE2__
    /* two coordinates per operation, in registers (the same minima and maxima); d = 4 (the
     * usual case) in one pass */
    if (d == 4) {
        __m128d l0 = _mm_loadu_pd(lo), l1 = _mm_loadu_pd(lo + 2), u0 = l0, u1 = l1;
        for (ptrdiff_t i = begin + 1; i < end; i++) {
            const __m128d p0 = _mm_loadu_pd(t->pts + i * 4), p1 = _mm_loadu_pd(t->pts + i * 4 + 2);
            l0 = _mm_min_pd(l0, p0); l1 = _mm_min_pd(l1, p1);
            u0 = _mm_max_pd(u0, p0); u1 = _mm_max_pd(u1, p1);
        }
        _mm_storeu_pd(lo, l0); _mm_storeu_pd(lo + 2, l1);
        _mm_storeu_pd(hi, u0); _mm_storeu_pd(hi + 2, u1);
        j0 = 4;
    }
    for (; j0 + 2 <= d && j0 < 4; j0 += 2) { /* a pass per pair: at most two of them */
        __m128d l = _mm_loadu_pd(lo + j0), u = l;
        for (ptrdiff_t i = begin + 1; i < end; i++) {
            const __m128d p = _mm_loadu_pd(t->pts + i * d + j0);
            l = _mm_min_pd(l, p);
            u = _mm_max_pd(u, p);
        }
        _mm_storeu_pd(lo + j0, l);
        _mm_storeu_pd(hi + j0, u);
    }
#endif
    if (j0 < d) {
        for (ptrdiff_t i = begin + 1; i < end; i++) {
            const double *p = t->pts + i * d;
            for (int j = j0; j < d; j++) {
                lo[j] = kd_min(lo[j], p[j]);
                hi[j] = kd_max(hi[j], p[j]);
            }
        }
    }
    poll(t, end - begin);
    ptrdiff_t mid = begin + (end - begin) / 2;
    if (end - begin > t->leaf_size && !t->aborted) {
        int dim = 0;
        for (int j = 1; j < d; j++)
            if (hi[j] - lo[j] > hi[dim] - lo[dim]) dim = j;
        /* identical points (zero spread) need no reordering: any split is a valid one */
        if (hi[dim] > lo[dim]) select_nth(t, begin, end - 1, mid, dim);
    }
    /* an interrupted build still leaves a valid tree: the rest become (large) leaves,
     * and reordering inside [begin, end) kept this node's box right */
    if (end - begin <= t->leaf_size || t->aborted) {
        for (ptrdiff_t i = begin; i < end; i++) t->leaf_of[i] = id;
        return id;
    }
    int left = build_node(t, begin, mid, depth + 1);
    int right = build_node(t, mid, end, depth + 1);
    t->nodes[id].left = left;
    t->nodes[id].right = right;
    return id;
}

/* The search copies of a built tree (kdtree.h). */
static void fill_fast(kd_tree *t)
{
    const int d = t->d;
    const ptrdiff_t ld = t->soa_ld;
    for (int j = 0; j < d; j++) {
        double *c = t->soa + j * ld;
        for (ptrdiff_t i = 0; i < t->n; i++) c[i] = t->pts[i * d + j];
        for (ptrdiff_t i = t->n; i < ld; i++) c[i] = 0.0;
    }
    for (int v = 0; v < t->n_nodes; v++) {
        const kd_node *nd = t->nodes + v;
        if (nd->left < 0) continue;
        double *cb = t->cbox + (size_t) v * 4 * d;
        const double *bl = t->box + (size_t) nd->left * 2 * d, *br = t->box + (size_t) nd->right * 2 * d;
        for (int j = 0; j < 2 * d; j++) { cb[2 * j] = bl[j]; cb[2 * j + 1] = br[j]; }
    }
}

static void build_tree(kd_tree *t)
{
    t->n_nodes = 0; t->depth = 0; t->build++;
    if (t->n > 0) build_node(t, 0, t->n, 0);
    if (t->soa) fill_fast(t);
}

void kd_build(kd_tree *t, const double *x, ptrdiff_t ldx, const ptrdiff_t *rows)
{
    const int d = t->d;
    for (ptrdiff_t i = 0; i < t->n; i++) {
        ptrdiff_t r = rows ? rows[i] : i;
        t->row[i] = r;
        for (int j = 0; j < d; j++) t->pts[i * d + j] = x[r + j * ldx];
    }
    build_tree(t);
}

void kd_build_scaled(kd_tree *t, const double *const *col, const double *center,
                     const double *scale, const ptrdiff_t *rows)
{
    const int d = t->d;
    for (ptrdiff_t i = 0; i < t->n; i++) {
        ptrdiff_t r = rows[i];
        t->row[i] = r;
        for (int j = 0; j < d; j++) t->pts[i * d + j] = (col[j][r] - center[j]) / scale[j];
    }
    build_tree(t);
}

/* ---- searching ----------------------------------------------------------------------- */

/* Is (d2, point a) before (d2b, point b) in the total order? */
static inline int cand_less(const kd_tree *t, double d2, ptrdiff_t a, double d2b, ptrdiff_t b)
{
    if (d2 < d2b) return 1;
    if (d2 > d2b) return 0;
    return kd_lex_less(t->pts + a * t->d, t->pts + b * t->d, t->d);
}

void kd_heap_init(kd_heap *h, int k, ptrdiff_t *pos, double *d2, ptrdiff_t *seq, kd_item *stack)
{
    h->k = k; h->count = 0; h->heap = k > KD_HEAP_MIN && seq != NULL; h->any_order = 0;
    h->pos = pos; h->d2 = d2; h->seq = seq; h->arrived = 0; h->stack = stack;
    h->path_node = NULL; h->path_box = NULL; h->path_n = 0; h->path_leaf = -1;
    h->path_tree = NULL; h->path_build = 0;
}

/* Index of the worst of k kept candidates: the end of the sorted array, or the heap's root. */
static inline int worst_at(const kd_heap *h) { return h->heap ? 0 : h->k - 1; }

/* Heap mode: is entry i after entry j in the total order (distance, coordinates, arrival)? */
static inline int heap_after(const kd_tree *t, const kd_heap *h, int i, int j)
{
    if (h->d2[i] != h->d2[j]) return h->d2[i] > h->d2[j];
    const double *a = t->pts + h->pos[i] * t->d, *b = t->pts + h->pos[j] * t->d;
    if (kd_lex_less(b, a, t->d)) return 1;
    if (kd_lex_less(a, b, t->d)) return 0;
    return h->seq[i] > h->seq[j];
}

static inline void heap_swap(kd_heap *h, int i, int j)
{
    double d = h->d2[i]; h->d2[i] = h->d2[j]; h->d2[j] = d;
    ptrdiff_t p = h->pos[i]; h->pos[i] = h->pos[j]; h->pos[j] = p;
    ptrdiff_t s = h->seq[i]; h->seq[i] = h->seq[j]; h->seq[j] = s;
}

/* Restore the max-heap below entry i among the first m. */
static void heap_down(const kd_tree *t, kd_heap *h, int i, int m)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= m) return;
        if (c + 1 < m && heap_after(t, h, c + 1, c)) c++;
        if (!heap_after(t, h, c, i)) return;
        heap_swap(h, i, c);
        i = c;
    }
}

static void heap_offer(const kd_tree *t, kd_heap *h, ptrdiff_t p, double d2)
{
    const ptrdiff_t seq = h->arrived++;
    if (h->count == h->k) {
        /* a later arrival equal in distance and coordinates to the root stays out */
        if (!cand_less(t, d2, p, h->d2[0], h->pos[0])) return;
        h->d2[0] = d2; h->pos[0] = p; h->seq[0] = seq;
        heap_down(t, h, 0, h->k);
        return;
    }
    int i = h->count++;
    h->d2[i] = d2; h->pos[i] = p; h->seq[i] = seq;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!heap_after(t, h, i, up)) break;
        heap_swap(h, i, up);
        i = up;
    }
}

/* Heap mode, after a search: heapsort in place, best first. */
static void heap_finish(const kd_tree *t, kd_heap *h)
{
    for (int m = h->count - 1; m > 0; m--) {
        heap_swap(h, 0, m);
        heap_down(t, h, 0, m);
    }
}

static inline void offer(const kd_tree *t, kd_heap *h, ptrdiff_t p, double d2)
{
    if (h->heap) { heap_offer(t, h, p, d2); return; }
    const int k = h->k;
    int i;
    if (h->count == k) {
        if (!cand_less(t, d2, p, h->d2[k - 1], h->pos[k - 1])) return;
        i = k - 1;
    } else {
        i = h->count++;
    }
    while (i > 0 && cand_less(t, d2, p, h->d2[i - 1], h->pos[i - 1])) {
        h->d2[i] = h->d2[i - 1]; h->pos[i] = h->pos[i - 1]; i--;
    }
    h->d2[i] = d2; h->pos[i] = p;
}

/* Can a point of `node`, whose box is at squared distance bd, enter the full heap? */
static inline int may_improve(const kd_tree *t, const kd_heap *h, int node, double bd)
{
    if (h->count < h->k) return 1;
    const int w = worst_at(h);
    double worst = h->d2[w];
    if (bd < worst) return 1;
    if (bd > worst) return 0;
    /* only a tie can enter, and only if lexicographically smaller than the worst point;
     * the lower box corner is lexicographically <= every point in the box */
    const double *lo = t->box + (size_t) node * 2 * t->d;
    return kd_lex_less(lo, t->pts + h->pos[w] * t->d, t->d);
}

/* Sift-down of a lexicographic max-heap over pos[0..m). */
static void lex_down(const kd_tree *t, ptrdiff_t *pos, ptrdiff_t i, ptrdiff_t m)
{
    const int d = t->d;
    for (;;) {
        ptrdiff_t c = 2 * i + 1;
        if (c >= m) return;
        if (c + 1 < m && kd_lex_less(t->pts + pos[c] * d, t->pts + pos[c + 1] * d, d)) c++;
        if (!kd_lex_less(t->pts + pos[i] * d, t->pts + pos[c] * d, d)) return;
        ptrdiff_t x = pos[i]; pos[i] = pos[c]; pos[c] = x;
        i = c;
    }
}

/* Up to 8 points: each point's place is the number of points before it, counted on the
 * first coordinates without a branch (the later ones only when the first ones tie). Points
 * equal in every coordinate keep their given order, as insertion sort keeps it. */
#define LEX_RANK_MAX 8
static void sort_lex_rank(const kd_tree *t, ptrdiff_t *pos, int k)
{
    const int d = t->d;
    ptrdiff_t src[LEX_RANK_MAX];
    double key[LEX_RANK_MAX];
    /* the first coordinates from the column copy when there is one: the search has just
     * read them there, the point-major copy may be out of the cache */
    const double *x0 = t->soa ? t->soa : t->pts;
    const ptrdiff_t step = t->soa ? 1 : d;
    for (int i = 0; i < k; i++) { src[i] = pos[i]; key[i] = x0[src[i] * step]; }
    for (int i = 0; i < k; i++) {
        const double *pi = t->pts + src[i] * d;
        int r = 0;
        for (int j = 0; j < k; j++) {
            r += key[j] < key[i];
            if (key[j] == key[i] && j != i) {
                const double *pj = t->pts + src[j] * d;
                /* before i: lexicographically smaller, or equal and given earlier */
                r += j < i ? !kd_lex_less(pi, pj, d) : kd_lex_less(pj, pi, d);
            }
        }
        pos[r] = src[i];
    }
}

void kd_sort_lex(const kd_tree *t, ptrdiff_t *pos, ptrdiff_t k)
{
    const int d = t->d;
    if (k <= LEX_RANK_MAX) { sort_lex_rank(t, pos, (int) k); return; }
    if (k <= KD_HEAP_MIN) {
        for (ptrdiff_t i = 1; i < k; i++) {
            ptrdiff_t x = pos[i];
            ptrdiff_t m = i;
            while (m > 0 && kd_lex_less(t->pts + x * d, t->pts + pos[m - 1] * d, d)) {
                pos[m] = pos[m - 1];
                m--;
            }
            pos[m] = x;
        }
        return;
    }
    for (ptrdiff_t i = k / 2 - 1; i >= 0; i--) lex_down(t, pos, i, k);
    for (ptrdiff_t m = k - 1; m > 0; m--) {
        ptrdiff_t x = pos[0]; pos[0] = pos[m]; pos[m] = x;
        lex_down(t, pos, 0, m);
    }
}

/* Push both children of nd with their box distances, the nearer last so that it is
 * searched first: the k-th distance tightens sooner, and an early stop comes sooner. */
static inline void push_children(kd_item *st, int *sp, const kd_node *nd, double bl, double br)
{
    int near = bl <= br ? nd->left : nd->right, far = bl <= br ? nd->right : nd->left;
    st[*sp].node = far;  st[*sp].bd = bl <= br ? br : bl; (*sp)++;
    st[*sp].node = near; st[*sp].bd = bl <= br ? bl : br; (*sp)++;
}

/* Distances first, a block at a time, then the rare candidates: the tight first loop keeps
 * the pipeline full, and the test against the worst distance is rarely true. */
#define SCAN_BLOCK 32
KD_INLINE void scan_leaf(const kd_tree *t, const kd_node *nd, const double *q, kd_heap *h,
                         const int d)
{
    double d2[SCAN_BLOCK];
    for (ptrdiff_t b = nd->begin; b < nd->end; b += SCAN_BLOCK) {
        int m = nd->end - b < SCAN_BLOCK ? (int) (nd->end - b) : SCAN_BLOCK;
        const double *p = t->pts + b * d;
        for (int i = 0; i < m; i++) d2[i] = kd_point_d2(q, p + (ptrdiff_t) i * d, d);
        const int w = worst_at(h);
        double worst = h->count < h->k ? HUGE_VAL : h->d2[w];
        for (int i = 0; i < m; i++) {
            if (d2[i] > worst) continue;
            offer(t, h, b + i, d2[i]);
            if (h->count == h->k) worst = h->d2[w];
        }
    }
}

/* The k nearest points to q, a point of the leaf own_leaf: that leaf is scanned first, for
 * a tight bound before the descent from the root. */
KD_INLINE void knn(const kd_tree *t, const double *q, int own_leaf, kd_heap *h, const int d)
{
    kd_item *st = h->stack;
    int sp = 0;
    h->count = 0;
    h->arrived = 0;
    if (own_leaf >= 0) scan_leaf(t, t->nodes + own_leaf, q, h, d);
    st[sp].node = 0; st[sp].bd = kd_gap_d2(t->box, q, d); sp++;
    while (sp > 0) {
        kd_item it = st[--sp];
        if (it.node == own_leaf || !may_improve(t, h, it.node, it.bd)) continue;
        /* down the nearer child at once (the order of a push and a pop), the farther one
         * pushed for later */
        for (const kd_node *nd = t->nodes + it.node;;) {
            if (nd->left < 0) { scan_leaf(t, nd, q, h, d); break; }
            double bl = kd_gap_d2(t->box + (size_t) nd->left * 2 * d, q, d),
                   br = kd_gap_d2(t->box + (size_t) nd->right * 2 * d, q, d);
            const int left_first = bl <= br;
            const int near = left_first ? nd->left : nd->right;
            const double bn = left_first ? bl : br;
            st[sp].node = left_first ? nd->right : nd->left;
            st[sp].bd = left_first ? br : bl;
            sp++;
            if (near == own_leaf || !may_improve(t, h, near, bn)) break;
            nd = t->nodes + near;
        }
    }
}

#ifdef __SSE2__
/* Unroll the loops over the d coordinates (d a constant in each copy of the search). */
#if defined(__GNUC__) && !defined(__clang__)
#define KD_UNROLL _Pragma("GCC unroll 8")
#else
#define KD_UNROLL
#endif
/* Index of the lowest set bit of x != 0. */
static inline int lowest_bit(uint32_t x)
{
#if defined(__GNUC__)
    return __builtin_ctz(x);
#else
    int i = 0;
    while (!(x & 1)) { x >>= 1; i++; }
    return i;
#endif
}

/* The squared distances from q (qv: each coordinate in both lanes) to the points at column
 * positions i and i + 1 of the column copy p (column stride ld), in dimension order. */
KD_INLINE __m128d pair_d2(const double *p, ptrdiff_t ld, const __m128d *qv, const int d)
{
    __m128d s = _mm_setzero_pd();
    KD_UNROLL
    for (int j = 0; j < d; j++) {
        __m128d e = _mm_sub_pd(qv[j], _mm_loadu_pd(p + j * ld));
        s = _mm_add_pd(s, _mm_mul_pd(e, e));
    }
    return s;
}

/* The squared gaps from q to two boxes laid out as cbox (lo of both per dimension, then hi). */
KD_INLINE __m128d pair_gap_d2(const double *cb, const __m128d *qv, const int d)
{
    const __m128d zero = _mm_setzero_pd();
    __m128d s = _mm_setzero_pd();
    KD_UNROLL
    for (int j = 0; j < d; j++) {
        __m128d e = _mm_max_pd(_mm_max_pd(_mm_sub_pd(_mm_load_pd(cb + 2 * j), qv[j]),
                                          _mm_sub_pd(qv[j], _mm_load_pd(cb + 2 * (d + j)))),
                               zero);
        s = _mm_add_pd(s, _mm_mul_pd(e, e));
    }
    return s;
}

/* The same search on the copies of kd_new_fast(): two points' distances per SSE2
 * operation in the leaves, and both children's box distances at once in the inner nodes.
 * Each lane computes what kd_point_d2() and kd_gap_d2() compute, operation for operation
 * (a subtraction, a product, a sum in dimension order; max for the gaps), so every distance
 * and bound has the same bits, and the search opens the same nodes in the same order. */
KD_INLINE void scan_leaf_fast(const kd_tree *t, const kd_node *nd, const __m128d *qv, kd_heap *h,
                              const int d)
{
    double d2[SCAN_BLOCK + 1];
    const ptrdiff_t ld = t->soa_ld;
    for (ptrdiff_t b = nd->begin; b < nd->end; b += SCAN_BLOCK) {
        int m = nd->end - b < SCAN_BLOCK ? (int) (nd->end - b) : SCAN_BLOCK;
        const double *p = t->soa + b;
        const int w = worst_at(h);
        double worst = h->count < h->k ? HUGE_VAL : h->d2[w];
        const __m128d wv = _mm_set1_pd(worst);
        /* a bit per point not beyond the worst: the candidates, found without a branch per
         * point. An odd m reads one point past the block (the next point or the padding),
         * whose bit is dropped. */
        uint32_t cand = 0;
        for (int i = 0; i < m; i += 2) {
            const __m128d s = pair_d2(p + i, ld, qv, d);
            _mm_storeu_pd(d2 + i, s);
            cand |= (uint32_t) _mm_movemask_pd(_mm_cmple_pd(s, wv)) << i;
        }
        if (m < 32) cand &= ((uint32_t) 1 << m) - 1;
        while (cand) {
            const int i = lowest_bit(cand);
            cand &= cand - 1;
            if (d2[i] > worst) continue;
            offer(t, h, b + i, d2[i]);
            if (h->count == h->k) worst = h->d2[w];
        }
    }
}

/* The query's own leaf, scanned first into the empty list: all its distances, then their
 * k-th smallest without a branch (each distance passes through a sorted list of k minima,
 * two lanes at once, then the lanes' lists are merged), and only the points up to it go in.
 * Offered in arrival order, about k (1 + H(m) - H(k)) points would enter (13.6 of 30 at
 * k = 5), each a mispredicted insertion; here exactly k, each put straight at its rank when
 * no distances tie. The list ends as the plain scan leaves it, bit for bit (measured: 7%
 * less time at 1e6 x 4, k = 5). */
#define OWN_KTH_MAX 8
KD_INLINE void scan_own_leaf(const kd_tree *t, const kd_node *nd, const __m128d *qv, kd_heap *h,
                             const int d)
{
    const int m = (int) (nd->end - nd->begin), k = h->k;
    if (h->heap || k > OWN_KTH_MAX || m > SCAN_BLOCK || m < k) {
        scan_leaf_fast(t, nd, qv, h, d);
        return;
    }
    double d2[SCAN_BLOCK + 2];
    const ptrdiff_t ld = t->soa_ld;
    const double *p = t->soa + nd->begin;
    const __m128d inf = _mm_set1_pd(HUGE_VAL);
    __m128d a[OWN_KTH_MAX];
    for (int j = 0; j < k; j++) a[j] = inf;
    for (int i = 0; i < m; i += 2) _mm_storeu_pd(d2 + i, pair_d2(p + i, ld, qv, d));
    if (m & 1) d2[m] = HUGE_VAL; /* the point past the leaf stays out of the lists */
    for (int i = 0; i < m; i += 2) {
        __m128d x = _mm_loadu_pd(d2 + i);
        for (int j = 0; j < k; j++) {
            __m128d lo = _mm_min_pd(a[j], x);
            x = _mm_max_pd(a[j], x);
            a[j] = lo;
        }
    }
    /* k-th smallest of the two sorted lanes A and B: min over i of max(A[i-1], B[k-1-i]) */
    double A[OWN_KTH_MAX + 1], B[OWN_KTH_MAX + 1];
    for (int j = 0; j < k; j++) { A[j + 1] = _mm_cvtsd_f64(a[j]); B[j + 1] = _mm_cvtsd_f64(_mm_unpackhi_pd(a[j], a[j])); }
    A[0] = B[0] = -HUGE_VAL;
    double kth = HUGE_VAL;
    for (int i = 0; i <= k; i++) kth = kd_min(kth, kd_max(A[i], B[k - i]));
    /* the points up to it: exactly k unless distances tie there; then without ties among
     * them, each one's place is the number of smaller distances */
    const __m128d kv = _mm_set1_pd(kth);
    uint32_t in = 0;
    for (int i = 0; i < m; i += 2)
        in |= (uint32_t) _mm_movemask_pd(_mm_cmple_pd(_mm_loadu_pd(d2 + i), kv)) << i;
    if (m < 32) in &= ((uint32_t) 1 << m) - 1;
    int idx[SCAN_BLOCK], c = 0;
    for (uint32_t x = in; x; x &= x - 1) idx[c++] = lowest_bit(x);
    if (c == k) {
        int tie = 0;
        for (int i = 0; i < k; i++) {
            const double di = d2[idx[i]];
            int r = 0;
            for (int j = 0; j < k; j++) { r += d2[idx[j]] < di; tie |= (j != i) & (d2[idx[j]] == di); }
            h->d2[r] = di; h->pos[r] = nd->begin + idx[i];
        }
        if (!tie) { h->count = k; return; }
    }
    for (int i = 0; i < c; i++) offer(t, h, nd->begin + idx[i], d2[idx[i]]);
}

/* The path from the root to leaf `leaf`, for h: the child off the path at each level, root
 * first, and their boxes in pairs (laid out as cbox holds an inner node's children). */
static void fill_path(const kd_tree *t, int leaf, kd_heap *h, const int d)
{
    const ptrdiff_t at = t->nodes[leaf].begin;
    int np = 0;
    for (int v = 0; v != leaf;) {
        const kd_node *nd = t->nodes + v;
        const int go_left = at < t->nodes[nd->left].end;
        h->path_node[np++] = go_left ? nd->right : nd->left;
        v = go_left ? nd->left : nd->right;
    }
    for (int c = 0; c < np; c++) {
        const double *bx = t->box + (size_t) h->path_node[c] * 2 * d;
        double *cb = h->path_box + (size_t) (c / 2) * 4 * d + (c & 1);
        for (int j = 0; j < 2 * d; j++) cb[2 * j] = bx[j];
    }
    if (np & 1) {
        double *cb = h->path_box + (size_t) (np / 2) * 4 * d + 1;
        for (int j = 0; j < 2 * d; j++) cb[2 * j] = 0.0;
    }
    h->path_n = np;
    h->path_leaf = leaf;
    h->path_tree = t;
    h->path_build = t->build;
}

KD_INLINE void knn_fast(const kd_tree *t, const double *q, int own_leaf, kd_heap *h, const int d)
{
    kd_item *st = h->stack;
    int sp = 0;
    __m128d qv[KD_FAST_MAX_D];
    for (int j = 0; j < d; j++) qv[j] = _mm_set1_pd(q[j]);
    h->count = 0;
    h->arrived = 0;
    if (own_leaf >= 0) scan_own_leaf(t, t->nodes + own_leaf, qv, h, d);
    /* bound: the worst kept distance (infinite until k are kept). A far child beyond it
     * cannot improve now nor later (the bound only shrinks): it is not pushed, without a
     * branch; ties are decided when popped */
    double bound = h->count < h->k ? HUGE_VAL : h->d2[worst_at(h)];
    if (own_leaf >= 0 && h->path_node) {
        /* the descent to the own leaf without walking it: the children off its path (the
         * same for every query of the leaf, kept from the previous query in tree order),
         * their box distances two at once from one block, pushed root first as the descent
         * pushes them. It saves a node's branches per level (measured: 4% less time). */
        if (h->path_leaf != own_leaf || h->path_tree != t || h->path_build != t->build)
            fill_path(t, own_leaf, h, d);
        const int np = h->path_n;
        double bd[KD_STACK_MAX];
        for (int c = 0; c < np; c += 2) {
            _mm_storeu_pd(bd + c, pair_gap_d2(h->path_box + (size_t) (c / 2) * 4 * d, qv, d));
        }
        for (int c = 0; c < np; c++) {
            st[sp].node = h->path_node[c]; st[sp].bd = bd[c];
            sp += bd[c] <= bound;
        }
    } else {
        st[sp].node = 0; st[sp].bd = kd_gap_d2(t->box, q, d); sp++;
    }
    while (sp > 0) {
        kd_item it = st[--sp];
        /* may_improve(), with the common answer (a box nearer than the bound) first */
        if (it.node == own_leaf || !(it.bd < bound || (it.bd == bound && may_improve(t, h, it.node, it.bd))))
            continue;
        for (int v = it.node;;) {
            const kd_node *nd = t->nodes + v;
            if (nd->left < 0) {
                scan_leaf_fast(t, nd, qv, h, d);
                bound = h->count < h->k ? HUGE_VAL : h->d2[worst_at(h)];
                break;
            }
            const __m128d s = pair_gap_d2(t->cbox + (size_t) v * 4 * d, qv, d);
            double bl = _mm_cvtsd_f64(s), br = _mm_cvtsd_f64(_mm_unpackhi_pd(s, s));
            const int left_first = bl <= br;
            const int near = left_first ? nd->left : nd->right;
            const double bn = left_first ? bl : br;
            const double bf = left_first ? br : bl;
            st[sp].node = left_first ? nd->right : nd->left;
            st[sp].bd = bf;
            sp += bf <= bound;
            if (near == own_leaf || !(bn < bound || (bn == bound && may_improve(t, h, near, bn)))) break;
            v = near;
        }
    }
}
#endif

/* A copy of the search per small dimension, so that the loops over coordinates unroll:
 * 17% fewer instructions and 15% less time at d = 4 (measured). */
static void knn_any_d(const kd_tree *t, const double *q, int own_leaf, kd_heap *h)
{
    switch (t->d) {
    case 1: knn(t, q, own_leaf, h, 1); break;
    case 2: knn(t, q, own_leaf, h, 2); break;
    case 3: knn(t, q, own_leaf, h, 3); break;
    case 4: knn(t, q, own_leaf, h, 4); break;
    case 5: knn(t, q, own_leaf, h, 5); break;
    case 6: knn(t, q, own_leaf, h, 6); break;
    default: knn(t, q, own_leaf, h, t->d);
    }
    if (h->heap && !h->any_order) heap_finish(t, h);
}

#ifdef __SSE2__
/* knn_fast() per small dimension, as knn_any_d() for knn(). */
static void knn_fast_any_d(const kd_tree *t, const double *q, int own_leaf, kd_heap *h)
{
    switch (t->d) {
    case 1: knn_fast(t, q, own_leaf, h, 1); break;
    case 2: knn_fast(t, q, own_leaf, h, 2); break;
    case 3: knn_fast(t, q, own_leaf, h, 3); break;
    case 4: knn_fast(t, q, own_leaf, h, 4); break;
    case 5: knn_fast(t, q, own_leaf, h, 5); break;
    case 6: knn_fast(t, q, own_leaf, h, 6); break;
    default: knn_fast(t, q, own_leaf, h, t->d);
    }
    if (h->heap && !h->any_order) heap_finish(t, h);
}
#endif

void kd_knn_self(const kd_tree *t, ptrdiff_t self, kd_heap *h)
{
#ifdef __SSE2__
    if (t->cbox && t->d <= KD_FAST_MAX_D) {
        knn_fast_any_d(t, t->pts + self * t->d, (int) t->leaf_of[self], h);
        return;
    }
#endif
    knn_any_d(t, t->pts + self * t->d, (int) t->leaf_of[self], h);
}

void kd_knn_point(const kd_tree *t, const double *q, kd_heap *h)
{
#ifdef __SSE2__
    if (t->cbox && t->d <= KD_FAST_MAX_D) {
        knn_fast_any_d(t, q, -1, h);
        return;
    }
#endif
    knn_any_d(t, q, -1, h);
}

ptrdiff_t kd_count_within(const kd_tree *t, const double *q, double r2, ptrdiff_t stop_at,
                          kd_item *st)
{
    const int d = t->d;
    ptrdiff_t count = 0;
    int sp = 0;
    if (t->n == 0) return 0;
    st[sp].node = 0; st[sp].bd = kd_box_d2(t, 0, q); sp++;
    while (sp > 0 && count < stop_at) {
        kd_item it = st[--sp];
        const kd_node *nd = t->nodes + it.node;
        if (it.bd > r2) continue;
        if (kd_box_far_d2(t, it.node, q) <= r2) { count += nd->end - nd->begin; continue; }
        if (nd->left < 0) {
            for (ptrdiff_t p = nd->begin; p < nd->end; p++)
                if (kd_point_d2(q, t->pts + p * d, d) <= r2) count++;
            continue;
        }
        push_children(st, &sp, nd, kd_box_d2(t, nd->left, q), kd_box_d2(t, nd->right, q));
    }
    return count < stop_at ? count : stop_at;
}

static double *cache_aligned(size_t n, void *(*alloc)(size_t, size_t))
{
    char *p = alloc(n * sizeof(double) + 64, 1);
    return (double *) (p + (64 - (uintptr_t) p % 64) % 64);
}

kd_tree kd_new(ptrdiff_t n, int d, int leaf_size, void *(*alloc)(size_t, size_t))
{
    size_t nn = kd_max_nodes(n, leaf_size);
    kd_tree t;
    kd_init(&t, n, d, leaf_size,
            (double *) alloc((size_t) n * d, sizeof(double)),
            (ptrdiff_t *) alloc(n, sizeof(ptrdiff_t)),
            (ptrdiff_t *) alloc(n, sizeof(ptrdiff_t)),
            (kd_node *) alloc(nn, sizeof(kd_node)),
            cache_aligned(nn * 2 * d, alloc));
    return t;
}

kd_tree kd_new_fast(ptrdiff_t n, int d, int leaf_size, void *(*alloc)(size_t, size_t))
{
    kd_tree t = kd_new(n, d, leaf_size, alloc);
    t.soa_ld = n + 2;
    t.soa = (double *) alloc((size_t) t.soa_ld * d, sizeof(double));
    t.cbox = cache_aligned(kd_max_nodes(n, leaf_size) * 4 * d, alloc);
    return t;
}

kd_heap kd_heap_new(int k, void *(*alloc)(size_t, size_t))
{
    kd_heap h;
    kd_heap_init(&h, k, (ptrdiff_t *) alloc(k, sizeof(ptrdiff_t)),
                 (double *) alloc(k, sizeof(double)),
                 k > KD_HEAP_MIN ? (ptrdiff_t *) alloc(k, sizeof(ptrdiff_t)) : NULL,
                 (kd_item *) alloc(KD_STACK_MAX, sizeof(kd_item)));
    h.path_node = (int *) alloc(KD_STACK_MAX, sizeof(int));
    h.path_box = cache_aligned((size_t) (KD_STACK_MAX / 2 + 1) * 4 * KD_FAST_MAX_D, alloc);
    return h;
}
