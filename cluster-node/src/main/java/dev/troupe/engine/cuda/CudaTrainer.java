package dev.troupe.engine.cuda;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.TrainingPhases.Phase;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.RopeTables;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.protocol.cluster.TrainingConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The CUDA runner's training mode: LoRA training of the served model definition on a GPU, one
 * packed row at a time, everything per token on the device. A row's forward keeps the residual
 * stream at each layer's input (gradient checkpointing), scores its targets through the LM head in
 * pieces of {@value TrainingBuffers#PIECE} rows (log-probability and entropy; only positions whose
 * next token is trained), then ART's RL loss of the row ({@code rl_loss}, RlLoss's arithmetic in
 * FP64) gives dL/dlogprob, and the backward recomputes one layer at a time from its checkpoint and
 * writes the gradient of every LoRA parameter ({@link TrainingLayers}); AdamW with global-norm
 * clipping updates the FP32 master parameters and their BF16 working copy in two launches. One step
 * costs one small download (loss, entropy, gradient norm).
 *
 * <p>The base weights are the serving runner's kind ({@link CudaWeights}: BF16, q/k/v and gate/up
 * stacked) and are never written: {@link CudaModelRunner#trainer} trains on a serving runner's own
 * copy (no second one). Architectures: as the runner (Llama incl. llama3 RoPE scaling, Mistral with
 * its sliding window, Qwen2 q/k/v bias, Qwen3 q/k norm).
 *
 * <p>Thread: confined to its caller's thread; when sharing a runner's GPU, that runner's thread.
 */
public final class CudaTrainer implements AutoCloseable {
  private final Gpu gpu;
  private final ModelConfig cfg;
  private final CudaWeights weights;
  private final boolean owner; // the weights and the GPU are this trainer's to close
  private final Adapter adapter;
  private final LoraParams lora;
  private final TrainingBuffers buf;
  private final TrainingLayers layers;
  private final TrainingPhases phases;
  private final long ropeCos, ropeSin;
  private final int ropePositions;
  private long meta, metaBytes, dmeta, dmetaBytes;
  private boolean closed;

  /**
   * What is trained: LoRA adapters of {@code rank} on the named projections (PEFT short names,
   * {@link Projection#shortName()}), served as {@code W + (alpha / rank)·B·A}.
   */
  public record Adapter(int rank, double alpha, List<String> targets) {
    public Adapter {
      if (rank < 1) throw new IllegalArgumentException("rank must be >= 1");
      if (!(alpha > 0)) throw new IllegalArgumentException("alpha must be > 0");
      targets = List.copyOf(targets);
      Set<String> known =
          Set.copyOf(Arrays.stream(Projection.values()).map(Projection::shortName).toList());
      if (!known.containsAll(targets))
        throw new IllegalArgumentException("unknown LoRA target in " + targets);
    }
  }

  /**
   * AdamW's hyperparameters (torch semantics; gradients clipped to {@code maxGradNorm}, 0 = off).
   */
  public record Adam(
      double beta1, double beta2, double eps, double weightDecay, double maxGradNorm) {}

  /**
   * Per position of a row: the log-probability of the next token and the entropy (0 = unscored).
   */
  public record Scores(double[] logprobs, double[] entropies) {}

  /** A row's scores and the gradient of every LoRA parameter, by name. */
  public record Gradients(double[] logprobs, double[] entropies, Map<String, double[]> gradients) {}

  /**
   * A training row's loss inputs, per target position as in the packed row.
   *
   * @param oldLogprobs the sampler's log-probabilities, NaN = unknown
   * @param historyIds each target's history (contiguous positions), for sequence-level ratios
   */
  public record Targets(
      boolean[] mask,
      double[] oldLogprobs,
      double[] advantages,
      double[] weights,
      int[] historyIds) {}

  /**
   * @param loss the row's RL loss
   * @param entropy Σ H·w over the trained targets / their count (ART's logged entropy)
   * @param gradNorm the global gradient norm before clipping
   */
  public record Step(double loss, double entropy, double gradNorm) {}

  /** AdamW's state: its step count and both moments per parameter. */
  public record OptimizerState(long step, Map<String, double[]> m, Map<String, double[]> v) {}

  private CudaTrainer(
      Gpu gpu,
      ModelConfig cfg,
      CudaWeights weights,
      boolean owner,
      Adapter adapter,
      int maxTokens) {
    this.gpu = gpu;
    this.cfg = cfg;
    this.weights = weights;
    this.owner = owner;
    this.adapter = adapter;
    LoraParams p = null;
    TrainingBuffers b = null;
    try {
      p = new LoraParams(gpu, cfg, adapter.rank(), adapter.alpha(), adapter.targets());
      b = new TrainingBuffers(gpu, cfg, adapter.rank(), Math.max(1, maxTokens));
      ropePositions = cfg.maxPositionEmbeddings();
      float[][] rope = RopeTables.of(cfg).table(ropePositions);
      ropeCos = upload(rope[0]);
      ropeSin = upload(rope[1]);
    } catch (RuntimeException | Error e) {
      if (b != null) b.close();
      if (p != null) p.close();
      throw e;
    }
    lora = p;
    buf = b;
    phases = new TrainingPhases(gpu);
    layers = new TrainingLayers(gpu, cfg, weights, lora, buf, phases, ropeCos, ropeSin);
  }

  /**
   * Loads {@code weights} onto {@code gpu} for training only (the GPU becomes the trainer's; closed
   * with it). The adapters start at zero: set them with {@link #parameters(Map)}.
   *
   * @param maxTokens the row length the work buffers are sized for (longer rows grow them)
   */
  public static CudaTrainer load(
      Gpu gpu, ModelConfig cfg, WeightSource weights, Adapter adapter, int maxTokens) {
    CudaWeights w = null;
    try {
      gpu.loadKernels(KernelSource.generate(cfg, 16), KernelSource.KERNELS);
      w = new CudaWeights(gpu, cfg, weights);
      return new CudaTrainer(gpu, cfg, w, true, adapter, maxTokens);
    } catch (RuntimeException | Error e) {
      if (w != null) w.close();
      gpu.close();
      throw e;
    }
  }

  /** A trainer on a serving runner's GPU and weights (CudaModelRunner#trainer). */
  static CudaTrainer sharing(
      Gpu gpu, ModelConfig cfg, CudaWeights weights, Adapter adapter, int maxTokens) {
    return new CudaTrainer(gpu, cfg, weights, false, adapter, maxTokens);
  }

  /** Device memory a trainer's work buffers take for rows of {@code rows} tokens (estimate). */
  public static long workspaceBytes(ModelConfig cfg, int rank, int rows) {
    return TrainingBuffers.bytes(cfg, rank, rows);
  }

  /**
   * Device memory a trainer on a serving runner takes for rows of {@code maxTokens} tokens: its
   * work buffers ({@link #workspaceBytes}), the adapter's parameters with their gradients and
   * AdamW's moments, its RoPE tables and each row's metadata. What a runner that trains keeps out
   * of its KV cache.
   */
  public static long reservedBytes(ModelConfig cfg, Adapter adapter, int maxTokens) {
    long rope = 2L * cfg.maxPositionEmbeddings() * (cfg.headDim() / 2) * 4;
    return workspaceBytes(cfg, adapter.rank(), maxTokens)
        + LoraParams.bytes(cfg, adapter.rank(), adapter.targets())
        + TrainingRow.metaBytes(maxTokens)
        + rope;
  }

  public ModelConfig config() {
    return cfg;
  }

  /** The device, for logs. */
  public String device() {
    return gpu.describe();
  }

  /**
   * Starts timing the phases of what this trainer runs (or stops): every change of phase then waits
   * for the device, so timed work runs slower (a diagnostic: the GPU benchmark times one step so).
   */
  public void timePhases(boolean on) {
    phases.time(on);
  }

  /**
   * Milliseconds per phase since {@link #timePhases} started timing (products, attention forward
   * and backward, elementwise, loss, optimizer), every phase present; all 0 when not timing.
   */
  public Map<String, Double> phaseMillis() {
    Map<String, Double> out = new LinkedHashMap<>();
    phases
        .finish()
        .forEach((p, ms) -> out.put(p.name().toLowerCase(Locale.ROOT).replace('_', ' '), ms));
    return out;
  }

  /**
   * The trained parameters' names and shapes ({@code …lora_A} [r, in], {@code …lora_B} [out, r]).
   */
  public Map<String, long[]> shapes() {
    return lora.shapes();
  }

  /** Sets every LoRA parameter (the FP32 master copy and its BF16 working copy). */
  public void parameters(Map<String, double[]> values) {
    open();
    lora.upload(values);
  }

  /** The LoRA parameters, downloaded. */
  public Map<String, double[]> parameters() {
    open();
    return lora.parameters();
  }

  /** The current adapters as a served adapter (for {@code registerAdapter}, in memory). */
  public LoraAdapter adapter(int version) {
    open();
    return lora.adapter(version, adapter.alpha());
  }

  public OptimizerState optimizerState() {
    open();
    return new OptimizerState(lora.step, lora.firstMoments(), lora.secondMoments());
  }

  public void optimizerState(OptimizerState s) {
    open();
    lora.moments(s.step(), s.m(), s.v());
  }

  /**
   * Log-probabilities (and entropies) of the targets marked in {@code needed} (null: every position
   * but the last): entry t scores {@code tokens[t + 1]}; unscored entries read 0.
   */
  public Scores score(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    TrainingRow row = row(tokens, positions, segments, needed);
    TrainingLayers.Row r = upload(row, null, null);
    forward(r);
    head(row, false);
    return new Scores(floats(buf.lp, row.length), floats(buf.ent, row.length));
  }

  /** The whole next-token distribution after {@code tokens}, as log-probabilities. */
  public double[] nextTokenLogprobs(int[] tokens) {
    open();
    TrainingRow row = TrainingRow.lastPosition(tokens, cfg.vocabSize(), ropePositions);
    TrainingLayers.Row r = upload(row, null, null);
    forward(r);
    int v = cfg.vocabSize();
    finalNorm(row, 0, 1);
    gpu.gemm(weights.lmHead, buf.fb, buf.logits, v, cfg.hiddenSize(), 1, false, 0f);
    double[] z = floats(buf.logits, v);
    double max = Double.NEGATIVE_INFINITY, sum = 0;
    for (double x : z) max = Math.max(max, x);
    for (double x : z) sum += Math.exp(x - max);
    double lse = max + Math.log(sum);
    for (int i = 0; i < v; i++) z[i] -= lse;
    return z;
  }

  /**
   * A forward and backward with a given {@code dL/dlogprob} per position (0 where not needed): the
   * gradient checks' entry (no loss, no optimizer step).
   */
  public Gradients gradients(
      int[] tokens, int[] positions, int[] segments, boolean[] needed, double[] lossGradient) {
    TrainingRow row = row(tokens, positions, segments, needed);
    if (lossGradient.length != row.length)
      throw new IllegalArgumentException("the loss gradient has the wrong length");
    TrainingLayers.Row r = upload(row, null, null);
    forward(r);
    head(row, false);
    ByteBuffer g = ByteBuffer.allocateDirect(row.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (double x : lossGradient) g.putFloat((float) x);
    gpu.upload(buf.g, g.clear());
    backward(row, r);
    return new Gradients(floats(buf.lp, row.length), floats(buf.ent, row.length), lora.gradients());
  }

  /**
   * One optimizer step on one packed row: forward, ART's loss of {@code config} on the device,
   * backward, AdamW at {@code learningRate}.
   */
  public Step step(
      int[] tokens,
      int[] positions,
      int[] segments,
      Targets targets,
      TrainingConfig config,
      Adam adam,
      double learningRate) {
    TrainingRow row =
        row(tokens, positions, segments, targets.mask())
            .withLoss(
                targets.mask(),
                targets.oldLogprobs(),
                targets.advantages(),
                targets.weights(),
                targets.historyIds());
    TrainingLayers.Row r = upload(row, lossInts(config), lossDoubles(config));
    forward(r);
    head(row, false);
    loss(row);
    backward(row, r);
    phases.at(Phase.OPTIMIZER);
    lora.adamw(
        learningRate,
        adam.beta1(),
        adam.beta2(),
        adam.eps(),
        adam.weightDecay(),
        adam.maxGradNorm());
    gpu.copy(buf.stats + 16, lora.norm, 8);
    ByteBuffer s = ByteBuffer.allocateDirect(24).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(buf.stats, s);
    DoubleBuffer d = s.asDoubleBuffer();
    return new Step(d.get(0), d.get(1), d.get(2));
  }

  /**
   * The loss kernel alone on given log-probabilities and entropies (tests: the device loss against
   * RlLoss); returns {loss, entropy} and fills {@code gradient}.
   */
  double[] lossOnly(
      float[] logprobs,
      float[] entropies,
      Targets targets,
      TrainingConfig config,
      double[] gradient) {
    int n = logprobs.length;
    int[] tokens = new int[n];
    int[] positions = new int[n];
    for (int i = 0; i < n; i++) positions[i] = i;
    TrainingRow row =
        row(tokens, positions, new int[n], targets.mask())
            .withLoss(
                targets.mask(),
                targets.oldLogprobs(),
                targets.advantages(),
                targets.weights(),
                targets.historyIds());
    upload(row, lossInts(config), lossDoubles(config));
    ByteBuffer b = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(logprobs);
    gpu.upload(buf.lp, b);
    b.asFloatBuffer().put(entropies);
    gpu.upload(buf.ent, b);
    loss(row);
    double[] g = floats(buf.g, n);
    System.arraycopy(g, 0, gradient, 0, n);
    ByteBuffer s = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(buf.stats, s);
    return new double[] {s.getDouble(0), s.getDouble(8)};
  }

  /**
   * AdamW alone on given gradients (tests: the device optimizer against AdamW.java); returns the
   * gradient norm before clipping.
   */
  double optimizerStep(Map<String, double[]> gradients, Adam adam, double learningRate) {
    open();
    lora.gradients(gradients);
    lora.adamw(
        learningRate,
        adam.beta1(),
        adam.beta2(),
        adam.eps(),
        adam.weightDecay(),
        adam.maxGradNorm());
    ByteBuffer s = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(lora.norm, s);
    return s.getDouble(0);
  }

  // ---------------------------------------------------------------------------------------------

  /** rl_loss's int parameters: {level (ImportanceSamplingLevel's order), ppo, mask_prob_ratio}. */
  private static int[] lossInts(TrainingConfig c) {
    return new int[] {
      c.importanceSamplingLevel().ordinal(), c.ppo() ? 1 : 0, c.maskProbRatio() ? 1 : 0
    };
  }

  /** rl_loss's double parameters: {1 − ε, 1 + ε_high, the cap, τ} (NaN: off). */
  private static double[] lossDoubles(TrainingConfig c) {
    Double cap = c.maxNegativeAdvantageImportanceSamplingWeight();
    return new double[] {
      1 - c.epsilon(),
      1 + c.epsilonHigh(),
      cap == null ? Double.NaN : cap,
      c.kimiK2Tau() == null ? Double.NaN : c.kimiK2Tau()
    };
  }

  private TrainingRow row(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    open();
    return TrainingRow.of(tokens, positions, segments, needed, cfg.vocabSize(), ropePositions);
  }

  boolean isClosed() {
    return closed;
  }

  private void open() {
    if (closed) throw new IllegalStateException("trainer closed");
  }

  /** Uploads the row's metadata (and loss inputs) and sizes the buffers for it. */
  private TrainingLayers.Row upload(TrainingRow row, int[] lossInts, double[] lossDoubles) {
    buf.ensure(row.length);
    ByteBuffer ints = row.ints(lossInts);
    if (ints.remaining() > metaBytes) {
      gpu.free(meta);
      metaBytes = Math.max(ints.remaining(), 2 * metaBytes);
      meta = gpu.alloc(metaBytes);
    }
    gpu.upload(meta, ints);
    if (row.hasLoss()) {
      ByteBuffer d = row.doubles(lossDoubles);
      if (d.remaining() > dmetaBytes) {
        gpu.free(dmeta);
        dmetaBytes = Math.max(d.remaining(), 2 * dmetaBytes);
        dmeta = gpu.alloc(dmetaBytes);
      }
      gpu.upload(dmeta, d);
    }
    return new TrainingLayers.Row(
        row.length,
        meta + 4 * row.offPositions(),
        meta + 4 * row.offSlots(),
        meta + 4 * row.offSegStart());
  }

  /** Embeddings, then every layer, each layer's input kept as its checkpoint. */
  private void forward(TrainingLayers.Row r) {
    phases.at(Phase.ELEMENTWISE);
    gpu.launch(
        "embed_rows",
        r.length(),
        1,
        KernelSource.ELEMENT_THREADS,
        meta,
        weights.embed,
        buf.checkpoint(0),
        cfg.hiddenSize());
    for (int l = 0; l < cfg.numLayers(); l++)
      layers.forward(l, buf.checkpoint(l), buf.checkpoint(l + 1), r);
  }

  /**
   * The final norm and LM head on the targets, in pieces: log-probabilities and entropies into
   * {@code lp}/{@code ent}; with {@code backward}, d(final norm input) into {@code dx} instead.
   */
  private void head(TrainingRow row, boolean backward) {
    int v = cfg.vocabSize(), h = cfg.hiddenSize(), n = row.targets.length;
    phases.at(Phase.ELEMENTWISE);
    if (!backward) {
      fill(buf.lp, row.length);
      fill(buf.ent, row.length);
    }
    long targets = meta + 4 * row.offTargets(), tokens = meta + 4 * row.offTargetTokens();
    for (int r0 = 0; r0 < n; r0 += TrainingBuffers.PIECE) {
      int k = Math.min(TrainingBuffers.PIECE, n - r0);
      phases.at(Phase.ELEMENTWISE);
      finalNorm(row, r0, k);
      phases.at(Phase.PRODUCTS);
      gpu.gemm(weights.lmHead, buf.fb, buf.logits, v, h, k, false, 0f);
      long pos = targets + 4L * r0, tok = tokens + 4L * r0, lse = buf.lseRows + 4L * r0;
      phases.at(Phase.LOSS);
      if (!backward) {
        gpu.launch(
            "lm_head_fwd",
            k,
            1,
            KernelSource.TRAIN_THREADS,
            buf.logits,
            v,
            pos,
            tok,
            lse,
            buf.lp,
            buf.ent);
        continue;
      }
      gpu.launch(
          "lm_head_bwd",
          k,
          1,
          KernelSource.TRAIN_THREADS,
          buf.logits,
          v,
          pos,
          tok,
          lse,
          buf.g,
          buf.dz);
      // df [k, H] = dz [k, V] · W [V, H]
      phases.at(Phase.PRODUCTS);
      gpu.matmul(
          new Gpu.Product(
              false, false, k, h, v, 1f, buf.dz, v, weights.lmHead, h, 0f, buf.df, h, false));
      phases.at(Phase.ELEMENTWISE);
      layers.normBackward(
          buf.df, buf.checkpoint(cfg.numLayers()), weights.finalNorm, buf.dx, pos, k);
    }
  }

  /** fb rows 0 .. k-1 = bf16(final norm) of the target rows r0 .. r0 + k - 1. */
  private void finalNorm(TrainingRow row, int r0, int k) {
    gpu.launch(
        "add_rmsnorm",
        k,
        1,
        KernelSource.normThreads(cfg.hiddenSize()),
        buf.checkpoint(cfg.numLayers()),
        0L,
        weights.finalNorm,
        buf.fb,
        meta + 4 * (row.offTargets() + r0),
        cfg.hiddenSize(),
        (float) cfg.rmsNormEps());
  }

  /** ART's loss of the row from lp and ent: g (dL/dlogprob) and stats {loss, entropy}. */
  private void loss(TrainingRow row) {
    phases.at(Phase.LOSS);
    gpu.launch(
        "rl_loss",
        1,
        1,
        KernelSource.TRAIN_THREADS,
        buf.lp,
        dmeta + 8 * row.offOld(),
        dmeta + 8 * row.offAdvantages(),
        dmeta + 8 * row.offWeights(),
        meta + 4 * row.offMask(),
        meta + 4 * row.offRunStart(),
        meta + 4 * row.offRunEnd(),
        buf.ent,
        dmeta + 8 * row.offLossDoubles(),
        meta + 4 * row.offLossInts(),
        buf.scratch,
        buf.g,
        buf.stats);
  }

  /** From g (dL/dlogprob per position) to the LoRA gradients, one layer at a time. */
  private void backward(TrainingRow row, TrainingLayers.Row r) {
    phases.at(Phase.ELEMENTWISE);
    fill(buf.dx, (long) row.length * cfg.hiddenSize());
    head(row, true);
    for (int l = cfg.numLayers() - 1; l >= 0; l--) layers.backward(l, buf.checkpoint(l), buf.dx, r);
  }

  private void fill(long ptr, long n) {
    gpu.launch(
        "fill_f32",
        LoraParams.grid(n),
        1,
        KernelSource.TRAIN_THREADS,
        ptr,
        0f,
        LoraParams.elements(n));
  }

  private double[] floats(long src, int n) {
    ByteBuffer b = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(src, b);
    FloatBuffer f = b.asFloatBuffer();
    double[] out = new double[n];
    for (int i = 0; i < n; i++) out[i] = f.get(i);
    return out;
  }

  private long upload(float[] v) {
    long p = gpu.alloc((long) v.length * 4);
    ByteBuffer b = ByteBuffer.allocateDirect(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(v);
    gpu.upload(p, b);
    return p;
  }

  /**
   * Frees the trainer's buffers; a trainer that loaded its own weights also frees them and closes
   * its GPU, one on a serving runner leaves both to the runner.
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      gpu.synchronize();
      for (long p : new long[] {meta, dmeta, ropeCos, ropeSin}) gpu.free(p);
      buf.close();
      lora.close();
      if (owner) weights.close();
    } finally {
      if (owner) gpu.close();
    }
  }
}
