package dev.troupe.engine.cpu;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.WeightSource;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.List;

/**
 * A weight matrix {@code W [out, in]} on the Java heap in the dtype it is served in: BF16 or F16
 * kept as loaded (2 bytes per weight, packed in {@code int}s, see {@link Bf16Kernel}) or FP32.
 *
 * <p>16-bit rows are stored {@linkplain #tiled k-major} in groups of {@link #GROUP} rows (64 with
 * AVX-512): for each packed pair of input elements, the group's rows side by side, so one vector
 * holds the same pair of 16 output rows and a product needs no horizontal sums: a lane accumulates
 * one output, and the group streams through memory as one contiguous run, which the hardware
 * prefetcher follows. Against the earlier layout (groups of 4 rows interleaved by vector, one dot
 * product per row and activation row), one decode step's products measured 1.19–1.35× faster at
 * batch 1 and 1.46–2.2× at 8–32 rows ({@code StepProductsBench}, docs/benchmarks.md). Products
 * {@code y = x · Wᵀ} for a range of output rows run on the Vector API kernels; {@link Blas}
 * converts row tiles to FP32 for GEMM-sized batches. Rows are split into parts of under 2³¹
 * elements so any tensor fits.
 *
 * <p>With {@code --quantization q8_0} a matrix is {@linkplain #quantized 8-bit} instead ({@link
 * Q8Format}: a byte per weight, a scale per 32, in the same k-major groups, a byte per element
 * rather than an int per pair): products on {@link Q8Kernel}, FP32 rows and BF16 tiles dequantized.
 *
 * <p>Why the heap: the Vector API reads heap arrays with the same calls on Java 17 through 25,
 * while off-heap memory needs {@code ByteBuffer} loads on 17 and {@code MemorySegment} loads after
 * (docs/engine.md).
 */
final class Matrix {
  private static final long MAX_PART = Integer.MAX_VALUE - 64;

  /** Rows per group of the 16-bit layout: four vectors of the kernels' ints. */
  static final int GROUP = 4 * (VectorSupport.AVAILABLE ? Bf16Kernel.LANES : 16);

  final int out;
  final int in;
  final DType dtype;

  /** 8-bit ({@link Q8Format}); {@link #dtype} is then the checkpoint values' served dtype. */
  final boolean quantized;

  private final int rowInts; // 16-bit: ints per row (⌈in/2⌉); FP32: floats per row (in)
  private final int rowsPerPart;
  private final int[][] ints; // 16-bit parts
  private final float[][] floats; // FP32 parts
  private final byte[][] q8; // 8-bit parts: [group][k (padded)][GROUP rows]
  private final float[][] scales; // 8-bit parts' scales: [group][block][GROUP rows]
  private final int inPad; // 8-bit: bytes per row (whole blocks)

  private Matrix(int out, int in, DType dtype, boolean quantized) {
    this.out = out;
    this.in = in;
    this.dtype = dtype;
    this.quantized = quantized;
    this.inPad = Q8Format.padded(in);
    this.rowInts = quantized ? inPad : dtype == DType.F32 ? in : (in + 1) / 2;
    // whole groups per part
    this.rowsPerPart =
        (int)
            Math.max(
                GROUP, Math.min(out + GROUP - 1L, MAX_PART / Math.max(1, rowInts)) / GROUP * GROUP);
    int parts = (out + rowsPerPart - 1) / rowsPerPart;
    if (quantized) {
      ints = null;
      floats = null;
      q8 = new byte[parts][];
      scales = new float[parts][];
      for (int p = 0; p < parts; p++) {
        int groups = (partRows(p) + GROUP - 1) / GROUP;
        q8[p] = new byte[groups * GROUP * inPad];
        scales[p] = new float[groups * GROUP * (inPad / Q8Format.BLOCK)];
      }
    } else if (dtype == DType.F32) {
      q8 = null;
      scales = null;
      ints = null;
      floats = new float[parts][];
      for (int p = 0; p < parts; p++) floats[p] = new float[partRows(p) * rowInts];
    } else {
      q8 = null;
      scales = null;
      floats = null;
      ints = new int[parts][];
      for (int p = 0; p < parts; p++)
        ints[p] = new int[(partRows(p) + GROUP - 1) / GROUP * GROUP * rowInts];
    }
  }

  int partRows(int p) {
    return Math.min(rowsPerPart, out - p * rowsPerPart);
  }

  /** Parts the rows are split into (each under 2³¹ elements). */
  int parts() {
    return (out + rowsPerPart - 1) / rowsPerPart;
  }

  /** Rows per part (whole groups); part {@code p} starts at row {@code p · rowsPerPart()}. */
  int rowsPerPart() {
    return rowsPerPart;
  }

  /** 16-bit: ints per row of the layout ({@code ⌈in/2⌉}). */
  int rowInts() {
    return rowInts;
  }

  /** Part {@code p} of a 16-bit matrix (tests). */
  int[] ints(int p) {
    return ints[p];
  }

  /** Part {@code p} of an 8-bit matrix: its bytes and its scales ({@link Q8Format}; tests). */
  byte[] q8(int p) {
    return q8[p];
  }

  float[] scales(int p) {
    return scales[p];
  }

  /** 8-bit: bytes per row ({@code in} in whole blocks). */
  int inPad() {
    return inPad;
  }

  /** Bytes held. */
  long bytes() {
    long n = 0;
    if (ints != null) for (int[] a : ints) n += a.length;
    if (floats != null) for (float[] a : floats) n += a.length;
    if (scales != null) for (float[] a : scales) n += a.length;
    n *= 4;
    if (q8 != null) for (byte[] a : q8) n += a.length;
    return n;
  }

  /**
   * Where int {@code k} of row {@code r} (counted from its part's first row) lies in the 16-bit
   * layout of {@code half} ints per row: group {@code r / GROUP} is {@code half} runs of {@link
   * #GROUP} ints, run {@code k} holding int {@code k} of each of the group's rows in order. The
   * last group of a part is padded with zero rows.
   */
  static int tiled(int r, int k, int half) {
    return (r / GROUP * half + k) * GROUP + r % GROUP;
  }

  /** Whether products read activation rows packed (16-bit weights; {@link Activations}). */
  boolean packed() {
    return dtype != DType.F32 && !quantized;
  }

  /** Floats per activation row this matrix reads ({@link Activations#stride}). */
  int xStride() {
    return Activations.stride(in, packed());
  }

  /** Tensors with equal {@code in} stacked along {@code out} (q, k, v), in {@code dtype}. */
  static Matrix load(WeightSource w, DType dtype, List<String> names) {
    return load(w, dtype, false, names);
  }

  /** {@link #load(WeightSource, DType, List)}, 8-bit when {@code quantized} ({@link Q8Format}). */
  static Matrix load(WeightSource w, DType dtype, boolean quantized, List<String> names) {
    int rows = 0, in = (int) (long) w.info(names.get(0)).shape().get(1);
    for (String n : names) rows += (int) (long) w.info(n).shape().get(0);
    Matrix m = new Matrix(rows, in, dtype, quantized);
    int at = 0;
    for (String n : names) {
      int r = (int) (long) w.info(n).shape().get(0);
      m.read(w, n, 0, r, at);
      at += r;
    }
    return m;
  }

  /**
   * gate and up ({@code [I, in]} each) interleaved in blocks of {@code block} rows (gate block 0,
   * up block 0, gate block 1, …), so a thread owning whole block pairs can apply SwiGLU to its own
   * output; {@link #gateUpRow} maps back.
   */
  static Matrix loadInterleaved(
      WeightSource w, DType dtype, boolean quantized, String gate, String up, int block) {
    int inter = (int) (long) w.info(gate).shape().get(0);
    int in = (int) (long) w.info(gate).shape().get(1);
    Matrix m = new Matrix(2 * inter, in, dtype, quantized);
    for (int g0 = 0; g0 < inter; g0 += block) {
      int n = Math.min(block, inter - g0);
      m.read(w, gate, g0, n, 2 * g0);
      m.read(w, up, g0, n, 2 * g0 + n);
    }
    return m;
  }

  /**
   * For a fused gate/up matrix built with {@code block}: the gate/up row of fused row {@code f}, as
   * {@code row} for gate and {@code −1 − row} for up.
   */
  static int gateUpRow(int f, int inter, int block) {
    int g0 = f / (2 * block) * block;
    int n = Math.min(block, inter - g0);
    int within = f - 2 * g0;
    return within < n ? g0 + within : -1 - (g0 + within - n);
  }

  /** Rows {@code [r0, r0+n)} of tensor {@code name} into rows {@code dst..} of this matrix. */
  private void read(WeightSource w, String name, int r0, int n, int dst) {
    if (quantized) {
      readQuantized(w, name, r0, n, dst);
      return;
    }
    int chunkRows = Math.max(1, (1 << 22) / Math.max(1, in));
    float[] f = dtype == DType.F32 ? new float[Math.min(n, chunkRows) * in] : null;
    ByteBuffer b =
        dtype == DType.F32
            ? null
            : ByteBuffer.allocate(Math.min(n, chunkRows) * in * 2 + 4)
                .order(ByteOrder.LITTLE_ENDIAN);
    for (int done = 0; done < n; ) {
      int rows = Math.min(chunkRows, n - done);
      long off = (long) (r0 + done) * in;
      int count = rows * in;
      if (dtype == DType.F32) {
        w.copyTo(name, off, count, FloatBuffer.wrap(f, 0, count));
        for (int r = 0; r < rows; r++) {
          int row = dst + done + r, p = row / rowsPerPart;
          System.arraycopy(f, r * in, floats[p], (row - p * rowsPerPart) * in, in);
        }
      } else {
        b.clear();
        w.copyTo(name, off, count, b.asShortBuffer(), dtype);
        for (int r = 0; r < rows; r++) {
          int row = dst + done + r, p = row / rowsPerPart, local = row - p * rowsPerPart;
          int[] dstInts = ints[p];
          int at = tiled(local, 0, rowInts);
          if ((in & 1) == 0) {
            IntBuffer ib = b.position(r * in * 2).asIntBuffer();
            for (int k = 0; k < rowInts; k++) dstInts[at + k * GROUP] = ib.get(k);
          } else { // odd width: pairs restart at each row, the last int is half padding
            for (int k = 0; k < rowInts; k++) {
              int e = r * in + 2 * k;
              int lo = b.getShort(2 * e) & 0xffff;
              int hi = 2 * k + 1 < in ? b.getShort(2 * e + 2) & 0xffff : 0;
              dstInts[at + k * GROUP] = lo | hi << 16;
            }
          }
        }
      }
      done += rows;
    }
    if (dtype == DType.F16) refuseF16Specials(name, dst, n);
  }

  /**
   * Rows read as FP32 in the served dtype (a 16-bit checkpoint's values exactly; FP32 ones rounded
   * to {@link #dtype} first unless served in FP32, as the 16-bit form would keep them), each
   * quantized ({@link Q8Format#quantize}) into the 8-bit layout.
   */
  private void readQuantized(WeightSource w, String name, int r0, int n, int dst) {
    int chunkRows = Math.max(1, (1 << 22) / Math.max(1, in));
    float[] f = new float[Math.min(n, chunkRows) * in];
    boolean round = dtype != DType.F32 && w.info(name).dtype() != dtype;
    for (int done = 0; done < n; ) {
      int rows = Math.min(chunkRows, n - done), first = dst + done;
      w.copyTo(name, (long) (r0 + done) * in, rows * in, FloatBuffer.wrap(f, 0, rows * in));
      // the chunk's rows in runs that each fill one group of the layout, quantized in parallel
      // (rows of one group share cache lines of the layout: one thread per group)
      int runs = (first + rows - 1) / GROUP - first / GROUP + 1;
      java.util.stream.IntStream.range(0, runs)
          .parallel()
          .forEach(
              i -> {
                int from = Math.max(first, (first / GROUP + i) * GROUP);
                int to = Math.min(first + rows, (first / GROUP + i + 1) * GROUP);
                quantizeRows(f, from - first, from, to - from, round);
              });
      done += rows;
    }
  }

  /** {@code count} rows of {@code f} from row {@code src} quantized into rows {@code dst..}. */
  private void quantizeRows(float[] f, int src, int dst, int count, boolean round) {
    float[] row = new float[in];
    byte[] q = new byte[inPad];
    int blocks = inPad / Q8Format.BLOCK;
    float[] d = new float[blocks];
    for (int r = 0; r < count; r++) {
      System.arraycopy(f, (src + r) * in, row, 0, in);
      if (round) for (int k = 0; k < in; k++) row[k] = dtype.toFloat(dtype.fromFloat(row[k]));
      Q8Format.quantize(row, in, q, d);
      int at = dst + r, p = at / rowsPerPart, local = at - p * rowsPerPart;
      int g = local / GROUP, lane = local % GROUP;
      byte[] qp = q8[p];
      for (int k = 0; k < inPad; k++) qp[(g * inPad + k) * GROUP + lane] = q[k];
      for (int b = 0; b < blocks; b++) scales[p][(g * blocks + b) * GROUP + lane] = d[b];
    }
  }

  /**
   * F16 infinities and NaN: no released checkpoint has them, and the kernel's exact widening covers
   * finite values only ({@link F16Kernel#f16}), so a tensor holding one is refused.
   */
  private void refuseF16Specials(String name, int dst, int n) {
    for (int row = dst; row < dst + n; row++) {
      int p = row / rowsPerPart, local = row - p * rowsPerPart;
      for (int k = 0; k < rowInts; k++) {
        int v = ints[p][tiled(local, k, rowInts)];
        if ((v & 0x7c00) == 0x7c00 || (v & 0x7c000000) == 0x7c000000)
          throw new ModelLoadException(
              "tensor "
                  + name
                  + " holds an infinity or NaN (row "
                  + (row - dst)
                  + "); not servable as float16");
      }
    }
  }

  /** Row {@code r} as FP32 into {@code dst[off .. off+in)} (embedding lookup, GEMM tiles). */
  void rowTo(int r, float[] dst, int off) {
    int p = r / rowsPerPart, local = r - p * rowsPerPart;
    if (quantized) {
      int g = local / GROUP, lane = local % GROUP, blocks = inPad / Q8Format.BLOCK;
      for (int k = 0; k < in; k++)
        dst[off + k] =
            q8[p][(g * inPad + k) * GROUP + lane]
                * scales[p][(g * blocks + k / Q8Format.BLOCK) * GROUP + lane];
      return;
    }
    if (dtype == DType.F32) {
      System.arraycopy(floats[p], local * rowInts, dst, off, in);
      return;
    }
    boolean f16 = dtype == DType.F16;
    int[] w = ints[p];
    for (int k = 0, at = tiled(local, 0, rowInts); k < rowInts; k++, at += GROUP) {
      int v = w[at];
      dst[off + 2 * k] = Scalar16.lo(f16, v);
      if (2 * k + 1 < in) dst[off + 2 * k + 1] = Scalar16.hi(f16, v);
    }
  }

  /** Rows {@code [r0, r1)} as FP32, row-major, into {@code dst} (a GEMM tile). */
  void rowsTo(int r0, int r1, float[] dst) {
    for (int r = r0; r < r1; r++) rowTo(r, dst, (r - r0) * in);
  }

  /**
   * {@code y[b·yStride + yOff + o] (+)= x_b · W[o]} for {@code o ∈ [o0, o1)} and {@code rows}
   * activation rows in this matrix's layout ({@link #xStride()} floats apart).
   */
  void product(float[] x, int rows, float[] y, int yStride, int yOff, int o0, int o1, boolean add) {
    while (o0 < o1) {
      int p = o0 / rowsPerPart, pEnd = Math.min(o1, (p + 1) * rowsPerPart), row0 = p * rowsPerPart;
      if (quantized) {
        if (Q8_VECTOR)
          Q8Kernel.range(
              x, rows, in, inPad, q8[p], scales[p], row0, y, yStride, yOff, o0, pEnd, add);
        else
          Q8Format.product(
              x, rows, in, inPad, q8[p], scales[p], row0, y, yStride, yOff, o0, pEnd, add);
      } else if (dtype == DType.F32) {
        if (VectorSupport.AVAILABLE)
          Vec32.range(x, rows, in, floats[p], row0, y, yStride, yOff, o0, pEnd, add);
        else scalar32(x, rows, floats[p], row0, y, yStride, yOff, o0, pEnd, add);
      } else {
        boolean f16 = dtype == DType.F16;
        if (VectorSupport.AVAILABLE && f16)
          F16Kernel.range(x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
        else if (VectorSupport.AVAILABLE)
          Bf16Kernel.range(x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
        else Scalar16.range(f16, x, rows, rowInts, ints[p], row0, y, yStride, yOff, o0, pEnd, add);
      }
      o0 = pEnd;
    }
  }

  private static final boolean Q8_VECTOR = VectorSupport.AVAILABLE && Q8Kernel.supported();

  /**
   * Rows {@code [r0, r0 + n)} of part {@code p} (whole groups, {@code r0} a group start)
   * dequantized and rounded to BF16 in the 16-bit layout ({@link #tiled}, {@code ⌈in/2⌉} ints per
   * row) into {@code dst} from 0: what {@link Bf16Gemm} hands oneDNN for an 8-bit matrix. The last
   * group's missing rows are zeros.
   */
  void bf16Groups(int p, int r0, int n, int[] dst) {
    int half = (in + 1) / 2, blocks = inPad / Q8Format.BLOCK;
    byte[] qp = q8[p];
    float[] sp = scales[p];
    int g0 = r0 / GROUP, groups = (n + GROUP - 1) / GROUP;
    for (int g = 0; g < groups; g++)
      for (int k = 0; k < half; k++) {
        int lo = ((g0 + g) * inPad + 2 * k) * GROUP, hi = lo + GROUP;
        int s = ((g0 + g) * blocks + 2 * k / Q8Format.BLOCK) * GROUP, at = (g * half + k) * GROUP;
        for (int lane = 0; lane < GROUP; lane++) {
          float d = sp[s + lane];
          int a = DType.floatToBf16(qp[lo + lane] * d) & 0xffff;
          int b = 2 * k + 1 < in ? DType.floatToBf16(qp[hi + lane] * d) & 0xffff : 0;
          dst[at + lane] = a | b << 16;
        }
      }
  }

  private void scalar32(
      float[] x,
      int rows,
      float[] w,
      int row0,
      float[] y,
      int yStride,
      int yOff,
      int o0,
      int o1,
      boolean add) {
    for (int o = o0; o < o1; o++)
      for (int b = 0; b < rows; b++) {
        float s = 0;
        for (int i = 0; i < in; i++) s += x[b * in + i] * w[(o - row0) * in + i];
        int yi = b * yStride + yOff + o;
        y[yi] = add ? y[yi] + s : s;
      }
  }
}
