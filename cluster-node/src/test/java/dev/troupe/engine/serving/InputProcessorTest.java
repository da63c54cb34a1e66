package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.input.InputProcessor;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The input processor's prompt bound: a prompt too long for any prompt of the context is refused
 * before it is tokenized, and with {@code truncate_prompt_tokens} only the tail that can be kept is
 * tokenized, with the same ids as the whole prompt's tail.
 */
class InputProcessorTest {
  private static final int CONTEXT = 64;

  private static Engine engine() {
    return TestEngines.demo(
        new EngineSettings(16, 64, CONTEXT, 8, 256, 16, true, 0, true, List.of()),
        SchedulingPolicy.FCFS);
  }

  private static SamplingParams two() {
    return SamplingParams.builder().temperature(0.0).maxTokens(2).build();
  }

  /** The longest vocabulary entry, the bound's L. */
  private static long longest() {
    long l = 1;
    var t = TestEngines.TEXT.tokenizer();
    for (int id = 0; id < t.vocabSize(); id++) l = Math.max(l, t.idToToken(id).length());
    return l;
  }

  @Test
  void aPromptLongerThanTheContextCanHoldIsRefusedUntokenized() {
    try (Engine e = engine()) {
      InputProcessor inputs = e.inputs();
      long bound = 4 * longest() * CONTEXT;
      String huge = "a".repeat((int) bound + 1);
      long start = System.nanoTime();
      Rejection r =
          assertThrows(
              Rejection.class, () -> inputs.process(GenerationRequest.prompt("r", huge, two())));
      assertEquals("prompt", r.param());
      assertTrue(r.getMessage().contains(huge.length() + " characters"), r.getMessage());
      assertTrue(r.getMessage().contains("maximum context length is " + CONTEXT), r.getMessage());
      // /tokenize too, and through a chat: the rendered text is what is bounded
      assertEquals(
          "prompt",
          assertThrows(
                  Rejection.class,
                  () ->
                      inputs.tokenize(null, huge, null, false, false, true, null, Map.of(), false))
              .param());
      Rejection chat =
          assertThrows(
              Rejection.class,
              () ->
                  inputs.process(
                      GenerationRequest.chat(
                          "c", List.of(Map.of("role", "user", "content", huge)), two())));
      assertEquals("messages", chat.param());
      // Within the bound, the count decides, with vLLM's message.
      Rejection counted =
          assertThrows(
              Rejection.class,
              () -> inputs.process(GenerationRequest.prompt("n", "word ".repeat(100), two())));
      assertTrue(counted.getMessage().contains("input tokens"), counted.getMessage());
      assertTrue(System.nanoTime() - start < 60_000_000_000L);
    }
  }

  @Test
  void truncationTokenizesOnlyTheTailItKeeps() {
    try (Engine e = engine()) {
      long tail = 4 * longest() * (16 + 1024);
      StringBuilder sb = new StringBuilder();
      String[] words = {"alpha ", "beta ", "gamma ", "δέλτα ", "🙂 ", "x", "\n"};
      for (int i = 0; sb.length() < tail + 50_000; i++) sb.append(words[i % words.length]);
      String prompt = sb.toString();
      EngineRequest r =
          e.inputs()
              .process(
                  GenerationRequest.prompt("t", prompt, two()).toBuilder()
                      .truncatePromptTokens(16)
                      .build());
      int[] all = TestEngines.TEXT.tokenizer().encode(prompt, false);
      assertArrayEquals(
          Arrays.copyOfRange(all, all.length - 16, all.length),
          r.promptTokenIds(),
          "the kept tail equals the whole prompt's");
    }
  }
}
