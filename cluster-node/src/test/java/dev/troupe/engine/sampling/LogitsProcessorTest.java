package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LogitsProcessorTest {

  private static final String SET = ProcessorFixtures.SetLogit.class.getName();
  private static final String BOOST = ProcessorFixtures.BoostZero.class.getName();
  private static final String MAX = ProcessorFixtures.RecordMax.class.getName();
  private static final String EXPLODING =
      LogitsProcessorTest.class.getPackageName() + ".ProcessorFixtures$Exploding";
  private static final String NOT = ProcessorFixtures.NotAProcessor.class.getName();

  private static final LogitsProcessorRegistry REGISTRY =
      LogitsProcessorRegistry.allowing(List.of(SET, BOOST, MAX, NOT));

  private static SamplerFactory factory() {
    return new SamplerFactory(10, null, EosTokens.none(), REGISTRY);
  }

  @BeforeEach
  void clear() {
    ProcessorFixtures.seen.clear();
  }

  @Test
  void notAllowedClassesAreRefusedWithoutBeingLoaded() {
    Params p = new Params();
    p.processors = List.of(new LogitsProcessorSpec(EXPLODING, null, null));
    var e =
        assertThrows(
            InvalidSamplingParamsException.class, () -> factory().create(p.build(), new int[0], 0));
    assertEquals("logits_processors", e.param());
    assertTrue(e.getMessage().contains("not allowed"), e.getMessage());
    assertEquals(0, ProcessorFixtures.explodingInitialised);
    // the default registry refuses everything
    var none = new SamplerFactory(10, null, EosTokens.none(), LogitsProcessorRegistry.none());
    p.processors = List.of(new LogitsProcessorSpec(BOOST, null, null));
    assertThrows(InvalidSamplingParamsException.class, () -> none.validate(p.build()));
  }

  @Test
  void badClassesAndArgumentsAre400s() {
    Params p = new Params();
    p.processors = List.of(new LogitsProcessorSpec(NOT, null, null));
    assertTrue(
        assertThrows(InvalidSamplingParamsException.class, () -> factory().validate(p.build()))
            .getMessage()
            .contains("does not implement"));
    p.processors = List.of(new LogitsProcessorSpec(BOOST, List.of(1), null));
    assertThrows(InvalidSamplingParamsException.class, () -> factory().validate(p.build()));
    p.processors = List.of(new LogitsProcessorSpec(SET, List.of(), null)); // ctor throws
    var e =
        assertThrows(
            InvalidSamplingParamsException.class, () -> factory().create(p.build(), new int[0], 0));
    assertTrue(e.getMessage().contains("token id required"), e.getMessage());
  }

  @Test
  void runsAfterLogitBiasAndBeforePenaltiesWithArgsKwargsAndXargs() {
    Params p = new Params();
    p.temperature = 0;
    p.repetition = 2.0;
    p.logitBias = Map.of(2, 50.0);
    p.xargs = Map.of("tag", "x1");
    p.processors = List.of(new LogitsProcessorSpec(SET, List.of(2), Map.of("value", 4.0)));
    float[] logits = new float[10];
    logits[3] = 3f;
    // bias first (2 -> 50), then the processor (2 -> 4), then repetition (prompt has 2: 4 / 2 = 2)
    Sampler s = factory().create(p.build(), new int[] {2, 7}, 1);
    assertEquals(3, s.next(logits).token());
    s.accept(3);
    s.next(logits);
    assertEquals(
        List.of("choice=1 prompt=2 out=0 xargs=x1", "choice=1 prompt=2 out=1:3 xargs=x1"),
        ProcessorFixtures.seen);
  }

  @Test
  void noArgumentProcessorsAndRequestOrder() {
    Params p = new Params();
    p.temperature = 0;
    p.processors =
        List.of(
            new LogitsProcessorSpec(BOOST, null, null),
            new LogitsProcessorSpec(SET, List.of(0), Map.of("value", -1.0)));
    float[] logits = new float[10];
    logits[5] = 1f;
    // BoostZero then SetLogit(0 -> -1): request order, so token 5 wins
    assertEquals(5, factory().create(p.build(), new int[0], 0).next(logits).token());
  }

  @Test
  void argmaxInvariantProcessorsRunAfterTemperatureForRandomRowsOnly() {
    Params p = new Params();
    p.temperature = 0.5;
    p.seed = 1L;
    p.processors = List.of(new LogitsProcessorSpec(MAX, null, null));
    float[] logits = new float[10];
    logits[4] = 1.5f;
    factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(List.of("max=3.0"), ProcessorFixtures.seen);
    p.temperature = 0;
    factory().create(p.build(), new int[0], 0).next(logits);
    assertEquals(1, ProcessorFixtures.seen.size());
  }
}
