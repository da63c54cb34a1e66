package dev.troupe.training.nd4j;

import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.model.LayerStep;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.RopeTables;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
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
 * The training forward and a hand-written backward of the shared model definition ({@link
 * TransformerLayout}: Llama / Mistral / Qwen2 / Qwen3 tensors and {@link LayerStep}s; {@link
 * RopeTables}) over whole packed rows (no KV cache), with LoRA adapters on frozen base weights or
 * full fine-tuning of the blocks. Produces per-target log-probabilities and, given dL/dlogprob, the
 * gradients of every trainable parameter. The steps are {@link LoraLinear}, {@link RmsNorm}, {@link
 * Rotary}, {@link CausalAttention} and {@link LmHead}, each with its backward.
 *
 * <p>Shapes: T tokens in the row, H hidden, d head dim, nH / nKV heads, I intermediate, V vocab, r
 * LoRA rank. Attention is block-diagonal causal over the row's segments (packed histories never see
 * each other). Trainable parameters are kept as double arrays (the optimizer's master copy) and
 * uploaded in the working precision before each pass; DOUBLE precision serves the gradient checks.
 *
 * <p>Thread: confined to its caller's thread, like every ND4J user in this project.
 */
public final class LoraTransformer implements AutoCloseable {
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
  private final Nd4jOps ops;
  private final INDArray embed; // [V, H]
  private final LmHead head; // reads the LM head [V, H], the embedding when tied
  private final RmsNorm finalNorm;
  private final List<Layer> layers = new ArrayList<>();
  private final RopeTables rope;
  private final CausalAttention attention;
  private final Map<String, double[]> params = new LinkedHashMap<>();
  private final Map<String, long[]> shapes = new HashMap<>();
  private final Set<String> noDecay = new LinkedHashSet<>();

  /** One decoder layer: the definition's projections and norms. */
  private static final class Layer {
    final Map<Projection, LoraLinear> proj = new EnumMap<>(Projection.class);
    RmsNorm inNorm, postNorm, qNorm, kNorm;

    LoraLinear p(Projection p) {
      return proj.get(p);
    }
  }

  /** Activations one layer's backward needs. */
  private static final class LayerCache {
    final Map<String, INDArray> loraInputs = new HashMap<>();
    INDArray h0, a, q, k, v, attn, b, gate, up, sig, silu, m;
    RmsNorm.Cache n1, n2, qn, kn;
  }

  /**
   * Builds the model from {@code weights} (checked against the layout first); LoRA A matrices get
   * PEFT's Kaiming-uniform init (bound 1/sqrt(in)).
   */
  public LoraTransformer(ModelConfig config, WeightSource weights, LoraSpec spec, DataType dtype) {
    this.config = config;
    this.spec = spec;
    this.dtype = dtype;
    this.ops = new Nd4jOps(dtype);
    TransformerLayout layout = TransformerLayout.of(config);
    layout.check(weights);
    int h = config.hiddenSize();
    embed = load(weights, TransformerLayout.EMBED);
    head = new LmHead(config.tieWordEmbeddings() ? embed : load(weights, layout.lmHead()), ops);
    finalNorm =
        new RmsNorm(
            TransformerLayout.FINAL_NORM, load(weights, TransformerLayout.FINAL_NORM), false);
    Map<String, double[]> initial = spec.initialParameters(config);
    for (TransformerLayout.LayerTensors t : layout.layers()) {
      Layer layer = new Layer();
      for (Projection p : Projection.values()) layer.proj.put(p, linear(weights, t, p, initial));
      layer.inNorm = norm(weights, t.inputNorm());
      layer.postNorm = norm(weights, t.postNorm());
      if (config.qkNorm()) {
        layer.qNorm = norm(weights, t.qNorm());
        layer.kNorm = norm(weights, t.kNorm());
      }
      layers.add(layer);
    }
    rope = RopeTables.of(config);
    attention = new CausalAttention(config, ops);
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
      INDArray mask = attention.mask(new int[n]);
      Rotary ropeQ = Rotary.of(rope, positions, config.numHeads(), dtype);
      Rotary ropeK = Rotary.of(rope, positions, config.numKvHeads(), dtype);
      for (Layer layer : layers) x = layerForward(layer, x, mask, ropeQ, ropeK, null);
      INDArray last = x.get(NDArrayIndex.interval(n - 1, n), NDArrayIndex.all());
      return head.logprobs(finalNorm.forward(last, config.rmsNormEps(), new RmsNorm.Cache()));
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
    INDArray mask = attention.mask(segments);
    Rotary ropeQ = Rotary.of(rope, positions, config.numHeads(), dtype);
    Rotary ropeK = Rotary.of(rope, positions, config.numKvHeads(), dtype);
    List<LayerCache> caches = new ArrayList<>();
    for (Layer layer : layers) {
      LayerCache c = backward ? new LayerCache() : null;
      x = layerForward(layer, x, mask, ropeQ, ropeK, c);
      if (backward) caches.add(c);
    }
    // f [T, H]: final norm
    RmsNorm.Cache fc = new RmsNorm.Cache();
    INDArray f = finalNorm.forward(x, config.rmsNormEps(), fc);

    double[] logprobs = new double[n];
    double[] entropies = new double[n];
    // keep softmax(z) for the backward pass when the row's full logits fit the budget
    List<INDArray> kept =
        backward && (long) targets.length * config.vocabSize() <= KEEP_LOGITS_BUDGET
            ? new ArrayList<>()
            : null;
    head.forward(f, tokens, targets, logprobs, entropies, kept);
    if (!backward) return new Output(logprobs, entropies, null);

    double[] g = lossGradient.apply(logprobs.clone());
    if (g.length != n) throw new IllegalArgumentException("loss gradient has the wrong length");
    INDArray df = head.backward(f, tokens, targets, g, kept);
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
      Layer l, INDArray h0, INDArray mask, Rotary ropeQ, Rotary ropeK, LayerCache c) {
    long n = h0.rows();
    int d = config.headDim();
    double eps = config.rmsNormEps();
    Map<String, INDArray> keep = c == null ? null : c.loraInputs;
    // INPUT_NORM: a [T, H]
    RmsNorm.Cache n1 = new RmsNorm.Cache();
    INDArray a = l.inNorm.forward(h0, eps, n1);
    // QKV_PROJ (+ QKV_BIAS): q [T, nH·d], k, v [T, nKV·d]
    INDArray q = l.p(Projection.Q).forward(a, keep);
    INDArray k = l.p(Projection.K).forward(a, keep);
    INDArray v = l.p(Projection.V).forward(a, keep);
    RmsNorm.Cache qn = null;
    RmsNorm.Cache kn = null;
    if (config.qkNorm()) {
      // QK_NORM: RMSNorm over each head's d values
      qn = new RmsNorm.Cache();
      kn = new RmsNorm.Cache();
      q = l.qNorm.forward(q.reshape(n * (long) config.numHeads(), d), eps, qn).reshape(n, -1);
      k = l.kNorm.forward(k.reshape(n * (long) config.numKvHeads(), d), eps, kn).reshape(n, -1);
    }
    // ROPE
    q = ropeQ.apply(q, false);
    k = ropeK.apply(k, false);
    // ATTENTION: attn [T, nH·d], causal within each segment
    INDArray attn = attention.forward(q, k, v, mask);
    // O_PROJ: h1 = h0 + o_proj(attn)
    INDArray h1 = h0.add(l.p(Projection.O).forward(attn, keep));
    // POST_NORM, GATE_UP_PROJ, SWIGLU, DOWN_PROJ: h2 = h1 + down(silu(gate(b)) ∘ up(b))
    RmsNorm.Cache n2 = new RmsNorm.Cache();
    INDArray b = l.postNorm.forward(h1, eps, n2);
    INDArray gate = l.p(Projection.GATE).forward(b, keep);
    INDArray up = l.p(Projection.UP).forward(b, keep);
    INDArray sig = Transforms.sigmoid(gate, true);
    INDArray silu = gate.mul(sig);
    INDArray m = silu.mul(up);
    INDArray h2 = h1.add(l.p(Projection.DOWN).forward(m, keep));
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
      Rotary ropeQ,
      Rotary ropeK,
      LayerCache c,
      Map<String, INDArray> grads) {
    long n = dh2.rows();
    int d = config.headDim();
    double eps = config.rmsNormEps();
    Map<String, INDArray> in = c.loraInputs;
    // mlp branch
    INDArray dm = l.p(Projection.DOWN).backward(dh2, c.m, in, grads);
    INDArray dUp = dm.mul(c.silu);
    INDArray dSilu = dm.mul(c.up);
    // silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
    INDArray dGate = dSilu.mul(c.sig).muli(c.gate.mul(c.sig.rsub(1.0)).addi(1.0));
    INDArray db =
        l.p(Projection.GATE)
            .backward(dGate, c.b, in, grads)
            .addi(l.p(Projection.UP).backward(dUp, c.b, in, grads));
    INDArray dh1 = dh2.add(l.postNorm.backward(db, eps, c.n2, grads));
    // attention branch
    INDArray dAttn = l.p(Projection.O).backward(dh1, c.attn, in, grads);
    INDArray[] dqkv = attention.backward(dAttn, c.q, c.k, c.v, mask);
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
        l.p(Projection.Q)
            .backward(dq, c.a, in, grads)
            .addi(l.p(Projection.K).backward(dk, c.a, in, grads))
            .addi(l.p(Projection.V).backward(dqkv[2], c.a, in, grads));
    return dh1.addi(l.inNorm.backward(da, eps, c.n1, grads));
  }

  // --- parameters ------------------------------------------------------------------------------

  private INDArray load(WeightSource w, String name) {
    long[] shape = w.info(name).shape().stream().mapToLong(Long::longValue).toArray();
    return Nd4j.create(w.floats(name), shape, DataType.FLOAT).castTo(dtype);
  }

  private LoraLinear linear(
      WeightSource w, TransformerLayout.LayerTensors t, Projection p, Map<String, double[]> init) {
    String module = p.module(t.index());
    int out = p.out(config), in = p.in(config);
    LoraLinear l = new LoraLinear(module, load(w, t.weight(p)), spec.scale(), ops);
    if (t.bias(p) != null) l.bias = load(w, t.bias(p));
    if (spec.fullFineTune()) {
      l.weightParam = t.weight(p);
      register(l.weightParam, l.w.dup('c').data().asDouble(), out, in);
    } else if (init.containsKey(module + ".lora_A")) {
      int r = spec.rank();
      register(module + ".lora_A", init.get(module + ".lora_A"), r, in);
      register(module + ".lora_B", init.get(module + ".lora_B"), out, r);
      l.lora = true;
    }
    return l;
  }

  private RmsNorm norm(WeightSource w, String name) {
    RmsNorm norm = new RmsNorm(name, load(w, name), spec.fullFineTune());
    if (norm.trainable) {
      register(name, norm.g.dup().data().asDouble(), norm.g.length());
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
      for (LoraLinear lin : l.proj.values()) {
        if (lin.lora) {
          lin.a = param(lin.module + ".lora_A");
          lin.b = param(lin.module + ".lora_B");
        }
        if (lin.weightParam != null) lin.w = param(lin.weightParam);
      }
      for (RmsNorm norm : new RmsNorm[] {l.inNorm, l.postNorm, l.qNorm, l.kNorm})
        if (norm != null && norm.trainable) norm.g = param(norm.name);
    }
  }
}
