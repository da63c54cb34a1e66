package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SamplerTest {

  private static final int V = 40;
  private static final EosTokens EOS = new EosTokens(1, Set.of(2));

  private static float[] randomLogits(Random r, int v) {
    float[] x = new float[v];
    for (int i = 0; i < v; i++) x[i] = (float) (r.nextGaussian() * 2.5);
    return x;
  }

  private static SamplerFactory factory() {
    return new SamplerFactory(V, null, EOS, LogitsProcessorRegistry.none());
  }

  private static void assertDistribution(double[] expected, double[] actual, String what) {
    for (int i = 0; i < expected.length; i++)
      assertEquals(expected[i], actual[i], 2e-6, what + " token " + i);
  }

  @Test
  void everyProcessorAndFilterMatchesTheReferenceInOrder() {
    Random r = new Random(7);
    for (int trial = 0; trial < 400; trial++) {
      Params p = new Params();
      p.temperature = r.nextInt(5) == 0 ? 0 : 0.3 + r.nextDouble() * 1.5;
      if (r.nextBoolean()) p.topP = 0.2 + r.nextDouble() * 0.8;
      if (r.nextBoolean()) p.topK = 1 + r.nextInt(12);
      if (r.nextInt(3) == 0) p.minP = r.nextDouble() * 0.3;
      if (r.nextBoolean()) p.repetition = 0.5 + r.nextDouble() * 1.5;
      if (r.nextBoolean()) p.frequency = r.nextDouble() * 4 - 2;
      if (r.nextBoolean()) p.presence = r.nextDouble() * 4 - 2;
      if (r.nextInt(3) == 0)
        p.logitBias = Map.of(6 + r.nextInt(V - 6), r.nextDouble() * 300 - 150, 5, -3.0);
      if (r.nextInt(4) == 0) p.allowed = List.of(1, 2, 3, 5, 8, 13, 21, 34, r.nextInt(V));
      if (r.nextInt(3) == 0) p.minTokens = r.nextInt(6);
      if (r.nextInt(3) == 0) p.stopTokenIds = List.of(7, 9);
      SamplingParams sp = p.build();
      int[] prompt = r.ints(6, 0, V).toArray();
      Sampler s = factory().create(sp, prompt, 0);
      int[] out = r.ints(r.nextInt(8), 0, V).toArray();
      for (int t : out) s.accept(t);
      float[] logits = randomLogits(r, V);
      Set<Integer> stopIds = new java.util.HashSet<>(Set.of(1, 2));
      stopIds.addAll(p.stopTokenIds);
      double[] expected =
          ReferenceSampling.probabilities(sp, prompt, out, logits, stopIds, List.of());
      assertDistribution(expected, s.probabilities(logits), "trial " + trial + " " + sp);
    }
  }

  @Test
  void greedyIsTheArgmaxOfTheProcessedLogitsAndIgnoresFilters() {
    Params p = new Params();
    p.temperature = 0;
    p.topK = 1;
    p.logprobs = 0;
    p.repetition = 4.0; // 10 -> 2.5 (seen in prompt), so token 3 (5.0) wins
    float[] logits = new float[V];
    logits[0] = 10f;
    logits[3] = 5f;
    Sampler s = factory().create(p.build(), new int[] {0}, 0);
    Sample sample = s.next(logits);
    assertEquals(3, sample.token());
    // raw logprob, not the penalised one
    double[] ref = ReferenceSampling.logSoftmax(logits);
    assertEquals(ref[3], sample.logprob(), 1e-5);
    assertEquals(2, sample.rank());
  }

  @Test
  void greedyOnAnUneditedRowTakesTheFirstMaximumAndLeavesTheRowAlone() {
    Params p = new Params();
    p.temperature = 0;
    float[] logits = new float[V];
    java.util.Arrays.fill(logits, -1f);
    logits[7] = 3f;
    logits[4] = 3f; // a tie: the first index wins
    logits[0] = Float.NaN; // a NaN never wins, but a NaN at index 0 is where the scan starts
    float[] before = logits.clone();
    Sampler s = factory().create(p.build(), new int[0], 0);
    assertEquals(0, s.next(logits).token());
    logits[0] = -0f;
    logits[5] = Float.NaN;
    assertEquals(4, s.next(logits).token());
    before[0] = -0f;
    before[5] = Float.NaN;
    assertArrayEquals(before, logits); // read in place, never written
    // min_tokens: the row is edited on a copy (EOS masked) until the output is long enough
    p.minTokens = 1;
    logits[1] = 9f; // EOS
    Sampler masked = factory().create(p.build(), new int[0], 0);
    assertEquals(4, masked.next(logits).token());
    assertEquals(9f, logits[1]);
    masked.accept(4);
    assertEquals(1, masked.next(logits).token());
  }

  @Test
  void minTokensMasksEosGenerationEosAndStopIdsUntilReached() {
    Params p = new Params();
    p.temperature = 0;
    p.minTokens = 2;
    p.stopTokenIds = List.of(9);
    float[] logits = new float[V];
    logits[1] = 9f; // eos
    logits[2] = 8f; // generation-config eos
    logits[9] = 7f; // stop token
    logits[4] = 1f;
    Sampler s = factory().create(p.build(), new int[] {4}, 0);
    assertEquals(4, s.next(logits).token());
    s.accept(4);
    assertEquals(4, s.next(logits).token());
    s.accept(4);
    assertEquals(1, s.next(logits).token());
  }

  @Test
  void logitBiasIsClampedToHundred() {
    Params p = new Params();
    p.temperature = 0;
    p.logitBias = Map.of(3, 1000.0, 0, -1000.0);
    float[] logits = new float[V];
    logits[0] = 150f; // 150 - 100 = 50 beats 3 + 100 = 103? no: 103 > 50
    logits[3] = 3f;
    logits[5] = 102.5f; // 102.5 < 103
    assertEquals(3, factory().create(p.build(), new int[0], 0).next(logits).token());
    logits[5] = 103.5f;
    assertEquals(5, factory().create(p.build(), new int[0], 0).next(logits).token());
  }

  @Test
  void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogits() {
    Params p = new Params();
    p.temperature = 0;
    p.repetition = 2.0;
    float[] logits = new float[V];
    java.util.Arrays.fill(logits, -50f);
    logits[0] = -1f; // seen: -2
    logits[1] = -1.5f; // eos, unseen
    logits[2] = 4f; // seen: 2
    logits[3] = 2.5f; // unseen
    Sampler s = factory().create(p.build(), new int[] {0, 2}, 0);
    assertEquals(3, s.next(logits).token());
    logits[3] = 1.9f;
    assertEquals(2, s.next(logits).token());
  }

  @Test
  void frequencyAndPresencePenaltiesCountOutputOnly() {
    Params p = new Params();
    p.temperature = 0;
    p.frequency = 1.0;
    p.presence = 0.5;
    float[] logits = new float[V];
    logits[5] = 3f;
    logits[6] = 0.6f;
    Sampler s = factory().create(p.build(), new int[] {5, 5, 5, 5}, 0); // prompt: no effect
    assertEquals(5, s.next(logits).token());
    s.accept(5); // 3 - 1 - 0.5 = 1.5
    assertEquals(5, s.next(logits).token());
    s.accept(5); // 3 - 2 - 0.5 = 0.5 < 0.6
    assertEquals(6, s.next(logits).token());
  }

  @Test
  void allowedTokenIdsRestrictTheChoice() {
    Params p = new Params();
    p.allowed = List.of(7, 11);
    p.seed = 3L;
    Sampler s = factory().create(p.build(), new int[0], 0);
    Random r = new Random(1);
    for (int i = 0; i < 200; i++) {
      int t = s.next(randomLogits(r, V)).token();
      assertTrue(t == 7 || t == 11, "token " + t);
    }
  }

  @Test
  void badWordsBanSingleTokensAlwaysAndLastTokenAfterThePrefix() {
    // vocab: a b c " a" " b" " c" ab x
    ListTokenizer tok = new ListTokenizer(List.of("a", "b", "c", " a", " b", " c", "ab", "x"));
    SamplerFactory f = new SamplerFactory(8, tok, EosTokens.none(), LogitsProcessorRegistry.none());
    Params p = new Params();
    p.temperature = 0;
    p.badWords = List.of("c", " a b"); // "c" and " c"; "a b" -> [a, " b"], " a b" -> [" a", " b"]
    Sampler s = f.create(p.build(), new int[0], 0);
    List<int[]> seqs = BadWords.of(p.badWords, tok, 8).sequences();
    assertEquals(4, seqs.size());
    assertArrayEquals(new int[] {2}, seqs.get(0));
    assertArrayEquals(new int[] {5}, seqs.get(1));
    assertArrayEquals(new int[] {0, 4}, seqs.get(2));
    assertArrayEquals(new int[] {3, 4}, seqs.get(3));
    float[] logits = {0, 0, 9, 0, 8, 9, 0, 1};
    assertEquals(4, s.next(logits).token()); // c and " c" banned, " b" free
    s.accept(3); // " a"
    assertEquals(7, s.next(logits).token()); // " b" now banned too
    s.accept(7);
    assertEquals(4, s.next(logits).token());
  }

  @Test
  void spacedVariantIsDroppedWhenItTokenisesDifferently() {
    ListTokenizer tok = new ListTokenizer(List.of("a", "b", " ", "ab"));
    // "ab" -> [ab]; " ab" -> [" ", ab]: different length, so only [ab]
    List<int[]> seqs = BadWords.of(List.of("ab"), tok, 4).sequences();
    assertEquals(1, seqs.size());
    assertArrayEquals(new int[] {3}, seqs.get(0));
  }

  @Test
  void topKOneAndTinyTopPAndMinPOneAreGreedy() {
    Random r = new Random(11);
    for (int trial = 0; trial < 20; trial++) {
      float[] logits = randomLogits(r, V);
      int argmax = 0;
      for (int i = 1; i < V; i++) if (logits[i] > logits[argmax]) argmax = i;
      for (int variant = 0; variant < 3; variant++) {
        Params p = new Params();
        p.seed = (long) trial;
        if (variant == 0) p.topK = 1;
        if (variant == 1) p.topP = 1e-9;
        if (variant == 2) p.minP = 1.0;
        Sampler s = factory().create(p.build(), new int[0], 0);
        for (int i = 0; i < 5; i++)
          assertEquals(argmax, s.next(logits).token(), "variant " + variant);
      }
    }
  }

  @Test
  void topKKeepsTiesAtTheBoundary() {
    Params p = new Params();
    p.topK = 2;
    float[] logits = new float[V];
    java.util.Arrays.fill(logits, -10f);
    logits[3] = 2f;
    logits[4] = 1f;
    logits[5] = 1f;
    double[] probs = factory().create(p.build(), new int[0], 0).probabilities(logits);
    assertTrue(probs[5] > 0 && probs[4] > 0 && probs[3] > 0);
    assertEquals(0.0, probs[6]);
    assertEquals(1.0, probs[3] + probs[4] + probs[5], 1e-9);
  }

  @Test
  void topPKeepsTheSmallestSetReachingP() {
    // probabilities 0.5, 0.3, 0.2 (plus nothing else)
    float[] logits = new float[V];
    java.util.Arrays.fill(logits, Float.NEGATIVE_INFINITY);
    logits[0] = (float) Math.log(0.5);
    logits[1] = (float) Math.log(0.3);
    logits[2] = (float) Math.log(0.2);
    Params p = new Params();
    p.topP = 0.5; // mass above token 1 is 0.5, not < 0.5 -> only token 0
    double[] probs = factory().create(p.build(), new int[0], 0).probabilities(logits);
    assertEquals(1.0, probs[0], 1e-9);
    p.topP = 0.55;
    probs = factory().create(p.build(), new int[0], 0).probabilities(logits);
    assertEquals(0.5 / 0.8, probs[0], 1e-6);
    assertEquals(0.0, probs[2]);
  }

  @Test
  void topPOnALargeFlatVocabularyFallsBackToAFullSort() {
    int v = 5000;
    SamplerFactory f =
        new SamplerFactory(v, null, EosTokens.none(), LogitsProcessorRegistry.none());
    Random r = new Random(5);
    float[] logits = new float[v];
    for (int i = 0; i < v; i++) logits[i] = (float) (r.nextGaussian() * 0.1);
    Params p = new Params();
    p.topP = 0.9;
    SamplingParams sp = p.build();
    double[] expected =
        ReferenceSampling.probabilities(sp, new int[0], new int[0], logits, Set.of(), List.of());
    assertDistribution(expected, f.create(sp, new int[0], 0).probabilities(logits), "flat");
  }

  @Test
  void topPOnALargeVocabularyMatchesTheFullSortReference() {
    int v = 30000;
    SamplerFactory f =
        new SamplerFactory(v, null, EosTokens.none(), LogitsProcessorRegistry.none());
    Random r = new Random(12);
    for (double scale : new double[] {0.5, 3, 8}) {
      float[] logits = new float[v];
      for (int i = 0; i < v; i++) logits[i] = (float) (r.nextGaussian() * scale);
      for (double topP : new double[] {0.3, 0.9, 0.999}) {
        Params p = new Params();
        p.topP = topP;
        p.temperature = 0.7;
        p.minP = scale == 8 ? 0.001 : 0;
        SamplingParams sp = p.build();
        double[] expected =
            ReferenceSampling.probabilities(
                sp, new int[0], new int[0], logits, Set.of(), List.of());
        assertDistribution(
            expected, f.create(sp, new int[0], 0).probabilities(logits), "p " + topP);
      }
    }
  }

  @Test
  void drawsFollowTheDistribution() {
    Random r = new Random(99);
    float[] logits = randomLogits(r, V);
    // top-k + top-p (sorted list), nothing (whole row), top-p alone (histogram nucleus)
    double[][] configs = {{0.8, 0.95, 10}, {1.3, 1.0, 0}, {1.0, 0.8, 0}};
    for (double[] c : configs) {
      Params p = new Params();
      p.seed = 1234L;
      p.temperature = c[0];
      p.topP = c[1];
      p.topK = (int) c[2];
      Sampler s = factory().create(p.build(), new int[0], 0);
      double[] expected =
          ReferenceSampling.probabilities(
              p.build(), new int[0], new int[0], logits, Set.of(), List.of());
      int draws = 20000;
      int[] counts = new int[V];
      for (int i = 0; i < draws; i++) counts[s.next(logits).token()]++;
      double chi2 = 0;
      int df = -1;
      for (int i = 0; i < V; i++) {
        if (expected[i] == 0) {
          assertEquals(0, counts[i], "drew a filtered token " + i);
          continue;
        }
        double e = expected[i] * draws;
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
        df++;
      }
      // 99.9th percentile of chi-square: 27.9 at 9 degrees of freedom, 73.4 at 39
      double limit = df <= 9 ? 27.9 : 73.4;
      assertTrue(df >= 3 && chi2 < limit, "chi2 " + chi2 + " df " + df);
    }
  }

  @Test
  void sameSeedGivesTheSameTokensWhateverElseIsInTheBatch() {
    Params p = new Params();
    p.seed = 42L;
    p.temperature = 1.0;
    p.n = 3;
    SamplingParams sp = p.build();
    Params other = new Params();
    other.topK = 5;
    Random logitsSource = new Random(3);
    List<float[]> rows = new ArrayList<>();
    for (int i = 0; i < 30; i++) rows.add(randomLogits(logitsSource, V));

    SamplerFactory alone = factory();
    Sampler solo = alone.create(sp, new int[] {1, 2}, 1);
    int[] soloTokens = new int[rows.size()];
    for (int i = 0; i < rows.size(); i++) {
      soloTokens[i] = solo.next(rows.get(i)).token();
      solo.accept(soloTokens[i]);
    }

    SamplerFactory batch = factory();
    Sampler noisy1 = batch.create(other.build(), new int[] {3}, 0); // unseeded
    Sampler mine = batch.create(sp, new int[] {1, 2}, 1);
    Sampler noisy2 = batch.create(sp, new int[] {1, 2}, 2);
    Random interleave = new Random(8);
    for (int i = 0; i < rows.size(); i++) {
      for (int k = interleave.nextInt(3); k > 0; k--)
        noisy1.accept(noisy1.next(rows.get(i)).token());
      int t = mine.next(rows.get(i)).token();
      mine.accept(t);
      noisy2.accept(noisy2.next(rows.get((i + 5) % rows.size())).token());
      assertEquals(soloTokens[i], t, "step " + i);
    }

    // choice i of seed s draws like choice 0 of seed s + i
    p.seed = 43L;
    Sampler shifted = factory().create(p.build(), new int[] {1, 2}, 0);
    for (int i = 0; i < rows.size(); i++) {
      int t = shifted.next(rows.get(i)).token();
      shifted.accept(t);
      assertEquals(soloTokens[i], t);
    }
    // seed -1 means unseeded (vLLM): two such samplers do not repeat each other
    p.seed = -1L;
    Sampler u1 = factory().create(p.build(), new int[0], 0),
        u2 = factory().create(p.build(), new int[0], 0);
    StringBuilder a = new StringBuilder(), b = new StringBuilder();
    for (float[] row : rows) {
      a.append(u1.next(row).token()).append(',');
      b.append(u2.next(row).token()).append(',');
    }
    assertNotEquals(a.toString(), b.toString());
    // and another choice index really differs
    Sampler choice0 = factory().create(sp, new int[] {1, 2}, 0);
    int[] c0 = new int[rows.size()];
    for (int i = 0; i < rows.size(); i++) choice0.accept(c0[i] = choice0.next(rows.get(i)).token());
    assertNotEquals(java.util.Arrays.toString(soloTokens), java.util.Arrays.toString(c0));
  }

  @Test
  void logprobsAreRawSampledFirstAndDeduplicated() {
    float[] logits = new float[V];
    for (int i = 0; i < V; i++) logits[i] = -i * 0.5f; // token 0 best, rank = id + 1
    logits[V - 1] = -20000f;
    double[] ref = ReferenceSampling.logSoftmax(logits);
    Params p = new Params();
    p.logprobs = 3;
    p.temperature = 0;
    p.logitBias = Map.of(10, 100.0); // forces token 10, outside the raw top 3
    Sample s = factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(10, s.token());
    assertEquals(4, s.logprobs().size());
    assertEquals(List.of(10, 0, 1, 2), s.logprobs().stream().map(TokenLogprob::tokenId).toList());
    assertEquals(List.of(11, 1, 2, 3), s.logprobs().stream().map(TokenLogprob::rank).toList());
    for (TokenLogprob e : s.logprobs()) assertEquals(ref[e.tokenId()], e.logprob(), 1e-5);
    // chat takes the first k entries as they are: sampled + top k-1
    assertEquals(
        List.of(10, 0, 1), s.chatTopLogprobs(3).stream().map(TokenLogprob::tokenId).toList());
    assertEquals(List.of(), s.chatTopLogprobs(0));

    p.logprobs = -1; // whole vocabulary
    s = factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(V, s.logprobs().size());
    assertEquals(V, s.chatTopLogprobs(-1).size());
    assertEquals(10, s.chatTopLogprobs(-1).get(0).tokenId());
    assertEquals(V, s.logprobs().stream().map(TokenLogprob::tokenId).distinct().count());
    p.logprobs = 3;
    p.logitBias = Map.of(1, 100.0); // sampled token inside the top 3: no duplicate
    s = factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(List.of(1, 0, 2), s.logprobs().stream().map(TokenLogprob::tokenId).toList());
    assertEquals(List.of(2, 1, 3), s.logprobs().stream().map(TokenLogprob::rank).toList());

    p.logitBias = Map.of();
    p.allowed = List.of(V - 1); // a hopeless token: its logprob is floored
    s = factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(V - 1, s.token());
    assertEquals(-9999f, s.logprob());
    assertEquals(V, s.rank());

    p.logprobs = null; // not requested: not computed
    Sample none = factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(null, none.logprobs());
    assertTrue(Float.isNaN(none.logprob()));
  }

  @Test
  void promptLogprobsHaveANullFirstEntryAndTheActualTokenFirst() {
    Random r = new Random(4);
    int[] prompt = {3, 17, 5, 0};
    float[][] rows = new float[prompt.length][];
    for (int i = 0; i < rows.length; i++) rows[i] = randomLogits(r, V);
    var out = Logprobs.promptLogprobs(rows, prompt, 2);
    assertEquals(4, out.size());
    assertEquals(null, out.get(0));
    for (int pos = 1; pos < prompt.length; pos++) {
      double[] ref = ReferenceSampling.logSoftmax(rows[pos - 1]);
      Integer[] order = new Integer[V];
      for (int i = 0; i < V; i++) order[i] = i;
      java.util.Arrays.sort(order, (a, b) -> Double.compare(ref[b], ref[a]));
      var entry = out.get(pos);
      int actual = prompt[pos];
      assertEquals(actual, entry.keySet().iterator().next());
      int actualRank = java.util.Arrays.asList(order).indexOf(actual) + 1;
      assertEquals(actualRank, entry.get(actual).rank());
      assertEquals(ref[actual], entry.get(actual).logprob(), 1e-5);
      assertTrue(entry.containsKey(order[0]) && entry.containsKey(order[1]));
      assertEquals(actualRank <= 2 ? 2 : 3, entry.size());
      assertEquals(1, entry.get(order[0]).rank());
    }
  }

  @Test
  void outOfVocabularyIdsAreRejectedWithTheParamName() {
    Params p = new Params();
    p.logitBias = Map.of(V, 1.0, -1, 2.0);
    var e =
        assertThrows(
            InvalidSamplingParamsException.class, () -> factory().create(p.build(), new int[0], 0));
    assertEquals("logit_bias", e.param());
    assertTrue(e.getMessage().contains("[-1, " + V + "]") && e.getMessage().contains("" + V));
    Params q = new Params();
    q.allowed = List.of(); // refused by SamplingParams itself, which owns that rule
    assertEquals(
        "allowed_token_ids",
        assertThrows(SamplingParams.InvalidValue.class, () -> q.build()).param());
    q.allowed = List.of(V + 3);
    assertThrows(InvalidSamplingParamsException.class, () -> factory().validate(q.build()));
    Params s = new Params();
    s.stopTokenIds = List.of(V);
    assertEquals(
        "stop_token_ids",
        assertThrows(InvalidSamplingParamsException.class, () -> factory().validate(s.build()))
            .param());
  }
}
