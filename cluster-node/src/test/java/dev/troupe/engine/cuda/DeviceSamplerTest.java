package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling.Params;
import dev.troupe.engine.DeviceSampling.Result;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.Sample;
import dev.troupe.engine.sampling.Sampler;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Device sampling against the CPU {@link Sampler}: each choice's sampler state becomes a {@link
 * Params} row ({@link Sampler#deviceParams()}, checked here against an independent transcription of
 * the CPU sampler's rules) with the uniform drawn from the same seeded generator the CPU sampler
 * uses; both walk the kept tokens in id order, so the device must pick the very same token, with
 * the same raw logprob, rank and top logprobs, top-k and top-p included. The filters are also
 * checked as distributions: a grid of uniforms maps onto the kept tokens in proportion to their
 * probability under a sort-based transcription.
 */
class DeviceSamplerTest {
  static final int V = 300;
  static final EosTokens EOS = new EosTokens(1, Set.of(2));

  /** A model config only to generate the kernel source (the sampler does not depend on it). */
  static final ModelConfig CFG = TinyModels.config(Arch.LLAMA);

  static SamplingParams.Builder base() {
    return SamplingParams.builder().maxTokens(100);
  }

  /** The CPU sampler's rules, written out independently of {@link Sampler#deviceParams()}. */
  static Params row(SamplingParams p, int[] prompt, int[] output, double uniform, int logprobs) {
    boolean greedy = p.greedy();
    float temperature = (float) Math.max(p.temperature(), SamplingParams.MIN_RANDOM_TEMPERATURE);
    int topK = p.topK() <= 0 || p.topK() >= V ? 0 : p.topK();
    int[] allowed =
        p.allowedTokenIds() == null
            ? new int[0]
            : p.allowedTokenIds().stream()
                .mapToInt(Integer::intValue)
                .sorted()
                .distinct()
                .toArray();
    TreeSet<Integer> stops = new TreeSet<>(p.stopTokenIds());
    stops.add(EOS.eosTokenId());
    stops.addAll(EOS.generationEosIds());
    int[] masked =
        output.length < p.minTokens()
            ? stops.stream().mapToInt(Integer::intValue).toArray()
            : new int[0];
    TreeMap<Integer, Double> bias = new TreeMap<>(p.logitBias());
    int[] biasIds = bias.keySet().stream().mapToInt(Integer::intValue).toArray();
    float[] biasValues = new float[biasIds.length];
    int j = 0;
    for (double v : bias.values()) biasValues[j++] = (float) Math.max(-100, Math.min(100, v));
    float rep = p.repetitionPenalty().floatValue();
    TreeSet<Integer> seen = new TreeSet<>();
    if (rep != 1f) {
      for (int t : prompt) seen.add(t);
      for (int t : output) seen.add(t);
    }
    float freq = p.frequencyPenalty().floatValue(), pres = p.presencePenalty().floatValue();
    TreeMap<Integer, Integer> counts = new TreeMap<>();
    if (freq != 0f || pres != 0f) for (int t : output) counts.merge(t, 1, Integer::sum);
    return new Params(
        greedy,
        temperature,
        topK,
        p.topP().floatValue(),
        p.minP().floatValue(),
        uniform,
        logprobs,
        allowed,
        masked,
        biasIds,
        biasValues,
        rep,
        seen.stream().mapToInt(Integer::intValue).toArray(),
        freq,
        pres,
        counts.keySet().stream().mapToInt(Integer::intValue).toArray(),
        counts.values().stream().mapToInt(Integer::intValue).toArray());
  }

  /** Field by field: the sampler's own row equals the transcription. */
  static void assertSameParams(Params want, Params got, String what) {
    assertEquals(want.greedy(), got.greedy(), what + " greedy");
    if (!want.greedy()) {
      assertEquals(want.temperature(), got.temperature(), what + " temperature");
      assertEquals(want.uniform(), got.uniform(), what + " uniform");
    }
    assertEquals(want.topK(), got.topK(), what + " top_k");
    assertEquals(want.topP(), got.topP(), what + " top_p");
    assertEquals(want.minP(), got.minP(), what + " min_p");
    assertEquals(want.logprobs(), got.logprobs(), what + " logprobs");
    assertArrayEquals(want.allowed(), got.allowed(), what + " allowed");
    assertArrayEquals(sorted(want.masked()), sorted(got.masked()), what + " masked");
    assertArrayEquals(want.biasIds(), got.biasIds(), what + " bias ids");
    assertArrayEquals(want.biasValues(), got.biasValues(), what + " bias values");
    assertEquals(want.repetition(), got.repetition(), what + " repetition");
    assertArrayEquals(want.seen(), got.seen(), what + " seen");
    assertEquals(want.frequency(), got.frequency(), what + " frequency");
    assertEquals(want.presence(), got.presence(), what + " presence");
    Map<Integer, Integer> a = new TreeMap<>(), b = new TreeMap<>();
    for (int j = 0; j < want.countIds().length; j++) a.put(want.countIds()[j], want.counts()[j]);
    for (int j = 0; j < got.countIds().length; j++) b.put(got.countIds()[j], got.counts()[j]);
    assertEquals(a, b, what + " counts");
  }

  static int[] sorted(int[] v) {
    int[] c = v.clone();
    Arrays.sort(c);
    return c;
  }

  static List<Result> sampleOn(Gpu gpu, float[][] rows, List<Params> p) {
    int n = rows.length;
    long logits = gpu.alloc((long) n * V * 4), work = gpu.alloc((long) n * V * 4);
    ByteBuffer b = ByteBuffer.allocateDirect(n * V * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float[] r : rows) for (float v : r) b.putFloat(v);
    b.flip();
    gpu.upload(logits, b);
    try {
      // the emulator runs every thread as a fiber: 64 threads per row keep it quick; the kernel is
      // written for any multiple of 32 up to 512 (the GPU uses 512)
      return DeviceSampler.sample(
          gpu, logits, work, V, p, gpu instanceof EmulatedGpu ? 64 : DeviceSampler.THREADS);
    } finally {
      gpu.free(logits);
      gpu.free(work);
    }
  }

  static float[] randomLogits(Random r) {
    float[] x = new float[V];
    for (int i = 0; i < V; i++) x[i] = (float) (r.nextGaussian() * 2.5);
    if (r.nextInt(4) == 0) x[r.nextInt(V)] = x[r.nextInt(V)]; // a tie now and then
    return x;
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void sameTokensLogprobsAndRanksAsTheCpuSamplerWithTheSameSeed(GpuBackends backend) {
    SamplerFactory factory = new SamplerFactory(V, null, EOS, LogitsProcessorRegistry.none());
    Random r = new Random(11);
    int n = 120;
    float[][] logits = new float[n][];
    List<Params> rows = new ArrayList<>();
    Sample[] expected = new Sample[n];
    for (int i = 0; i < n; i++) {
      SamplingParams.Builder b = base();
      b.temperature(r.nextInt(4) == 0 ? 0.0 : 0.2 + r.nextDouble() * 1.5);
      if (r.nextInt(3) == 0) b.minP(r.nextDouble() * 0.3);
      if (r.nextInt(3) == 0) b.topK(1 + r.nextInt(40));
      if (r.nextInt(3) == 0) b.topP(0.2 + r.nextDouble() * 0.8);
      if (r.nextBoolean()) b.repetitionPenalty(0.5 + r.nextDouble() * 1.5);
      if (r.nextBoolean()) b.frequencyPenalty(r.nextDouble() * 4 - 2);
      if (r.nextBoolean()) b.presencePenalty(r.nextDouble() * 4 - 2);
      if (r.nextInt(3) == 0) {
        Map<Integer, Double> bias = new HashMap<>();
        bias.put(6 + r.nextInt(V - 6), r.nextDouble() * 300 - 150);
        bias.put(5, -3.0);
        b.logitBias(bias);
      }
      if (r.nextInt(4) == 0) b.allowedTokenIds(List.of(1, 2, 3, 5, 8, 13, 21, 34, r.nextInt(V)));
      if (r.nextInt(3) == 0) b.minTokens(r.nextInt(6));
      if (r.nextInt(3) == 0) b.stopTokenIds(List.of(7, 9));
      int lp = r.nextInt(3) == 0 ? -1 : r.nextInt(6);
      if (lp >= 0) b.logprobs(lp);
      long seed = r.nextLong();
      b.seed(seed);
      SamplingParams p = b.build().withDefaults(SamplingDefaults.NONE);
      int[] prompt = r.ints(6, 0, V).toArray();
      int[] out = r.ints(r.nextInt(8), 0, V).toArray();
      Sampler s = factory.create(p, prompt, 0);
      for (int t : out) s.accept(t);
      logits[i] = randomLogits(r);
      // the sampler's row for this step keeps its draw, which the host sample of the same step
      // then uses: the choice's first draw (SplittableRandom(seed + choice index); the accepted
      // tokens drew nothing)
      Params own = s.deviceParams();
      expected[i] = s.next(logits[i]);
      double u = new SplittableRandom(seed).nextDouble();
      Params mine = row(p, prompt, out, p.greedy() ? 0 : u, lp);
      assertSameParams(mine, own, "row " + i);
      rows.add(mine);
    }
    try (Gpu gpu = backend.open(CFG, 4)) {
      gpu.loadKernels(KernelSource.generate(CFG, 4), KernelSource.KERNELS);
      List<Result> got = sampleOn(gpu, logits, rows);
      for (int i = 0; i < n; i++) {
        Sample e = expected[i];
        Result g = got.get(i);
        assertEquals(e.token(), g.token(), "row " + i + " " + rows.get(i));
        if (rows.get(i).logprobs() < 0) continue;
        assertEquals(Math.max(e.logprob(), -9999f), g.logprob(), 1e-4, "logprob row " + i);
        assertEquals(e.rank(), g.rank(), "rank row " + i);
        // the CPU list: the sampled token first, then the top k by rank (without duplicates)
        int k = rows.get(i).logprobs();
        int[] top = Arrays.copyOf(g.topIds(), k);
        List<Integer> cpuIds = new ArrayList<>();
        e.logprobs().forEach(t -> cpuIds.add(t.tokenId()));
        for (int j = 0; j < k; j++)
          assertTrue(
              cpuIds.contains(top[j]),
              "row " + i + ": top " + j + " = " + top[j] + " not in " + cpuIds);
        for (int j = 1; j < k; j++)
          assertTrue(g.topLogprobs()[j] <= g.topLogprobs()[j - 1], "top logprobs descend");
      }
    }
  }

  /** Probabilities after temperature, min_p, top_k, top_p, by sorting (a plain transcription). */
  static double[] reference(float[] x, float t, int topK, double topP, double minP) {
    Integer[] idx = new Integer[V];
    for (int i = 0; i < V; i++) idx[i] = i;
    Arrays.sort(idx, (a, b) -> x[a] != x[b] ? Float.compare(x[b], x[a]) : Integer.compare(a, b));
    double max = x[idx[0]] / t;
    double[] w = new double[V];
    for (int i = 0; i < V; i++) {
      w[i] = Math.exp(x[i] / t - max);
      if (w[i] < minP) w[i] = 0;
    }
    if (topK > 0) {
      double kth = w[idx[topK - 1]];
      for (int i = 0; i < V; i++) if (w[i] < kth) w[i] = 0;
    }
    double z = Arrays.stream(w).sum();
    if (topP < 1) {
      double above = 0;
      boolean[] keep = new boolean[V];
      for (int j = 0; j < V; j++) {
        int i = idx[j];
        keep[i] = j == 0 || above < topP * z;
        above += w[i];
      }
      for (int i = 0; i < V; i++) if (!keep[i]) w[i] = 0;
      z = Arrays.stream(w).sum();
    }
    for (int i = 0; i < V; i++) w[i] /= z;
    return w;
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void topKTopPAndMinPDrawFromTheReferenceDistribution(GpuBackends backend) {
    Random r = new Random(4);
    float[] x = randomLogits(r);
    int grid = 200;
    Object[][] cases = {{0.8f, 12, 1.0, 0.0}, {1.0f, 0, 0.7, 0.0}, {1.3f, 40, 0.9, 0.01}};
    try (Gpu gpu = backend.open(CFG, 4)) {
      gpu.loadKernels(KernelSource.generate(CFG, 4), KernelSource.KERNELS);
      for (Object[] c : cases) {
        float t = (float) c[0];
        int k = (int) c[1];
        double p = (double) c[2], minP = (double) c[3];
        double[] ref = reference(x, t, k, p, minP);
        float[][] rows = new float[grid][];
        List<Params> params = new ArrayList<>();
        for (int j = 0; j < grid; j++) {
          rows[j] = x;
          params.add(Params.simple(false, t, k, (float) p, (float) minP, (j + 0.5) / grid));
        }
        int[] hits = new int[V];
        for (Result res : sampleOn(gpu, rows, params)) hits[res.token()]++;
        for (int i = 0; i < V; i++) {
          double freq = (double) hits[i] / grid;
          // the grid quantises each probability to 1/grid, plus one cell at each boundary
          assertEquals(
              ref[i], freq, 2.0 / grid + 1e-9, "token " + i + " case " + Arrays.toString(c));
          if (ref[i] == 0) assertEquals(0, hits[i], "dropped token " + i + " drawn");
        }
      }
      // greedy ignores the uniform; all-masked rows give token 0 (as the CPU sampler)
      int[] none = new int[0];
      int[] all = new int[V];
      for (int i = 0; i < V; i++) all[i] = i;
      List<Params> edge =
          List.of(
              Params.simple(true, 1f, 0, 1f, 0f, 0.99),
              new Params(
                  false,
                  1f,
                  0,
                  1f,
                  0f,
                  0.5,
                  -1,
                  none,
                  all,
                  none,
                  new float[0],
                  1f,
                  none,
                  0f,
                  0f,
                  none,
                  none));
      List<Result> e = sampleOn(gpu, new float[][] {x, x}, edge);
      int argmax = 0;
      for (int i = 1; i < V; i++) if (x[i] > x[argmax]) argmax = i;
      assertArrayEquals(new int[] {argmax, 0}, new int[] {e.get(0).token(), e.get(1).token()});
    }
  }
}
