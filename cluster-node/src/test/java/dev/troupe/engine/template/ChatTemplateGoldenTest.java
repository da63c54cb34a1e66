package dev.troupe.engine.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.ChatTemplate.TemplateException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Qwen3, Llama 3 and Llama 3.2 chat templates render byte-identically to transformers.
 *
 * <p>Origin of the expected values: {@code tools/tokenizer-golden/chat_templates.py}, run with real
 * Python Jinja2 (Debian {@code python3-jinja2}) configured as transformers' {@code
 * _compile_jinja_template} and {@code apply_chat_template}, {@code strftime_now} fixed to the
 * recorded date; output committed as {@code golden-chat-templates.json} next to this test. Error
 * cases must fail here too ({@code raise_exception} with the same message).
 */
class ChatTemplateGoldenTest {
  private static Map<String, Object> golden;
  private static Clock clock;

  @BeforeAll
  static void load() throws IOException {
    try (InputStream in =
        ChatTemplateGoldenTest.class.getResourceAsStream("golden-chat-templates.json")) {
      golden = new ObjectMapper().readValue(in, new TypeReference<>() {});
    }
    clock =
        Clock.fixed(
            LocalDateTime.parse((String) golden.get("fixedDate")).toInstant(ZoneOffset.UTC),
            ZoneOffset.UTC);
  }

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3", "llama3_2"})
  @SuppressWarnings("unchecked")
  void rendersExactlyAsTransformers(String model) throws IOException {
    assertTrue(((String) golden.get("origin")).contains("Jinja2"));
    Path config = TemplateFixtures.tokenizerDir(model).resolve("tokenizer_config.json");
    Map<String, Object> cfg =
        new ObjectMapper().readValue(Files.readAllBytes(config), new TypeReference<>() {});
    JinjaChatTemplate template =
        JinjaChatTemplate.of((String) cfg.get("chat_template"), TemplateFixtures.specialTokens(cfg))
            .withClock(clock);
    int rendered = 0;
    List<String> mismatches = new ArrayList<>();
    for (Map<String, Object> c : (List<Map<String, Object>>) golden.get("cases")) {
      if (!c.get("model").equals(model)) continue;
      String name = (String) c.get("name");
      ChatTemplate.Input input =
          new ChatTemplate.Input(
              (List<Map<String, Object>>) c.get("messages"),
              (List<Map<String, Object>>) c.get("tools"),
              (List<Map<String, Object>>) c.get("documents"),
              Boolean.TRUE.equals(c.get("add_generation_prompt")),
              Boolean.TRUE.equals(c.get("continue_final_message")),
              (Map<String, Object>) c.getOrDefault("kwargs", new HashMap<>()));
      if (c.containsKey("error")) {
        String error = (String) c.get("error");
        TemplateException e =
            assertThrows(TemplateException.class, () -> template.render(input), name);
        if (error.startsWith("TemplateError: "))
          assertEquals(error.substring("TemplateError: ".length()), e.getMessage(), name);
        continue;
      }
      String actual;
      try {
        actual = template.render(input);
      } catch (TemplateException e) {
        mismatches.add(name + ": threw " + e.getMessage());
        continue;
      }
      if (!c.get("expected").equals(actual))
        mismatches.add(name + ":\n--- expected\n" + c.get("expected") + "\n--- actual\n" + actual);
      rendered++;
    }
    assertEquals(List.of(), mismatches, model + " mismatches");
    assertTrue(rendered >= 30, model + ": only " + rendered + " renderings");
  }
}
