package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A served model's engine carries its generation-config sampling defaults; the demo model has none.
 */
class EnginesTest {
  @TempDir Path tmp;

  @Test
  void aHuggingFaceDirectoryReportsItsGenerationConfigDefaults() throws IOException {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.QWEN3, DType.F32, 1, false);
    Path tokenizers = TokenizerFixtures.dir("qwen3");
    for (String f : new String[] {"tokenizer.json", "tokenizer_config.json"})
      Files.copy(tokenizers.resolve(f), dir.resolve(f));
    Files.writeString(
        dir.resolve("generation_config.json"),
        "{\"eos_token_id\": [151645, 151643], \"temperature\": 0.6, \"top_k\": 20, \"top_p\": 0.95}");
    try (Engine e =
        Engines.open(new ServedModel("m", dir.toString(), 1, "fcfs"), EngineSettings.small())) {
      assertEquals(
          new SamplingDefaults(0.6, 0.95, 20, null, null, null, null),
          e.inputs().samplingDefaults());
    }
  }

  @Test
  void theDemoModelHasNone() {
    try (Engine e =
        Engines.open(
            new ServedModel("demo", ServedModel.DEMO_PATH, 1, "fcfs"), EngineSettings.small())) {
      assertEquals(SamplingDefaults.NONE, e.inputs().samplingDefaults());
    }
  }

  @Test
  void aServedChatTemplateReplacesTheTokenizers() {
    // vLLM's --chat-template: what the model is served with, here on the demo model
    String template = "{% for m in messages %}<<{{ m.content }}>>{% endfor %}";
    List<Map<String, Object>> chat = List.of(Map.of("role", "user", "content", "hi"));
    try (Engine served =
            Engines.open(
                new ServedModel(
                    "demo", ServedModel.DEMO_PATH, 1, "fcfs", null, null, false, template),
                EngineSettings.small());
        Engine plain =
            Engines.open(
                new ServedModel("demo", ServedModel.DEMO_PATH, 1, "fcfs"),
                EngineSettings.small())) {
      var tok = TokenizerBundle.demo().tokenizer();
      assertEquals(
          "<<hi>>",
          tok.decode(
              served
                  .inputs()
                  .tokenize(chat, null, null, true, false, false, null, Map.of(), false)
                  .tokens(),
              false,
              false));
      assertTrue(
          tok.decode(
                  plain
                      .inputs()
                      .tokenize(chat, null, null, true, false, false, null, Map.of(), false)
                      .tokens(),
                  false,
                  false)
              .startsWith("<|im_start|>user\nhi"));
    }
  }
}
