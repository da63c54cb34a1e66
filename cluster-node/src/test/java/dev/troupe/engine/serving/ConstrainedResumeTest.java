package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.GenerationRequest.Resume;
import dev.troupe.protocol.cluster.GenerationRequest.ResumedChoice;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A constrained request migrated to another replica continues exactly: the replayed tokens advance
 * each choice's grammar matcher (and its reasoning phase) and the output processor's reasoning and
 * tool-call parsers, so what the first replica delivered followed by what the second sends equals
 * the uninterrupted run, and stays valid (the demo model's weights are random: only the constraint
 * makes it valid).
 */
class ConstrainedResumeTest {

  private static List<RequestUpdate> run(Supplier<Driver> engine, GenerationRequest r) {
    try (Driver d = engine.get()) {
      assertNull(d.add(r));
      List<RequestUpdate> updates = d.drain().of(r.requestId());
      assertTrue(d.failures.isEmpty(), d.failures.toString());
      return updates;
    }
  }

  private static Resume delivered(List<RequestUpdate> updates, int cut, int n) {
    List<List<Integer>> ids = new ArrayList<>();
    boolean[] finished = new boolean[n];
    for (int i = 0; i < n; i++) ids.add(new ArrayList<>());
    for (RequestUpdate u : updates.subList(0, cut))
      for (ChoiceUpdate c : u.choices()) {
        for (int t : c.tokenIds()) ids.get(c.index()).add(t);
        if (c.finishReason() != null) finished[c.index()] = true;
      }
    List<ResumedChoice> choices = new ArrayList<>();
    for (int i = 0; i < n; i++) choices.add(new ResumedChoice(ids.get(i), finished[i]));
    return new Resume(choices);
  }

  /** A choice's tool calls as name + concatenated arguments (ids are drawn per replica). */
  private static List<String> calls(List<RequestUpdate> updates, int choice) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<Integer, String[]> e :
        ReasoningAndToolsEngineTest.calls(updates, choice).entrySet())
      out.add(e.getKey() + ":" + e.getValue()[1] + ":" + e.getValue()[2]);
    return out;
  }

  /** Cuts the whole run at {@code cuts} spread points and checks each joined run equals it. */
  private static void resumesExactly(Supplier<Driver> engine, GenerationRequest request, int cuts) {
    int n = request.sampling().n();
    List<RequestUpdate> whole = run(engine, request);
    assertTrue(whole.size() >= 4, "long enough to cut: " + whole.size());
    for (int k = 1; k <= cuts; k++) {
      int cut = Math.max(1, k * (whole.size() - 1) / cuts);
      GenerationRequest resumed =
          request.toBuilder().requestId("resumed-" + cut).resume(delivered(whole, cut, n)).build();
      List<RequestUpdate> joined = new ArrayList<>(whole.subList(0, cut));
      joined.addAll(run(engine, resumed));
      String at = "cut after update " + cut + " of " + whole.size();
      for (int i = 0; i < n; i++) {
        assertEquals(tokens(whole, i), tokens(joined, i), at + ", choice " + i + " tokens");
        assertEquals(text(whole, i), text(joined, i), at + ", choice " + i + " content");
        assertEquals(
            ReasoningAndToolsEngineTest.reasoning(whole, i),
            ReasoningAndToolsEngineTest.reasoning(joined, i),
            at + ", choice " + i + " reasoning");
        assertEquals(calls(whole, i), calls(joined, i), at + ", choice " + i + " tool calls");
        assertEquals(finish(whole, i).finishReason(), finish(joined, i).finishReason(), at);
        assertEquals(finish(whole, i).stopReason(), finish(joined, i).stopReason(), at);
      }
    }
  }

  @Test
  void aJsonSchemaRequestWithSeededChoicesContinuesExactly() {
    SamplingParams p =
        StructuredOutputsEngineTest.sampling(2, 11, 200)
            .structuredOutputs(StructuredOutputsEngineTest.compactSchema())
            .build();
    resumesExactly(
        () -> StructuredOutputsEngineTest.engine(EngineSettings.small()),
        StructuredOutputsEngineTest.request("j", p),
        4);
  }

  @Test
  void reasoningThenTheConstraintContinuesExactlyStreamedAndNot() {
    int thinkEnd = TestEngines.TEXT.tokenizer().tokenToId("</think>").getAsInt();
    for (boolean streamed : new boolean[] {true, false}) {
      SamplingParams p =
          SamplingParams.builder()
              .n(2)
              .temperature(1.0)
              .seed(3L)
              .maxTokens(80)
              .logitBias(Map.of(thinkEnd, 11.0)) // ends the reasoning after a few tokens
              .structuredOutputs(ReasoningAndToolsEngineTest.COMPACT_OBJECT)
              .build();
      GenerationRequest r =
          GenerationRequest.builder("r")
              .prompt("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
              .sampling(p)
              .streamed(streamed)
              .build();
      List<RequestUpdate> whole = run(ReasoningAndToolsEngineTest::engine, r);
      for (int i = 0; i < 2; i++) {
        int end = tokens(whole, i).indexOf(thinkEnd);
        assertTrue(end > 0, "reasoning, then content: " + tokens(whole, i));
        assertTrue(!text(whole, i).isEmpty(), "the constrained content");
      }
      resumesExactly(ReasoningAndToolsEngineTest::engine, r, 6);
    }
  }

  @Test
  void requiredToolCallsContinueExactlyStreamedAndNot() {
    for (boolean streamed : new boolean[] {true, false}) {
      GenerationRequest r =
          GenerationRequest.builder("t")
              .prompt("call a tool")
              .chatTemplateKwargs(ReasoningAndToolsEngineTest.NO_THINKING)
              .sampling(
                  SamplingParams.builder()
                      .temperature(1.0)
                      .seed(5L)
                      .maxTokens(120)
                      .structuredOutputs(
                          StructuredOutputsParams.json(
                                  ReasoningAndToolsEngineTest.REQUIRED_SCHEMA, "tools")
                              .withJsonOptions(true, false, null))
                      .build())
              .toolCalling(ToolCalling.required(true))
              .streamed(streamed)
              .build();
      resumesExactly(ReasoningAndToolsEngineTest::engine, r, 3);
    }
  }

  @Test
  void aDeliveredTokenTheGrammarRefusesIsAnInternalErrorNotAnInvalidOutput() {
    SamplingParams p =
        StructuredOutputsEngineTest.sampling(1, 1, 50)
            .structuredOutputs(
                StructuredOutputsParams.choice(List.of("yes", "no"), "structured_outputs.choice"))
            .build();
    int x = TestEngines.TEXT.tokenizer().tokenToId("x").getAsInt();
    try (Driver d = StructuredOutputsEngineTest.engine(EngineSettings.small())) {
      Rejection r =
          d.add(
              StructuredOutputsEngineTest.request("bad", p)
                  .withResume(new Resume(List.of(new ResumedChoice(List.of(x), false)))));
      assertNotNull(r);
      assertEquals(Rejection.Kind.INTERNAL, r.kind());
      assertTrue(r.getMessage().contains("structured-output constraint"), r.getMessage());
      assertEquals(0, d.engine.core().scheduler().numWaiting(), "nothing was queued");
    }
  }
}
