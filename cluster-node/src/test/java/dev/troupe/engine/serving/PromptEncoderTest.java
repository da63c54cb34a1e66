package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.input.PromptEncoder;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The gateway's prompt encoder computes exactly the ids the worker's input processor does. */
class PromptEncoderTest {

  @Test
  void sameIdsAsTheWorker() {
    try (Engine engine = TestEngines.demo(EngineSettings.small(), SchedulingPolicy.FCFS)) {
      int context = engine.inputs().maxModelLen();
      PromptEncoder encoder = new PromptEncoder(TestEngines.TEXT, true);
      List<GenerationRequest> requests =
          List.of(
              GenerationRequest.chat(
                  "chat",
                  List.of(
                      Map.of("role", "system", "content", "Be brief."),
                      Map.of("role", "user", "content", "What is a KV cache?")),
                  EngineTest.greedy(4)),
              GenerationRequest.prompt("raw", "Once upon a time", EngineTest.greedy(4)),
              GenerationRequest.prompt("special", "Hello", EngineTest.greedy(4)).toBuilder()
                  .addSpecialTokens(true)
                  .build(),
              GenerationRequest.prompt("cut", "one two three four five six", EngineTest.greedy(4))
                  .toBuilder()
                  .truncatePromptTokens(3)
                  .build());
      for (GenerationRequest r : requests)
        assertArrayEquals(
            engine.inputs().process(r).promptTokenIds(), encoder.encode(r, context), r.requestId());
      PromptEncoder strict = new PromptEncoder(TestEngines.TEXT, false);
      GenerationRequest ownTemplate =
          requests.get(0).toBuilder().chatTemplate("{{ messages[0]['content'] }}").build();
      assertThrows(Rejection.class, () -> strict.encode(ownTemplate, context));
    }
  }
}
