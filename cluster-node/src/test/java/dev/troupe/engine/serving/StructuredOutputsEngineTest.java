package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static dev.troupe.engine.serving.Driver.usage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Structured outputs through the whole engine on the demo model, whose weights are random: every
 * valid output below can only come from the constraint. Each schema is bounded (short strings,
 * bounded numbers and arrays, compact JSON) so that a random model completes it.
 */
class StructuredOutputsEngineTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  static final String SCHEMA =
      """
      {"type":"object","properties":{
        "name":{"type":"string","maxLength":6},
        "age":{"type":"integer","minimum":0,"maximum":120},
        "tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":2},
        "ok":{"type":"boolean"}},
       "required":["name","age","tags","ok"]}
      """;

  static Driver engine(EngineSettings settings) {
    return new Driver(
        Engine.create(
            "demo",
            TestEngines.runner(settings.numBlocks(), settings.blockSize()),
            TestEngines.TEXT,
            settings,
            SchedulingPolicy.FCFS,
            TestEngines.TEXT::compileTemplate,
            SamplingDefaults.NONE,
            null,
            StructuredOutputSettings.defaults()));
  }

  static SamplingParams.Builder sampling(int n, long seed, int maxTokens) {
    return SamplingParams.builder().n(n).temperature(1.0).seed(seed).maxTokens(maxTokens);
  }

  static StructuredOutputsParams compactSchema() {
    return StructuredOutputsParams.json(SCHEMA, "structured_outputs.json")
        .withJsonOptions(true, false, null);
  }

  static GenerationRequest request(String id, SamplingParams p) {
    return GenerationRequest.prompt(id, "Describe a person as JSON.", p);
  }

  @Test
  void jsonSchemaChoicesAreValidAndEndWithStop() throws Exception {
    var validator =
        JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
            .getSchema(JSON.readTree(SCHEMA));
    try (Driver e = engine(EngineSettings.small())) {
      assertNull(
          e.add(request("j", sampling(3, 7, 200).structuredOutputs(compactSchema()).build())));
      List<RequestUpdate> u = e.drain().of("j");
      for (int i = 0; i < 3; i++) {
        JsonNode doc = JSON.readTree(text(u, i));
        assertTrue(validator.validate(doc).isEmpty(), text(u, i));
        assertEquals(FinishReason.STOP, finish(u, i).finishReason(), "the grammar completed");
        Object reason = finish(u, i).stopReason();
        assertTrue(
            reason == null || List.of(151643, 151645).contains(reason),
            "ended by an EOS: " + reason);
        assertTrue(
            !text(u, i).contains("\n") && !text(u, i).contains("  "), "compact: " + text(u, i));
      }
    }
  }

  @Test
  void seedsReproduceAndMaxTokensCutsWithLength() {
    String first;
    try (Driver e = engine(EngineSettings.small())) {
      e.add(request("a", sampling(1, 42, 200).structuredOutputs(compactSchema()).build()));
      first = text(e.drain().of("a"), 0);
    }
    try (Driver e = engine(EngineSettings.small())) {
      e.add(request("b", sampling(1, 42, 200).structuredOutputs(compactSchema()).build()));
      e.add(request("c", sampling(1, 42, 3).structuredOutputs(compactSchema()).build()));
      List<RequestUpdate> b = e.drain().of("b");
      assertEquals(first, text(b, 0), "same seed, same constrained output");
      List<RequestUpdate> c = e.of("c");
      assertEquals(FinishReason.LENGTH, finish(c, 0).finishReason());
      assertEquals(3, tokens(c, 0).size());
      assertTrue(first.startsWith(text(c, 0)), "the cut output is the start of the same document");
    }
  }

  @Test
  void aPrefixCacheHitLeavesTheConstrainedOutputUnchanged() {
    String prompt = "Describe a person as JSON. ".repeat(12);
    try (Driver e = engine(EngineSettings.small().withPrefixCaching(true))) {
      SamplingParams p = sampling(2, 5, 200).structuredOutputs(compactSchema()).build();
      e.add(GenerationRequest.prompt("cold", prompt, p));
      List<RequestUpdate> cold = e.drain().of("cold");
      e.add(GenerationRequest.prompt("warm", prompt, p));
      List<RequestUpdate> warm = e.drain().of("warm");
      assertTrue(usage(warm).cachedPromptTokens() > 0, "the prompt was found cached");
      for (int i = 0; i < 2; i++) assertEquals(text(cold, i), text(warm, i));
    }
  }

  @Test
  void regexChoiceAndGrammar() {
    try (Driver e = engine(EngineSettings.small())) {
      e.add(
          request(
              "r",
              sampling(2, 1, 50)
                  .structuredOutputs(
                      StructuredOutputsParams.regex(
                          "[a-z]{2,4}-[0-9]{3}", "structured_outputs.regex"))
                  .build()));
      e.add(
          request(
              "c",
              sampling(4, 2, 50)
                  .structuredOutputs(
                      StructuredOutputsParams.choice(
                          List.of("yes", "no", "maybe"), "structured_outputs.choice"))
                  .build()));
      e.add(
          request(
              "g",
              sampling(2, 3, 60)
                  .structuredOutputs(
                      StructuredOutputsParams.grammar(
                          "root ::= \"(\" num (\"+\" num){0,2} \")\"\nnum ::= [1-9] [0-9]?",
                          "structured_outputs.grammar"))
                  .build()));
      e.drain();
      for (int i = 0; i < 2; i++)
        assertTrue(Pattern.matches("[a-z]{2,4}-[0-9]{3}", text(e.of("r"), i)), text(e.of("r"), i));
      for (int i = 0; i < 4; i++)
        assertTrue(List.of("yes", "no", "maybe").contains(text(e.of("c"), i)), text(e.of("c"), i));
      for (int i = 0; i < 2; i++)
        assertTrue(
            Pattern.matches("\\([1-9][0-9]?(\\+[1-9][0-9]?){0,2}\\)", text(e.of("g"), i)),
            text(e.of("g"), i));
    }
  }

  @Test
  void completionEndsTheChoiceEvenWithIgnoreEosOrMinTokens() {
    try (Driver e = engine(EngineSettings.small())) {
      StructuredOutputsParams yes =
          StructuredOutputsParams.choice(List.of("yes"), "structured_outputs.choice");
      e.add(request("i", sampling(1, 5, 50).ignoreEos(true).structuredOutputs(yes).build()));
      e.add(request("m", sampling(1, 5, 50).minTokens(20).structuredOutputs(yes).build()));
      e.drain();
      for (String id : List.of("i", "m")) {
        assertEquals("yes", text(e.of(id), 0));
        assertEquals(FinishReason.STOP, finish(e.of(id), 0).finishReason(), id);
      }
    }
  }

  @Test
  void logprobsAndStopStringsWorkUnderAConstraint() {
    try (Driver e = engine(EngineSettings.small())) {
      e.add(
          request("l", sampling(1, 9, 200).logprobs(2).structuredOutputs(compactSchema()).build()));
      e.add(
          request(
              "s",
              sampling(1, 9, 200).stop(List.of(",")).structuredOutputs(compactSchema()).build()));
      e.drain();
      for (RequestUpdate u : e.of("l"))
        for (var c : u.choices())
          if (c.logprobs() != null)
            for (var lp : c.logprobs()) assertTrue(lp.chosen().logprob() >= -9999f);
      var s = finish(e.of("s"), 0);
      assertEquals(FinishReason.STOP, s.finishReason());
      assertEquals(",", s.stopReason());
      assertTrue(text(e.of("s"), 0).startsWith("{\"name\": \""), text(e.of("s"), 0));
    }
  }

  @Test
  void preemptionDoesNotChangeConstrainedOutput() {
    List<String> ids = List.of("a", "b", "c", "d");
    // 8 blocks of 4 = 32 positions for four requests that each grow past 20
    EngineSettings tiny = new EngineSettings(4, 8, 0, 8, 64, 16, true, 0, true, List.of());
    String crowded;
    try (Driver e = engine(tiny)) {
      for (String id : ids)
        e.add(
            GenerationRequest.prompt(
                id, "x", sampling(1, 11, 25).structuredOutputs(compactSchema()).build()));
      e.drain();
      assertTrue(
          e.failures.isEmpty() && e.engine.core().scheduler().numPreemptions() > 0,
          "the cache forces preemption");
      crowded = String.join("|", ids.stream().map(id -> text(e.of(id), 0)).toList());
    }
    try (Driver solo = engine(EngineSettings.small())) {
      for (String id : ids)
        solo.add(
            GenerationRequest.prompt(
                id, "x", sampling(1, 11, 25).structuredOutputs(compactSchema()).build()));
      solo.drain();
      assertEquals(
          String.join("|", ids.stream().map(id -> text(solo.of(id), 0)).toList()), crowded);
    }
  }

  @Test
  void badConstraintsAreRejectedWithTheirField() {
    try (Driver e = engine(EngineSettings.small())) {
      Rejection r =
          e.add(
              request(
                  "x",
                  sampling(1, 1, 5)
                      .structuredOutputs(
                          StructuredOutputsParams.regex("(a", "structured_outputs.regex"))
                      .build()));
      assertEquals("structured_outputs.regex", r.param());
      assertTrue(
          r.getMessage().startsWith("Failed to transform regex into a grammar:"), r.getMessage());
      Rejection beam =
          e.add(
              request(
                  "y",
                  sampling(2, 1, 5)
                      .temperature(0.0)
                      .useBeamSearch(true)
                      .structuredOutputs(compactSchema())
                      .build()));
      assertEquals("use_beam_search", beam.param());
      Rejection big =
          e.add(
              request(
                  "z",
                  sampling(1, 1, 5)
                      .structuredOutputs(
                          StructuredOutputsParams.regex("[ab]*a[ab]{25}", "response_format"))
                      .build()));
      assertEquals("response_format", big.param());
    }
  }
}
