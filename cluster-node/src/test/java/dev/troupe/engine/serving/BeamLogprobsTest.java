package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.engine.output.RequestUpdate.TokenText;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Per-token logprobs of beam search, checked against the model re-run from scratch on prompt + beam
 * tokens: each entry's logprob is the raw log-softmax of that position's logits, and {@code top}
 * holds the k best tokens by rank (vLLM's order for beams).
 */
class BeamLogprobsTest {
  private static ModelRunner reference;

  /**
   * The engine's cache block size here, and the reference's: attention sums a block at a time, so
   * another block size moves logits by ~1e-7, and with generated rows' activations rounded to BF16
   * such a move can cross a rounding boundary (one beam token's logprob 3.4e-4 off with blocks of
   * 16 on an AMX machine).
   */
  private static final int BLOCK = 4;

  @BeforeAll
  static void openReference() {
    reference = ModelRunners.openDemo(64, BLOCK);
  }

  @AfterAll
  static void closeReference() {
    reference.close();
  }

  private static SamplingParams beam(int width, int maxTokens, Integer logprobs) {
    return SamplingParams.builder()
        .n(width)
        .temperature(0.0)
        .maxTokens(maxTokens)
        .ignoreEos(true)
        .logprobs(logprobs)
        .useBeamSearch(true)
        .build();
  }

  private static List<LogprobsText> logprobs(List<RequestUpdate> updates, int choice) {
    List<LogprobsText> out = null;
    for (ChoiceUpdate c : Driver.choices(updates, choice))
      if (c.logprobs() != null) {
        if (out == null) out = new ArrayList<>();
        out.addAll(c.logprobs());
      }
    return out;
  }

  @Test
  void everyReturnedBeamCarriesRawLogprobsAndTopAlternativesPerToken() {
    int width = 3, maxTokens = 5, k = 4;
    String text = "Beam search over a prompt";
    EngineSettings settings =
        new EngineSettings(BLOCK, 64, 0, 8, 256, 16, true, 0, true, List.of());
    List<RequestUpdate> events;
    try (Driver e = EngineTest.engine(settings, SchedulingPolicy.FCFS)) {
      assertNull(e.add(EngineTest.prompt("beam", text, beam(width, maxTokens, k))));
      events = e.drain().of("beam");
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed());
    }
    int[] prompt = EngineTest.encode(text);
    for (int i = 0; i < width; i++) {
      List<Integer> tokens = Driver.tokens(events, i);
      List<LogprobsText> entries = logprobs(events, i);
      assertNotNull(entries, "beam " + i + " has logprobs");
      assertEquals(maxTokens, tokens.size());
      assertEquals(tokens.size(), entries.size(), "one entry per generated token");
      List<Integer> seq = new ArrayList<>();
      for (int t : prompt) seq.add(t);
      for (int t = 0; t < tokens.size(); t++) {
        float[] row = referenceRow(seq, prompt.length);
        double lse = logSumExp(row);
        int token = tokens.get(t);
        LogprobsText entry = entries.get(t);
        TokenText chosen = entry.chosen();
        String where = "beam " + i + " token " + t;
        assertEquals(token, chosen.tokenId(), where);
        assertEquals(row[token] - lse, chosen.logprob(), 1e-4, where);
        assertEquals(decode(token), chosen.token(), where);
        int rank = 0;
        for (float v : row) if (v >= row[token]) rank++;
        assertEquals(rank, chosen.rank(), where);
        // Independent top-k: a full sort of the vocabulary by logit, ties by lower id.
        List<Integer> order =
            IntStream.range(0, row.length)
                .boxed()
                .sorted(
                    Comparator.comparingDouble((Integer id) -> -row[id]).thenComparingInt(id -> id))
                .toList();
        assertEquals(k, entry.top().size(), where);
        for (int j = 0; j < k; j++) {
          TokenText alt = entry.top().get(j);
          assertEquals(order.get(j), alt.tokenId(), where + " alternative " + j);
          assertEquals(j + 1, alt.rank(), where + " alternative " + j);
          assertEquals(row[alt.tokenId()] - lse, alt.logprob(), 1e-4, where + " alternative " + j);
          assertEquals(decode(alt.tokenId()), alt.token(), where + " alternative " + j);
          if (j > 0) assertTrue(alt.logprob() <= entry.top().get(j - 1).logprob(), where);
        }
        seq.add(token);
      }
    }
    for (int i = 0; i < width; i++) {
      ChoiceUpdate f = Driver.finish(events, i);
      assertEquals(FinishReason.LENGTH, f.finishReason());
      assertNull(f.stopReason());
    }
  }

  @Test
  void withoutLogprobsBeamsReportNone() {
    EngineSettings settings =
        new EngineSettings(BLOCK, 64, 0, 8, 256, 16, true, 0, true, List.of());
    try (Driver e = EngineTest.engine(settings, SchedulingPolicy.FCFS)) {
      e.add(EngineTest.prompt("plain", "Beam search over a prompt", beam(2, 3, null)));
      List<RequestUpdate> events = e.drain().of("plain");
      for (int i = 0; i < 2; i++) {
        assertEquals(3, Driver.tokens(events, i).size());
        assertNull(logprobs(events, i));
      }
    }
  }

  @Test
  void zeroTopLogprobsGivesTheChosenTokenOnlyAndTokenIdsWhenAsked() {
    EngineSettings settings =
        new EngineSettings(BLOCK, 64, 0, 8, 256, 16, true, 0, true, List.of());
    String text = "Beam search over a prompt";
    try (Driver e = EngineTest.engine(settings, SchedulingPolicy.FCFS)) {
      // return_tokens_as_token_ids: true
      e.add(
          GenerationRequest.prompt("ids", text, beam(2, 3, 0)).toBuilder()
              .returnTokensAsTokenIds(true)
              .build());
      List<RequestUpdate> events = e.drain().of("ids");
      for (int i = 0; i < 2; i++) {
        List<Integer> tokens = Driver.tokens(events, i);
        List<LogprobsText> entries = logprobs(events, i);
        assertEquals(tokens.size(), entries.size());
        for (int t = 0; t < tokens.size(); t++) {
          assertEquals("token_id:" + tokens.get(t), entries.get(t).chosen().token());
          assertEquals(List.of(), entries.get(t).top());
        }
      }
    }
  }

  private static String decode(int token) {
    return EngineTest.TEXT.tokenizer().decode(new int[] {token}, false, true);
  }

  private static double logSumExp(float[] row) {
    double max = Double.NEGATIVE_INFINITY;
    for (float v : row) max = Math.max(max, v);
    double sum = 0;
    for (float v : row) sum += Math.exp(v - max);
    return max + Math.log(sum);
  }

  /**
   * Logits after the whole sequence, recomputed from scratch (no cache reuse): its first {@code
   * promptLength} tokens as prompt rows, the rest as generated rows, as the engine runs them.
   */
  private static float[] referenceRow(List<Integer> seq, int promptLength) {
    int[] tokens = seq.stream().mapToInt(Integer::intValue).toArray();
    int[] table = new int[(tokens.length + BLOCK - 1) / BLOCK];
    for (int b = 0; b < table.length; b++) table[b] = b;
    var chunk = new ModelRunner.SequenceChunk(tokens, 0, table, false, 0, promptLength);
    return reference.forward(List.of(chunk)).get(0)[0];
  }
}
