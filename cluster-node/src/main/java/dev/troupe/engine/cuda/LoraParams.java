package dev.troupe.engine.cuda;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.Projection;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The trained LoRA adapters on the device, in one flat FP32 buffer (the optimizer's master copy),
 * with a BF16 working copy for the products, the gradients and AdamW's two moments in buffers of
 * the same layout: so the global norm and the update are two launches for every parameter, and a
 * checkpoint is one download per buffer. Parameters are named as the CPU trainer names them ({@code
 * model.layers.N.self_attn.q_proj.lora_A}, {@code …lora_B}), in its order: layer by layer, {@link
 * Projection} order, A then B.
 */
final class LoraParams implements AutoCloseable {
  /**
   * The adapted modules of one (layer, projection): A [rank, in] at offA, B [out, rank] at offB.
   */
  record Module(
      String name, int layer, Projection projection, int in, int out, long offA, long offB) {}

  final int rank;
  final float scale;
  final long count;
  final List<Module> modules = new ArrayList<>();
  private final Module[][] byLayer;
  private final Gpu gpu;
  final long p, pb, g, m, v, partial, norm;
  long step;

  /**
   * Device memory the parameters take: the FP32 master copy, its BF16 working copy, the gradients,
   * AdamW's two moments (18 bytes per parameter), and the norm's partial sums.
   */
  static long bytes(ModelConfig cfg, int rank, List<String> targets) {
    long n = 0;
    for (int l = 0; l < cfg.numLayers(); l++)
      for (Projection pr : Projection.values())
        if (targets.contains(pr.shortName())) n += (long) rank * (pr.in(cfg) + pr.out(cfg));
    return n * (4 + 2 + 4 + 4 + 4) + KernelSource.ADAM_BLOCKS * 8L + 8;
  }

  LoraParams(Gpu gpu, ModelConfig cfg, int rank, double alpha, List<String> targets) {
    this.gpu = gpu;
    this.rank = rank;
    this.scale = (float) (alpha / rank);
    byLayer = new Module[cfg.numLayers()][Projection.values().length];
    long off = 0;
    for (int l = 0; l < cfg.numLayers(); l++)
      for (Projection pr : Projection.values()) {
        if (!targets.contains(pr.shortName())) continue;
        int in = pr.in(cfg), out = pr.out(cfg);
        Module mod = new Module(pr.module(l), l, pr, in, out, off, off + (long) rank * in);
        off += (long) rank * (in + out);
        modules.add(mod);
        byLayer[l][pr.ordinal()] = mod;
      }
    count = off;
    long[] got = new long[7];
    int i = 0;
    try {
      got[i++] = gpu.alloc(count * 4);
      got[i++] = gpu.alloc(count * 2);
      got[i++] = gpu.alloc(count * 4);
      got[i++] = gpu.alloc(count * 4);
      got[i++] = gpu.alloc(count * 4);
      got[i++] = gpu.alloc(KernelSource.ADAM_BLOCKS * 8L);
      got[i++] = gpu.alloc(8);
    } catch (RuntimeException e) {
      for (int j = 0; j < i; j++) gpu.free(got[j]);
      throw e;
    }
    p = got[0];
    pb = got[1];
    g = got[2];
    m = got[3];
    v = got[4];
    partial = got[5];
    norm = got[6];
    fill(p, 0);
    fill(m, 0);
    fill(v, 0);
    bf16(p, pb, count);
  }

  /** The module of (layer, projection), or null when it is not adapted. */
  Module module(int layer, Projection pr) {
    return byLayer[layer][pr.ordinal()];
  }

  Map<String, long[]> shapes() {
    Map<String, long[]> s = new LinkedHashMap<>();
    for (Module mod : modules) {
      s.put(mod.name() + ".lora_A", new long[] {rank, mod.in()});
      s.put(mod.name() + ".lora_B", new long[] {mod.out(), rank});
    }
    return s;
  }

  /** Uploads parameters by name (every adapted module's A and B, of their shapes). */
  void upload(Map<String, double[]> values) {
    write(p, values, "parameter");
    bf16(p, pb, count);
  }

  Map<String, double[]> parameters() {
    return read(p);
  }

  Map<String, double[]> gradients() {
    return read(g);
  }

  void gradients(Map<String, double[]> values) {
    write(g, values, "gradient");
  }

  /** AdamW's moments and step count. */
  void moments(long step, Map<String, double[]> first, Map<String, double[]> second) {
    write(m, first, "first moment");
    write(v, second, "second moment");
    this.step = step;
  }

  Map<String, double[]> firstMoments() {
    return read(m);
  }

  Map<String, double[]> secondMoments() {
    return read(v);
  }

  /** The current parameters as a served adapter (keys: the modules' names). */
  LoraAdapter adapter(int version, double alpha) {
    Map<String, double[]> all = parameters();
    Map<String, float[]> a = new LinkedHashMap<>(), b = new LinkedHashMap<>();
    for (Module mod : modules) {
      a.put(mod.name(), floats(all.get(mod.name() + ".lora_A")));
      b.put(mod.name(), floats(all.get(mod.name() + ".lora_B")));
    }
    return new LoraAdapter(version, rank, alpha, a, b);
  }

  private static float[] floats(double[] d) {
    float[] f = new float[d.length];
    for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
    return f;
  }

  /**
   * One AdamW step over every parameter from the gradients in {@link #g}: the global norm (two
   * launches, the second also clips and updates and refreshes the BF16 copy). The norm before
   * clipping is left in {@link #norm}.
   */
  void adamw(double lr, double beta1, double beta2, double eps, double wd, double maxNorm) {
    step++;
    double bc1 = 1 - Math.pow(beta1, step), bc2 = 1 - Math.pow(beta2, step);
    int t = KernelSource.TRAIN_THREADS;
    gpu.launch("grad_sumsq", KernelSource.ADAM_BLOCKS, 1, t, g, elements(count), partial);
    gpu.launch(
        "adamw_step",
        KernelSource.ADAM_BLOCKS,
        1,
        t,
        p,
        pb,
        g,
        m,
        v,
        elements(count),
        partial,
        (float) lr,
        (float) beta1,
        (float) beta2,
        (float) eps,
        (float) wd,
        (float) maxNorm,
        (float) bc1,
        (float) bc2,
        norm);
  }

  private void write(long dst, Map<String, double[]> values, String what) {
    if (values.size() != 2 * modules.size())
      throw new IllegalArgumentException(
          values.size() + " " + what + " tensors given, the adapter has " + 2 * modules.size());
    ByteBuffer buf = ByteBuffer.allocateDirect((int) (count * 4)).order(ByteOrder.LITTLE_ENDIAN);
    FloatBuffer f = buf.asFloatBuffer();
    for (Module mod : modules) {
      put(f, mod.offA(), values, mod.name() + ".lora_A", (long) rank * mod.in(), what);
      put(f, mod.offB(), values, mod.name() + ".lora_B", (long) mod.out() * rank, what);
    }
    gpu.upload(dst, buf);
  }

  private static void put(
      FloatBuffer f, long off, Map<String, double[]> values, String name, long n, String what) {
    double[] d = values.get(name);
    if (d == null || d.length != n)
      throw new IllegalArgumentException(
          what
              + " "
              + name
              + (d == null ? " missing" : ": " + d.length + " values, expected " + n));
    for (int i = 0; i < d.length; i++) f.put((int) off + i, (float) d[i]);
  }

  private Map<String, double[]> read(long src) {
    ByteBuffer buf = ByteBuffer.allocateDirect((int) (count * 4)).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(src, buf);
    FloatBuffer f = buf.asFloatBuffer();
    Map<String, double[]> out = new LinkedHashMap<>();
    for (Module mod : modules) {
      out.put(mod.name() + ".lora_A", get(f, mod.offA(), (long) rank * mod.in()));
      out.put(mod.name() + ".lora_B", get(f, mod.offB(), (long) mod.out() * rank));
    }
    return out;
  }

  private static double[] get(FloatBuffer f, long off, long n) {
    double[] d = new double[(int) n];
    for (int i = 0; i < d.length; i++) d[i] = f.get((int) off + i);
    return d;
  }

  private void fill(long ptr, float value) {
    gpu.launch("fill_f32", grid(count), 1, KernelSource.TRAIN_THREADS, ptr, value, elements(count));
  }

  private void bf16(long src, long dst, long n) {
    gpu.launch("f32_to_bf16", grid(n), 1, KernelSource.TRAIN_THREADS, src, dst, elements(n));
  }

  /**
   * Blocks of an element-wise launch: one element per thread, at most 1024 blocks (grid-stride).
   */
  static int grid(long n) {
    return (int)
        Math.max(
            1, Math.min(1024, (n + KernelSource.TRAIN_THREADS - 1) / KernelSource.TRAIN_THREADS));
  }

  /** An element count as the kernels take it (int: no buffer here comes near 2³¹ elements). */
  static int elements(long n) {
    if (n < 0 || n > Integer.MAX_VALUE)
      throw new IllegalArgumentException(n + " elements: too many for one launch");
    return (int) n;
  }

  @Override
  public void close() {
    for (long ptr : new long[] {p, pb, g, m, v, partial, norm}) gpu.free(ptr);
  }
}
