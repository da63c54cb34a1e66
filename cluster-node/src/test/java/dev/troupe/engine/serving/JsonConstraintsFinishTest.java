package dev.troupe.engine.serving;

import static dev.troupe.engine.serving.Driver.finish;
import static dev.troupe.engine.serving.Driver.text;
import static dev.troupe.engine.serving.Driver.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import dev.troupe.scheduler.SchedulingPolicy;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * JSON constraints with the defaults (any whitespace, unbounded strings and numbers) on the random
 * demo model, which almost never closes a string by itself: every seed ends in a document valid
 * under its schema within {@code max_tokens}, with at most 12 whitespace characters in a row
 * between tokens. The budget steers the outputs that would have been cut to their completion; they
 * end with {@code length}.
 */
class JsonConstraintsFinishTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_TOKENS = 100;
  private static final int SEEDS = 4;
  private static final Pattern WHITESPACE_RUN = Pattern.compile("[ \n\t]{13}");
  private static final Pattern STRING = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"");

  private static final String PARAMETERS =
      """
      {"type":"object","properties":{"location":{"type":"string"},
        "unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},
       "required":["location","days"]}""";

  /** What response_format json_object / json_schema, tool_choice required and named compile to. */
  private static Map<String, StructuredOutputsParams> constraints() {
    Map<String, StructuredOutputsParams> m = new LinkedHashMap<>();
    m.put("{\"type\":\"object\"}", StructuredOutputsParams.jsonObject("response_format"));
    m.put(
        """
        {"type":"object","properties":{"name":{"type":"string"},"age":{"type":"number"},
          "tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"]}""",
        null);
    m.put(
        """
        {"type":"array","minItems":1,"items":{"anyOf":[{"properties":{
          "name":{"type":"string","enum":["get_weather"]},"parameters":%s},
          "required":["name","parameters"]}]}}"""
            .formatted(PARAMETERS),
        null);
    m.put(PARAMETERS, null);
    m.replaceAll(
        (schema, p) -> p != null ? p : StructuredOutputsParams.json(schema, "response_format"));
    return m;
  }

  private static Driver engine(StructuredOutputSettings structured) {
    EngineSettings settings = EngineSettings.small();
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
            structured));
  }

  /** Runs every constraint for every seed; the outputs by constraint schema, then seed. */
  private static Map<String, List<List<RequestUpdate>>> run(StructuredOutputSettings structured) {
    Map<String, List<List<RequestUpdate>>> out = new LinkedHashMap<>();
    try (Driver e = engine(structured)) {
      int k = 0;
      for (var c : constraints().entrySet())
        for (long seed = 0; seed < SEEDS; seed++) {
          SamplingParams p =
              SamplingParams.builder()
                  .temperature(1.0)
                  .seed(seed)
                  .maxTokens(MAX_TOKENS)
                  .structuredOutputs(c.getValue())
                  .build();
          assertNull(e.add(GenerationRequest.prompt("r" + k++, "Answer in JSON.", p)));
        }
      e.drain();
      k = 0;
      for (String schema : constraints().keySet()) {
        List<List<RequestUpdate>> runs = new java.util.ArrayList<>();
        for (int seed = 0; seed < SEEDS; seed++) runs.add(e.of("r" + k++));
        out.put(schema, runs);
      }
    }
    return out;
  }

  @Test
  void everyJsonConstraintEndsValidWithinItsBudgetForEverySeed() throws Exception {
    EnumSet<FinishReason> reasons = EnumSet.noneOf(FinishReason.class);
    for (var c : run(StructuredOutputSettings.defaults()).entrySet()) {
      var validator =
          JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
              .getSchema(JSON.readTree(c.getKey()));
      for (List<RequestUpdate> u : c.getValue()) {
        String text = text(u, 0);
        JsonNode doc = JSON.readTree(text);
        assertTrue(validator.validate(doc).isEmpty(), c.getKey() + " <- " + text);
        assertTrue(tokens(u, 0).size() <= MAX_TOKENS);
        String outsideStrings = STRING.matcher(text).replaceAll("\"\"");
        assertFalse(WHITESPACE_RUN.matcher(outsideStrings).find(), "13 blanks in a row: " + text);
        reasons.add(finish(u, 0).finishReason());
      }
    }
    // most outputs are steered to their end by the budget (length), the rest end by themselves
    assertEquals(EnumSet.of(FinishReason.STOP, FinishReason.LENGTH), reasons);
  }

  @Test
  void aReasoningThatWouldLeaveNoRoomIsEndedForTheContent() throws Exception {
    // the prompt opens the think block: a random model never closes it by itself
    int thinkEnd = TestEngines.TEXT.tokenizer().tokenToId("</think>").getAsInt();
    EngineSettings settings = EngineSettings.small();
    Engine engine =
        Engine.create(
            "demo",
            TestEngines.runner(settings.numBlocks(), settings.blockSize()),
            TestEngines.TEXT,
            settings,
            SchedulingPolicy.FCFS,
            TestEngines.TEXT::compileTemplate,
            SamplingDefaults.NONE,
            "qwen3",
            StructuredOutputSettings.defaults());
    try (Driver e = new Driver(engine)) {
      SamplingParams p =
          SamplingParams.builder()
              .n(2)
              .temperature(1.0)
              .seed(5L)
              .maxTokens(60)
              .structuredOutputs(StructuredOutputsParams.jsonObject("response_format"))
              .build();
      assertNull(
          e.add(
              GenerationRequest.prompt(
                  "r", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", p)));
      List<RequestUpdate> u = e.drain().of("r");
      for (int i = 0; i < 2; i++) {
        List<Integer> ids = tokens(u, i);
        int end = ids.indexOf(thinkEnd);
        assertTrue(end > 40, "reasoned until the content had just room: " + end);
        String content = text(u, i);
        assertTrue(JSON.readTree(content).isObject(), content);
        assertTrue(ids.size() <= 60);
        assertEquals(FinishReason.LENGTH, finish(u, i).finishReason());
      }
    }
  }

  @Test
  void withoutTheBudgetTheSameOutputsAreCutInvalidAsInVllm() {
    int invalid = 0;
    for (var c :
        run(StructuredOutputSettings.defaults().withCompleteWithinMaxTokens(false)).entrySet())
      for (List<RequestUpdate> u : c.getValue()) {
        try {
          JSON.readTree(text(u, 0));
        } catch (Exception cut) {
          invalid++;
          assertEquals(FinishReason.LENGTH, finish(u, 0).finishReason());
        }
      }
    assertTrue(invalid > SEEDS, "a random model rarely closes a string: " + invalid);
  }
}
