package dev.troupe.engine.cuda;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * What the CUDA runner needs from a device: memory, copies, kernels compiled from source, and
 * matrix products (BF16 operands, FP32 accumulation). {@link CudaGpu} is the real one (JavaCPP
 * bindings to the machine's CUDA 13 libraries); the tests also drive the same runner through a CPU
 * emulation of the same kernels, so everything but the hardware is exercised where there is no GPU.
 *
 * <p>All operations are ordered on one stream; {@link #download} returns once the data is on the
 * host. Device addresses are plain {@code long}s. Not thread-safe: confined to the runner's thread.
 */
public interface Gpu extends AutoCloseable {

  /** Device name and compute capability, for logs. */
  String describe();

  /** The device's ordinal on its machine (-1 where it has none: an emulation). */
  default int ordinal() {
    return -1;
  }

  /** The device's name, for the cluster view. */
  default String name() {
    return describe();
  }

  /** Bytes of device memory in total and free now. */
  long totalMemory();

  long freeMemory();

  /** Allocates {@code bytes} of device memory (uninitialised). */
  long alloc(long bytes);

  void free(long ptr);

  /** Copies {@code src}'s remaining bytes to {@code dst}; {@code src} may be reused on return. */
  void upload(long dst, ByteBuffer src);

  /** Copies {@code dst.remaining()} bytes from {@code src} into {@code dst}, waiting for them. */
  void download(long src, ByteBuffer dst);

  void copy(long dst, long src, long bytes);

  /** Compiles {@code source} for this device and makes {@code kernels} (extern "C") launchable. */
  void loadKernels(String source, List<String> kernels);

  /**
   * Launches a kernel of {@link #loadKernels} with a 1-D block of {@code threads}. Arguments:
   * {@link Long} (device address or null pointer 0), {@link Integer}, {@link Float}, in the
   * kernel's parameter order.
   */
  void launch(String kernel, int gridX, int gridY, int threads, Object... args);

  /**
   * {@code y[rows, out] = x[rows, in] · w[out, in]ᵀ + beta · y}: w and x bfloat16, row-major,
   * accumulated in fp32; y fp32 ({@code yBf16} false) or bfloat16. The forward's product: {@link
   * #matmul} with x first and w transposed.
   */
  default void gemm(long w, long x, long y, int out, int in, int rows, boolean yBf16, float beta) {
    matmul(new Product(false, true, rows, out, in, 1f, x, in, w, in, beta, y, out, yBf16));
  }

  /**
   * A product {@code C[m, n] = alpha · op(A) · op(B) + beta · C}, every matrix row-major with a
   * leading dimension (elements from one row to the next, so a matrix may be a column range of a
   * wider one): {@code op(A)} is {@code [m, k]}, stored as is, or stored {@code [k, m]} and
   * transposed when {@code transA}; {@code op(B)} is {@code [k, n]} likewise. A and B bfloat16,
   * accumulated in fp32; C fp32 ({@code cBf16} false) or bfloat16.
   */
  record Product(
      boolean transA,
      boolean transB,
      int m,
      int n,
      int k,
      float alpha,
      long a,
      int lda,
      long b,
      int ldb,
      float beta,
      long c,
      int ldc,
      boolean cBf16) {}

  /**
   * {@code batch} products of one {@link Product}'s shape at fixed strides: product {@code i} reads
   * {@code a + i·a}, {@code b + i·b} and writes {@code c + i·c} (strides in elements of each
   * operand's type).
   */
  record Strides(long a, long b, long c, int batch) {}

  /** Runs {@code p}: cuBLAS ({@code cublasGemmEx}) on the device. */
  void matmul(Product p);

  /**
   * {@code s.batch()} independent products of {@code p}'s shape, transposes, leading dimensions and
   * scalars, at {@code s}'s strides: cuBLAS ({@code cublasGemmStridedBatchedEx}) on the device, one
   * launch for all of them, on the tensor cores (training's attention, one product per head).
   */
  void matmulBatched(Product p, Strides s);

  /**
   * Starts recording this GPU's launches and products into a graph instead of running them (CUDA
   * stream capture, thread-local mode): until {@link #endCapture} nothing runs, and an allocation,
   * free, copy or wait is refused. A captured call keeps its argument values, so everything it
   * reads or writes must stay at the same address for the graph's life.
   */
  void beginCapture();

  /**
   * Ends the capture and returns the graph, instantiated: a handle for {@link #launchGraph} until
   * {@link #destroyGraph}. A capture that was refused something ends with an exception (its
   * recording is discarded).
   */
  long endCapture();

  /**
   * Runs a captured graph's calls, in order, on the GPU's stream, with their captured arguments.
   */
  void launchGraph(long graph);

  void destroyGraph(long graph);

  /** Waits for all queued work; a failed kernel surfaces here at the latest. */
  void synchronize();

  /** Frees every allocation still live and releases the device. */
  @Override
  void close();
}
