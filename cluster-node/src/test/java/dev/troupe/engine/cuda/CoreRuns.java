package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.core.EngineCore;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.core.StepOutput;
import dev.troupe.engine.model.Projection;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.sampling.SamplingSetup;
import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.StopChecker.Finish;
import dev.troupe.engine.sampling.TokenConstraint;
import dev.troupe.engine.spi.LogitsProcessor;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

/**
 * Engine cores over a runner for the device-sampling tests: requests given as token ids, run to
 * completion, everything the core reports recorded per request and choice (tokens, logprobs,
 * finishes, prompt logprobs, failures), plus crafted tiny models whose logits are well separated.
 */
final class CoreRuns {
  private CoreRuns() {}

  static final EosTokens EOS = new EosTokens(2, Set.of());

  /** Blocks of 4 positions, 24 sequences, 48-token steps (prompts are chunked), no aging. */
  static EngineSettings settings(int numBlocks) {
    return new EngineSettings(
        4, numBlocks, 0, 24, 48, 64, true, 0, false, List.of(BanOddTokens.class.getName()));
  }

  static SamplerFactory samplers(int vocab) {
    return new SamplerFactory(
        vocab,
        new IdTokenizer(vocab),
        EOS,
        LogitsProcessorRegistry.allowing(List.of(BanOddTokens.class.getName())));
  }

  /** What one request produced. */
  static final class Result {
    final Map<Integer, List<Integer>> tokens = new TreeMap<>();
    final Map<Integer, List<StepLogprobs>> logprobs = new TreeMap<>();
    final Map<Integer, Finish> finishes = new TreeMap<>();
    List<StepLogprobs> promptLogprobs;
    Rejection failure;
  }

  /**
   * A request to run: its prompt, its parameters, optionally a constraint per choice, and the
   * output another replica already delivered when it resumes a migrated request (else null).
   */
  record Req(
      String id,
      int[] prompt,
      SamplingParams params,
      List<TokenConstraint> constraints,
      EngineRequest.Resumed resumed) {
    Req(String id, int[] prompt, SamplingParams params) {
      this(id, prompt, params, null, null);
    }

    Req(String id, int[] prompt, SamplingParams params, List<TokenConstraint> constraints) {
      this(id, prompt, params, constraints, null);
    }

    /**
     * This request resumed after each choice delivered its first {@code cut} tokens of {@code
     * whole} (all of them, and its finish, when it had fewer).
     */
    Req resumedAfter(Result whole, int cut) {
      int n = params.n();
      int[][] tokens = new int[n][];
      boolean[] finished = new boolean[n];
      for (int i = 0; i < n; i++) {
        List<Integer> all = whole.tokens.get(i);
        int k = Math.min(cut, all.size());
        tokens[i] = all.subList(0, k).stream().mapToInt(Integer::intValue).toArray();
        finished[i] = k == all.size() && whole.finishes.containsKey(i);
      }
      return new Req(id, prompt, params, constraints, new EngineRequest.Resumed(tokens, finished));
    }
  }

  /** Adds every request, steps until idle, and returns what each produced (in request order). */
  static Map<String, Result> run(EngineCore core, SamplerFactory f, List<Req> reqs) {
    Map<String, Result> out = new LinkedHashMap<>();
    for (Req q : reqs) {
      SamplingParams p = q.params().withDefaults(SamplingDefaults.NONE);
      SamplingSetup setup = f.prepare(p);
      if (q.constraints() != null) setup = setup.withConstraints(q.constraints());
      Rejection refused =
          core.add(
              new EngineRequest(
                  q.id(),
                  q.prompt(),
                  p,
                  setup,
                  0,
                  null,
                  0,
                  null,
                  0,
                  false,
                  false,
                  q.resumed(),
                  null));
      if (refused != null) throw new AssertionError(q.id() + " refused: " + refused.getMessage());
      out.put(q.id(), new Result());
    }
    for (int guard = 0; core.hasWork(); guard++) {
      if (guard > 2000) throw new AssertionError("the engine does not finish");
      StepOutput s = core.step();
      for (StepOutput.Failure fail : s.failures())
        out.get(fail.requestId()).failure = fail.rejection();
      for (StepOutput.RequestOutput o : s.outputs()) {
        Result r = out.get(o.requestId());
        if (o.promptLogprobs() != null) r.promptLogprobs = o.promptLogprobs();
        for (StepOutput.ChoiceOutput c : o.choices()) {
          List<Integer> t = r.tokens.computeIfAbsent(c.index(), k -> new ArrayList<>());
          if (c.whole()) t.clear();
          for (int id : c.tokenIds()) t.add(id);
          if (c.logprobs() != null) {
            List<StepLogprobs> l = r.logprobs.computeIfAbsent(c.index(), k -> new ArrayList<>());
            if (c.whole()) l.clear();
            l.addAll(c.logprobs());
          }
          if (c.finish() != null) r.finishes.put(c.index(), c.finish());
        }
      }
    }
    return out;
  }

  static EngineCore core(ModelRunner runner, SamplerFactory f) {
    return new EngineCore(runner, settings(runner.numBlocks()), SchedulingPolicy.FCFS, f);
  }

  /**
   * A tiny Llama (vocab 97, hidden 32) whose logits are well separated. Each token's embedding is a
   * ±1 vector, so the final RMSNorm of a pure embedding is ±1 (to 5e-7: exactly 1 once the GPU
   * rounds it to BF16); the LM head row of token j points along the embedding of one token π⁻¹(j)
   * (scaled by {@code spike}) plus N(0, {@code noise}²), so the next token after t is π(t) by a
   * wide margin unless the layers move it. The attention and MLP outputs are scaled by {@code
   * layers}: with 0 they add exactly nothing, the logits depend on the last token alone and the CPU
   * and GPU runners compute them to ~1e-6 (no BF16 rounding is left to differ); above 0 the context
   * matters through real attention over the paged cache. All weights are BF16-exact.
   */
  static Map<String, float[]> spikeModel(ModelConfig c, double spike, double noise, double layers) {
    Map<String, float[]> w = TinyModels.randomWeights(c, 21);
    Random r = new Random(5);
    int v = c.vocabSize(), h = c.hiddenSize();
    float[][] sign = new float[v][h];
    for (float[] s : sign) for (int i = 0; i < h; i++) s[i] = r.nextBoolean() ? 1f : -1f;
    float[] embed = w.get(TransformerLayout.EMBED);
    for (int t = 0; t < v; t++) System.arraycopy(sign[t], 0, embed, t * h, h);
    int[] next = new int[v]; // π: a random permutation
    for (int t = 0; t < v; t++) next[t] = t;
    for (int t = v - 1; t > 0; t--) {
      int j = r.nextInt(t + 1), x = next[t];
      next[t] = next[j];
      next[j] = x;
    }
    float[] head = w.get(TransformerLayout.LM_HEAD);
    for (int t = 0; t < v; t++)
      for (int i = 0; i < h; i++)
        head[next[t] * h + i] = (float) (spike * sign[t][i] / h + noise * r.nextGaussian());
    for (TransformerLayout.LayerTensors l : TransformerLayout.of(c).layers())
      for (Projection out : List.of(Projection.O, Projection.DOWN)) {
        float[] m = w.get(l.weight(out));
        for (int i = 0; i < m.length; i++) m[i] *= (float) layers;
      }
    for (float[] m : w.values()) for (int i = 0; i < m.length; i++) m[i] = Bf16.round(m[i]);
    return w;
  }

  /** Token ids as text: id n is {@code <n>}, a space is id 3 (bad words need a tokenizer). */
  static final class IdTokenizer implements Tokenizer {
    private final int vocab;

    IdTokenizer(int vocab) {
      this.vocab = vocab;
    }

    @Override
    public int[] encode(String text, boolean addSpecialTokens) {
      List<Integer> ids = new ArrayList<>();
      for (int i = 0; i < text.length(); ) {
        if (text.charAt(i) == ' ') {
          ids.add(3);
          i++;
          continue;
        }
        int end = text.indexOf('>', i);
        if (text.charAt(i) != '<' || end < 0) throw new IllegalArgumentException(text);
        ids.add(Integer.parseInt(text.substring(i + 1, end)));
        i = end + 1;
      }
      return ids.stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public String decode(int[] ids, boolean skipSpecial, boolean spaces) {
      StringBuilder sb = new StringBuilder();
      for (int id : ids) sb.append(idToToken(id));
      return sb.toString();
    }

    @Override
    public String idToToken(int id) {
      return id == 3 ? " " : "<" + id + ">";
    }

    @Override
    public OptionalInt tokenToId(String token) {
      return OptionalInt.of(encode(token, false)[0]);
    }

    @Override
    public int vocabSize() {
      return vocab;
    }

    @Override
    public Set<Integer> specialTokenIds() {
      return Set.of();
    }

    @Override
    public IncrementalDetokenizer newDetokenizer(int[] prompt, boolean skip, boolean spaces) {
      throw new UnsupportedOperationException("the core does not detokenize");
    }
  }

  /** A custom logits processor (a host-only row): odd token ids are forbidden. */
  public static final class BanOddTokens implements LogitsProcessor {
    public BanOddTokens() {}

    @Override
    public void apply(Context context, float[] logits) {
      for (int i = 1; i < logits.length; i += 2) logits[i] = Float.NEGATIVE_INFINITY;
    }
  }

  /** A token constraint (structured outputs; a host-only row): only multiples of 3 may follow. */
  static final class MultiplesOfThree implements TokenConstraint {
    @Override
    public void mask(float[] logits) {
      for (int i = 0; i < logits.length; i++) if (i % 3 != 0) logits[i] = Float.NEGATIVE_INFINITY;
    }

    @Override
    public void accept(int token) {
      if (token % 3 != 0) throw new IllegalStateException("token " + token + " not allowed");
    }
  }
}
