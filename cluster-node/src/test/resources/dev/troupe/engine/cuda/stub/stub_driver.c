/*
 * A recording stand-in for the NVIDIA driver (libcuda.so.1), for checking the CUDA runner's calls
 * without a GPU (StubDriverTest). It exports the driver functions CudaProbe and CudaGpu call, under
 * the names the JavaCPP bindings import (cuMemAlloc_v2 ...), and writes one line per call, with its
 * arguments decoded, to $TROUPE_CUDA_STUB_LOG.
 *
 * Device memory is host memory (zero-filled), so copies really copy and a round trip can be
 * checked; allocations are tracked, and a copy outside a live allocation, a free of an unknown
 * address or a call without a current context fails as the driver would fail it. Kernels never run:
 * cuModuleLoadData reads the cubin's ELF sections ".nv.info.<kernel>", whose KPARAM_INFO records give
 * each parameter's offset and size (the table the real driver copies kernel arguments by), and
 * cuLaunchKernel reads each kernelParams[i] as a pointer to that many bytes, as the driver does.
 * Reads go through a pipe, so a bad pointer is reported as "unreadable" instead of crashing.
 * Graphs: between cuStreamBeginCapture and cuStreamEndCapture a launch on the capturing stream is
 * recorded (its arguments decoded then, as the driver copies them) instead of run, and so is a
 * cuBLAS product (stub_cublas.c reports it through troupe_stub_capture_gemm); an allocation, free,
 * copy or wait meanwhile is refused, as the thread-local capture mode refuses it, and the capture
 * then fails at its end. cuGraphLaunch checks every recorded pointer argument and product operand
 * against the allocations live at that moment: a graph that outlived a buffer fails there, where a
 * GPU would read freed memory.
 * With $TROUPE_CUDA_STUB_COUNTS set it only counts calls (stub_counts.c), checks still made.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  NO_BINARY_FOR_GPU = 209,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500,
  ILLEGAL_STATE = 401,
  CAPTURE_UNSUPPORTED = 900,
  CAPTURE_INVALIDATED = 901
};

#define DEVICE_MEMORY (8ULL << 30)
#define DEVICE_ARCH 90 /* reported as compute capability 9.0 (Hopper) */
#define MAX_PARAMS 64

static FILE *out;
static int initialised, retained, stream_count;
static char context[1], *current;
static char streams[16];

static void say(const char *fmt, ...) {
  if (counting()) return;
  if (!out) {
    const char *path = getenv("TROUPE_CUDA_STUB_LOG");
    out = path ? fopen(path, "a") : NULL;
    if (!out) out = stderr;
  }
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
  fputc('\n', out);
  fflush(out);
}

/* Copies n bytes from p if they are mapped: write(2) fails with EFAULT instead of faulting. */
static int peek(const void *p, void *dst, size_t n) {
  static int fd[2] = {-1, -1};
  if (fd[0] < 0 && pipe(fd) != 0) return 0;
  if (write(fd[1], p, n) != (ssize_t)n) return 0;
  return read(fd[0], dst, n) == (ssize_t)n;
}

/* ---- memory ---- */

typedef struct {
  CUdeviceptr ptr;
  size_t bytes;
} Allocation;
static Allocation *allocs;
static size_t nallocs, cap_allocs, live_bytes;

static Allocation *find(CUdeviceptr p, size_t n) {
  for (size_t i = 0; i < nallocs; i++)
    if (p >= allocs[i].ptr && n <= allocs[i].bytes && p - allocs[i].ptr <= allocs[i].bytes - n)
      return &allocs[i];
  return NULL;
}

static CUresult need_context(const char *what) {
  if (!initialised) return say("%s error=not-initialised", what), NOT_INITIALIZED;
  if (current != context) return say("%s error=no-current-context", what), INVALID_CONTEXT;
  return OK;
}

static int known_stream(void *s) {
  return s == NULL || ((char *)s >= streams && (char *)s < streams + stream_count);
}

/* ---- graphs: what a capture records ---- */

#define MAX_OPERANDS 4
typedef struct {
  const char *name; /* the kernel's, or "cublasGemmEx" */
  int nargs;
  unsigned short size[MAX_PARAMS];
  unsigned long long value[MAX_PARAMS];
  CUdeviceptr operand[MAX_OPERANDS]; /* a product's operands and workspace, with their extents */
  size_t extent[MAX_OPERANDS];
} Node;
typedef struct {
  int nnodes, cap;
  Node *nodes;
} Graph;
static Graph *capture_graph; /* non-NULL while a capture is open */
static void *capture_stream;
static int capture_invalid;

static Node *add_node(const char *name) {
  Graph *g = capture_graph;
  if (g->nnodes == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 256;
    g->nodes = realloc(g->nodes, g->cap * sizeof(Node));
  }
  Node *n = &g->nodes[g->nnodes++];
  memset(n, 0, sizeof *n);
  n->name = name;
  return n;
}

/* The thread-local capture mode refuses what could make the capture unsafe (allocations, frees,
 * synchronous copies and waits) and invalidates the capture. */
static CUresult refused_in_capture(const char *what) {
  if (!capture_graph) return OK;
  capture_invalid = 1;
  say("%s error=stream-capture-unsupported", what);
  return CAPTURE_UNSUPPORTED;
}

/* stub_cublas.c's product on `stream`: recorded when the stream is capturing (returns 1). */
int troupe_stub_capture_gemm(void *stream, int n, const unsigned long long *ptr,
                             const size_t *bytes) {
  if (!capture_graph || stream != capture_stream) return 0;
  Node *node = add_node("cublasGemmEx");
  for (int i = 0; i < n && i < MAX_OPERANDS; i++) {
    node->operand[i] = ptr[i];
    node->extent[i] = bytes[i];
  }
  return 1;
}

/* ---- cubin: kernels and their parameter tables ---- */

typedef struct {
  char name[128];
  int nparams;
  unsigned short offset[MAX_PARAMS], size[MAX_PARAMS];
} Kernel;
typedef struct {
  int arch, nkernels;
  Kernel *kernels;
} Module;

static uint16_t u16(const unsigned char *p) { return p[0] | p[1] << 8; }
static uint32_t u32(const unsigned char *p) { return u16(p) | (uint32_t)u16(p + 2) << 16; }
static uint64_t u64(const unsigned char *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }

/* Parses one ".nv.info.<kernel>" section: records of format (1 byte), attribute (1 byte), then a
 * 2-byte value (formats 1-3) or a 2-byte length and that many bytes (format 4, "sized"). Attribute
 * 0x17 (KPARAM_INFO), sized 12: index (4), ordinal (2), offset (2), flags (4, size in bits 18+). */
static int parse_info(const unsigned char *b, size_t n, Kernel *k) {
  int seen[MAX_PARAMS] = {0};
  for (size_t i = 0; i + 4 <= n;) {
    int fmt = b[i], attr = b[i + 1];
    if (fmt >= 1 && fmt <= 3) {
      i += 4;
      continue;
    }
    if (fmt != 4) return say("cuModuleLoadData error=unknown-nv.info-format-%d", fmt), 0;
    size_t len = u16(b + i + 2);
    if (i + 4 + len > n) return say("cuModuleLoadData error=truncated-nv.info"), 0;
    if (attr == 0x17 && len == 12) {
      int ordinal = u16(b + i + 8);
      if (ordinal >= MAX_PARAMS) return say("cuModuleLoadData error=too-many-params"), 0;
      k->offset[ordinal] = u16(b + i + 10);
      k->size[ordinal] = u32(b + i + 12) >> 18;
      seen[ordinal] = 1;
      if (ordinal + 1 > k->nparams) k->nparams = ordinal + 1;
    }
    i += 4 + len;
  }
  for (int p = 0; p < k->nparams; p++)
    if (!seen[p]) return say("cuModuleLoadData error=param-%d-missing kernel=%s", p, k->name), 0;
  return 1;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  COUNT("cuModuleLoadData");
  CUresult rc = need_context("cuModuleLoadData");
  if (rc) return rc;
  const unsigned char *e = image;
  if (!e || memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 || u16(e + 0x12) != 190)
    return say("cuModuleLoadData error=not-a-64-bit-cubin"), INVALID_IMAGE;
  Module *m = calloc(1, sizeof *m);
  m->arch = (u32(e + 0x30) >> 8) & 0xff; /* e_flags: the SM version, as NVRTC 13.1 writes it */
  const unsigned char *sh = e + u64(e + 0x28);
  int shentsize = u16(e + 0x3a), shnum = u16(e + 0x3c), shstrndx = u16(e + 0x3e);
  const char *names = (const char *)e + u64(sh + shstrndx * shentsize + 0x18);
  m->kernels = calloc(shnum, sizeof(Kernel));
  for (int s = 0; s < shnum; s++) {
    const unsigned char *h = sh + s * shentsize;
    const char *name = names + u32(h);
    if (strncmp(name, ".nv.info.", 9) != 0) continue;
    Kernel *k = &m->kernels[m->nkernels];
    snprintf(k->name, sizeof k->name, "%s", name + 9);
    if (!parse_info(e + u64(h + 0x18), u64(h + 0x20), k)) return INVALID_IMAGE;
    m->nkernels++;
  }
  say("cuModuleLoadData module=%p arch=sm_%d kernels=%d", (void *)m, m->arch, m->nkernels);
  if (m->arch != DEVICE_ARCH) return NO_BINARY_FOR_GPU;
  *module = m;
  return OK;
}

CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
  COUNT("cuModuleGetFunction");
  Module *m = module;
  for (int i = 0; m && i < m->nkernels; i++)
    if (strcmp(m->kernels[i].name, name) == 0) {
      *f = &m->kernels[i];
      say("cuModuleGetFunction name=%s params=%d", name, m->kernels[i].nparams);
      return OK;
    }
  say("cuModuleGetFunction name=%s error=not-found", name);
  return NOT_FOUND;
}

CUresult cuModuleUnload(void *module) {
  COUNT("cuModuleUnload");
  say("cuModuleUnload module=%p", module);
  return OK;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  COUNT("cuLaunchKernel");
  CUresult rc = need_context("cuLaunchKernel");
  if (rc) return rc;
  Kernel *k = f;
  if (!k) return say("cuLaunchKernel error=null-function"), INVALID_HANDLE;
  if (!known_stream(stream)) return say("cuLaunchKernel error=unknown-stream"), INVALID_HANDLE;
  if (extra) return say("cuLaunchKernel name=%s error=extra-not-supported", k->name), INVALID_VALUE;
  if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024)
    return say("cuLaunchKernel name=%s error=bad-dims", k->name), INVALID_VALUE;
  int captured = capture_graph && stream == capture_stream;
  if (capture_graph && !captured)
    return say("cuLaunchKernel name=%s error=launch-beside-a-capture", k->name), ILLEGAL_STATE;
  /* decoding the arguments (syscalls) would swamp the caller's cost: only for a log or a graph */
  if (counting() && !captured) return OK;
  Node *node = captured ? add_node(k->name) : NULL;
  char args[MAX_PARAMS * 24] = "", *a = args;
  for (int i = 0; i < k->nparams; i++) {
    void *slot = NULL;
    unsigned char v[8] = {0};
    a += sprintf(a, "%s%d:", i ? "," : "", k->size[i]);
    if (!params || !peek(params + i, &slot, sizeof slot) || k->size[i] > 8 ||
        !peek(slot, v, k->size[i])) {
      a += sprintf(a, "unreadable");
      if (node) return say("cuLaunchKernel name=%s error=unreadable-argument", k->name), INVALID_VALUE;
    } else {
      unsigned long long value = k->size[i] == 4 ? u32(v) : u64(v);
      a += sprintf(a, "0x%llx", value);
      if (node) {
        node->size[i] = k->size[i];
        node->value[i] = value;
        node->nargs = i + 1;
      }
    }
  }
  say("cuLaunchKernel name=%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%p args=%s%s", k->name,
      gx, gy, gz, bx, by, bz, shared, stream, args, captured ? " captured=1" : "");
  return OK;
}

/* ---- initialisation, devices, contexts, streams ---- */

CUresult cuInit(unsigned flags) {
  COUNT("cuInit");
  initialised = 1;
  say("cuInit flags=%u", flags);
  return OK;
}

CUresult cuDriverGetVersion(int *v) {
  COUNT("cuDriverGetVersion");
  *v = 13000; /* CUDA 13.0, as driver 580 reports */
  return OK;
}

CUresult cuDeviceGetCount(int *n) {
  COUNT("cuDeviceGetCount");
  if (!initialised) return NOT_INITIALIZED;
  *n = 1;
  return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  COUNT("cuDeviceGet");
  if (!initialised) return NOT_INITIALIZED;
  if (ordinal != 0) return INVALID_DEVICE;
  *d = 0;
  return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
  COUNT("cuDeviceGetAttribute");
  if (d != 0) return INVALID_DEVICE;
  *v = attribute == 75 ? DEVICE_ARCH / 10 : attribute == 76 ? DEVICE_ARCH % 10 : 0;
  return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  COUNT("cuDeviceGetName");
  if (d != 0) return INVALID_DEVICE;
  snprintf(name, len, "Troupe recording stub");
  return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  COUNT("cuDeviceTotalMem_v2");
  if (d != 0) return INVALID_DEVICE;
  *bytes = DEVICE_MEMORY;
  return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
  COUNT("cuDevicePrimaryCtxRetain");
  if (!initialised) return NOT_INITIALIZED;
  if (d != 0) return INVALID_DEVICE;
  *ctx = context;
  say("cuDevicePrimaryCtxRetain refs=%d", ++retained);
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  COUNT("cuDevicePrimaryCtxRelease_v2");
  if (d != 0 || retained == 0) return INVALID_DEVICE;
  say("cuDevicePrimaryCtxRelease refs=%d live=%zu live_bytes=%zu", --retained, nallocs,
      live_bytes);
  return OK;
}

CUresult cuCtxSetCurrent(void *ctx) {
  COUNT("cuCtxSetCurrent");
  if (ctx != NULL && ctx != context) return INVALID_CONTEXT;
  current = ctx;
  return OK;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
  COUNT("cuStreamCreate");
  CUresult rc = need_context("cuStreamCreate");
  if (rc) return rc;
  if (stream_count == (int)sizeof streams) return OUT_OF_MEMORY;
  *s = &streams[stream_count++];
  say("cuStreamCreate stream=%p flags=%u", *s, flags);
  return OK;
}

CUresult cuStreamDestroy_v2(void *s) {
  COUNT("cuStreamDestroy_v2");
  say("cuStreamDestroy stream=%p", s);
  return known_stream(s) ? OK : INVALID_HANDLE;
}

CUresult cuStreamSynchronize(void *s) {
  COUNT("cuStreamSynchronize");
  CUresult rc = need_context("cuStreamSynchronize");
  if (rc || (rc = refused_in_capture("cuStreamSynchronize"))) return rc;
  return known_stream(s) ? OK : INVALID_HANDLE;
}

/* ---- memory and copies ---- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  COUNT("cuMemGetInfo_v2");
  CUresult rc = need_context("cuMemGetInfo");
  if (rc) return rc;
  *total = DEVICE_MEMORY;
  *free_bytes = DEVICE_MEMORY - live_bytes;
  return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  COUNT("cuMemAlloc_v2");
  CUresult rc = need_context("cuMemAlloc");
  if (rc || (rc = refused_in_capture("cuMemAlloc"))) return rc;
  if (bytes == 0) return say("cuMemAlloc bytes=0 error=invalid-value"), INVALID_VALUE;
  if (bytes > DEVICE_MEMORY - live_bytes)
    return say("cuMemAlloc bytes=%zu error=out-of-memory", bytes), OUT_OF_MEMORY;
  void *m = NULL;
  if (posix_memalign(&m, 256, bytes) != 0) return OUT_OF_MEMORY;
  memset(m, 0, bytes);
  if (nallocs == cap_allocs) {
    cap_allocs = cap_allocs ? 2 * cap_allocs : 256;
    allocs = realloc(allocs, cap_allocs * sizeof *allocs);
  }
  allocs[nallocs++] = (Allocation){(CUdeviceptr)(uintptr_t)m, bytes};
  live_bytes += bytes;
  *p = (CUdeviceptr)(uintptr_t)m;
  say("cuMemAlloc ptr=0x%llx bytes=%zu", *p, bytes);
  return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  COUNT("cuMemFree_v2");
  CUresult rc = need_context("cuMemFree");
  if (rc || (rc = refused_in_capture("cuMemFree"))) return rc;
  for (size_t i = 0; i < nallocs; i++)
    if (allocs[i].ptr == p) {
      live_bytes -= allocs[i].bytes;
      free((void *)(uintptr_t)p);
      allocs[i] = allocs[--nallocs];
      say("cuMemFree ptr=0x%llx", p);
      return OK;
    }
  say("cuMemFree ptr=0x%llx error=not-allocated", p);
  return INVALID_VALUE;
}

static CUresult copy(const char *what, CUdeviceptr dst, int dst_dev, CUdeviceptr src, int src_dev,
                     size_t n, void *stream) {
  CUresult rc = need_context(what);
  if (rc || (rc = refused_in_capture(what))) return rc;
  if (!known_stream(stream)) return say("%s error=unknown-stream", what), INVALID_HANDLE;
  if ((dst_dev && !find(dst, n)) || (src_dev && !find(src, n)))
    return say("%s dst=0x%llx src=0x%llx bytes=%zu error=outside-allocations", what, dst, src, n),
           INVALID_VALUE;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  say("%s dst=0x%llx src=0x%llx bytes=%zu stream=%p", what, dst, src, n, stream);
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
  COUNT("cuMemcpyHtoDAsync_v2");
  return copy("cuMemcpyHtoDAsync", dst, 1, (CUdeviceptr)(uintptr_t)src, 0, n, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
  COUNT("cuMemcpyDtoHAsync_v2");
  return copy("cuMemcpyDtoHAsync", (CUdeviceptr)(uintptr_t)dst, 0, src, 1, n, stream);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream) {
  COUNT("cuMemcpyDtoDAsync_v2");
  return copy("cuMemcpyDtoDAsync", dst, 1, src, 1, n, stream);
}

/* ---- graphs ---- */

CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  COUNT("cuStreamBeginCapture_v2");
  CUresult rc = need_context("cuStreamBeginCapture");
  if (rc) return rc;
  if (!s || !known_stream(s)) return say("cuStreamBeginCapture error=bad-stream"), INVALID_HANDLE;
  if (capture_graph) return say("cuStreamBeginCapture error=already-capturing"), ILLEGAL_STATE;
  capture_graph = calloc(1, sizeof(Graph));
  capture_stream = s;
  capture_invalid = 0;
  say("cuStreamBeginCapture stream=%p mode=%d", s, mode);
  return OK;
}

CUresult cuStreamEndCapture(void *s, void **graph) {
  COUNT("cuStreamEndCapture");
  if (!capture_graph || s != capture_stream)
    return say("cuStreamEndCapture error=not-capturing"), ILLEGAL_STATE;
  Graph *g = capture_graph;
  capture_graph = NULL;
  capture_stream = NULL;
  if (capture_invalid) {
    free(g->nodes);
    free(g);
    *graph = NULL;
    return say("cuStreamEndCapture error=capture-invalidated"), CAPTURE_INVALIDATED;
  }
  *graph = g;
  say("cuStreamEndCapture graph=%p nodes=%d", (void *)g, g->nnodes);
  return OK;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  COUNT("cuGraphInstantiateWithFlags");
  CUresult rc = need_context("cuGraphInstantiate");
  if (rc) return rc;
  Graph *g = graph, *e = calloc(1, sizeof(Graph));
  if (!g) return INVALID_VALUE;
  e->nnodes = e->cap = g->nnodes;
  e->nodes = malloc((g->nnodes ? g->nnodes : 1) * sizeof(Node));
  memcpy(e->nodes, g->nodes, g->nnodes * sizeof(Node));
  *exec = e;
  say("cuGraphInstantiate graph=%p exec=%p nodes=%d flags=%llu", graph, (void *)e, e->nnodes, flags);
  return OK;
}

CUresult cuGraphDestroy(void *graph) {
  COUNT("cuGraphDestroy");
  Graph *g = graph;
  if (!g) return INVALID_VALUE;
  say("cuGraphDestroy graph=%p", graph);
  free(g->nodes);
  free(g);
  return OK;
}

CUresult cuGraphExecDestroy(void *exec) {
  COUNT("cuGraphExecDestroy");
  Graph *e = exec;
  if (!e) return INVALID_VALUE;
  say("cuGraphExecDestroy exec=%p", exec);
  free(e->nodes);
  free(e);
  return OK;
}

/* Runs nothing; checks that every pointer the graph holds lies in a live allocation now. */
CUresult cuGraphLaunch(void *exec, void *stream) {
  COUNT("cuGraphLaunch");
  CUresult rc = need_context("cuGraphLaunch");
  if (rc) return rc;
  if (!known_stream(stream)) return say("cuGraphLaunch error=unknown-stream"), INVALID_HANDLE;
  if (capture_graph) return say("cuGraphLaunch error=inside-a-capture"), ILLEGAL_STATE;
  Graph *e = exec;
  if (!e) return INVALID_VALUE;
  for (int i = 0; i < e->nnodes; i++) {
    Node *n = &e->nodes[i];
    for (int a = 0; a < n->nargs; a++)
      if (n->size[a] == 8 && n->value[a] && !find(n->value[a], 1))
        return say("cuGraphLaunch exec=%p error=pointer-outside-allocations node=%d name=%s arg=%d "
                   "value=0x%llx",
                   exec, i, n->name, a, n->value[a]),
               INVALID_VALUE;
    for (int o = 0; o < MAX_OPERANDS; o++)
      if (n->operand[o] && !find(n->operand[o], n->extent[o] ? n->extent[o] : 1))
        return say("cuGraphLaunch exec=%p error=operand-outside-allocations node=%d name=%s "
                   "operand=%d ptr=0x%llx bytes=%zu",
                   exec, i, n->name, o, n->operand[o], n->extent[o]),
               INVALID_VALUE;
  }
  say("cuGraphLaunch exec=%p stream=%p nodes=%d", exec, stream, e->nnodes);
  return OK;
}

/* ---- errors ---- */

static const char *error_name(CUresult rc) {
  switch (rc) {
    case OK: return "CUDA_SUCCESS";
    case INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case NO_BINARY_FOR_GPU: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case ILLEGAL_STATE: return "CUDA_ERROR_ILLEGAL_STATE";
    case CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    default: return NULL;
  }
}

CUresult cuGetErrorName(CUresult rc, const char **name) {
  COUNT("cuGetErrorName");
  *name = error_name(rc);
  return *name ? OK : INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult rc, const char **text) {
  COUNT("cuGetErrorString");
  return cuGetErrorName(rc, text);
}

/* NVRTC 13 opens libcuda.so.1 itself and asks for the driver's private export tables (and crashes
 * on a driver that lacks the function): this driver has none. */
CUresult cuGetExportTable(const void **table, const void *id) {
  COUNT("cuGetExportTable");
  (void)id;
  *table = NULL;
  say("cuGetExportTable error=not-found");
  return NOT_FOUND;
}
