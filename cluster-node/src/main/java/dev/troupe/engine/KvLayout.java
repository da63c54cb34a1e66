package dev.troupe.engine;

/**
 * How a runner lays out one KV-cache block when it exports it ({@link ModelRunner#exportBlocks}):
 * what a decode replica and a prefill replica compare before moving blocks between them. Two
 * runners can exchange blocks only when their layouts are equal.
 *
 * <p>A block's bytes are, layer by layer, its keys then its values, each {@code blockSize ×
 * numKvHeads × headDim} values of {@code dtype} in little-endian order, arranged within the block
 * as the {@code backend}'s cache holds them (the CPU runner keeps keys transposed per head).
 *
 * @param backend the runner kind whose element order the bytes follow ({@code cpu}, {@code cuda})
 * @param blockSize positions per block
 * @param dtype the cache's element type ({@code float32} on the CPU runner, {@code bfloat16} on the
 *     CUDA runner)
 * @param numLayers decoder layers
 * @param numKvHeads key/value heads
 * @param headDim per-head width
 * @param model the model's identity: its architecture and every dimension that shapes its keys and
 *     values (the worker adds its served weights; see the KV transfer channel)
 */
public record KvLayout(
    String backend,
    int blockSize,
    String dtype,
    int numLayers,
    int numKvHeads,
    int headDim,
    String model) {
  public KvLayout {
    if (blockSize < 1 || numLayers < 1 || numKvHeads < 1 || headDim < 1)
      throw new IllegalArgumentException("KV layout dimensions must be >= 1");
    if (backend == null || backend.isBlank())
      throw new IllegalArgumentException("backend is required");
    if (dtype == null || dtype.isBlank()) throw new IllegalArgumentException("dtype is required");
    if (model == null || model.isBlank()) throw new IllegalArgumentException("model is required");
  }

  /** The layout of {@code cfg}'s cache in blocks of {@code blockSize} {@code dtype} values. */
  public static KvLayout of(String backend, ModelConfig cfg, int blockSize, String dtype) {
    String model =
        cfg.architecture()
            + "/vocab="
            + cfg.vocabSize()
            + "/hidden="
            + cfg.hiddenSize()
            + "/heads="
            + cfg.numHeads()
            + "/rope="
            + cfg.ropeTheta();
    return new KvLayout(
        backend, blockSize, dtype, cfg.numLayers(), cfg.numKvHeads(), cfg.headDim(), model);
  }

  /** Bytes per element of {@link #dtype}. */
  public int elementBytes() {
    return switch (dtype) {
      case "float32" -> 4;
      case "bfloat16", "float16" -> 2;
      default -> throw new IllegalStateException("unknown KV dtype " + dtype);
    };
  }

  /** Bytes of one exported block: keys and values of every layer. */
  public long blockBytes() {
    return 2L * numLayers * blockSize * numKvHeads * headDim * elementBytes();
  }

  /** This layout with another model identity (the worker's served weights and adapter). */
  public KvLayout withModel(String identity) {
    return new KvLayout(backend, blockSize, dtype, numLayers, numKvHeads, headDim, identity);
  }

  /** Why {@code other} cannot exchange blocks with this layout, or null when it can. */
  public String mismatch(KvLayout other) {
    if (equals(other)) return null;
    StringBuilder b = new StringBuilder();
    if (!backend.equals(other.backend)) diff(b, "backend", backend, other.backend);
    if (blockSize != other.blockSize) diff(b, "block size", blockSize, other.blockSize);
    if (!dtype.equals(other.dtype)) diff(b, "dtype", dtype, other.dtype);
    if (numLayers != other.numLayers) diff(b, "layers", numLayers, other.numLayers);
    if (numKvHeads != other.numKvHeads) diff(b, "KV heads", numKvHeads, other.numKvHeads);
    if (headDim != other.headDim) diff(b, "head dim", headDim, other.headDim);
    if (!model.equals(other.model)) diff(b, "model", model, other.model);
    return b.toString();
  }

  private static void diff(StringBuilder b, String what, Object mine, Object theirs) {
    if (!b.isEmpty()) b.append("; ");
    b.append(what).append(' ').append(theirs).append(" != ").append(mine);
  }
}
