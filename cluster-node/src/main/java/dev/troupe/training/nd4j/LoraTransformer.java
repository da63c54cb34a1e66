package dev.troupe.training.nd4j;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.training.LoraSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.memory.conf.WorkspaceConfiguration;
import org.nd4j.linalg.api.memory.enums.AllocationPolicy;
import org.nd4j.linalg.api.memory.enums.LearningPolicy;
import org.nd4j.linalg.api.memory.enums.MirroringPolicy;
import org.nd4j.linalg.api.memory.enums.SpillPolicy;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.ops.transforms.Transforms;

/**
 * The training forward and a hand-written backward of a Llama / Mistral / Qwen2 / Qwen3 decoder
 * over whole packed rows (no KV cache), with LoRA adapters on frozen base weights or full
 * fine-tuning of the blocks. Produces per-target log-probabilities and, given dL/dlogprob, the
 * gradients of every trainable parameter.
 *
 * <p>Shapes: T tokens in the row, H hidden, d head dim, nH / nKV heads, I intermediate, V vocab, r
 * LoRA rank. Attention is block-diagonal causal over the row's segments (packed histories never see
 * each other). Trainable parameters are kept as double arrays (the optimizer's master copy) and
 * uploaded in the working precision before each pass; DOUBLE precision serves the gradient checks.
 *
 * <p>Thread: confined to its caller's thread, like every ND4J user in this project.
 */
public final class LoraTransformer implements AutoCloseable {
  private static final int HEAD_CHUNK = 128;
  private static final double MASKED = -1e9;
  private static final WorkspaceConfiguration WORKSPACE =
      WorkspaceConfiguration.builder()
          .initialSize(0)
          .policyAllocation(AllocationPolicy.OVERALLOCATE)
          .policyLearning(LearningPolicy.FIRST_LOOP)
          .policyMirroring(MirroringPolicy.FULL)
          .policySpill(SpillPolicy.REALLOCATE)
          .build();

  /** Logit values per row kept between forward and backward (64M floats = 256 MiB). */
  private static final long KEEP_LOGITS_BUDGET = 64L << 20;

  private final ModelConfig config;
  private final LoraSpec spec;
  private final DataType dtype;
  private final INDArray embed; // [V, H]
  private final INDArray lmHead; // [V, H], the embedding when tied
  private final Norm finalNorm;
  private final List<Layer> layers = new ArrayList<>();
  private final double[] invFreq; // [d / 2]
  private final Map<String, double[]> params = new LinkedHashMap<>();
  private final Map<String, long[]> shapes = new HashMap<>();
  private final Set<String> noDecay = new LinkedHashSet<>();

  /** Builds the model; LoRA A matrices get PEFT's Kaiming-uniform init (bound 1/sqrt(in)). */
  public LoraTransformer(ModelConfig config, WeightSource weights, LoraSpec spec, DataType dtype) {
    this.config = config;
    this.spec = spec;
    this.dtype = dtype;
    int h = config.hiddenSize();
    int d = config.headDim();
    int v = config.vocabSize();
    embed = load(weights, "model.embed_tokens.weight", v, h);
    lmHead =
        config.tieWordEmbeddings() || !weights.contains("lm_head.weight")
            ? embed
            : load(weights, "lm_head.weight", v, h);
    finalNorm = new Norm("model.norm.weight", load(weights, "model.norm.weight", h), false);
    Random random = new Random(spec.seed());
    for (int i = 0; i < config.numLayers(); i++) {
      String p = "model.layers." + i + ".";
      Layer layer = new Layer();
      int qDim = config.numHeads() * d;
      int kvDim = config.numKvHeads() * d;
      int inter = config.intermediateSize();
      layer.q = linear(weights, p + "self_attn.q_proj", qDim, h, config.attentionBias(), random);
      layer.k = linear(weights, p + "self_attn.k_proj", kvDim, h, config.attentionBias(), random);
      layer.v = linear(weights, p + "self_attn.v_proj", kvDim, h, config.attentionBias(), random);
      layer.o = linear(weights, p + "self_attn.o_proj", h, qDim, false, random);
      layer.gate = linear(weights, p + "mlp.gate_proj", inter, h, false, random);
      layer.up = linear(weights, p + "mlp.up_proj", inter, h, false, random);
      layer.down = linear(weights, p + "mlp.down_proj", h, inter, false, random);
      layer.inNorm = norm(weights, p + "input_layernorm.weight", h);
      layer.postNorm = norm(weights, p + "post_attention_layernorm.weight", h);
      if (config.qkNorm()) {
        layer.qNorm = norm(weights, p + "self_attn.q_norm.weight", d);
        layer.kNorm = norm(weights, p + "self_attn.k_norm.weight", d);
      }
      layers.add(layer);
    }
    invFreq = RotaryFrequencies.inverseFrequencies(config);
  }

  public ModelConfig config() {
    return config;
  }

  /**
   * Trainable parameters by name (LoRA: {@code <module>.lora_A}/{@code lora_B}); live master
   * copies.
   */
  public Map<String, double[]> parameters() {
    return params;
  }

  /** Shape of a trainable parameter. */
  public long[] shape(String name) {
    return shapes.get(name).clone();
  }

  /** Parameters exempt from weight decay (norm gains), as in Hugging Face's Trainer. */
  public Set<String> noDecayParameters() {
    return Set.copyOf(noDecay);
  }

  /** The current adapters as a served {@link LoraAdapter}; not available under full fine-tuning. */
  public LoraAdapter toAdapter(int version) {
    if (spec.fullFineTune()) throw new IllegalStateException("full fine-tuning has no adapter");
    Map<String, float[]> a = new LinkedHashMap<>();
    Map<String, float[]> b = new LinkedHashMap<>();
    for (Map.Entry<String, double[]> e : params.entrySet()) {
      String name = e.getKey();
      float[] f = new float[e.getValue().length];
      for (int i = 0; i < f.length; i++) f[i] = (float) e.getValue()[i];
      if (name.endsWith(".lora_A")) a.put(name.substring(0, name.length() - 7), f);
      else b.put(name.substring(0, name.length() - 7), f);
    }
    return new LoraAdapter(version, spec.rank(), spec.alpha(), a, b);
  }

  /**
   * Log-probabilities and entropies of every target of one row: entry t scores {@code tokens[t +
   * 1]} after position t; the last entry is 0.
   */
  public Output forward(int[] tokens, int[] positions, int[] segments) {
    return pass(tokens, positions, segments, null, null);
  }

  /**
   * As {@link #forward(int[], int[], int[])}, scoring only the targets marked in {@code needed}
   * (the others read 0): the LM head, the costliest part for a large vocabulary, runs only there.
   */
  public Output forward(int[] tokens, int[] positions, int[] segments, boolean[] needed) {
    return pass(tokens, positions, segments, needed, null);
  }

  /**
   * Log-probabilities over the whole vocabulary of the token after {@code tokens} (for sampling).
   */
  public double[] nextTokenLogprobs(int[] tokens) {
    int n = tokens.length;
    int[] positions = new int[n];
    for (int i = 0; i < n; i++) positions[i] = i;
    upload();
    try (MemoryWorkspace ws =
        Nd4j.getWorkspaceManager().getAndActivateWorkspace(WORKSPACE, "troupe-training")) {
      INDArray x = embed.getRows(tokens);
      INDArray mask = attentionMask(new int[n]);
      Rope ropeQ = rope(positions, config.numHeads());
      Rope ropeK = rope(positions, config.numKvHeads());
      for (Layer layer : layers) x = layerForward(layer, x, mask, ropeQ, ropeK, null);
      INDArray last = x.get(NDArrayIndex.interval(n - 1, n), NDArrayIndex.all());
      INDArray f = finalNorm.forward(last, config.rmsNormEps(), new NormCache());
      INDArray z = mm(f, lmHead, false, true); // [1, V]
      return z.subColumnVector(logSumExp(z)).castTo(DataType.DOUBLE).data().asDouble();
    }
  }

  /**
   * Forward, then {@code lossGradient(logprobs)} = dL/dlogprob per target, then backward.
   *
   * @return logprobs, entropies and the gradient of every trainable parameter
   */
  public Output forwardBackward(
      int[] tokens, int[] positions, int[] segments, Function<double[], double[]> lossGradient) {
    return pass(tokens, positions, segments, null, lossGradient);
  }

  /**
   * As above, scoring only the targets marked in {@code needed}; the loss gradient must be 0
   * elsewhere (their logprobs read 0).
   */
  public Output forwardBackward(
      int[] tokens,
      int[] positions,
      int[] segments,
      boolean[] needed,
      Function<double[], double[]> lossGradient) {
    return pass(tokens, positions, segments, needed, lossGradient);
  }

  /**
   * @param logprobs per target [T]
   * @param entropies full-vocabulary entropy of each position's distribution [T]
   * @param gradients per trainable parameter, or null for a forward-only pass
   */
  public record Output(double[] logprobs, double[] entropies, Map<String, double[]> gradients) {}

  @Override
  public void close() {
    // arrays are released with their owners; nothing pinned outside the JVM heap bookkeeping
  }

  // ---------------------------------------------------------------------------------------------

  private Output pass(
      int[] tokens,
      int[] positions,
      int[] segments,
      boolean[] needed,
      Function<double[], double[]> lossGradient) {
    int n = tokens.length;
    if (positions.length != n || segments.length != n)
      throw new IllegalArgumentException("tokens, positions and segments differ in length");
    boolean backward = lossGradient != null;
    upload();
    // every intermediate lives in one workspace that is released when the pass ends (no reliance
    // on the garbage collector to free off-heap buffers); only Java arrays leave this method
    try (MemoryWorkspace ws =
        Nd4j.getWorkspaceManager().getAndActivateWorkspace(WORKSPACE, "troupe-training")) {
      return passInWorkspace(
          tokens, positions, segments, targets(tokens.length, needed), lossGradient, backward);
    }
  }

  /** Positions whose next token is scored: all but the last, or those marked. */
  private static int[] targets(int n, boolean[] needed) {
    if (needed != null && needed.length != n)
      throw new IllegalArgumentException("needed has the wrong length");
    int[] buf = new int[Math.max(0, n - 1)];
    int k = 0;
    for (int i = 0; i + 1 < n; i++) if (needed == null || needed[i]) buf[k++] = i;
    return java.util.Arrays.copyOf(buf, k);
  }

  private Output passInWorkspace(
      int[] tokens,
      int[] positions,
      int[] segments,
      int[] targets,
      Function<double[], double[]> lossGradient,
      boolean backward) {
    int n = tokens.length;
    Map<String, INDArray> grads = backward ? new LinkedHashMap<>() : null;

    // x [T, H]: token embeddings
    INDArray x = embed.getRows(tokens);
    INDArray mask = attentionMask(segments);
    Rope ropeQ = rope(positions, config.numHeads());
    Rope ropeK = rope(positions, config.numKvHeads());
    List<LayerCache> caches = new ArrayList<>();
    for (Layer layer : layers) {
      LayerCache c = backward ? new LayerCache() : null;
      x = layerForward(layer, x, mask, ropeQ, ropeK, c);
      if (backward) caches.add(c);
    }
    // f [T, H]: final norm
    NormCache fc = new NormCache();
    INDArray f = finalNorm.forward(x, config.rmsNormEps(), fc);

    double[] logprobs = new double[n];
    double[] entropies = new double[n];
    // keep softmax(z) for the backward pass when the row's full logits fit the budget
    List<INDArray> kept =
        backward && (long) targets.length * config.vocabSize() <= KEEP_LOGITS_BUDGET
            ? new ArrayList<>()
            : null;
    headForward(f, tokens, targets, logprobs, entropies, kept);
    if (!backward) return new Output(logprobs, entropies, null);

    double[] g = lossGradient.apply(logprobs.clone());
    if (g.length != n) throw new IllegalArgumentException("loss gradient has the wrong length");
    INDArray df = headBackward(f, tokens, targets, g, kept);
    INDArray dx = finalNorm.backward(df, config.rmsNormEps(), fc, grads);
    for (int i = layers.size() - 1; i >= 0; i--)
      dx = layerBackward(layers.get(i), dx, mask, ropeQ, ropeK, caches.get(i), grads);

    Map<String, double[]> out = new LinkedHashMap<>();
    for (String name : params.keySet()) {
      INDArray gr = grads.get(name);
      out.put(
          name, gr == null ? new double[params.get(name).length] : gr.dup('c').data().asDouble());
    }
    return new Output(logprobs, entropies, out);
  }

  // --- decoder layer ---------------------------------------------------------------------------

  private INDArray layerForward(
      Layer l, INDArray h0, INDArray mask, Rope ropeQ, Rope ropeK, LayerCache c) {
    long n = h0.rows();
    int d = config.headDim();
    double eps = config.rmsNormEps();
    // a [T, H]: pre-attention norm
    NormCache n1 = new NormCache();
    INDArray a = l.inNorm.forward(h0, eps, n1);
    // q [T, nH·d], k, v [T, nKV·d]: projections
    INDArray q = l.q.forward(a, c);
    INDArray k = l.k.forward(a, c);
    INDArray v = l.v.forward(a, c);
    NormCache qn = null;
    NormCache kn = null;
    if (config.qkNorm()) {
      // Qwen3: RMSNorm over each head's d values
      qn = new NormCache();
      kn = new NormCache();
      q = l.qNorm.forward(q.reshape(n * (long) config.numHeads(), d), eps, qn).reshape(n, -1);
      k = l.kNorm.forward(k.reshape(n * (long) config.numKvHeads(), d), eps, kn).reshape(n, -1);
    }
    // rotary position embedding
    q = ropeQ.apply(q, false);
    k = ropeK.apply(k, false);
    // attn [T, nH·d]: causal softmax attention within each segment, grouped-query heads
    INDArray attn = attentionForward(q, k, v, mask);
    // h1 = h0 + o_proj(attn)
    INDArray h1 = h0.add(l.o.forward(attn, c));
    // mlp: h2 = h1 + down(silu(gate(b)) ∘ up(b)), b = post-attention norm of h1
    NormCache n2 = new NormCache();
    INDArray b = l.postNorm.forward(h1, eps, n2);
    INDArray gate = l.gate.forward(b, c);
    INDArray up = l.up.forward(b, c);
    INDArray sig = Transforms.sigmoid(gate, true);
    INDArray silu = gate.mul(sig);
    INDArray m = silu.mul(up);
    INDArray h2 = h1.add(l.down.forward(m, c));
    if (c != null) {
      c.h0 = h0;
      c.n1 = n1;
      c.a = a;
      c.qn = qn;
      c.kn = kn;
      c.q = q;
      c.k = k;
      c.v = v;
      c.attn = attn;
      c.n2 = n2;
      c.b = b;
      c.gate = gate;
      c.up = up;
      c.sig = sig;
      c.silu = silu;
      c.m = m;
    }
    return h2;
  }

  private INDArray layerBackward(
      Layer l,
      INDArray dh2,
      INDArray mask,
      Rope ropeQ,
      Rope ropeK,
      LayerCache c,
      Map<String, INDArray> grads) {
    long n = dh2.rows();
    int d = config.headDim();
    double eps = config.rmsNormEps();
    // mlp branch
    INDArray dm = l.down.backward(dh2, c.m, c, grads);
    INDArray dUp = dm.mul(c.silu);
    INDArray dSilu = dm.mul(c.up);
    // silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
    INDArray dGate = dSilu.mul(c.sig).muli(c.gate.mul(c.sig.rsub(1.0)).addi(1.0));
    INDArray db = l.gate.backward(dGate, c.b, c, grads).addi(l.up.backward(dUp, c.b, c, grads));
    INDArray dh1 = dh2.add(l.postNorm.backward(db, eps, c.n2, grads));
    // attention branch
    INDArray dAttn = l.o.backward(dh1, c.attn, c, grads);
    INDArray[] dqkv = attentionBackward(dAttn, c.q, c.k, c.v, mask);
    INDArray dq = ropeQ.apply(dqkv[0], true);
    INDArray dk = ropeK.apply(dqkv[1], true);
    if (config.qkNorm()) {
      dq =
          l.qNorm
              .backward(dq.reshape(n * (long) config.numHeads(), d), eps, c.qn, grads)
              .reshape(n, -1);
      dk =
          l.kNorm
              .backward(dk.reshape(n * (long) config.numKvHeads(), d), eps, c.kn, grads)
              .reshape(n, -1);
    }
    INDArray da =
        l.q
            .backward(dq, c.a, c, grads)
            .addi(l.k.backward(dk, c.a, c, grads))
            .addi(l.v.backward(dqkv[2], c.a, c, grads));
    return dh1.addi(l.inNorm.backward(da, eps, c.n1, grads));
  }

  // --- attention -------------------------------------------------------------------------------

  private INDArray attentionForward(INDArray q, INDArray k, INDArray v, INDArray mask) {
    int d = config.headDim();
    int group = config.numHeads() / config.numKvHeads();
    double scale = 1.0 / Math.sqrt(d);
    INDArray out = Nd4j.create(dtype, q.rows(), q.columns());
    for (int h = 0; h < config.numHeads(); h++) {
      int g = h / group;
      INDArray qh = cols(q, h, d);
      INDArray kg = cols(k, g, d);
      INDArray vg = cols(v, g, d);
      // p [T, T] = softmax(q kᵀ / sqrt(d) + mask)
      INDArray p = softmaxRows(mm(qh, kg, false, true).muli(scale).addi(mask));
      out.get(NDArrayIndex.all(), NDArrayIndex.interval(h * d, (h + 1) * d))
          .assign(mm(p, vg, false, false));
    }
    return out;
  }

  /** Gradients of q, k, v given d(attn); recomputes each head's probabilities. */
  private INDArray[] attentionBackward(
      INDArray dOut, INDArray q, INDArray k, INDArray v, INDArray mask) {
    int d = config.headDim();
    int group = config.numHeads() / config.numKvHeads();
    double scale = 1.0 / Math.sqrt(d);
    INDArray dq = Nd4j.create(dtype, q.rows(), q.columns());
    INDArray dk = Nd4j.create(dtype, k.rows(), k.columns());
    INDArray dv = Nd4j.create(dtype, v.rows(), v.columns());
    for (int h = 0; h < config.numHeads(); h++) {
      int g = h / group;
      INDArray qh = cols(q, h, d);
      INDArray kg = cols(k, g, d);
      INDArray vg = cols(v, g, d);
      INDArray dOh = cols(dOut, h, d);
      INDArray p = softmaxRows(mm(qh, kg, false, true).muli(scale).addi(mask));
      // dV += Pᵀ dO; dP = dO vᵀ; dS = P ∘ (dP − rowsum(dP ∘ P)); dQ = dS k / √d; dK += dSᵀ q / √d
      cols(dv, g, d, true).addi(mm(p, dOh, true, false));
      INDArray dP = mm(dOh, vg, false, true);
      INDArray rowDot = dP.mul(p).sum(true, 1);
      INDArray dS = p.muli(dP.subiColumnVector(rowDot));
      cols(dq, h, d, true).assign(mm(dS, kg, false, false).muli(scale));
      cols(dk, g, d, true).addi(mm(dS, qh, true, false).muli(scale));
    }
    return new INDArray[] {dq, dk, dv};
  }

  /** a·b with optional transposes into a new row-major result (BLAS flags, no copies of a or b). */
  private INDArray mm(INDArray a, INDArray b, boolean ta, boolean tb) {
    long rows = ta ? a.columns() : a.rows();
    long cols = tb ? b.rows() : b.columns();
    INDArray c = Nd4j.createUninitialized(dtype, new long[] {rows, cols}, 'c');
    return Nd4j.gemm(a, b, c, ta, tb, 1.0, 0.0);
  }

  private static INDArray cols(INDArray x, int head, int d) {
    return x.get(NDArrayIndex.all(), NDArrayIndex.interval(head * d, (head + 1) * d)).dup('c');
  }

  private static INDArray cols(INDArray x, int head, int d, boolean view) {
    return x.get(NDArrayIndex.all(), NDArrayIndex.interval(head * d, (head + 1) * d));
  }

  private static INDArray softmaxRows(INDArray s) {
    INDArray max = s.max(true, 1);
    INDArray e = Transforms.exp(s.subiColumnVector(max), false);
    return e.diviColumnVector(e.sum(true, 1));
  }

  private INDArray attentionMask(int[] segments) {
    int n = segments.length;
    double[] m = new double[n * n];
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        m[i * n + j] = j <= i && segments[j] == segments[i] ? 0.0 : MASKED;
    return Nd4j.create(m, new long[] {n, n}, dtype);
  }

  // --- LM head ---------------------------------------------------------------------------------

  private void headForward(
      INDArray f,
      int[] tokens,
      int[] targets,
      double[] logprobs,
      double[] entropies,
      List<INDArray> keep) {
    for (int c0 = 0; c0 < targets.length; c0 += HEAD_CHUNK) {
      int c1 = Math.min(targets.length, c0 + HEAD_CHUNK);
      int[] rows = java.util.Arrays.copyOfRange(targets, c0, c1);
      // z [C, V]: logits of this chunk of target positions
      INDArray z = mm(f.getRows(rows), lmHead, false, true);
      INDArray lse = logSumExp(z);
      INDArray p = Transforms.exp(z.subColumnVector(lse), false);
      INDArray pz = p.mul(z).sum(1);
      for (int k = 0; k < rows.length; k++) {
        int i = rows[k];
        double l = lse.getDouble(k, 0);
        entropies[i] = l - pz.getDouble(k);
        logprobs[i] = z.getDouble(k, tokens[i + 1]) - l;
      }
      // the backward pass needs softmax(z) again; keep it when it is small enough
      if (keep != null) keep.add(p);
    }
  }

  /**
   * d(loss)/d(f) for dL/dlogprob g: dz = g·(onehot(target) − softmax(z)), df = dz · W_lm. Uses the
   * softmax chunks kept by the forward pass, else recomputes them.
   */
  private INDArray headBackward(
      INDArray f, int[] tokens, int[] targets, double[] g, List<INDArray> kept) {
    INDArray df = Nd4j.create(dtype, f.rows(), f.columns());
    for (int c0 = 0, chunk = 0; c0 < targets.length; c0 += HEAD_CHUNK, chunk++) {
      int c1 = Math.min(targets.length, c0 + HEAD_CHUNK);
      int[] rows = java.util.Arrays.copyOfRange(targets, c0, c1);
      boolean any = false;
      for (int i : rows) any |= g[i] != 0;
      if (!any) continue;
      INDArray dz;
      if (kept != null) {
        dz = kept.get(chunk);
      } else {
        INDArray z = mm(f.getRows(rows), lmHead, false, true);
        dz = Transforms.exp(z.subiColumnVector(logSumExp(z)), false);
      }
      double[] gc = new double[rows.length];
      for (int k = 0; k < rows.length; k++) gc[k] = g[rows[k]];
      INDArray gCol = Nd4j.create(gc, new long[] {rows.length, 1}, dtype);
      dz.muliColumnVector(gCol.neg());
      for (int k = 0; k < rows.length; k++)
        if (gc[k] != 0) {
          int y = tokens[rows[k] + 1];
          dz.putScalar(k, y, dz.getDouble(k, y) + gc[k]);
        }
      INDArray dRows = mm(dz, lmHead, false, false); // [C, H]
      for (int k = 0; k < rows.length; k++) df.getRow(rows[k]).addi(dRows.getRow(k));
    }
    return df;
  }

  private static INDArray logSumExp(INDArray z) {
    INDArray max = z.max(true, 1);
    INDArray s = Transforms.exp(z.subColumnVector(max), false).sum(true, 1);
    return Transforms.log(s, false).addi(max);
  }

  // --- rotary embedding ------------------------------------------------------------------------

  private Rope rope(int[] positions, int heads) {
    int n = positions.length;
    int half = invFreq.length;
    double[] cos = new double[n * heads * half];
    double[] sin = new double[n * heads * half];
    for (int t = 0; t < n; t++)
      for (int i = 0; i < half; i++) {
        double angle = positions[t] * invFreq[i];
        double cs = Math.cos(angle);
        double sn = Math.sin(angle);
        for (int h = 0; h < heads; h++) {
          int idx = (t * heads + h) * half + i;
          cos[idx] = cs;
          sin[idx] = sn;
        }
      }
    long[] shape = {(long) n * heads, half};
    return new Rope(Nd4j.create(cos, shape, dtype), Nd4j.create(sin, shape, dtype), heads);
  }

  /** Hugging Face's rotate-half RoPE on [T, heads·d]; the inverse rotation is its transpose. */
  private final class Rope {
    final INDArray cos; // [T·heads, d/2]
    final INDArray sin;
    final int heads;

    Rope(INDArray cos, INDArray sin, int heads) {
      this.cos = cos;
      this.sin = sin;
      this.heads = heads;
    }

    INDArray apply(INDArray x, boolean inverse) {
      int d = config.headDim();
      int half = d / 2;
      long n = x.rows();
      INDArray r = x.dup('c').reshape(n * heads, d);
      INDArray x1 = r.get(NDArrayIndex.all(), NDArrayIndex.interval(0, half));
      INDArray x2 = r.get(NDArrayIndex.all(), NDArrayIndex.interval(half, d));
      INDArray s = inverse ? sin.neg() : sin;
      // out1 = x1 cos − x2 sin; out2 = x2 cos + x1 sin
      INDArray o1 = x1.mul(cos).subi(x2.mul(s));
      INDArray o2 = x2.mul(cos).addi(x1.mul(s));
      return Nd4j.hstack(o1, o2).reshape(n, (long) heads * d);
    }
  }

  // --- parameters ------------------------------------------------------------------------------

  private INDArray load(WeightSource w, String name, long... shape) {
    float[] data = w.floats(name);
    long size = 1;
    for (long s : shape) size *= s;
    if (data.length != size)
      throw new IllegalArgumentException(
          name + " has " + data.length + " values, expected " + size);
    return Nd4j.create(data, shape, DataType.FLOAT).castTo(dtype);
  }

  private Linear linear(
      WeightSource w, String module, int out, int in, boolean bias, Random random) {
    Linear l = new Linear(module, load(w, module + ".weight", out, in));
    if (bias) l.bias = load(w, module + ".bias", out);
    String shortName = module.substring(module.lastIndexOf('.') + 1);
    if (spec.fullFineTune()) {
      l.weightParam = module + ".weight";
      register(l.weightParam, l.w.dup('c').data().asDouble(), out, in);
    } else if (spec.targets().contains(shortName)) {
      int r = spec.rank();
      double bound = 1.0 / Math.sqrt(in);
      double[] a = new double[r * in];
      for (int i = 0; i < a.length; i++) a[i] = (random.nextDouble() * 2 - 1) * bound;
      register(module + ".lora_A", a, r, in);
      register(module + ".lora_B", new double[out * r], out, r);
      l.lora = true;
    }
    return l;
  }

  private Norm norm(WeightSource w, String name, int size) {
    Norm norm = new Norm(name, load(w, name, size), spec.fullFineTune());
    if (norm.trainable) {
      register(name, norm.g.dup().data().asDouble(), size);
      noDecay.add(name);
    }
    return norm;
  }

  private void register(String name, double[] values, long... shape) {
    params.put(name, values);
    shapes.put(name, shape);
  }

  private INDArray param(String name) {
    return Nd4j.create(params.get(name), shapes.get(name), dtype);
  }

  /** Copies the master parameters into the working arrays. */
  private void upload() {
    for (Layer l : layers) {
      for (Linear lin : List.of(l.q, l.k, l.v, l.o, l.gate, l.up, l.down)) {
        if (lin.lora) {
          lin.a = param(lin.module + ".lora_A");
          lin.b = param(lin.module + ".lora_B");
        }
        if (lin.weightParam != null) lin.w = param(lin.weightParam);
      }
      for (Norm norm : new Norm[] {l.inNorm, l.postNorm, l.qNorm, l.kNorm})
        if (norm != null && norm.trainable) norm.g = param(norm.name);
    }
  }

  private static void accumulate(Map<String, INDArray> grads, String name, INDArray g) {
    INDArray prev = grads.get(name);
    if (prev == null) grads.put(name, g);
    else prev.addi(g);
  }

  /** y = x Wᵀ + b + s·(x Aᵀ) Bᵀ. */
  private final class Linear {
    final String module;
    INDArray w; // [out, in]
    INDArray bias; // [out] or null
    boolean lora;
    INDArray a; // [r, in]
    INDArray b; // [out, r]
    String weightParam; // set under full fine-tuning

    Linear(String module, INDArray w) {
      this.module = module;
      this.w = w;
    }

    INDArray forward(INDArray x, LayerCache c) {
      INDArray y = mm(x, w, false, true);
      if (bias != null) y.addiRowVector(bias);
      if (lora) {
        INDArray xa = mm(x, a, false, true); // [T, r]
        y.addi(mm(xa, b, false, true).muli(spec.scale()));
        if (c != null) c.loraInputs.put(module, xa);
      }
      return y;
    }

    INDArray backward(INDArray dy, INDArray x, LayerCache c, Map<String, INDArray> grads) {
      INDArray dx = mm(dy, w, false, false);
      if (lora) {
        double s = spec.scale();
        INDArray xa = c.loraInputs.get(module);
        INDArray dyB = mm(dy, b, false, false); // [T, r]
        accumulate(grads, module + ".lora_A", mm(dyB, x, true, false).muli(s));
        accumulate(grads, module + ".lora_B", mm(dy, xa, true, false).muli(s));
        dx.addi(mm(dyB, a, false, false).muli(s));
      }
      if (weightParam != null) accumulate(grads, weightParam, mm(dy, x, true, false));
      return dx;
    }
  }

  /** RMSNorm: y = x / sqrt(mean(x²) + eps) ∘ g. */
  private final class Norm {
    final String name;
    INDArray g; // [D]
    final boolean trainable;

    Norm(String name, INDArray g, boolean trainable) {
      this.name = name;
      this.g = g;
      this.trainable = trainable;
    }

    INDArray forward(INDArray x, double eps, NormCache c) {
      // r [N, 1] = 1 / sqrt(mean(x²) + eps); xhat = x·r
      INDArray r = Transforms.pow(x.mul(x).mean(true, 1).addi(eps), -0.5, false);
      INDArray xhat = x.mulColumnVector(r);
      c.r = r;
      c.xhat = xhat;
      return xhat.mulRowVector(g);
    }

    INDArray backward(INDArray dy, double eps, NormCache c, Map<String, INDArray> grads) {
      // dx = r·(dxhat − xhat·mean(dxhat ∘ xhat)), dxhat = dy ∘ g; dg = Σ_rows dy ∘ xhat
      INDArray dxhat = dy.mulRowVector(g);
      INDArray dot = dxhat.mul(c.xhat).mean(true, 1);
      INDArray dx = dxhat.subi(c.xhat.mulColumnVector(dot)).muliColumnVector(c.r);
      if (trainable && grads != null) accumulate(grads, name, dy.mul(c.xhat).sum(0));
      return dx;
    }
  }

  private static final class NormCache {
    INDArray r;
    INDArray xhat;
  }

  private static final class Layer {
    Linear q, k, v, o, gate, up, down;
    Norm inNorm, postNorm, qNorm, kNorm;
  }

  /** Activations one layer's backward needs. */
  private static final class LayerCache {
    final Map<String, INDArray> loraInputs = new HashMap<>();
    INDArray h0, a, q, k, v, attn, b, gate, up, sig, silu, m;
    NormCache n1, n2, qn, kn;
  }
}
