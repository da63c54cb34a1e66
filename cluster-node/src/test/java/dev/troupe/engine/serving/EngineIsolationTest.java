package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.tokens;
import static dev.troupe.engine.serving.Driver.usage;
import static dev.troupe.engine.serving.EngineTest.encode;
import static dev.troupe.engine.serving.EngineTest.greedy;
import static dev.troupe.engine.serving.EngineTest.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineCore;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.testing.LogCapture;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 item 2: whatever one request brings fails that request alone, with a clear error, while
 * the other requests of the same batch complete exactly as they would alone; a failing forward pass
 * is retried for the requests it touched, not dropped.
 */
class EngineIsolationTest {
  /** The demo model's embedding has 151,936 rows; its (Qwen3) tokenizer knows 151,669 ids. */
  private static final int PADDED_ID = 151_700;

  private static final List<String> FAULTY =
      List.of(
          FaultyProcessors.ThrowsAfter.class.getName(), FaultyProcessors.Overflows.class.getName());

  private static EngineSettings settings() {
    return new EngineSettings(16, 64, 0, 8, 256, 16, true, 0, true, FAULTY);
  }

  private static Driver driver() {
    return new Driver(TestEngines.demo(settings(), SchedulingPolicy.FCFS));
  }

  /** Two ordinary greedy requests that share every step with the faulty one. */
  private static void addNeighbours(Driver e) {
    assertNull(e.add(prompt("a", "The quick brown fox", greedy(6))));
    assertNull(e.add(prompt("b", "Once upon a time", greedy(6))));
  }

  private static Map<String, List<Integer>> alone;

  /** The neighbours' tokens when nothing else runs. */
  private static synchronized Map<String, List<Integer>> alone() {
    if (alone == null)
      try (Driver e = driver()) {
        addNeighbours(e);
        e.drain();
        alone = Map.of("a", tokens(e.of("a"), 0), "b", tokens(e.of("b"), 0));
      }
    return alone;
  }

  private static void assertNeighboursUnharmed(Driver e) {
    assertEquals(6, alone().get("a").size());
    assertEquals(alone().get("a"), tokens(e.of("a"), 0));
    assertEquals(alone().get("b"), tokens(e.of("b"), 0));
    assertEquals(FinishReason.LENGTH, finish(e.of("a"), 0).finishReason());
    assertFalse(e.failures.containsKey("a") || e.failures.containsKey("b"), e.failures.toString());
  }

  @Test
  void aPaddedVocabularyIdWithLogprobsDecodesToNothing() {
    try (Driver e = driver()) {
      addNeighbours(e);
      // allowed_token_ids forces an id past the tokenizer; logit_bias makes another one win.
      SamplingParams forced =
          greedy(4).toBuilder().allowedTokenIds(List.of(PADDED_ID)).logprobs(3).build();
      SamplingParams biased =
          greedy(4).toBuilder().logitBias(Map.of(PADDED_ID + 1, 100.0)).logprobs(2).build();
      assertNull(e.add(prompt("pad", "Hello", forced)));
      assertNull(e.add(prompt("bias", "Hello", biased)));
      e.drain();
      assertNeighboursUnharmed(e);
      for (String id : List.of("pad", "bias")) {
        List<RequestUpdate> u = e.of(id);
        int expected = id.equals("pad") ? PADDED_ID : PADDED_ID + 1;
        assertEquals(List.of(expected, expected, expected, expected), tokens(u, 0), id);
        assertEquals("", Driver.text(u, 0), "a padded id has no text, as in vLLM");
        LogprobsText first = u.get(0).choices().get(0).logprobs().get(0);
        assertEquals(expected, first.chosen().tokenId());
        assertEquals("", first.chosen().token());
        assertEquals(4, usage(u).completionTokens());
      }
    }
  }

  @Test
  void aThrowingLogitsProcessorFailsOnlyItsRequestMidStream() {
    try (Driver e = driver()) {
      addNeighbours(e);
      SamplingParams p =
          greedy(6).toBuilder()
              .logitsProcessors(
                  List.of(
                      new LogitsProcessorSpec(
                          FaultyProcessors.ThrowsAfter.class.getName(), List.of(2), Map.of())))
              .build();
      assertNull(e.add(prompt("bad", "Hello there", p)));
      e.drain();
      assertNeighboursUnharmed(e);
      assertEquals(2, tokens(e.of("bad"), 0).size(), "its first tokens were sent");
      Rejection why = e.failures.get("bad");
      assertEquals(Rejection.Kind.BAD_REQUEST, why.kind());
      assertEquals("logits_processors", why.param());
      assertTrue(why.getMessage().contains("gave up after 2 tokens"), why.getMessage());
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed(), "its blocks are free");
    }
  }

  @Test
  void aStackOverflowInRequestCodeFailsOnlyThatRequest() {
    try (Driver e = driver()) {
      addNeighbours(e);
      SamplingParams p =
          greedy(4).toBuilder()
              .logitsProcessors(
                  List.of(
                      new LogitsProcessorSpec(
                          FaultyProcessors.Overflows.class.getName(), List.of(), Map.of())))
              .build();
      assertNull(e.add(prompt("deep", "Hello there", p)));
      e.drain();
      assertNeighboursUnharmed(e);
      Rejection why = e.failures.get("deep");
      assertEquals(Rejection.Kind.INTERNAL, why.kind());
      assertTrue(why.getMessage().contains("StackOverflowError"), why.getMessage());
    }
  }

  @Test
  void templateErrorsAreTheirRequestsOwn400() {
    try (Driver e = driver()) {
      addNeighbours(e);
      e.step();
      List<Map<String, Object>> hi = List.of(Map.of("role", "user", "content", "Hi"));
      String nested = "{{ " + "(".repeat(20_000) + "1" + ")".repeat(20_000) + " }}";
      for (String template : List.of("{% for %}", "{{ raise_exception('no') }}", nested)) {
        Rejection r =
            e.add(
                GenerationRequest.chat("t", hi, greedy(2)).toBuilder()
                    .chatTemplate(template)
                    .build());
        assertEquals(Rejection.Kind.BAD_REQUEST, r.kind(), r.getMessage());
        assertEquals("chat_template", r.param(), r.getMessage());
      }
      e.drain();
      assertNeighboursUnharmed(e);
    }
  }

  @Test
  void aFailedForwardPassIsRetriedForTheRequestsItTouched() {
    AtomicInteger calls = new AtomicInteger();
    ModelRunner flaky =
        new TestEngines.Unclosed(TestEngines.runner(64, 16)) {
          @Override
          public List<float[][]> forward(List<SequenceChunk> batch) {
            if (calls.incrementAndGet() == 3) throw new IllegalStateException("device lost");
            return super.forward(batch);
          }
        };
    try (LogCapture log = LogCapture.of(EngineCore.class);
        Driver e =
            new Driver(
                TestEngines.demo(
                    flaky, settings(), SchedulingPolicy.FCFS, SamplingDefaults.NONE))) {
      addNeighbours(e);
      e.drain();
      assertTrue(calls.get() > 3);
      assertNeighboursUnharmed(e); // recomputed from scratch: the same tokens, nothing dropped
      assertEquals(0, e.engine.core().scheduler().blocks().numUsed());
      assertEquals(1, log.errors().size(), "the failed pass is logged once: " + log.errors());
      assertTrue(log.errors().get(0).startsWith("forward pass failed; recomputing the "));
    }
  }

  @Test
  void aRequestWhoseForwardPassKeepsFailingIsFailedAndTheEngineGoesOn() {
    int poison = encode("poison")[0];
    ModelRunner picky =
        new TestEngines.Unclosed(TestEngines.runner(64, 16)) {
          @Override
          public List<float[][]> forward(List<SequenceChunk> batch) {
            for (SequenceChunk c : batch)
              for (int t : c.tokens()) if (t == poison) throw new IllegalStateException("nan");
            return super.forward(batch);
          }
        };
    try (LogCapture log = LogCapture.of(EngineCore.class);
        Driver e =
            new Driver(
                TestEngines.demo(
                    picky, settings(), SchedulingPolicy.FCFS, SamplingDefaults.NONE))) {
      assertNull(e.add(prompt("p", "poison", greedy(3))));
      e.drain();
      assertEquals(
          List.of(
              "forward pass failed; recomputing the 1 requests of the step",
              "forward pass failed; recomputing the 1 requests of the step",
              "forward pass failed; recomputing the 1 requests of the step"),
          log.errors());
      Rejection why = e.failures.get("p");
      assertEquals(Rejection.Kind.INTERNAL, why.kind());
      assertTrue(why.getMessage().contains("failed 3 times"), why.getMessage());
      addNeighbours(e);
      e.drain();
      assertNeighboursUnharmed(e);
    }
  }
}
