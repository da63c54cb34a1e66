/*
 * A recording stand-in for cuBLAS (libcublas.so.13), the part the CUDA runner calls: a handle, its
 * stream and workspace, cublasGemmEx and cublasGemmStridedBatchedEx, each call written with its decoded arguments to $TROUPE_CUDA_STUB_LOG
 * (see stub_driver.c), or only counted (stub_counts.c). No product is computed. alpha and beta are
 * read as host floats, which is what they are under CUBLAS_COMPUTE_32F and the default (host)
 * pointer mode. A product on a capturing stream is handed to the stand-in driver's graph
 * (troupe_stub_capture_gemm, with its operands' extents and the workspace, which the driver checks
 * at each replay); one captured without a workspace set is refused, since cuBLAS could allocate.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;
static char handle[1];
static void *stream_of_handle, *workspace;
static size_t workspace_bytes;

typedef int (*CaptureGemm)(void *, int, const unsigned long long *, const size_t *);

/* The stand-in driver's hook, from the libcuda.so.1 already loaded (the probe loads it first). */
static CaptureGemm capture_gemm(void) {
  static CaptureGemm hook;
  static int looked;
  if (!looked) {
    looked = 1;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    hook = h ? (CaptureGemm)dlsym(h, "troupe_stub_capture_gemm") : NULL;
    if (!hook) fprintf(stderr, "cuBLAS stand-in: no stand-in driver loaded\n"), abort();
  }
  return hook;
}

/* Bytes a column-major [rows, cols] matrix with leading dimension ld spans, of `size`-byte items. */
static size_t extent(long rows, long cols, long ld, int size) {
  return rows == 0 || cols == 0 ? 0 : (size_t)((cols - 1) * ld + rows) * size;
}

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
  stream_of_handle = stream;
  return h == handle ? 0 : 1;
}

int cublasSetWorkspace_v2(void *h, void *ws, size_t bytes) {
  COUNT("cublasSetWorkspace_v2");
  if (log_file())
    fprintf(out, "cublasSetWorkspace handle=%p ptr=%p bytes=%zu\n", h, ws, bytes), fflush(out);
  workspace = ws;
  workspace_bytes = bytes;
  return h == handle ? 0 : 1;
}

int cublasGemmEx(void *h, int opA, int opB, int m, int n, int k, const void *alpha, const void *A,
                 int typeA, int lda, const void *B, int typeB, int ldb, const void *beta, void *C,
                 int typeC, int ldc, int compute, int algo) {
  COUNT("cublasGemmEx");
  /* typeC 14 = CUDA_R_16BF (2 bytes), else fp32 */
  unsigned long long ptrs[4] = {(unsigned long long)A, (unsigned long long)B,
                                (unsigned long long)C, (unsigned long long)workspace};
  size_t bytes[4] = {extent(opA == 0 ? m : k, opA == 0 ? k : m, lda, 2),
                     extent(opB == 0 ? k : n, opB == 0 ? n : k, ldb, 2),
                     extent(m, n, ldc, typeC == 14 ? 2 : 4), workspace_bytes};
  int captured = capture_gemm()(stream_of_handle, 4, ptrs, bytes);
  if (captured && !workspace) {
    if (log_file()) fprintf(out, "cublasGemmEx error=captured-without-a-workspace\n"), fflush(out);
    return 14; /* CUBLAS_STATUS_INTERNAL_ERROR */
  }
  if (log_file())
    fprintf(out,
            "cublasGemmEx handle=%p opA=%d opB=%d m=%d n=%d k=%d alpha=%g A=%p typeA=%d lda=%d "
            "B=%p typeB=%d ldb=%d beta=%g C=%p typeC=%d ldc=%d compute=%d algo=%d%s\n",
            h, opA, opB, m, n, k, *(const float *)alpha, A, typeA, lda, B, typeB, ldb,
            *(const float *)beta, C, typeC, ldc, compute, algo, captured ? " captured=1" : ""),
        fflush(out);
  return h == handle ? 0 : 1;
}

/* A strided batch: as cublasGemmEx, each operand spanning its last member's extent past its start;
   alpha in full (attention's scale is no round number). */
int cublasGemmStridedBatchedEx(void *h, int opA, int opB, int m, int n, int k, const void *alpha,
                               const void *A, int typeA, int lda, long long strideA, const void *B,
                               int typeB, int ldb, long long strideB, const void *beta, void *C,
                               int typeC, int ldc, long long strideC, int batch, int compute,
                               int algo) {
  COUNT("cublasGemmStridedBatchedEx");
  int cb = typeC == 14 ? 2 : 4;
  long last = batch > 0 ? batch - 1 : 0;
  unsigned long long ptrs[4] = {(unsigned long long)A, (unsigned long long)B,
                                (unsigned long long)C, (unsigned long long)workspace};
  size_t bytes[4] = {extent(opA == 0 ? m : k, opA == 0 ? k : m, lda, 2) + last * strideA * 2,
                     extent(opB == 0 ? k : n, opB == 0 ? n : k, ldb, 2) + last * strideB * 2,
                     extent(m, n, ldc, cb) + last * strideC * cb, workspace_bytes};
  int captured = capture_gemm()(stream_of_handle, 4, ptrs, bytes);
  if (captured && !workspace) {
    if (log_file())
      fprintf(out, "cublasGemmStridedBatchedEx error=captured-without-a-workspace\n"), fflush(out);
    return 14; /* CUBLAS_STATUS_INTERNAL_ERROR */
  }
  if (log_file())
    fprintf(out,
            "cublasGemmStridedBatchedEx handle=%p opA=%d opB=%d m=%d n=%d k=%d alpha=%.9g A=%p "
            "typeA=%d lda=%d strideA=%lld B=%p typeB=%d ldb=%d strideB=%lld beta=%.9g C=%p typeC=%d "
            "ldc=%d strideC=%lld batch=%d compute=%d algo=%d%s\n",
            h, opA, opB, m, n, k, *(const float *)alpha, A, typeA, lda, strideA, B, typeB, ldb,
            strideB, *(const float *)beta, C, typeC, ldc, strideC, batch, compute, algo,
            captured ? " captured=1" : ""),
        fflush(out);
  return h == handle ? 0 : 1;
}

const char *cublasGetStatusString(int status) {
  COUNT("cublasGetStatusString");
  return status == 0 ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_NOT_INITIALIZED";
}
