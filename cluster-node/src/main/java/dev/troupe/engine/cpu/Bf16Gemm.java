package dev.troupe.engine.cpu;

import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_DST;
import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_SRC;
import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_WEIGHTS;

import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.InMemoryWeights;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.dnnl.IntMemoryMap;
import org.bytedeco.dnnl.engine;
import org.bytedeco.dnnl.matmul;
import org.bytedeco.dnnl.memory;
import org.bytedeco.dnnl.post_ops;
import org.bytedeco.dnnl.primitive;
import org.bytedeco.dnnl.primitive_attr;
import org.bytedeco.dnnl.stream;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.ShortPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Products of BF16 weights for a step's prompt rows, and its generated rows when they are many
 * ({@link Forward}: any number of rows), on oneDNN's matmul (JavaCPP's {@code org.bytedeco:dnnl}),
 * which runs them on the CPU's BF16 dot-product instructions ({@code vdpbf16ps}: AVX512_BF16 on Zen
 * 4 and Cooper Lake, AMX on Sapphire Rapids): twice the FP32 FMA rate, and no FP32 copy of the
 * weights.
 *
 * <p>The weights need no conversion: {@link Matrix}'s k-major groups of 64 rows ({@code [in/2][64
 * rows][2]} per group, groups in row order) are oneDNN's {@code BA16a64b2a} layout of {@code W^T
 * [in, out]} whenever {@code in} is a multiple of 32 (oneDNN pads that layout's {@code in} to 32:
 * with an odd number of 16-blocks its groups are longer than ours). The reduction runs in chunks of
 * {@link Bf16Kernel#CHUNK_PAIRS} pairs (512 inputs), one call each, the chunks' FP32 sums added in
 * order by oneDNN's {@code sum} post-op: oneDNN's own blocking of a longer reduction depends on the
 * number of rows (1,536 or 2,816 inputs: blocks of 512 for 1–3 rows, 1,024 for more), while within
 * 512 inputs its sum is one chain, {@code vdpbf16ps}'s (on AMX: per 32 inputs two, {@code
 * tdpbf16ps}'s), which {@link Bf16Kernel} computes too ({@link #decodeRows}). So the weights are
 * copied chunk-major (each chunk's groups together, a dense {@code BA16a64b2a} matrix): from the
 * heap to native memory once and kept there while the resident budget lasts ({@code
 * troupe.worker.compute.bf16-gemm-resident}: each matrix whole, in the order products first meet
 * them); beyond it, to a native buffer in tiles of whole groups at every product. The activations
 * are rounded to BF16 on the Vector API ({@link Vec32#toBf16}: oneDNN's reorder's bits, round to
 * nearest even as PyTorch's BF16 linear and llama.cpp's BF16 matmul round them) and copied once per
 * product as BF16. Products write FP32, copied to the heap in one piece where a tile is whole rows
 * of the output; the residual add is done in that copy. (A oneDNN reorder for the rounding and a
 * {@code sum} post-op for the residual add, as first built, took a fifth of the products' time on
 * the small model's prefill: each reorder woke oneDNN's threads, and the post-op needed y's rows
 * copied in.)
 *
 * <p>Used only where oneDNN picks a hardware BF16 implementation ({@link #available}): elsewhere
 * oneDNN offers only its reference matmul (or none for this layout, on AVX2), and the FP32 OpenBLAS
 * path ({@link Blas}) is faster. {@code troupe.worker.compute.bf16-gemm = off} turns it off. One
 * instance per runner, called by one team member at a time: oneDNN (OpenMP build) runs each product
 * on its own threads, as many as the process may use cores, while the other members wait at the
 * step's next barrier. A row's result does not depend on the other rows of the call (the same bits
 * in calls of 1, 3, 7 and 70 rows: {@code Bf16GemmTest}).
 */
final class Bf16Gemm implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Bf16Gemm.class);

  /** Weights per copied tile: 8 MiB of BF16, whole groups. */
  private static final int TILE_INTS = 1 << 21;

  /** Most outputs of a resident matrix's tile: 32 MiB of FP32 (a 32-row LM head in one). */
  private static final int TILE_OUT_FLOATS = 1 << 23;

  /** Primitives kept (prefill chunk lengths vary; each shape's primitive is compiled once). */
  private static final int CACHED = 64;

  private static volatile String implementation; // oneDNN's BF16 matmul here, or why none

  private final engine eng = new engine(engine.kind.cpu, 0);
  private final stream st = new stream(eng);
  private final Map<List<Integer>, Prim> cache =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<List<Integer>, Prim> e) {
          if (size() <= CACHED) return false;
          e.getValue().close();
          return true;
        }
      };
  private final long residentBudget;
  private final Map<Matrix, IntPointer[]> resident = new IdentityHashMap<>();
  private long residentBytes;
  private boolean budgetLogged;
  private short[] xs = new short[0]; // the activations rounded to BF16
  private final float[] sum = new float[4096]; // a chunk of a product to add into y
  private FloatPointer yf;
  private ShortPointer xb;
  private IntPointer wb;

  /** With this JVM's resident budget ({@code troupe.worker.compute.bf16-gemm-resident}). */
  Bf16Gemm() {
    this(ComputeSettings.jvm().bf16GemmResident());
  }

  /** With {@code residentBudget} bytes of weights kept in native memory (0 = none). */
  Bf16Gemm(long residentBudget) {
    this.residentBudget = residentBudget;
  }

  /**
   * A compiled primitive with its arguments' memory objects (made once, each call points them at
   * its buffers: {@code set_data_handle}), and what else it was made from.
   */
  private record Prim(primitive p, memory[] args, IntMemoryMap map, List<Pointer> keep)
      implements AutoCloseable {
    Prim(primitive p, int[] ids, memory.desc[] descs, engine eng, List<Pointer> keep) {
      this(p, new memory[descs.length], new IntMemoryMap(), new ArrayList<>(keep));
      for (int i = 0; i < descs.length; i++) {
        args[i] = new memory(descs[i], eng, (Pointer) null); // no buffer until a call sets one
        map.put(ids[i], args[i]);
        this.keep.add(descs[i]);
      }
    }

    @Override
    public void close() {
      p.close();
      map.close();
      for (memory m : args) m.close();
      for (Pointer k : keep) k.close();
    }
  }

  /**
   * Whether this machine runs BF16 products on hardware through oneDNN: decided once (oneDNN loads
   * and picks a {@code avx512_core_bf16} or AMX implementation for a BF16 matmul in our layout),
   * and logged.
   */
  static boolean available() {
    String impl = implementation;
    if (impl == null) {
      synchronized (Bf16Gemm.class) {
        if ((impl = implementation) == null) implementation = impl = probe();
      }
    }
    return impl.startsWith("brg");
  }

  /**
   * oneDNN's BF16 matmul here ({@code brg_matmul:avx512_core_bf16}, {@code
   * brg_matmul:avx10_1_512_amx}, …), or why there is none.
   */
  static String implementation() {
    available();
    return implementation;
  }

  /**
   * Whether oneDNN runs the products on AMX tiles, which add otherwise than {@code vdpbf16ps} (the
   * kernels then add as they do: {@link Scalar16#tileOrder}).
   */
  static boolean onAmx() {
    return available() && implementation().contains("amx");
  }

  private static String probe() {
    boolean enabled = ComputeSettings.jvm().bf16Gemm();
    if (!enabled || Matrix.GROUP != 64) {
      String why =
          !enabled ? "troupe.worker.compute.bf16-gemm = off" : "no AVX-512 (groups of 32 rows)";
      log.info("BF16 prefill products on OpenBLAS (FP32): {}", why);
      return why;
    }
    try (engine e = new engine(engine.kind.cpu, 0);
        memory.desc s = desc(128, 64, memory.data_type.bf16, memory.format_tag.ab);
        memory.desc w = desc(64, 64, memory.data_type.bf16, memory.format_tag.BA16a64b2a);
        memory.desc d = desc(128, 64, memory.data_type.f32, memory.format_tag.ab);
        matmul.primitive_desc pd = new matmul.primitive_desc(e, s, w, d)) {
      String impl = pd.impl_info_str().getString();
      boolean hw = impl.startsWith("brg") && (impl.contains("bf16") || impl.contains("amx"));
      if (hw) log.info("BF16 prefill products on oneDNN {} ({})", impl, version());
      else log.info("BF16 prefill products on OpenBLAS (FP32): oneDNN would use {}", impl);
      return hw ? impl : "oneDNN would use " + impl;
    } catch (Throwable t) { // no native build for this platform, or it failed to load
      log.info("BF16 prefill products on OpenBLAS (FP32): oneDNN unavailable ({})", t.toString());
      return "oneDNN unavailable: " + t;
    }
  }

  private static volatile Integer decodeRows; // decided once: 0 = generated rows stay FP32

  /**
   * The fewest generated rows a step sends to oneDNN ({@code
   * troupe.worker.compute.bf16-gemm-decode-rows}, at most one more than the kernels take), or 0
   * where generated rows keep the FP32 path: set so, oneDNN unavailable, or its products here not
   * the kernels' bits over BF16-rounded activations (checked once on random products of several row
   * counts and three chunks of the reduction, and logged).
   */
  static int decodeRows() {
    Integer n = decodeRows;
    if (n == null) {
      synchronized (Bf16Gemm.class) {
        if ((n = decodeRows) == null) decodeRows = n = decideDecodeRows();
      }
    }
    return n;
  }

  private static int decideDecodeRows() {
    int wanted = ComputeSettings.jvm().bf16GemmDecodeRows();
    if (wanted == 0 || !available()) return 0;
    String mismatch = kernelsMismatch();
    if (mismatch != null) {
      log.info(
          "generated rows stay on the FP32 path: oneDNN's BF16 products here ({}) are not the"
              + " kernels' bits ({})",
          implementation(),
          mismatch);
      return 0;
    }
    int rows = Math.min(wanted, ComputeSettings.jvm().kernelMaxRows() + 1);
    log.info(
        "generated rows round their activations to BF16 (the kernels adding as {} does); steps of"
            + " {}+ of them run on oneDNN",
        Scalar16.tileOrder() ? "AMX's tdpbf16ps" : "vdpbf16ps",
        rows);
    return rows;
  }

  /**
   * Where oneDNN's products differ from the kernels' on the same BF16-rounded rows; null if
   * nowhere.
   */
  static String kernelsMismatch() {
    int in = 2 * 512 + 64, out = 3 * Matrix.GROUP + 8;
    java.util.SplittableRandom r = new java.util.SplittableRandom(27);
    float[] wv = new float[out * in];
    for (int i = 0; i < wv.length; i++) wv[i] = (float) (r.nextGaussian() * 0.05);
    var src =
        new InMemoryWeights(
            Map.of("w", new InMemoryWeights.Tensor(wv, new long[] {out, in})), "check");
    Matrix w = Matrix.load(src, DType.BF16, List.of("w"));
    try (Bf16Gemm gemm = new Bf16Gemm(0)) {
      for (int rows : new int[] {1, 5, 17, 40}) {
        float[] x = new float[rows * in], xp = new float[rows * in];
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
        float[] y = new float[rows * out], yk = new float[rows * out];
        gemm.product(w, x, rows, y, false);
        Kernels.roundToBf16(x, 0, x.length);
        for (int t = 0; t < rows; t++) Activations.put(x, t * in, in, xp, t * in, w.packed());
        w.product(xp, rows, yk, out, 0, 0, out, false);
        for (int i = 0; i < y.length; i++)
          if (Float.floatToRawIntBits(y[i]) != Float.floatToRawIntBits(yk[i]))
            return rows + " rows, output " + i + ": " + y[i] + " against " + yk[i];
      }
    }
    return null;
  }

  private static String version() {
    var v = org.bytedeco.dnnl.global.dnnl.dnnl_version();
    return "oneDNN " + v.major() + "." + v.minor() + "." + v.patch();
  }

  /**
   * Whether {@code w}'s products can run here: BF16 or 8-bit (dequantized to BF16 tiles), and
   * {@code in} whole blocks of 32.
   */
  static boolean handles(Matrix w) {
    return (w.dtype == DType.BF16 || w.quantized) && w.in % 32 == 0 && available();
  }

  /**
   * {@code y [rows, w.out] (+)= bf16(x [rows, w.in]) · Wᵀ}, x and y row-major (natural layout), y
   * rows {@code w.out} floats apart.
   */
  void product(Matrix w, float[] x, int rows, float[] y, boolean add) {
    product(w, x, 0, rows, y, add);
  }

  /**
   * {@link #product(Matrix, float[], int, float[], boolean)} of rows {@code [from, from+rows)}. A
   * single row goes to oneDNN twice, as a call of two rows: with AMX, oneDNN 3.11 sums a short last
   * chunk (32 inputs) of a one-row call otherwise than in calls of more rows.
   */
  void product(Matrix w, float[] x, int from, int rows, float[] y, boolean add) {
    int in = w.in, out = w.out, half = (in + 1) / 2, xn = rows * in;
    int calls = Math.max(2, rows); // rows in each oneDNN call
    IntPointer[] kept = resident(w);
    int groups = (out + Matrix.GROUP - 1) / Matrix.GROUP;
    int groupsPerTile = Math.max(1, Math.min(TILE_INTS / (half * Matrix.GROUP), groups));
    // resident: nothing to copy, so tiles as wide as the output buffer allows (an LM head in one)
    int widest = Math.min(groups, TILE_OUT_FLOATS / (calls * Matrix.GROUP));
    if (kept != null) groupsPerTile = Math.max(groupsPerTile, widest);
    int tileRows = groupsPerTile * Matrix.GROUP;
    if (xs.length < calls * in) xs = new short[Math.max(calls * in, xs.length * 3 / 2)];
    if (VectorSupport.AVAILABLE) Vec32.toBf16(x, from * in, xs, 0, xn);
    else for (int i = 0; i < xn; i++) xs[i] = Scalar16.toBf16(x[from * in + i]);
    if (rows == 1) System.arraycopy(xs, 0, xs, in, in);
    xb = grow(xb, (long) calls * in, ShortPointer::new);
    xb.position(0).put(xs, 0, calls * in);
    yf = grow(yf, (long) calls * Math.min(out, tileRows), FloatPointer::new);
    if (kept == null) wb = grow(wb, (long) tileRows * half, IntPointer::new);
    for (int p = 0; p < w.parts(); p++) {
      int[] ints = w.quantized ? null : w.ints(p);
      int partRows = w.partRows(p), row0 = p * w.rowsPerPart();
      int partGroups = (partRows + Matrix.GROUP - 1) / Matrix.GROUP;
      for (int r0 = 0; r0 < partRows; r0 += tileRows) {
        // a tile of whole groups; its outputs [rows, n] are columns [o0, o0+n) of y's rows, the
        // sum of one call per chunk of the reduction (each chunk's weights one run of ints)
        int n = Math.min(tileRows, partRows - r0), o0 = row0 + r0;
        int tileGroups = (n + Matrix.GROUP - 1) / Matrix.GROUP;
        if (kept == null)
          chunked(
              ints != null ? ints : dequantized(w, p, r0, n),
              ints != null ? r0 * half : 0,
              half,
              tileGroups,
              wb.position(0));
        for (int k = 0; k < half; k += Bf16Kernel.CHUNK_PAIRS) {
          int pairs = Math.min(Bf16Kernel.CHUNK_PAIRS, half - k);
          // (A pointer at an address, not a position: oneDNN's memory takes a void*, to which
          // JavaCPP adds a pointer's position in bytes, not in elements.)
          long at =
              kept != null
                  ? (long) partGroups * Matrix.GROUP * k + (long) r0 * pairs
                  : (long) tileGroups * Matrix.GROUP * k;
          IntPointer tile = (kept != null ? kept[p] : wb).getPointer(at);
          boolean sum = k > 0;
          Prim mm =
              cached(
                  List.of(sum ? 2 : 1, calls, in, 2 * pairs, n),
                  () -> matmul(calls, in, 2 * pairs, n, sum));
          execute(mm, xb.getPointer(2L * k), tile, yf.position(0));
        }
        collect(y, from * out + o0, out, rows, n, add);
      }
    }
  }

  /**
   * Whole groups of a matrix's ints ({@link Matrix#tiled}: per group, per pair, 64 rows) from
   * {@code src[at]} into {@code dst} chunk by chunk of the reduction: per chunk of {@link
   * Bf16Kernel#CHUNK_PAIRS} pairs, each group's pairs of that chunk, so that a chunk's weights are
   * one dense {@code BA16a64b2a} matrix.
   */
  private static void chunked(int[] src, int at, int half, int groups, IntPointer dst) {
    int g = Matrix.GROUP;
    for (int k = 0; k < half; k += Bf16Kernel.CHUNK_PAIRS) {
      int pairs = Math.min(Bf16Kernel.CHUNK_PAIRS, half - k);
      for (int gi = 0; gi < groups; gi++)
        dst.position((long) groups * g * k + (long) gi * g * pairs)
            .put(src, at + gi * g * half + k * g, pairs * g);
    }
    dst.position(0);
  }

  /**
   * The tile's outputs {@code [rows, n]} into (or, with {@code add}, added to) y's rows from {@code
   * yAt}, {@code yStride} floats apart: one copy when they are whole rows of y. Adding here rather
   * than in oneDNN (a {@code sum} post-op) spares copying y's rows in: the same one FP32 addition.
   */
  private void collect(float[] y, int yAt, int yStride, int rows, int n, boolean add) {
    boolean whole = n == yStride;
    int runs = whole ? 1 : rows, len = whole ? rows * n : n;
    for (int t = 0; t < runs; t++) {
      long src = (long) t * n;
      int dst = yAt + t * yStride;
      if (!add) yf.position(src).get(y, dst, len);
      else
        for (int i = 0; i < len; i += sum.length) {
          int k = Math.min(sum.length, len - i);
          yf.position(src + i).get(sum, 0, k);
          for (int j = 0; j < k; j++) y[dst + i + j] += sum[j];
        }
    }
    yf.position(0);
  }

  /**
   * {@code w}'s parts in native memory: kept from an earlier product, copied now while the budget
   * allows, or null (then each product copies its tiles).
   */
  private IntPointer[] resident(Matrix w) {
    IntPointer[] kept = resident.get(w);
    if (kept != null || residentBudget == 0) return kept;
    long bytes = 0; // of its BF16 form
    for (int p = 0; p < w.parts(); p++)
      bytes +=
          (w.partRows(p) + Matrix.GROUP - 1L) / Matrix.GROUP * Matrix.GROUP * ((w.in + 1) / 2) * 4;
    if (residentBytes + bytes > residentBudget) {
      if (!budgetLogged)
        log.info(
            "oneDNN keeps {} MiB of BF16 weights in native memory (budget {} MiB,"
                + " troupe.worker.compute.bf16-gemm-resident); the other products copy theirs at"
                + " each call",
            residentBytes >> 20,
            residentBudget >> 20);
      budgetLogged = true;
      return null;
    }
    kept = new IntPointer[w.parts()];
    int half = (w.in + 1) / 2;
    for (int p = 0; p < kept.length; p++) {
      int partRows = w.partRows(p), groupRows = Matrix.GROUP;
      int groups = (partRows + groupRows - 1) / groupRows;
      kept[p] = new IntPointer((long) groups * groupRows * half);
      if (!w.quantized) {
        chunked(w.ints(p), 0, half, groups, kept[p]);
        continue;
      }
      // an 8-bit matrix's BF16 form, a tile of whole groups at a time, each into its place in
      // every chunk
      int tileGroups = Math.max(1, TILE_INTS / (half * groupRows));
      try (IntPointer tile = new IntPointer((long) tileGroups * groupRows * half)) {
        for (int g0 = 0; g0 < groups; g0 += tileGroups) {
          int tg = Math.min(tileGroups, groups - g0);
          chunked(
              dequantized(
                  w, p, g0 * groupRows, Math.min(tg * groupRows, partRows - g0 * groupRows)),
              0,
              half,
              tg,
              tile);
          for (int k = 0; k < half; k += Bf16Kernel.CHUNK_PAIRS) {
            int pairs = Math.min(Bf16Kernel.CHUNK_PAIRS, half - k);
            Pointer.memcpy(
                kept[p].getPointer((long) groups * groupRows * k + (long) g0 * groupRows * pairs),
                tile.getPointer((long) tg * groupRows * k),
                4L * tg * groupRows * pairs);
          }
        }
      }
    }
    resident.put(w, kept);
    residentBytes += bytes;
    return kept;
  }

  private int[] tileInts = new int[0];

  /** Rows {@code [r0, r0 + n)} of an 8-bit matrix's part p as BF16 groups, in a reused array. */
  private int[] dequantized(Matrix w, int p, int r0, int n) {
    int ints = (n + Matrix.GROUP - 1) / Matrix.GROUP * Matrix.GROUP * ((w.in + 1) / 2);
    if (tileInts.length < ints) tileInts = new int[ints];
    w.bf16Groups(p, r0, n, tileInts);
    return tileInts;
  }

  /** Bytes of weights kept in native memory. */
  long residentBytes() {
    return residentBytes;
  }

  private Prim cached(List<Integer> key, java.util.function.Supplier<Prim> make) {
    Prim p = cache.get(key);
    if (p == null) cache.put(key, p = make.get());
    return p;
  }

  /**
   * bf16 [rows, k] (rows {@code in} apart) · W chunk [k, n] → f32 [rows, n], or with {@code sum}
   * added to what dst holds (oneDNN's sum post-op: one FP32 addition).
   */
  private Prim matmul(int rows, int in, int k, int n, boolean sum) {
    memory.desc s =
        new memory.desc(new LongPointer(rows, k), memory.data_type.bf16, new LongPointer(in, 1));
    memory.desc w = desc(k, n, memory.data_type.bf16, memory.format_tag.BA16a64b2a);
    memory.desc d = desc(rows, n, memory.data_type.f32, memory.format_tag.ab);
    List<Pointer> keep = new ArrayList<>();
    matmul.primitive_desc pd;
    if (sum) {
      post_ops ops = new post_ops();
      ops.append_sum();
      primitive_attr attr = new primitive_attr();
      attr.set_post_ops(ops);
      pd = new matmul.primitive_desc(eng, s, w, d, attr, false);
      keep.add(ops);
      keep.add(attr);
    } else pd = new matmul.primitive_desc(eng, s, w, d);
    keep.add(pd);
    return new Prim(
        new matmul(pd),
        new int[] {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
        new memory.desc[] {s, w, d},
        eng,
        keep);
  }

  /** Runs a matmul (src, weights, dst) on these buffers, each at its position. */
  private void execute(Prim prim, Pointer... buffers) {
    for (int i = 0; i < buffers.length; i++) prim.args()[i].set_data_handle(buffers[i]);
    prim.p().execute(st, prim.map());
    st._wait();
  }

  private static memory.desc desc(long a, long b, memory.data_type t, memory.format_tag tag) {
    return new memory.desc(new LongPointer(a, b), t, tag);
  }

  private static <P extends Pointer> P grow(P p, long n, java.util.function.LongFunction<P> make) {
    if (p != null && p.capacity() >= n) return p;
    long cap = Math.max(n, p == null ? 0 : p.capacity() * 3 / 2);
    if (p != null) p.close();
    return make.apply(cap);
  }

  @Override
  public void close() {
    for (IntPointer[] parts : resident.values()) for (IntPointer p : parts) p.close();
    resident.clear();
    residentBytes = 0;
    for (Prim p : cache.values()) p.close();
    cache.clear();
    for (Pointer p : new Pointer[] {yf, xb, wb}) if (p != null) p.close();
    yf = null;
    xb = null;
    wb = null;
    st.close();
    eng.close();
  }
}
