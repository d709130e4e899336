/* Glue of attack_assignment() (ffi_assign): it checks R's arguments, allocates the results
 * (NA where no row is assigned) and calls the kernel assign_cells() of assign.c (see assign.h for the method:
 * exact dense assignment in small cells, sparse assignment over kd-tree candidate edges
 * with expansion and column generation in large ones, and the dual lower bound). Scratch
 * memory comes from R_alloc through detanon_host(), so an interrupt (checked between
 * pieces of work, never inside a parallel region) or an error frees it; the buffers it grows
 * (host->grow) are malloc'd and freed by the cleanup of R_ExecWithCleanup(), which runs then too. */
#include "detanon.h"
#include "assign.h"

typedef struct {
    const double *zr;
    ptrdiff_t Nr;
    const double *zc;
    ptrdiff_t Nc;
    int d;
    const int *ro, *roff, *co, *coff;
    ptrdiff_t n_cells;
    double limit;
    int cand, max_rounds, nt;
    const assign_out *res;
    const kernel_host *host;
    const char *bad;
} assign_call;

static SEXP run_assign(void *data)
{
    assign_call *c = (assign_call *) data;
    c->bad = assign_cells(c->zr, c->Nr, c->zc, c->Nc, c->d, c->ro, c->roff, c->co, c->coff, c->n_cells, c->limit,
                          c->cand, c->max_rounds, c->nt, c->res, c->host);
    return R_NilValue;
}

/* zr, zc: the row and column points (numeric matrices with the same columns); r_order,
 * c_order: 1-based rows of zr / zc grouped by cell, r_off, c_off: offsets of the cells
 * (same number of cells); limit: the largest cell solved exactly; cand: candidate edges per
 * point in the sparse assignment; rounds: rounds of column generation at most. Returns list(col: for every row of zr in a cell, the
 * 1-based row of zc it is assigned (NA when none), regret: a lower bound of the cost
 * increase of assigning the row elsewhere, cost, bound, sparse, fallback, rounds, auction: per
 * cell). */
SEXP ffi_assign(SEXP zr, SEXP zc, SEXP r_order, SEXP r_off, SEXP c_order, SEXP c_off,
                SEXP limit_, SEXP cand_, SEXP rounds_, SEXP nthreads)
{
    const int d = Rf_ncols(zr);
    const ptrdiff_t Nr = Rf_nrows(zr), Nc = Rf_nrows(zc);
    const R_xlen_t n_cells = XLENGTH(r_off) - 1;
    if (TYPEOF(zr) != REALSXP || TYPEOF(zc) != REALSXP || Rf_ncols(zc) != d || d < 1 ||
        TYPEOF(r_order) != INTSXP || TYPEOF(c_order) != INTSXP || TYPEOF(r_off) != INTSXP ||
        TYPEOF(c_off) != INTSXP || XLENGTH(c_off) != XLENGTH(r_off) || n_cells < 0)
        Rf_error("internal error: bad input to ffi_assign");
    const double limit = Rf_asReal(limit_);
    const int cand = Rf_asInteger(cand_), max_rounds = Rf_asInteger(rounds_);
    const int nt = detanon_threads(nthreads);
    if (!(limit >= 1) || cand < 1 || max_rounds < 0) Rf_error("internal error: bad limit or cand in ffi_assign");
    const int *ro = INTEGER_RO(r_order), *co = INTEGER_RO(c_order);
    const int *roff = INTEGER_RO(r_off), *coff = INTEGER_RO(c_off);
    if (n_cells > 0 && (roff[0] != 0 || roff[n_cells] != XLENGTH(r_order) || coff[0] != 0 ||
                        coff[n_cells] != XLENGTH(c_order)))
        Rf_error("internal error: bad offsets in ffi_assign");
    for (R_xlen_t i = 0; i < XLENGTH(r_order); i++)
        if (ro[i] < 1 || ro[i] > Nr) Rf_error("internal error: row out of range in ffi_assign");
    for (R_xlen_t i = 0; i < XLENGTH(c_order); i++)
        if (co[i] < 1 || co[i] > Nc) Rf_error("internal error: column out of range in ffi_assign");

    static const char *names[] = {"col", "regret", "cost", "bound", "sparse", "fallback", "rounds", "auction"};
    SEXP out = PROTECT(detanon_named_list(8, names));
    int *res_col = INTEGER(SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, Nr)));
    double *res_reg = REAL(SET_VECTOR_ELT(out, 1, Rf_allocVector(REALSXP, Nr)));
    double *res_cost = REAL(SET_VECTOR_ELT(out, 2, Rf_allocVector(REALSXP, n_cells)));
    double *res_bound = REAL(SET_VECTOR_ELT(out, 3, Rf_allocVector(REALSXP, n_cells)));
    int *res_sparse = LOGICAL(SET_VECTOR_ELT(out, 4, Rf_allocVector(LGLSXP, n_cells)));
    int *res_fb = INTEGER(SET_VECTOR_ELT(out, 5, Rf_allocVector(INTSXP, n_cells)));
    int *res_rounds = INTEGER(SET_VECTOR_ELT(out, 6, Rf_allocVector(INTSXP, n_cells)));
    int *res_auction = LOGICAL(SET_VECTOR_ELT(out, 7, Rf_allocVector(LGLSXP, n_cells)));
    for (ptrdiff_t i = 0; i < Nr; i++) { res_col[i] = NA_INTEGER; res_reg[i] = NA_REAL; }

    const assign_out res = {res_col, res_reg, res_cost, res_bound, res_sparse, res_fb, res_rounds, res_auction};
    /* the buffers it grows (stores of edges, candidates), malloc'd: each freed when a larger
     * one replaces it (from R_alloc, every store made in the call was held until it returned:
     * on Titanic resampled to 1e6, noisy MDAV k = 30, the attack peaked 667 MiB above its
     * process, now 489 MiB, the rounds of column generation growing the stores) */
    detanon_blocks blocks = {{NULL}};
    kernel_host host = detanon_host(R_NilValue);
    host.grow = detanon_grow;
    host.gctx = &blocks;
    assign_call call = {REAL_RO(zr), Nr, REAL_RO(zc), Nc, d, ro, roff, co, coff, n_cells, limit, cand, max_rounds,
                        nt, &res, &host, NULL};
    R_ExecWithCleanup(run_assign, &call, detanon_blocks_free, &blocks);
    if (call.bad) Rf_error("internal error in ffi_assign: %s", call.bad);
    UNPROTECT(1);
    return out;
}
