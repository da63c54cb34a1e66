package dev.troupe.engine.cuda;

import static org.bytedeco.cuda.global.cublas.CUBLAS_COMPUTE_32F;
import static org.bytedeco.cuda.global.cublas.CUBLAS_GEMM_DEFAULT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.cublasCreate_v2;
import static org.bytedeco.cuda.global.cublas.cublasDestroy_v2;
import static org.bytedeco.cuda.global.cublas.cublasGemmEx;
import static org.bytedeco.cuda.global.cublas.cublasGemmStridedBatchedEx;
import static org.bytedeco.cuda.global.cublas.cublasGetStatusString;
import static org.bytedeco.cuda.global.cublas.cublasSetStream_v2;
import static org.bytedeco.cuda.global.cublas.cublasSetWorkspace_v2;
import static org.bytedeco.cuda.global.cudart.CUDA_R_16BF;
import static org.bytedeco.cuda.global.cudart.CUDA_R_32F;
import static org.bytedeco.cuda.global.cudart.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
import static org.bytedeco.cuda.global.cudart.CU_STREAM_NON_BLOCKING;
import static org.bytedeco.cuda.global.cudart.cuCtxSetCurrent;
import static org.bytedeco.cuda.global.cudart.cuDeviceGet;
import static org.bytedeco.cuda.global.cudart.cuDevicePrimaryCtxRelease;
import static org.bytedeco.cuda.global.cudart.cuDevicePrimaryCtxRetain;
import static org.bytedeco.cuda.global.cudart.cuGraphDestroy;
import static org.bytedeco.cuda.global.cudart.cuGraphExecDestroy;
import static org.bytedeco.cuda.global.cudart.cuGraphInstantiate;
import static org.bytedeco.cuda.global.cudart.cuGraphLaunch;
import static org.bytedeco.cuda.global.cudart.cuLaunchKernel;
import static org.bytedeco.cuda.global.cudart.cuMemAlloc;
import static org.bytedeco.cuda.global.cudart.cuMemFree;
import static org.bytedeco.cuda.global.cudart.cuMemGetInfo;
import static org.bytedeco.cuda.global.cudart.cuMemcpyDtoDAsync;
import static org.bytedeco.cuda.global.cudart.cuMemcpyDtoHAsync;
import static org.bytedeco.cuda.global.cudart.cuMemcpyHtoDAsync;
import static org.bytedeco.cuda.global.cudart.cuModuleGetFunction;
import static org.bytedeco.cuda.global.cudart.cuModuleLoadData;
import static org.bytedeco.cuda.global.cudart.cuModuleUnload;
import static org.bytedeco.cuda.global.cudart.cuStreamBeginCapture;
import static org.bytedeco.cuda.global.cudart.cuStreamCreate;
import static org.bytedeco.cuda.global.cudart.cuStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cuStreamEndCapture;
import static org.bytedeco.cuda.global.cudart.cuStreamSynchronize;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUctx_st;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUgraph_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVIDIA GPU through the JavaCPP CUDA presets: the driver API for the context, memory, copies,
 * modules and launches (one non-blocking stream), NVRTC to compile the kernels for the device's own
 * architecture ({@code sm_90} on Hopper) with the machine code cached on disk, and cuBLAS {@code
 * cublasGemmEx} for the products (BF16 operands, FP32 compute, any transposes and leading
 * dimensions; {@code cublasGemmStridedBatchedEx} for batches of them), and CUDA graphs by stream
 * capture ({@code cuStreamBeginCapture} … {@code cuGraphLaunch}; cuBLAS gets a fixed workspace so
 * that a captured product allocates nothing). The only class besides {@link CudaProbe} that touches
 * the bindings. Obtain it through {@link CudaProbe#open(int)}.
 */
public final class CudaGpu implements Gpu {
  private static final Logger log = LoggerFactory.getLogger(CudaGpu.class);

  private final int ordinal;
  private final CudaProbe.Device device;
  private final CUctx_st ctx = new CUctx_st();
  private final CUstream_st stream = new CUstream_st();
  private final cublasContext blas = new cublasContext();
  private final Map<String, CUfunc_st> functions = new HashMap<>();
  private CUmod_st module;
  private final FloatPointer alpha = new FloatPointer(1);
  private final FloatPointer beta = new FloatPointer(1);
  private final LaunchArgs launchArgs = new LaunchArgs();
  // reused at every call instead of a new JavaCPP object per call (a Pointer made from a buffer
  // registers a deallocator reference under a global lock): the host side of a copy, cuBLAS's
  // operands
  private final Address host = new Address(), opA = new Address(), opB = new Address();
  private final Address opC = new Address();
  // the GPU whose context this thread made current last (CudaGpu is the only code here that sets
  // one): current() then needs no driver call, which halves a decode step's calls
  private static final ThreadLocal<CudaGpu> CURRENT = new ThreadLocal<>();
  // live allocations (address → bytes): close frees what its users left, since the primary
  // context outlives this object (cuBLAS's runtime retains it too) and would keep them
  private final Map<Long, Long> allocations = new LinkedHashMap<>();
  private final int cuDevice;
  // cuBLAS's workspace, set once: a product captured into a graph must not allocate its own
  private final long blasWorkspace;
  // instantiated graphs by handle (their exec's address)
  private final Map<Long, CUgraphExec_st> graphs = new HashMap<>();
  private boolean capturing, closed;

  /** cuBLAS's workspace: NVIDIA recommends 32 MiB on Hopper and later. */
  static final long BLAS_WORKSPACE_BYTES = 32L << 20;

  CudaGpu(int ordinal, CudaProbe.Device device) {
    this.ordinal = ordinal;
    this.device = device;
    int[] dev = new int[1];
    check(cuDeviceGet(dev, ordinal), "cuDeviceGet");
    cuDevice = dev[0];
    check(cuDevicePrimaryCtxRetain(ctx, cuDevice), "cuDevicePrimaryCtxRetain");
    try {
      current();
      check(cuStreamCreate(stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      blasCheck(cublasCreate_v2(blas), "cublasCreate");
      blasCheck(cublasSetStream_v2(blas, stream), "cublasSetStream");
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(cuDevice);
      throw e;
    }
    long ws = 0;
    try {
      ws = alloc(BLAS_WORKSPACE_BYTES);
      blasCheck(
          cublasSetWorkspace_v2(blas, opA.at(ws), BLAS_WORKSPACE_BYTES), "cublasSetWorkspace");
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    blasWorkspace = ws;
  }

  /** An address as a JavaCPP pointer (for the APIs that take {@code void*}), set per call. */
  private static final class Address extends Pointer {
    Address at(long address) {
      this.address = address;
      return this;
    }

    /** {@code buffer}'s position as a host address ({@code buffer} direct). */
    Address at(ByteBuffer buffer) {
      if (!buffer.isDirect()) throw new IllegalArgumentException("not a direct buffer");
      return at(getDirectBufferAddress(buffer) + buffer.position());
    }
  }

  /**
   * Makes this GPU's context current on the calling thread before every call: a driver call only
   * when the thread's last one was for another GPU (or none).
   */
  private void current() {
    if (CURRENT.get() == this) return;
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CURRENT.set(this);
  }

  static void check(int rc, String what) {
    if (rc != 0) throw new CudaException(what + " failed: " + CudaProbe.errorName(rc));
  }

  private static void blasCheck(int rc, String what) {
    if (rc != 0)
      throw new CudaException(what + " failed: " + cublasGetStatusString(rc).getString());
  }

  @Override
  public String describe() {
    return "cuda:" + ordinal + " " + device.describe();
  }

  @Override
  public int ordinal() {
    return ordinal;
  }

  @Override
  public String name() {
    return device.name();
  }

  @Override
  public long totalMemory() {
    return memInfo()[1];
  }

  @Override
  public long freeMemory() {
    return memInfo()[0];
  }

  private long[] memInfo() {
    current();
    try (SizeTPointer free = new SizeTPointer(1);
        SizeTPointer total = new SizeTPointer(1)) {
      check(cuMemGetInfo(free, total), "cuMemGetInfo");
      return new long[] {free.get(), total.get()};
    }
  }

  @Override
  public long alloc(long bytes) {
    notCapturing("alloc");
    current();
    long[] p = new long[1];
    int rc = cuMemAlloc(p, Math.max(bytes, 1));
    if (rc != 0)
      throw new CudaException(
          "cannot allocate "
              + (bytes >> 20)
              + " MiB on "
              + describe()
              + ": "
              + CudaProbe.errorName(rc));
    allocations.put(p[0], bytes);
    return p[0];
  }

  @Override
  public void free(long ptr) {
    if (ptr == 0 || closed) return;
    notCapturing("free");
    if (allocations.remove(ptr) == null)
      throw new IllegalArgumentException(
          "free of 0x" + Long.toHexString(ptr) + ", not allocated here (or freed already)");
    current();
    check(cuMemFree(ptr), "cuMemFree");
  }

  @Override
  public void upload(long dst, ByteBuffer src) {
    notCapturing("upload");
    current();
    // pageable source: the driver stages it and returns once src has been read (CUDA's API
    // synchronisation rules), so src may be reused at once
    check(cuMemcpyHtoDAsync(dst, host.at(src), src.remaining(), stream), "cuMemcpyHtoD");
  }

  @Override
  public void download(long src, ByteBuffer dst) {
    notCapturing("download");
    current();
    check(cuMemcpyDtoHAsync(host.at(dst), src, dst.remaining(), stream), "cuMemcpyDtoH");
    check(cuStreamSynchronize(stream), "download (a kernel before it may have failed)");
  }

  @Override
  public void copy(long dst, long src, long bytes) {
    notCapturing("copy");
    current();
    check(cuMemcpyDtoDAsync(dst, src, bytes, stream), "cuMemcpyDtoD");
  }

  @Override
  public void loadKernels(String source, List<String> kernels) {
    current();
    byte[] cubin = compileCached(source);
    module = new CUmod_st();
    try (BytePointer image = new BytePointer(cubin)) {
      check(cuModuleLoadData(module, image), "cuModuleLoadData");
    }
    for (String k : kernels) {
      CUfunc_st f = new CUfunc_st();
      check(cuModuleGetFunction(f, module, k), "cuModuleGetFunction " + k);
      functions.put(k, f);
    }
  }

  private byte[] compileCached(String source) {
    String arch = "sm_" + device.major() + device.minor();
    String key;
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      md.update((arch + "\n" + Nvrtc.version() + "\n" + source).getBytes(StandardCharsets.UTF_8));
      key = HexFormat.of().formatHex(md.digest()).substring(0, 32);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    Path dir = KernelSource.cacheDir();
    Path file = dir.resolve(key + "-" + arch + ".cubin");
    try {
      if (Files.isRegularFile(file)) return Files.readAllBytes(file);
    } catch (IOException e) {
      log.warn("kernel cache {} unreadable, compiling again: {}", file, e.toString());
    }
    long t0 = System.nanoTime();
    byte[] cubin = Nvrtc.compile(source, arch).cubin();
    log.info(
        "compiled {} kernels for {} with NVRTC {} in {} ms",
        KernelSource.KERNELS.size(),
        arch,
        Nvrtc.version(),
        (System.nanoTime() - t0) / 1_000_000);
    try {
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, key, ".tmp");
      Files.write(tmp, cubin);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      log.warn("cannot cache compiled kernels in {}: {}", dir, e.toString());
    }
    return cubin;
  }

  @Override
  public void launch(String kernel, int gridX, int gridY, int threads, Object... args) {
    CUfunc_st f = functions.get(kernel);
    if (f == null) throw new IllegalArgumentException("kernel " + kernel + " not loaded");
    PointerPointer<Pointer> params = launchArgs.pack(kernel, args);
    current();
    int rc =
        cuLaunchKernel(
            f, gridX, gridY, 1, threads, 1, 1, 0, stream, params, (PointerPointer<?>) null);
    if (rc != 0) check(rc, "launch " + kernel); // the message only when it failed
  }

  @Override
  public void matmul(Product p) {
    current();
    alpha.put(p.alpha());
    beta.put(p.beta());
    // cuBLAS is column-major, and a row-major matrix is its transpose seen column-major: row-major
    // C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so B goes first, each with its own flag
    blasCheck(
        cublasGemmEx(
            blas,
            p.transB() ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.transA() ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.n(),
            p.m(),
            p.k(),
            alpha,
            opB.at(p.b()),
            CUDA_R_16BF,
            p.ldb(),
            opA.at(p.a()),
            CUDA_R_16BF,
            p.lda(),
            beta,
            opC.at(p.c()),
            p.cBf16() ? CUDA_R_16BF : CUDA_R_32F,
            p.ldc(),
            CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  }

  @Override
  public void matmulBatched(Product p, Strides s) {
    current();
    alpha.put(p.alpha());
    beta.put(p.beta());
    // as matmul: B first (row-major C is column-major Cᵀ), each operand with its own stride
    blasCheck(
        cublasGemmStridedBatchedEx(
            blas,
            p.transB() ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.transA() ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.n(),
            p.m(),
            p.k(),
            alpha,
            opB.at(p.b()),
            CUDA_R_16BF,
            p.ldb(),
            s.b(),
            opA.at(p.a()),
            CUDA_R_16BF,
            p.lda(),
            s.a(),
            beta,
            opC.at(p.c()),
            p.cBf16() ? CUDA_R_16BF : CUDA_R_32F,
            p.ldc(),
            s.c(),
            s.batch(),
            CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  }

  private void freeAtClose(long p) {
    int rc = cuMemFree(p);
    if (rc != 0) log.warn("{}: cuMemFree at close: {}", describe(), CudaProbe.errorName(rc));
  }

  @Override
  public void beginCapture() {
    notCapturing("beginCapture");
    current();
    check(
        cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
    capturing = true;
  }

  @Override
  public long endCapture() {
    if (!capturing) throw new IllegalStateException("endCapture without beginCapture");
    current();
    capturing = false;
    CUgraph_st graph = new CUgraph_st();
    check(cuStreamEndCapture(stream, graph), "cuStreamEndCapture");
    try {
      CUgraphExec_st exec = new CUgraphExec_st();
      check(cuGraphInstantiate(exec, graph, 0), "cuGraphInstantiate");
      graphs.put(exec.address(), exec);
      return exec.address();
    } finally {
      cuGraphDestroy(graph); // the instantiated graph does not need it
    }
  }

  @Override
  public void launchGraph(long graph) {
    CUgraphExec_st exec = graphs.get(graph);
    if (exec == null) throw new IllegalArgumentException("no graph " + graph);
    current();
    check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
  }

  @Override
  public void destroyGraph(long graph) {
    CUgraphExec_st exec = graphs.remove(graph);
    if (exec == null) return;
    current();
    check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  }

  private void notCapturing(String what) {
    if (capturing) throw new IllegalStateException(what + " while capturing a CUDA graph");
  }

  @Override
  public void synchronize() {
    notCapturing("synchronize");
    current();
    check(cuStreamSynchronize(stream), "cuStreamSynchronize (a kernel failed)");
  }

  /**
   * Frees every allocation still live, then the module, the cuBLAS handle, the stream and this
   * object's hold on the primary context. Errors of a failed step surface here at the latest: they
   * are logged, and the rest is still released.
   */
  @Override
  public void close() {
    if (closed) return;
    try {
      current();
      if (capturing) { // a capture left open by a failure: discard it
        capturing = false;
        CUgraph_st g = new CUgraph_st();
        if (cuStreamEndCapture(stream, g) == 0) cuGraphDestroy(g);
      }
      int rc = cuStreamSynchronize(stream);
      if (rc != 0)
        log.warn("{}: closing after a failed step: {}", describe(), CudaProbe.errorName(rc));
      for (CUgraphExec_st exec : graphs.values()) cuGraphExecDestroy(exec);
      graphs.clear();
      cublasDestroy_v2(blas);
      allocations.remove(blasWorkspace);
      if (blasWorkspace != 0) freeAtClose(blasWorkspace);
      if (!allocations.isEmpty()) {
        long bytes = allocations.values().stream().mapToLong(Long::longValue).sum();
        log.debug(
            "{}: freeing {} buffers left allocated ({} MiB)",
            describe(),
            allocations.size(),
            bytes >> 20);
      }
      for (long p : allocations.keySet()) freeAtClose(p);
      allocations.clear();
      if (module != null) cuModuleUnload(module);
      cuStreamDestroy(stream);
    } finally {
      closed = true;
      if (CURRENT.get() == this) CURRENT.remove();
      cuDevicePrimaryCtxRelease(cuDevice);
      alpha.close();
      beta.close();
      launchArgs.close();
    }
  }
}
