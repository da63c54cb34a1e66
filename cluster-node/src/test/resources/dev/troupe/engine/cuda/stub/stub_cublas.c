/*
 * A recording stand-in for cuBLAS (libcublas.so.13), the part the CUDA runner calls: a handle, its
 * stream and cublasGemmEx, each call written with its decoded arguments to $TROUPE_CUDA_STUB_LOG
 * (see stub_driver.c), or only counted (stub_counts.c). No product is computed. alpha and beta are
 * read as host floats, which is what they are under CUBLAS_COMPUTE_32F and the default (host)
 * pointer mode.
 */
#include <stdio.h>
#include <stdlib.h>

static FILE *out;
static char handle[1];

/* The log, or NULL in counting mode. */
static FILE *log_file(void) {
  if (counting()) return NULL;
  if (!out) {
    const char *path = getenv("TROUPE_CUDA_STUB_LOG");
    out = path ? fopen(path, "a") : NULL;
    if (!out) out = stderr;
  }
  return out;
}

int cublasCreate_v2(void **h) {
  COUNT("cublasCreate_v2");
  *h = handle;
  if (log_file()) fprintf(out, "cublasCreate handle=%p\n", *h), fflush(out);
  return 0;
}

int cublasDestroy_v2(void *h) {
  COUNT("cublasDestroy_v2");
  if (log_file()) fprintf(out, "cublasDestroy handle=%p\n", h), fflush(out);
  return h == handle ? 0 : 1;
}

int cublasSetStream_v2(void *h, void *stream) {
  COUNT("cublasSetStream_v2");
  if (log_file()) fprintf(out, "cublasSetStream handle=%p stream=%p\n", h, stream), fflush(out);
  return h == handle ? 0 : 1;
}

int cublasGemmEx(void *h, int opA, int opB, int m, int n, int k, const void *alpha, const void *A,
                 int typeA, int lda, const void *B, int typeB, int ldb, const void *beta, void *C,
                 int typeC, int ldc, int compute, int algo) {
  COUNT("cublasGemmEx");
  if (log_file())
    fprintf(out,
            "cublasGemmEx handle=%p opA=%d opB=%d m=%d n=%d k=%d alpha=%g A=%p typeA=%d lda=%d "
            "B=%p typeB=%d ldb=%d beta=%g C=%p typeC=%d ldc=%d compute=%d algo=%d\n",
            h, opA, opB, m, n, k, *(const float *)alpha, A, typeA, lda, B, typeB, ldb,
            *(const float *)beta, C, typeC, ldc, compute, algo),
        fflush(out);
  return h == handle ? 0 : 1;
}

const char *cublasGetStatusString(int status) {
  COUNT("cublasGetStatusString");
  return status == 0 ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_NOT_INITIALIZED";
}
