package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * What a sampler hands a device ({@link Sampler#deviceParams()}), when it refuses (the host rule),
 * how its draws line up with the host sampler's, and how a device result becomes a {@link Sample}.
 */
class DeviceParamsTest {
  static final int V = 12;
  static final EosTokens EOS = new EosTokens(1, Set.of(2));

  static SamplerFactory factory(LogitsProcessorRegistry processors) {
    // vocab: a b c " a" " b" " c" ab x, then 4 more
    ListTokenizer tok =
        new ListTokenizer(List.of("a", "b", "c", " a", " b", " c", "ab", "x", "p", "q", "r", "s"));
    return new SamplerFactory(V, tok, EOS, processors);
  }

  static Sampler sampler(Params p) {
    return factory(LogitsProcessorRegistry.none())
        .create(p.build().withDefaults(SamplingDefaults.NONE), new int[] {8, 9, 8}, 0);
  }

  @Test
  void badWordsAndMinTokensBecomeTheStepsMaskedIds() {
    Params p = new Params();
    p.seed = 4L;
    p.badWords = List.of("c", " a b"); // [c], [" c"], [a, " b"], [" a", " b"]
    p.minTokens = 2;
    p.stopTokenIds = List.of(7);
    Sampler s = sampler(p);
    // nothing generated: the one-token words, and the stop ids (EOS 1, generation EOS 2, 7)
    assertArrayEquals(new int[] {1, 2, 5, 7}, sorted(s.deviceParams().masked()));
    s.accept(3); // " a": now " b" is banned too
    assertArrayEquals(new int[] {1, 2, 4, 5, 7}, sorted(s.deviceParams().masked()));
    s.accept(9); // min_tokens reached, no prefix matches
    assertArrayEquals(new int[] {2, 5}, sorted(s.deviceParams().masked()));
  }

  @Test
  void penaltiesBiasAndAllowedIdsAreSparse() {
    Params p = new Params();
    p.seed = 4L;
    p.repetition = 1.5;
    p.frequency = 0.5;
    p.presence = 0.25;
    p.logitBias = Map.of(3, 200.0, 0, -1.0);
    p.allowed = List.of(9, 3, 3, 0);
    p.logprobs = 4;
    Sampler s = sampler(p);
    s.accept(5);
    s.accept(5);
    s.accept(10);
    DeviceSampling.Params d = s.deviceParams();
    assertArrayEquals(new int[] {0, 3, 9}, d.allowed());
    assertArrayEquals(new int[] {0, 3}, d.biasIds());
    assertArrayEquals(new float[] {-1f, 100f}, d.biasValues()); // clamped to ±100
    assertArrayEquals(new int[] {5, 8, 9, 10}, d.seen()); // prompt ∪ output
    assertEquals(1.5f, d.repetition());
    int[] ids = d.countIds(), counts = d.counts();
    assertEquals(2, ids.length);
    for (int j = 0; j < 2; j++) assertEquals(ids[j] == 5 ? 2 : 1, counts[j]);
    assertEquals(4, d.logprobs());
    assertEquals(0.5f, d.frequency());
    assertEquals(0.25f, d.presence());
  }

  @Test
  void rowsTheDeviceCannotApplyExactlyStayOnTheHost() {
    Params all = new Params();
    all.logprobs = -1; // the whole vocabulary
    assertNull(sampler(all).deviceParams());
    Params processor = new Params();
    processor.processors =
        List.of(new LogitsProcessorSpec(ProcessorFixtures.BoostZero.class.getName(), null, null));
    SamplerFactory f =
        factory(
            LogitsProcessorRegistry.allowing(List.of(ProcessorFixtures.BoostZero.class.getName())));
    var params = processor.build().withDefaults(SamplingDefaults.NONE);
    assertNull(f.create(params, f.prepare(params), new int[] {1}, 0).deviceParams());
    var plain = new Params().build().withDefaults(SamplingDefaults.NONE);
    TokenConstraint c =
        new TokenConstraint() {
          public void mask(float[] logits) {}

          public void accept(int token) {}
        };
    Sampler constrained =
        f.create(plain, f.prepare(plain).withConstraints(List.of(c)), new int[] {1}, 0);
    assertNull(constrained.deviceParams());
    Params twenty = new Params();
    twenty.logprobs = 20;
    assertNotNull(sampler(twenty).deviceParams());
  }

  @Test
  void aDeviceRowKeepsItsDrawUntilTheTokenIsAcceptedSoARetryDrawsNothingNew() {
    Params p = new Params();
    p.seed = 99L;
    Sampler s = sampler(p);
    SplittableRandom g = new SplittableRandom(99L);
    double first = g.nextDouble(), second = g.nextDouble(), third = g.nextDouble();
    assertEquals(first, s.deviceParams().uniform());
    assertEquals(first, s.deviceParams().uniform()); // the step's forward pass failed: again
    s.accept(4);
    assertEquals(second, s.deviceParams().uniform());
    // a host sample of a step whose device row was made uses that row's draw, then a fresh one
    float[] flat = new float[V];
    int token = s.next(flat).token();
    assertEquals((int) (second * V), token); // uniform weights, id order: the draw's bucket
    s.accept(token);
    assertEquals(third, s.deviceParams().uniform());
    // greedy rows draw nothing
    Params greedy = new Params();
    greedy.temperature = 0;
    greedy.seed = 99L;
    Sampler gs = sampler(greedy);
    assertTrue(gs.deviceParams().greedy());
    assertEquals(0.0, gs.deviceParams().uniform());
  }

  @Test
  void aRandomStepDrawsOnceEvenWhenEveryTokenIsMasked() {
    Params p = new Params();
    p.seed = 5L;
    p.allowed = List.of(3);
    Sampler s = sampler(p);
    float[] x = new float[V];
    x[3] = Float.NEGATIVE_INFINITY; // the only allowed token is impossible
    assertEquals(0, s.next(x).token()); // the argmax of an all -inf row
    s.accept(0);
    SplittableRandom g = new SplittableRandom(5L);
    g.nextDouble(); // the masked step used one draw, as the device does
    assertEquals(g.nextDouble(), s.deviceParams().uniform());
  }

  @Test
  void tokensTiedAtTheTopPBoundaryAllStay() {
    Params p = new Params();
    p.seed = 1L;
    p.topP = 0.5;
    Sampler s = sampler(p);
    float[] x = new float[V];
    Arrays.fill(x, -5f);
    x[6] = 1f;
    x[2] = 1f;
    x[9] = 1f; // three equal leaders: 1/3 of the mass each; the cut falls among them
    double[] prob = s.probabilities(x);
    for (int t : new int[] {2, 6, 9}) assertEquals(1.0 / 3, prob[t], 1e-12);
    // drawn in token-id order: the first third of the uniforms picks 2, the next 6, the last 9
    double u = new SplittableRandom(1L).nextDouble();
    assertEquals(u < 1.0 / 3 ? 2 : u < 2.0 / 3 ? 6 : 9, s.next(x).token());
  }

  @Test
  void aDeviceResultBecomesTheHostSamplersLogprobs() {
    int[] none = new int[0];
    DeviceSampling.Params three =
        new DeviceSampling.Params(
            false,
            1f,
            0,
            1f,
            0f,
            0.5,
            3,
            none,
            none,
            none,
            new float[0],
            1f,
            none,
            0f,
            0f,
            none,
            none);
    // the token is second of the top 3: it keeps its place first and takes rank 2
    Sample in =
        SamplingStage.sample(
            new DeviceSampling.Result(
                7, -1.5f, 2, new int[] {4, 7, 1}, new float[] {-0.5f, -1.5f, -20000f}),
            three);
    assertEquals(7, in.token());
    assertEquals(
        List.of(
            new TokenLogprob(7, -1.5f, 2),
            new TokenLogprob(4, -0.5f, 1),
            new TokenLogprob(1, Logprobs.FLOOR, 3)),
        in.logprobs());
    // outside the top 3: its counted rank, then the top 3
    Sample out =
        SamplingStage.sample(
            new DeviceSampling.Result(
                5, Float.NEGATIVE_INFINITY, 9, new int[] {4, 7, 1}, new float[] {-0.5f, -1f, -2f}),
            three);
    assertEquals(new TokenLogprob(5, Logprobs.FLOOR, 9), out.logprobs().get(0));
    assertEquals(4, out.logprobs().size());
    assertEquals(Logprobs.FLOOR, out.logprob());
    // no logprobs asked: none reported
    Sample plain =
        SamplingStage.sample(
            new DeviceSampling.Result(3, Float.NaN, 0, none, new float[0]),
            DeviceSampling.Params.simple(false, 1f, 0, 1f, 0f, 0.1));
    assertNull(plain.logprobs());
  }

  static int[] sorted(int[] v) {
    int[] c = v.clone();
    Arrays.sort(c);
    return c;
  }
}
