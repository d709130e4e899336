/* Exact k-nearest-neighbour search on a kd-tree. Pure C: no R API, safe to call from
 * OpenMP threads. The caller owns every buffer (allocate with R_alloc in glue code so an R
 * error or interrupt frees them).
 *
 * Order of neighbours: by squared Euclidean distance, ties broken by the lexicographic
 * order of the neighbours' coordinates. Points with equal distance and equal coordinates
 * are identical, so the coordinates of the k nearest points are uniquely defined whatever
 * the row order of the input or the shape of the tree. That is what makes anonymise()
 * permutation-equivariant and thread-count invariant, bit for bit. */
#ifndef DETANON_KDTREE_H
#define DETANON_KDTREE_H

#include <stddef.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    ptrdiff_t begin, end; /* tree positions [begin, end) */
    int left, right;      /* child node ids; -1 for a leaf */
} kd_node;

typedef struct {
    ptrdiff_t n;       /* number of points */
    int d;             /* dimension */
    int leaf_size;
    double *pts;       /* n * d, point-major, in tree order */
    ptrdiff_t *row;    /* tree position -> caller's row id */
    ptrdiff_t *leaf_of;/* tree position -> id of the leaf node holding it */
    kd_node *nodes;    /* capacity kd_max_nodes(n, leaf_size) */
    double *box;       /* per node: lo[d] then hi[d] */
    int n_nodes;
    int depth;         /* depth of the deepest leaf (root = 0) */
    /* Optional search copies (kd_new_fast(); NULL otherwise), filled by the build: the
     * coordinates again column by column in tree order (soa[j * soa_ld + pos], soa_ld = n + 2:
     * zeros after the last point, which a paired read can reach), and per inner node the boxes of its two children
     * interleaved (cbox + node * 4 * d: lo of left and right per dimension, then hi), so that
     * SSE2 computes two point distances, or both children's box distances, at once. */
    double *soa;
    ptrdiff_t soa_ld;
    double *cbox;
    /* Polled about every 2^20 points of building work when not NULL (main thread only):
     * a true answer stops the build, leaving aborted = 1 and a valid tree whose remaining
     * nodes are leaves (correct answers, slow searches: callers should stop). */
    int (*interrupted)(void);
    int aborted;
    ptrdiff_t since_poll;
    unsigned long build; /* number of builds of this tree (kd_reuse() keeps counting) */
} kd_tree;

/* One entry of a search stack: a node and its squared distance bound. */
typedef struct {
    int node;
    double bd;
} kd_item;

/* Squared distance between two points, and from a point to a node's box. Both sum
 * (q - p)^2 in dimension order, so rounding is monotone between them: the box distance
 * is a lower bound of every point distance in the box, in floating point too. */
#if defined(__GNUC__)
#define KD_INLINE static inline __attribute__((always_inline))
#else
#define KD_INLINE static inline
#endif

KD_INLINE double kd_point_d2(const double *q, const double *p, int d)
{
    double s = 0.0;
    for (int j = 0; j < d; j++) { double e = q[j] - p[j]; s += e * e; }
    return s;
}

/* min(a, b), max(a, b) and max(a, b, 0) without a branch where SSE2 exists (every x86-64):
 * in the search and the box updates of the build the obvious branches go either way at
 * random; their mispredictions were measured at half of all mispredictions of the search
 * and a fifth of its time. Same values either way (the inputs are never NaN). */
static inline double kd_min(double a, double b)
{
#ifdef __SSE2__
    return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(a), _mm_set_sd(b)));
#else
    return a < b ? a : b;
#endif
}

static inline double kd_max(double a, double b)
{
#ifdef __SSE2__
    return _mm_cvtsd_f64(_mm_max_sd(_mm_set_sd(a), _mm_set_sd(b)));
#else
    return a > b ? a : b;
#endif
}

static inline double kd_pos_max(double a, double b)
{
    return kd_max(kd_max(a, b), 0.0);
}

/* The gap between q and the box [lo, hi] (hi = lo + d) is lo - q below it, q - hi above it
 * (at most one is positive), and its square equals (q - lo)^2 or (q - hi)^2 exactly. */
KD_INLINE double kd_gap_d2(const double *lo, const double *q, int d)
{
    const double *hi = lo + d;
    double s = 0.0;
    for (int j = 0; j < d; j++) {
        double e = kd_pos_max(lo[j] - q[j], q[j] - hi[j]);
        s += e * e;
    }
    return s;
}

static inline double kd_box_d2(const kd_tree *t, int node, const double *q)
{
    return kd_gap_d2(t->box + (size_t) node * 2 * t->d, q, t->d);
}

/* Squared distance from q to the farthest corner of a node's box: an upper bound of every
 * point distance in the box, in floating point too (monotone rounding). */
static inline double kd_box_far_d2(const kd_tree *t, int node, const double *q)
{
    const int d = t->d;
    const double *lo = t->box + (size_t) node * 2 * d, *hi = lo + d;
    double s = 0.0;
    for (int j = 0; j < d; j++) {
        double a = q[j] - lo[j], b = q[j] - hi[j];
        s += kd_max(a * a, b * b);
    }
    return s;
}

/* The leaf q falls in, descending to the nearer child box at every level (the first leaf a
 * search from q opens): queries sorted by it visit the same parts of the tree one after
 * another. */
static inline int kd_query_leaf(const kd_tree *t, const double *q)
{
    int node = 0;
    while (t->nodes[node].left >= 0) {
        const int l = t->nodes[node].left, r = t->nodes[node].right;
        node = kd_box_d2(t, r, q) < kd_box_d2(t, l, q) ? r : l;
    }
    return node;
}

/* Is point a lexicographically before point b? */
static inline int kd_lex_less(const double *a, const double *b, int d)
{
    for (int j = 0; j < d; j++) {
        if (a[j] < b[j]) return 1;
        if (a[j] > b[j]) return 0;
    }
    return 0;
}

/* Size of buffers a tree of n points needs. */
size_t kd_max_nodes(ptrdiff_t n, int leaf_size);

/* Point the tree at caller-owned buffers: pts n*d, row n, leaf_of n, nodes and box
 * (2*d doubles per node) for kd_max_nodes(n, leaf_size) nodes. */
void kd_init(kd_tree *t, ptrdiff_t n, int d, int leaf_size, double *pts, ptrdiff_t *row,
             ptrdiff_t *leaf_of, kd_node *nodes, double *box);

/* Point the tree at its own buffers again, for n points (no more than they were sized for). */
void kd_reuse(kd_tree *t, ptrdiff_t n);

/* Build over the points x[rows[i] + j * ldx] (column-major, j < d), i < n.
 * `rows` may be NULL, meaning rows[i] = i. Needs a stack of depth O(log n) only. */
void kd_build(kd_tree *t, const double *x, ptrdiff_t ldx, const ptrdiff_t *rows);

/* The same over the standardised points (col[j][rows[i]] - center[j]) / scale[j]: the
 * z-scores are made while copying, with the same two roundings as R's sweep(). */
void kd_build_scaled(kd_tree *t, const double *const *col, const double *center,
                     const double *scale, const ptrdiff_t *rows);

/* Capacity of a search stack, valid for every tree: a tree of depth D needs 2 D + 4, and a
 * median-split tree over fewer than 2^63 points is less than 64 levels deep. */
#define KD_STACK_MAX (2 * 64 + 4)

/* Work space for one query of k neighbours (one per thread). Up to KD_HEAP_MIN neighbours
 * are kept as a sorted array (insertion is cheapest for small k); more as a binary max-heap
 * with the worst candidate at the root, O(log k) per accepted candidate instead of O(k),
 * sorted once at the end. Both orders are total: squared distance, then coordinates, then
 * arrival (identical points found earlier first, as sorted insertion keeps them), so both
 * hold the same neighbours in the same order. */
#define KD_HEAP_MIN 24
typedef struct {
    int k;
    int count;
    int heap;        /* k > KD_HEAP_MIN: pos/d2/seq form a max-heap during a search */
    int any_order;   /* set by callers that need the k neighbours as a set only: in heap mode
                        a search then leaves them in heap order, unsorted */
    ptrdiff_t *pos;  /* k tree positions, best first after a search */
    double *d2;      /* k squared distances */
    ptrdiff_t *seq;  /* heap mode: arrival number of each candidate */
    ptrdiff_t arrived;
    kd_item *stack;  /* capacity KD_STACK_MAX */
    /* kd_heap_new() only (NULL otherwise): the path to the last query's own leaf in a fast
     * tree, which the next query of the same leaf reuses (kd_knn_self()) */
    int *path_node;        /* the child off the path at each level, root first */
    double *path_box;      /* their boxes in pairs, laid out as cbox */
    int path_n, path_leaf;
    const kd_tree *path_tree;
    unsigned long path_build;
} kd_heap;

/* Point a heap for k neighbours at caller-owned buffers: pos and seq k each (seq may be
 * NULL for k <= KD_HEAP_MIN), d2 k, stack KD_STACK_MAX. */
void kd_heap_init(kd_heap *h, int k, ptrdiff_t *pos, double *d2, ptrdiff_t *seq, kd_item *stack);

/* A tree with room for n points, and a heap of k neighbours, with every buffer from
 * `alloc` (host.h: the caller owns and frees the memory; never NULL). The tree's boxes
 * start on a 64-byte boundary (a cache line), so that a node's box of 2 * d doubles spans
 * as few lines as it can: the search reads two boxes per node it opens. */
kd_tree kd_new(ptrdiff_t n, int d, int leaf_size, void *(*alloc)(size_t, size_t));
kd_heap kd_heap_new(int k, void *(*alloc)(size_t, size_t));

/* The same tree with the search copies (soa, cbox) too: (n + 2) * d + 4 * d doubles per
 * node more (about 1.5 times the points' own size at leaves of 16 to 32 points), for the self
 * queries of kd_knn_self() (SSE2, d <= KD_FAST_MAX_D; otherwise the plain search) and the
 * centroids. The answers are the same, bit for bit: the same distances summed in the same
 * order, the same pruning. */
#define KD_FAST_MAX_D 8
kd_tree kd_new_fast(ptrdiff_t n, int d, int leaf_size, void *(*alloc)(size_t, size_t));

/* Sort pos[0..n) by the lexicographic order of the points' coordinates: O(n log n). */
void kd_sort_lex(const kd_tree *t, ptrdiff_t *pos, ptrdiff_t n);

/* The centroid of the k tree points pos[0..k), into out[0..d). The points are summed in
 * their lexicographic order (pos is sorted in place, O(k log k)), so the centroid is a
 * function of the k points alone: records that share their k points get bit-identical
 * centroids (their last bits cannot tell which record a centroid came from, and with k equal
 * to a stratum's size the centroids are all equal, not equal up to rounding noise that step
 * 5 would blow up). */
static inline void kd_centroid_lex(const kd_tree *t, ptrdiff_t *pos, int k, double *out)
{
    const int d = t->d;
    kd_sort_lex(t, pos, k);
    /* the same values from the column copy when there is one (kd_new_fast(): the search has
     * just read them there) */
    const double *x = t->soa ? t->soa : t->pts;
    const ptrdiff_t step = t->soa ? 1 : d, ld = t->soa ? t->soa_ld : 1;
    for (int j = 0; j < d; j++) {
        double s = 0.0;
        for (int m = 0; m < k; m++) s += x[pos[m] * step + j * ld];
        out[j] = s / k;
    }
}

/* k nearest neighbours of the point at tree position `self` (itself included, as the
 * nearest point at distance 0). Result in h->pos / h->d2, best first (unless any_order). */
void kd_knn_self(const kd_tree *t, ptrdiff_t self, kd_heap *h);

/* k nearest tree points to an arbitrary point q[0..d-1] (the risk battery's queries).
 * Requires k <= t->n. */
void kd_knn_point(const kd_tree *t, const double *q, kd_heap *h);

/* Number of tree points p with squared distance |q - p|^2 <= r2, stopping early once
 * `stop_at` points are found (pass a value > n to count them all). */
ptrdiff_t kd_count_within(const kd_tree *t, const double *q, double r2, ptrdiff_t stop_at,
                          kd_item *stack);

#endif
