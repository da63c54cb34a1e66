package dev.troupe.engine.cuda;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.Projection;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * LoRA adapters on the device, applied per request: each registered adapter gets a slot; its {@code
 * A [r, in]} and {@code B [out, r]} matrices live in device memory (FP32, they are small), and one
 * table per (layer, module) lists every slot's A and B addresses, the tables of a layer's modules
 * consecutive, so a single pair of launches ({@code lora_shrink}, {@code lora_expand}) serves all
 * rows of a step for the modules that share an input (q/k/v, gate/up), each row with its own
 * adapter (rows of the base model are skipped). The base weights are never merged.
 */
final class CudaLora implements AutoCloseable {
  static final String[] MODULES =
      java.util.Arrays.stream(Projection.values()).map(Projection::module).toArray(String[]::new);
  static final int Q = 0, K = 1, V = 2, O = 3, GATE = 4, UP = 5, DOWN = 6;
  private static final String PEFT_PREFIX = "base_model.model.";

  private record Slot(int id, int rank, float scale, long[] a, long[] b) {}

  private final Gpu gpu;
  private final ModelConfig cfg;
  private final int entries; // layers × modules
  private final Map<Integer, Integer> slotOf = new HashMap<>();
  private final List<Slot> slots = new ArrayList<>(); // null = free
  private long table; // [entries][capacity] A ptrs, then [entries][capacity] B ptrs, ranks, scales
  private int capacity;
  int maxRank;

  CudaLora(Gpu gpu, ModelConfig cfg) {
    this.gpu = gpu;
    this.cfg = cfg;
    this.entries = cfg.numLayers() * MODULES.length;
  }

  boolean isEmpty() {
    return slotOf.isEmpty();
  }

  /** The slot of adapter {@code id}; unknown ids are refused, as on the CPU runner. */
  int slot(int id) {
    Integer s = slotOf.get(id);
    if (s == null) throw new IllegalArgumentException("unknown adapter id " + id);
    return s;
  }

  void register(int id, LoraAdapter ad) {
    if (id <= 0) throw new IllegalArgumentException("adapter id must be > 0 (0 is the base model)");
    long[] a = new long[entries], b = new long[entries];
    Map<Integer, float[][]> checked = new HashMap<>();
    for (Map.Entry<String, float[]> e : ad.a().entrySet()) {
      String key =
          e.getKey().startsWith(PEFT_PREFIX)
              ? e.getKey().substring(PEFT_PREFIX.length())
              : e.getKey();
      int idx = index(key);
      int[] io = inOut(idx % MODULES.length);
      float[] am = e.getValue(), bm = ad.b().get(e.getKey());
      if (am.length != ad.rank() * io[0] || bm.length != io[1] * ad.rank())
        throw new IllegalArgumentException(
            "LoRA module "
                + e.getKey()
                + ": expected A ["
                + ad.rank()
                + ", "
                + io[0]
                + "] and B ["
                + io[1]
                + ", "
                + ad.rank()
                + "], got "
                + am.length
                + " and "
                + bm.length
                + " values");
      checked.put(idx, new float[][] {am, bm});
    }
    removeAdapter(id);
    try {
      for (Map.Entry<Integer, float[][]> e : checked.entrySet()) {
        a[e.getKey()] = upload(e.getValue()[0]);
        b[e.getKey()] = upload(e.getValue()[1]);
      }
    } catch (RuntimeException ex) {
      freeAll(a, b);
      throw ex;
    }
    int s = slots.indexOf(null);
    Slot slot = new Slot(id, ad.rank(), (float) ad.scale(), a, b);
    if (s < 0) {
      s = slots.size();
      slots.add(slot);
    } else slots.set(s, slot);
    slotOf.put(id, s);
    rebuild();
  }

  void removeAdapter(int id) {
    Integer s = slotOf.remove(id);
    if (s == null) return;
    Slot old = slots.set(s, null);
    freeAll(old.a(), old.b());
    rebuild();
  }

  private void freeAll(long[] a, long[] b) {
    for (long p : a) gpu.free(p);
    for (long p : b) gpu.free(p);
  }

  private long upload(float[] v) {
    long p = gpu.alloc((long) v.length * 4);
    ByteBuffer buf = ByteBuffer.allocateDirect(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    buf.asFloatBuffer().put(v);
    gpu.upload(p, buf);
    return p;
  }

  /** Rewrites the device tables after a change (small: a few KB). */
  private void rebuild() {
    if (slots.size() > capacity || table == 0) {
      gpu.free(table);
      capacity = Math.max(4, Integer.highestOneBit(Math.max(1, slots.size())) * 2);
      table = gpu.alloc(tableBytes());
    }
    ByteBuffer buf = ByteBuffer.allocateDirect((int) tableBytes()).order(ByteOrder.LITTLE_ENDIAN);
    maxRank = 0;
    for (int e = 0; e < entries; e++)
      for (int s = 0; s < capacity; s++) {
        Slot sl = s < slots.size() ? slots.get(s) : null;
        buf.putLong((e * capacity + s) * 8, sl == null ? 0 : sl.a()[e]);
        buf.putLong((entries * capacity + e * capacity + s) * 8, sl == null ? 0 : sl.b()[e]);
      }
    int ranks = entries * capacity * 16;
    for (int s = 0; s < capacity; s++) {
      Slot sl = s < slots.size() ? slots.get(s) : null;
      buf.putInt(ranks + s * 4, sl == null ? 0 : sl.rank());
      buf.putFloat(ranks + capacity * 4 + s * 4, sl == null ? 0 : sl.scale());
      if (sl != null) maxRank = Math.max(maxRank, sl.rank());
    }
    buf.clear();
    gpu.upload(table, buf);
  }

  private long tableBytes() {
    return (long) entries * capacity * 16 + capacity * 8L;
  }

  long aPtrs(int layer, int module) {
    return table + (long) (layer * MODULES.length + module) * capacity * 8;
  }

  long bPtrs(int layer, int module) {
    return table
        + (long) entries * capacity * 8
        + (long) (layer * MODULES.length + module) * capacity * 8;
  }

  /** The tables' device address (it moves when they grow). */
  long table() {
    return table;
  }

  /** Slots per (layer, module) table: module m + 1's table starts this many pointers after m's. */
  int capacity() {
    return capacity;
  }

  long ranks() {
    return table + (long) entries * capacity * 16;
  }

  long scales() {
    return ranks() + capacity * 4L;
  }

  private int index(String key) {
    String prefix = "model.layers.";
    if (key.startsWith(prefix)) {
      int dot = key.indexOf('.', prefix.length());
      if (dot > 0) {
        try {
          int layer = Integer.parseInt(key.substring(prefix.length(), dot));
          String module = key.substring(dot + 1);
          for (int m = 0; m < MODULES.length; m++)
            if (MODULES[m].equals(module) && layer >= 0 && layer < cfg.numLayers())
              return layer * MODULES.length + m;
        } catch (NumberFormatException ignored) {
          // falls through to the error below
        }
      }
    }
    throw new IllegalArgumentException(
        "LoRA module " + key + " is not a linear layer of this model");
  }

  /** {in, out} of a module. */
  int[] inOut(int module) {
    Projection p = Projection.values()[module];
    return new int[] {p.in(cfg), p.out(cfg)};
  }

  @Override
  public void close() {
    for (Slot s : slots) if (s != null) freeAll(s.a(), s.b());
    slots.clear();
    slotOf.clear();
    gpu.free(table);
    table = 0;
  }

  /**
   * Adds the LoRA deltas of modules {@code first .. first + n - 1} (consecutive, reading the same
   * input; their outputs side by side in {@code out}'s rows) for every row with an adapter: two
   * launches for the group, whatever the adapters (q/k/v and gate/up are one group each, so a layer
   * takes 8 LoRA launches, not 14). {@code ax} is the caller's scratch of {@code T} rows by {@code
   * axRank} floats.
   */
  void add(
      BatchPlan s,
      int li,
      int first,
      int n,
      long in,
      int inDim,
      long out,
      int outStride,
      long adapterSlots,
      int T,
      long ax,
      int axRank) {
    if (!s.anyAdapter()) return;
    int[] outs = new int[3];
    int blocks = 0;
    for (int m = 0; m < n; m++) {
      outs[m] = inOut(first + m)[1];
      blocks += (outs[m] + KernelSource.ELEMENT_THREADS - 1) / KernelSource.ELEMENT_THREADS;
    }
    gpu.launch(
        "lora_shrink",
        T,
        n,
        KernelSource.LORA_THREADS,
        in,
        inDim,
        adapterSlots,
        aPtrs(li, first),
        capacity(),
        ranks(),
        ax,
        axRank);
    gpu.launch(
        "lora_expand",
        T,
        blocks,
        KernelSource.ELEMENT_THREADS,
        ax,
        axRank,
        adapterSlots,
        bPtrs(li, first),
        capacity(),
        ranks(),
        scales(),
        out,
        outStride,
        outs[0],
        outs[1],
        outs[2]);
  }
}
