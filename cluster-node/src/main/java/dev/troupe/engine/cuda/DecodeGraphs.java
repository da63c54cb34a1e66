package dev.troupe.engine.cuda;

import dev.troupe.engine.DeviceSampling.Params;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A runner's CUDA graphs of decode-only steps (vLLM's cure for a decode step's launch overhead):
 * one graph per (padded batch size, adapters in the batch or not, rows sampled or not), captured
 * the first time a step of that kind runs and replayed after, so that a step is its metadata and
 * sampling parameters uploaded, one graph launch, and the results downloaded.
 *
 * <p>A captured call keeps its argument values, so every buffer a graph touches must keep its
 * address: the runner passes a stamp of those addresses (and of the scalars its launches take that
 * can change) with every lookup, and a different stamp drops every graph (a work buffer grown, the
 * LoRA table reallocated ...). Sampling parameters live in this object's own buffers, laid out for
 * the batch size with fixed capacities for the rows' id lists (grown, and the graphs dropped, when
 * a step needs more).
 *
 * <p>Thread: the runner's.
 */
final class DecodeGraphs implements AutoCloseable {
  /** The largest batch captured: one LM-head piece ({@link CudaModelRunner#LOGIT_PIECE}). */
  static final int MAX_SIZE = CudaModelRunner.LOGIT_PIECE;

  /**
   * What a graph is captured for; its launches differ in each ({@code attentionSplit}: attention's
   * blocks per row and KV head, {@code CudaModelRunner.attentionSplit}).
   */
  record Key(int size, boolean adapters, boolean sampling, int attentionSplit) {}

  private final Gpu gpu;
  private final Map<Key, Long> graphs = new HashMap<>();
  private final DeviceSampler.Buffers samplerBuffers;
  private long[] stamp = new long[0];
  private int intCap = 1 << 14, floatCap = 4 * MAX_SIZE;
  private long captures, replays;

  DecodeGraphs(Gpu gpu) {
    this.gpu = gpu;
    this.samplerBuffers = new DeviceSampler.Buffers(gpu);
  }

  /**
   * The graph batch size for {@code batch} decode rows — vLLM's capture sizes: 1, 2, 4, 8, then
   * multiples of 8 up to {@link #MAX_SIZE} — or -1 when a step that large runs eagerly.
   */
  static int sizeFor(int batch) {
    if (batch < 1 || batch > MAX_SIZE) return -1;
    if (batch > 8) return (batch + 7) / 8 * 8;
    int p = 1;
    while (p < batch) p <<= 1;
    return p;
  }

  /** Graphs captured so far (tests: a replay captures nothing new). */
  long captures() {
    return captures;
  }

  /** Graph launches so far. */
  long replays() {
    return replays;
  }

  /** Graphs held now. */
  int size() {
    return graphs.size();
  }

  /**
   * The sampling rows of a graph step of {@code size}: {@code rows} (sorted by their logit row
   * {@code source}) and, up to {@code size}, greedy rows without lists sampling their own logit row
   * (results dropped), packed and uploaded at the addresses the graph of {@code size} reads.
   */
  DeviceSampler.Batch sampling(List<Params> rows, int[] source, int size) {
    List<Params> all = new ArrayList<>(size);
    all.addAll(rows);
    int[] src = Arrays.copyOf(source, size);
    Params pad = Params.simple(true, 1f, 0, 1f, 0f, 0.0);
    for (int r = rows.size(); r < size; r++) {
      all.add(pad);
      src[r] = r;
    }
    int[] need = DeviceSampler.listLengths(all);
    while (need[0] > intCap) intCap *= 2;
    while (need[1] > floatCap) floatCap *= 2;
    // room for the largest graph, so the buffer does not move from one size to the next
    long params = 8L * MAX_SIZE + 4L * DeviceSampler.ROW_INTS * MAX_SIZE + 16L * MAX_SIZE;
    params = (params + 4L * floatCap + 4L * intCap + 255L) & ~255L;
    samplerBuffers.device(DeviceSampler.Batch.deviceBytes(params, MAX_SIZE));
    return new DeviceSampler.Batch(samplerBuffers, all, src, intCap, floatCap);
  }

  /**
   * What the sampling rows' addresses depend on, for the runner's stamp: the buffer and the two
   * capacities.
   */
  long[] samplingStamp() {
    return new long[] {samplerBuffers.address(), intCap, floatCap};
  }

  /**
   * The graph for {@code key} captured under {@code stamp}, or null; a stamp other than the last
   * one's drops every graph first.
   */
  Long get(Key key, long[] stamp) {
    if (!Arrays.equals(stamp, this.stamp)) {
      dropAll();
      this.stamp = stamp.clone();
    }
    Long g = graphs.get(key);
    if (g != null) replays++;
    return g;
  }

  /** Keeps a graph just captured for {@code key} (under the stamp of the last {@link #get}). */
  void put(Key key, long graph) {
    Long old = graphs.put(key, graph);
    if (old != null) gpu.destroyGraph(old);
    captures++;
    replays++;
  }

  void dropAll() {
    for (long g : graphs.values()) gpu.destroyGraph(g);
    graphs.clear();
  }

  @Override
  public void close() {
    dropAll();
    samplerBuffers.close();
  }
}
