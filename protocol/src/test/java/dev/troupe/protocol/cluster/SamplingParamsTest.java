package dev.troupe.protocol.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The value rules {@link SamplingParams} owns (checked wherever it is built: the gateway for
 * request values, the worker for the model's defaults) and the generation-config defaults it
 * applies once.
 */
class SamplingParamsTest {
  /** What the gateway sends when the client set none of the seven defaultable fields. */
  private static SamplingParams.Builder unset() {
    return SamplingParams.builder()
        .temperature(null)
        .topP(null)
        .topK(null)
        .minP(null)
        .presencePenalty(null)
        .frequencyPenalty(null)
        .repetitionPenalty(null);
  }

  private static final SamplingDefaults QWEN =
      new SamplingDefaults(0.6, 0.95, 20, 0.05, 1.05, 0.5, -0.25);

  @Test
  void absentFieldsTakeTheModelsGenerationConfig() {
    SamplingParams p = unset().build();
    assertFalse(p.resolved());
    SamplingParams s = p.withDefaults(QWEN);
    assertTrue(s.resolved());
    assertEquals(0.6, s.temperature());
    assertEquals(0.95, s.topP());
    assertEquals(20, s.topK());
    assertEquals(0.05, s.minP());
    assertEquals(1.05, s.repetitionPenalty());
    assertEquals(0.5, s.presencePenalty());
    assertEquals(-0.25, s.frequencyPenalty());
    assertEquals(
        s, s.withDefaults(SamplingDefaults.NONE), "applied once: later calls change nothing");
  }

  @Test
  void requestValuesWinOverTheModelsGenerationConfig() {
    SamplingParams s =
        unset()
            .temperature(1.0)
            .topP(1.0)
            .topK(-1)
            .minP(0.0)
            .repetitionPenalty(1.0)
            .presencePenalty(0.0)
            .frequencyPenalty(0.0)
            .build()
            .withDefaults(QWEN);
    assertEquals(1.0, s.temperature());
    assertEquals(1.0, s.topP());
    assertEquals(0, s.topK(), "-1 means off");
    assertEquals(0.0, s.minP());
    assertEquals(1.0, s.repetitionPenalty());
    assertEquals(0.0, s.presencePenalty());
    assertEquals(0.0, s.frequencyPenalty());
    // a request's greedy temperature still switches the model's filters off
    SamplingParams greedy = unset().temperature(0.0).build().withDefaults(QWEN);
    assertEquals(1.0, greedy.topP());
    assertEquals(0, greedy.topK());
    assertEquals(0.0, greedy.minP());
    assertEquals(1.05, greedy.repetitionPenalty(), "penalties are not sampling filters");
    // and so does the model's greedy default
    SamplingParams modelGreedy =
        unset()
            .topP(0.5)
            .build()
            .withDefaults(new SamplingDefaults(0.0, null, 40, null, null, null, null));
    assertTrue(modelGreedy.greedy());
    assertEquals(1.0, modelGreedy.topP());
    assertEquals(0, modelGreedy.topK());
  }

  @Test
  void partialGenerationConfigFallsBackToOpenAiDefaults() {
    SamplingParams s =
        unset()
            .topP(0.5)
            .build()
            .withDefaults(new SamplingDefaults(0.7, null, null, null, null, null, null));
    assertEquals(0.7, s.temperature());
    assertEquals(0.5, s.topP());
    assertEquals(0, s.topK());
    assertEquals(0.0, s.minP());
    assertEquals(1.0, s.repetitionPenalty());
    assertEquals(0.0, s.presencePenalty());
    assertEquals(0.0, s.frequencyPenalty());
    assertEquals(
        SamplingParams.builder().build(),
        unset().build().withDefaults(SamplingDefaults.NONE),
        "no generation config: OpenAI's");
  }

  @Test
  void anInvalidModelDefaultIsRefusedNamingTheField() {
    SamplingDefaults badTopP = new SamplingDefaults(null, 1.5, null, null, null, null, null);
    SamplingParams.InvalidValue e =
        assertThrows(
            SamplingParams.InvalidValue.class, () -> unset().build().withDefaults(badTopP));
    assertEquals("top_p", e.param());
    assertEquals(0.9, unset().topP(0.9).build().withDefaults(badTopP).topP(), "unused: no harm");
  }

  @Test
  void greedyWithSeveralChoicesDependsOnTheResolvedTemperature() {
    // n = 2 without a temperature is fine until the model's default makes it greedy
    SamplingParams two = unset().n(2).build();
    SamplingParams.InvalidValue e =
        assertThrows(
            SamplingParams.InvalidValue.class,
            () -> two.withDefaults(new SamplingDefaults(0.0, null, null, null, null, null, null)));
    assertEquals("n", e.param());
    assertEquals("n must be 1 when using greedy sampling, got 2.", e.getMessage());
    assertEquals(2, two.withDefaults(SamplingDefaults.NONE).n());
    assertEquals(
        3, unset().n(3).temperature(0.0).useBeamSearch(true).build().n(), "beams may be greedy");
  }

  @Test
  void valuesAreCheckedAndNormalizedAsVllmDoes() {
    assertEquals(0.01, SamplingParams.builder().temperature(0.001).build().temperature());
    assertEquals(0.0, SamplingParams.builder().temperature(0.0).build().temperature());
    for (Object[] c :
        new Object[][] {
          {SamplingParams.builder().temperature(-0.5), "temperature", "non-negative"},
          {SamplingParams.builder().temperature(Double.NaN), "temperature", "finite"},
          {SamplingParams.builder().topP(0.0), "top_p", "(0, 1]"},
          {SamplingParams.builder().topK(-2), "top_k", "0 (disable), or at least 1"},
          {SamplingParams.builder().minP(1.5), "min_p", "[0, 1]"},
          {SamplingParams.builder().presencePenalty(3.0), "presence_penalty", "[-2, 2]"},
          {SamplingParams.builder().frequencyPenalty(-2.5), "frequency_penalty", "[-2, 2]"},
          {SamplingParams.builder().repetitionPenalty(0.0), "repetition_penalty", "greater than"},
          {SamplingParams.builder().allowedTokenIds(List.of()), "allowed_token_ids", "empty"},
        }) {
      SamplingParams.InvalidValue e =
          assertThrows(
              SamplingParams.InvalidValue.class, () -> ((SamplingParams.Builder) c[0]).build());
      assertEquals(c[1], e.param());
      assertTrue(e.getMessage().contains((String) c[2]), e.getMessage());
    }
    assertNull(SamplingParams.builder().build().allowedTokenIds(), "null: every token allowed");
  }
}
